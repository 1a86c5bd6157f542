# perfetto: native protobuf trace, decoded by protoc with dlhook's subset of Perfetto's schema
# (viewer-export/proto/perfetto_trace.proto, Perfetto's field numbers): process and thread
# tracks, GPU stream tracks, interned names and stacks, slices, flows; --window cuts a time
# window.
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
protoc --proto_path="$ROOT/viewer-export/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
  <g.pftrace >g.txt 2>err.txt || fail "protoc cannot decode: $(cat err.txt)"
protoc --proto_path="$ROOT/viewer-export/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
  <w.pftrace >w.txt 2>err.txt || fail "protoc cannot decode the window: $(cat err.txt)"
c() { grep -c "$1" "$2"; }
# 5 steps x 2 threads: 10 API calls + 7 GPU records (kind 7 is not drawn) each, begin + end
[ "$(c TYPE_SLICE_BEGIN g.txt)" = "$((5 * 2 * 17))" ] || fail "slices: $(c TYPE_SLICE_BEGIN g.txt)"
[ "$(c TYPE_SLICE_END g.txt)" = "$((5 * 2 * 17))" ] || fail "slice ends"
grep -q 'thread_name: "worker-1"' g.txt || fail "no thread track"
grep -q 'process_name: "/opt/train"' g.txt || fail "no process track"
grep -q 'name: "Stream 7"' g.txt || fail "no stream track"
grep -q 'name: "GPU 0 (pid 4242)"' g.txt || fail "no device track"
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
echo ok
