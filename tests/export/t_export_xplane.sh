# tensorboard: an xprof run (OUT/plugins/profile/<run>/rank<R>.xplane.pb: hosts named by rank);
# protoc decodes the XSpace with dlhook's subset of xplane.proto; xprof converts it to
# trace-viewer data, lists the GPU kernels in its kernel stats with their op names, finds the
# steps (Overview) and has Framework Op Stats rows.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 5 --threads 2 || fail gentrace
"$DLHOOK_BIN" export -q -f tensorboard -o logdir g.dlh || fail "export tensorboard"
pb=$(ls logdir/plugins/profile/*/rank0.xplane.pb) || fail "no xplane.pb: $(find logdir)"
# several traces: one XSpace (host) per process in the same run
$GEN g2.dlh --steps 2 --pid 5000 --rank 1 --world 2 || fail gentrace
"$DLHOOK_BIN" export -q -f tensorboard -o logdir2 g.dlh g2.dlh || fail "export two traces"
[ "$(ls logdir2/plugins/profile/*/ | tr '\n' ' ')" = "rank0.xplane.pb rank1.xplane.pb " ] ||
  fail "two traces: $(find logdir2 -type f)"
need_cmd protoc "Debian protobuf-compiler"
protoc --proto_path="$ROOT/command/proto" --decode=dlhxplane.XSpace xplane.proto <"$pb" >x.txt 2>err.txt ||
  fail "protoc: $(cat err.txt)"
grep -q 'name: "/host:CPU"' x.txt || fail "no host plane"
grep -q 'name: "/device:GPU:0"' x.txt || fail "no GPU plane"
grep -q 'name: "Stream #7"' x.txt || fail "no stream line"
grep -q 'name: "worker-1"' x.txt || fail "no thread line"
grep -q 'name: "kernel_details"' x.txt || fail "no kernel_details stat"
grep -q 'str_value: "regs:32 static_shared:0 dynamic_shared:1024 grid:128,1,1 block:256,1,1' x.txt || fail "kernel details"
grep -q 'str_value: "kind_src:pageable kind_dst:device size:4096' x.txt || fail "memcpy details"
grep -q 'hostnames: "rank0"' x.txt || fail "hostname"
grep -q 'name: "_r"' x.txt && grep -q 'name: "step_num"' x.txt || fail "no step root stats"
grep -q 'str_value: "cublasSgemm_v2:MatMul"' x.txt || fail "no tf_op of the cuBLAS kernel: $(grep -A1 'tf_op' x.txt | head)"
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
assert all(row["c"][9]["v"] for row in ks["rows"]), "kernels without an op name"
data, _ = r.xspace_to_tool_data(paths, "overview_page", {})
steps = [row["c"][0]["v"] for row in json.loads(data)[1]["rows"]]
print("overview steps:", steps)
assert steps == [str(i) for i in range(5)], steps
data, _ = r.xspace_to_tool_data(paths, "framework_op_stats", {})
ops = {row["c"][3]["v"] for row in json.loads(data)[0]["rows"]}
print("framework ops:", sorted(ops))
assert {"forward", "backward", "cublasSgemm_v2"} <= ops, ops
PY
echo ok
