# Host samples in the exporters, with exact weights on a trace of known contents
# (command/tests/mksamples.c): flame graphs --weight samples / wait (folded, --fold op|line,
# --window, svg, speedscope, pprof), Perfetto (a "host samples" track per thread, slices that
# end at each sample and never overlap), Kineto (cpu_sample / wait_sample instant events) and
# Holistic Trace Analysis reading that Kineto file as before, xplane still written.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need "$BUILD/tests/bin/mksamples"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mksamples" s.dlh || fail "mksamples"
A='at::_ops::addmm::call(at::Tensor const&)'
LN='at::_ops::linear::call(at::Tensor const&)'

"$D" export -q -f folded --weight samples -o cpu.folded s.dlh || fail "folded samples"
printf '%s\n' "compute_kernel_host 5000000" "load 3000000" "main;step;$LN;$A 10000000" >want
diff want cpu.folded || fail "on-CPU folded stacks differ"
"$D" export -q -f folded --weight wait -o wait.folded s.dlh || fail "folded wait"
printf '%s\n' "[wait] 500000" "load;Condition.wait;[wait: futex] 18000000" \
  "load;Condition.wait;[wait: syscall 99999] 1000000" \
  "main;step;[in cudaStreamSynchronize];[wait: futex] 8000000" >want
diff want wait.folded || fail "wait folded stacks differ"
"$D" export -q -f folded --weight samples --fold op -o op.folded s.dlh || fail "fold op"
printf '%s\n' "[no operator] 8000000" "aten::linear;aten::addmm 10000000" >want
diff want op.folded || fail "--fold op on samples"
"$D" export -q -f folded --weight wait --fold line -o line.folded s.dlh || fail "fold line"
grep -qxF '/work/app/train.py:30;[wait: futex] 18000000' line.folded || fail "--fold line: $(cat line.folded)"
grep -qxF 'main;/work/app/train.py:20;[in cudaStreamSynchronize];[wait: futex] 8000000' line.folded \
  || fail "--fold line main"
# the window is relative to the process start (1 ms): [1 ms, 7 ms) holds main's samples at
# 2..6 ms and loader's at 2.5..6.5 ms (5 waits of 3 ms)
"$D" export -q -f folded --weight samples --window 0:6ms -o w.folded s.dlh || fail "window"
printf '%s\n' "main;step;$LN;$A 5000000" >want
diff want w.folded || fail "--window on samples"
"$D" export -q -f folded --weight wait --window 0:6ms -o ww.folded s.dlh || fail "window wait"
grep -qxF 'load;Condition.wait;[wait: futex] 15000000' ww.folded || fail "--window wait: $(cat ww.folded)"
# the GPU weight is unchanged by samples
"$D" export -q -f folded -o gpu.folded s.dlh || fail "folded gpu"
[ "$(cat gpu.folded)" = "step;main;cudaLaunchKernel;foo() 1000" ] || \
  [ "$(cat gpu.folded)" = "main;step;cudaLaunchKernel;foo() 1000" ] || fail "gpu folded: $(cat gpu.folded)"

