# perfetto: native protobuf trace, decoded by protoc with dlhook's subset of Perfetto's schema
# (command/proto/perfetto_trace.proto, Perfetto's field numbers) and by Perfetto's own
# protos (pip perfetto): process tracks named by rank, thread tracks, GPU stream tracks,
# interned names and stacks, slices with the library calls' args, flows (every end has a
# start), counter tracks (live memory, stream busy); --window cuts a time window.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 5 --threads 2 || fail gentrace
"$DLHOOK_BIN" export -q -f perfetto -o g.pftrace g.dlh || fail "export perfetto"
[ -s g.pftrace ] || fail "empty output"
# first byte: Trace.packet (field 1, length-delimited)
[ "$(head -c 1 g.pftrace | od -An -tx1 | tr -d ' ')" = "0a" ] || fail "not a Trace message"
"$DLHOOK_BIN" export -q -f perfetto --window 0:8us -o w.pftrace g.dlh || fail "export --window"
[ "$(wc -c <w.pftrace)" -lt "$(wc -c <g.pftrace)" ] || fail "--window did not cut anything"
need_cmd protoc "Debian protobuf-compiler"
protoc --proto_path="$ROOT/command/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
  <g.pftrace >g.txt 2>err.txt || fail "protoc cannot decode: $(cat err.txt)"
protoc --proto_path="$ROOT/command/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
  <w.pftrace >w.txt 2>err.txt || fail "protoc cannot decode the window: $(cat err.txt)"
c() { grep -c "$1" "$2"; }
# 5 steps x 2 threads: 10 API calls + 7 GPU records (kind 7 is not drawn) each, begin + end
[ "$(c TYPE_SLICE_BEGIN g.txt)" = "$((5 * 2 * 17))" ] || fail "slices: $(c TYPE_SLICE_BEGIN g.txt)"
[ "$(c TYPE_SLICE_END g.txt)" = "$((5 * 2 * 17))" ] || fail "slice ends"
grep -q 'thread_name: "worker-1"' g.txt || fail "no thread track"
grep -q 'process_name: "rank 0"' g.txt || fail "no process track named by rank"
grep -q 'cmdline: "./train"' g.txt || fail "no command line"
grep -q 'name: "Stream 7"' g.txt || fail "no stream track"
grep -q 'name: "GPU 0 (rank 0)"' g.txt || fail "no device track"
grep -q 'name: "Stream 7 busy"' g.txt && grep -q 'UNIT_COUNT' g.txt || fail "no stream busy counter track"
grep -q 'counter_value: 1' g.txt || fail "no counter values"
grep -q 'string_value: "128,1,1"' g.txt || fail "no kernel grid arg"
grep -q 'name: "m"' g.txt && grep -q 'name: "k"' g.txt || fail "no GEMM args on the cuBLAS slice"
# names interned once: each event name appears once in interned data
[ "$(grep -c 'name: "cudaLaunchKernel"' g.txt)" = 1 ] || fail "cudaLaunchKernel interned $(grep -c 'name: "cudaLaunchKernel"' g.txt) times"
[ "$(grep -cF 'name: "backward(float*)"' g.txt)" = 1 ] || fail "kernel name not interned once"
# stacks: a PerfSample per call with a stack (9 per step and thread), 7 distinct stacks
# interned once each, frame names interned once
[ "$(c 'perf_sample {' g.txt)" = "$((5 * 2 * 9))" ] || fail "perf samples: $(c 'perf_sample {' g.txt)"
[ "$(c 'callstacks {' g.txt)" = 7 ] || fail "callstacks: $(c 'callstacks {' g.txt)"
[ "$(c 'str: "main"' g.txt)" = 1 ] || fail "frame name main interned $(c 'str: "main"' g.txt) times"
[ "$(c flow_ids g.txt)" -gt 0 ] || fail "no flows"
[ "$(c terminating_flow_ids g.txt)" -gt 0 ] || fail "no terminating flows"
[ "$(c TYPE_SLICE_BEGIN w.txt)" -lt "$(c TYPE_SLICE_BEGIN g.txt)" ] || fail "window not smaller"
[ "$(c TYPE_SLICE_BEGIN w.txt)" -gt 0 ] || fail "window is empty"
need_venv_module perfetto
"$VPY" - g.pftrace <<'PY' || fail "Perfetto's own protos do not read the trace as expected"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
starts, ends, counters, procs = set(), set(), set(), set()
for p in t.packet:
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        if d.HasField("counter"): counters.add(d.name)
        if d.HasField("process"): procs.add(d.process.process_name)
    if p.HasField("track_event"):
        starts.update(p.track_event.flow_ids)
        ends.update(p.track_event.terminating_flow_ids)
print("packets", len(t.packet), "flows", len(starts), "ends", len(ends), "counters", sorted(counters), "processes", procs)
assert ends and ends <= starts and starts <= ends, (len(starts), len(ends))
assert {"Stream 7 busy", "Stream 13 busy"} <= counters, counters
assert procs == {"rank 0"}, procs
PY
echo ok
