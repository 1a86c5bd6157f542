# tensorboard: an xprof run (OUT/plugins/profile/<run>/<host>.xplane.pb); protoc decodes the
# XSpace with dlhook's subset of xplane.proto; xprof converts it to trace-viewer data and lists
# the GPU kernels in its kernel stats.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 5 --threads 2 || fail gentrace
"$DLHOOK_BIN" export -q -f tensorboard -o logdir g.dlh || fail "export tensorboard"
pb=$(ls logdir/plugins/profile/*/genhost.xplane.pb) || fail "no xplane.pb: $(find logdir)"
# several traces: one XSpace (host) per process in the same run
$GEN g2.dlh --steps 2 --pid 5000 --rank 1 --world 2 || fail gentrace
"$DLHOOK_BIN" export -q -f tensorboard -o logdir2 g.dlh g2.dlh || fail "export two traces"
[ "$(ls logdir2/plugins/profile/*/ | tr '\n' ' ')" = "genhost_4242.xplane.pb genhost_5000.xplane.pb " ] ||
  fail "two traces: $(find logdir2 -type f)"
need_cmd protoc "Debian protobuf-compiler"
protoc --proto_path="$ROOT/viewer-export/proto" --decode=dlhxplane.XSpace xplane.proto <"$pb" >x.txt 2>err.txt ||
  fail "protoc: $(cat err.txt)"
grep -q 'name: "/host:CPU"' x.txt || fail "no host plane"
grep -q 'name: "/device:GPU:0"' x.txt || fail "no GPU plane"
grep -q 'name: "Stream #7"' x.txt || fail "no stream line"
grep -q 'name: "worker-1"' x.txt || fail "no thread line"
grep -q 'name: "kernel_details"' x.txt || fail "no kernel_details stat"
grep -q 'str_value: "regs:32 static_shared:0 dynamic_shared:1024 grid:128,1,1 block:256,1,1' x.txt || fail "kernel details"
grep -q 'str_value: "kind_src:pageable kind_dst:device size:4096' x.txt || fail "memcpy details"
grep -q 'hostnames: "genhost"' x.txt || fail "hostname"
need_venv_module xprof
"$VPY" - logdir <<'PY' || fail "xprof could not convert the XSpace"
import glob, json, sys
from xprof.convert import raw_to_tool_data as r
paths = glob.glob(sys.argv[1] + "/plugins/profile/*/*.xplane.pb")
data, _ = r.xspace_to_tool_data(paths, "trace_viewer", {})
j = json.loads(data)
names = {e.get("name") for e in j["traceEvents"]}
print("trace viewer events:", len(j["traceEvents"]))
assert {"forward(float*)", "backward(float*)", "cudaLaunchKernel"} <= names, names
data, _ = r.xspace_to_tool_data(paths, "kernel_stats", {})
ks = json.loads(data)
kernels = {row["c"][1]["v"]: row["c"][10]["v"] for row in ks["rows"]}
print("kernel stats:", kernels)
assert kernels.get("backward(float*)") == 10 and kernels.get("forward(float*)") == 20, kernels
PY
echo ok