"$D" export -q -f svg --weight wait -o wait.svg s.dlh || fail "svg"
grep -q 'Wait time (host samples) — total 27.50 ms' wait.svg || fail "svg title"
grep -q '\[in cudaStreamSynchronize\]' wait.svg || fail "svg leaf"
need_cmd xmllint "Debian libxml2-utils"
xmllint --noout wait.svg || fail "svg is not well-formed XML"
"$D" export -q -f speedscope --weight samples -o cpu.speedscope.json s.dlh || fail "speedscope"
pyassert cpu.speedscope.json 'sum(j["profiles"][0]["weights"]) == 18000000'
"$D" export -q -f pprof --weight wait -o wait.pb.gz s.dlh || fail "pprof"
[ "$(head -c 2 wait.pb.gz | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "pprof is not gzip"
if command -v protoc >/dev/null 2>&1; then
  gzip -dc wait.pb.gz | protoc --proto_path="$ROOT/command/proto" --decode=dlhpprof.Profile pprof.proto \
    >pp.txt || fail "protoc cannot decode the pprof profile"
  grep -q '"wait_time"' pp.txt || fail "pprof sample type"
fi

# Kineto: one instant event per sample on its thread
"$D" export -q -f kineto --no-gzip -o k s.dlh || fail "kineto"
python3 - k/*.pt.trace.json <<'PY' || fail "kineto samples"
import json, sys
j = json.load(open(sys.argv[1]))
ev = j["traceEvents"]
cpu = [e for e in ev if e.get("cat") == "cpu_sample"]
wait = [e for e in ev if e.get("cat") == "wait_sample"]
assert len(cpu) == 18 and len(wait) == 12, (len(cpu), len(wait))
assert all(e["ph"] == "i" and e["s"] == "t" and e["pid"] == 4242 for e in cpu + wait)
assert sum(e["args"]["weight_ns"] for e in cpu) == 18000000
assert sum(e["args"]["weight_ns"] for e in wait) == 27500000
first = cpu[0]
assert (first["name"], first["tid"], first["ts"], first["args"]["source"]) == \
    ("step", 4242, 2000, "/work/app/train.py:20"), first
w = [e for e in wait if e["args"].get("waiting in") == "[in cudaStreamSynchronize]"]
assert len(w) == 4 and w[0]["name"] == "step [in cudaStreamSynchronize]", w[:1]
assert [e for e in ev if e.get("cat") == "kernel"][0]["name"] == "foo()"
print("ok: kineto samples")
PY

# Perfetto: a "host samples" track under each thread
"$D" export -q -f perfetto -o s.pftrace s.dlh || fail "perfetto"
need_cmd protoc "Debian protobuf-compiler"
protoc --proto_path="$ROOT/command/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
  <s.pftrace >p.txt 2>err.txt || fail "protoc cannot decode: $(cat err.txt)"
[ "$(grep -c 'name: "host samples"' p.txt)" = 2 ] || fail "host samples tracks: $(grep -c 'name: "host samples"' p.txt)"
# 30 samples + 2 API calls + 1 kernel
[ "$(grep -c TYPE_SLICE_BEGIN p.txt)" = 33 ] || fail "slices: $(grep -c TYPE_SLICE_BEGIN p.txt)"
need_venv_module perfetto
"$VPY" - s.pftrace <<'PY' || fail "Perfetto's own protos: samples track"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
names, tracks, parent, threads = {}, {}, {}, {}
for p in t.packet:
    for n in p.interned_data.event_names:
        names[n.iid] = n.name
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        if d.name == "host samples":
            tracks[d.uuid] = d.parent_uuid
        if d.HasField("thread"):
            threads[d.uuid] = d.thread.tid
assert sorted(threads[u] for u in tracks.values()) == [4242, 4243], (tracks, threads)
open_, sl = {}, []
for p in t.packet:
    e = p.track_event
    if not p.HasField("track_event") or e.track_uuid not in tracks:
        continue
    if e.type == e.TYPE_SLICE_BEGIN:
        open_[e.track_uuid] = (p.timestamp, names[e.name_iid])
    elif e.type == e.TYPE_SLICE_END:
        s, n = open_.pop(e.track_uuid)
        sl.append((threads[tracks[e.track_uuid]], s, p.timestamp, n))
assert len(sl) == 30, len(sl)
for tid in (4242, 4243):
    x = sorted(v for v in sl if v[0] == tid)
    assert all(a[2] <= b[1] for a, b in zip(x, x[1:])), "overlapping sample slices"
m = sorted(v for v in sl if v[0] == 4242)
assert m[0][1:] == (1000000, 2000000, "step"), m[0]
lo = sorted(v for v in sl if v[0] == 4243)
assert lo[0][1:] == (1000000, 2500000, "load [wait: futex]"), lo[0]   # cut at the process start
assert lo[1][1:] == (2500000, 3500000, "load [wait: futex]"), lo[1]   # cut at the previous sample
print("ok: perfetto samples", len(sl))
PY

# the other exporters still take the trace
"$D" export -q -f tensorboard -o tb s.dlh || fail "tensorboard export with samples"

# HTA reads the Kineto file as before: one kernel, its launch; the samples are not kernels
need_venv_module hta
"$VPY" - k <<'PY' || fail "Holistic Trace Analysis on a Kineto file with samples"
import logging, sys, warnings
logging.disable(logging.WARNING)
warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
r = sorted(ta.t.traces.keys())[0]
df = ta.t.get_trace(r)
sym = ta.t.symbol_table.get_sym_table()
cats = df["cat"].map(lambda i: sym[i])
assert (cats == "kernel").sum() == 1, cats.value_counts()
kb = ta.get_gpu_kernel_breakdown(visualize=False)
assert len(kb[1]) == 1, kb[1]
print("ok: HTA categories", sorted(set(cats)))
PY
echo "ok: samples in the exporters"
