# run-tests: serial
# --delay 1 --duration 2: nothing before 1 s after the start, nothing after 3 s. The program
# runs phase 1 at once, phase 2 (3 cudaMemset, kernel k_in, 1 cudaDeviceSynchronize) at 2 s
# and phase 3 at 4 s: only phase 2 is kept.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/record/lib_capture.sh"
"$DLHOOK_BIN" record --sim -o "$T/tr" --delay 1 --duration 2 -- "$CAP" timed 2>rec.txt \
  || { cat rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
expect_window "$tr" cudaMemset=3 cudaDeviceSynchronize=1 cudaStreamQuery=0 cudaMalloc=0 \
  kernel:k_in=1 memset=3
grep -q "1 kernel, " rec.txt || { cat rec.txt; fail "record summary lacks kernels"; }
echo ok
