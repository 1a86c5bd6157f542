# DLHOOK_CAPTURE_RANGE=nvtx:roi keeps exactly what happens inside the NVTX ranges named "roi"
# (2 ranges: 3 cudaMemset each, one kernel k_in in the first), and the ranges themselves; the
# enclosing "outer" range and everything outside are not recorded. nvtx:roi:1 keeps only the
# first range; nvtx:ro* matches by prefix.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/record/lib_capture.sh"
run() {
  rm -rf tr
  DLHOOK_CAPTURE_RANGE="$1" traced "$T/tr" "$SIMRUN" "$CAP" seq 2>err.txt || { cat err.txt; fail "capture failed"; }
  one_trace "$T/tr"
}
tr=$(run nvtx:roi)
expect_window "$tr" nvtxRange=2 cudaMemset=6 cudaMemcpy=0 cudaProfilerStart=0 cudaMalloc=0 \
  cudaDeviceSynchronize=0 cudaStreamQuery=0 kernel:k_in=1 kernel:k_out=0 memset=6 memcpy:HtoD=0
"$DLHOOK_BIN" dump --type nvtx "$tr" | python3 -c '
import json, sys
r = [json.loads(l)["args"]["message"] for l in sys.stdin]
assert r == ["roi", "roi"], r' || fail "NVTX ranges of the window wrong"
tr=$(run nvtx:roi:1)
expect_window "$tr" nvtxRange=1 cudaMemset=3 cudaMemcpy=0 kernel:k_in=1 memset=3
tr=$(run 'nvtx:ro*')
expect_window "$tr" nvtxRange=2 cudaMemset=6 cudaMemcpy=0 kernel:k_in=1
echo ok
