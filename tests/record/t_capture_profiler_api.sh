# DLHOOK_CAPTURE_RANGE=cudaProfilerApi keeps exactly the calls between each cudaProfilerStart and
# cudaProfilerStop (both included) and the GPU work they caused: 2 windows of 2 cudaMemcpy each,
# one kernel k_in; nothing of what the program does outside (cudaMalloc, cudaMemset,
# cudaDeviceSynchronize, cudaStreamQuery, kernel k_out). Through the wrappers with CUPTI, and
# without CUPTI (the wrappers' own hook point).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/record/lib_capture.sh"
for cupti in 1 0; do
  rm -rf tr
  DLHOOK_CUPTI=$cupti DLHOOK_CAPTURE_RANGE=cudaProfilerApi traced "$T/tr" "$SIMRUN" "$CAP" seq \
    2>err.txt || { cat err.txt; fail "capture failed"; }
  tr=$(one_trace "$T/tr")
  if [ $cupti = 1 ]; then
    expect_window "$tr" cudaProfilerStart=2 cudaProfilerStop=2 cudaMemcpy=4 cudaMemset=0 \
      cudaMalloc=0 cudaDeviceSynchronize=0 cudaStreamQuery=0 kernel:k_in=1 kernel:k_out=0 \
      memcpy:HtoD=4 memset=0
  else
    expect_window "$tr" cudaProfilerStart=2 cudaProfilerStop=2 cudaMemcpy=4 cudaMemset=0 \
      cudaMalloc=0 cudaDeviceSynchronize=0 cudaStreamQuery=0 __cudaLaunchKernel=1
  fi
  # the windows are marked in the trace (ClockAnchor kinds 3 open, 4 close), in order, and
  # every recorded call lies inside one
  "$DLHOOK_BIN" dump --type anchor,api "$tr" >dump.jsonl || fail "dump failed"
  python3 - <<'PY' || fail "capture window marks wrong"
import json
r = [json.loads(l) for l in open("dump.jsonl")]
marks = sorted((e["trace_ns"], e["kind"]) for e in r if e["type"] == "anchor" and e["kind"] in (3, 4))
assert [k for _, k in marks] == [3, 4, 3, 4], marks
wins = [(marks[i][0], marks[i + 1][0]) for i in (0, 2)]
for e in r:
    if e["type"] == "api":
        assert any(a <= e["start_ns"] <= b for a, b in wins), (e["name"], e["start_ns"], wins)
PY
done
echo ok
