# --delay 2 --duration 4: nothing before 2 s after the start, nothing after 6 s. The program
# runs phase 1 at once, phase 2 (3 cudaMemset, kernel k_in, 1 cudaDeviceSynchronize) at 4 s
# and phase 3 at 8 s: only phase 2 is kept. (2 s margins on each side, so that a loaded machine
# that starts the program late or wakes a timer late does not move a phase across an edge.)
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/record/lib_capture.sh"
"$DLHOOK_BIN" record --sim -o "$T/tr" --delay 2 --duration 4 -- "$CAP" timed 2 2>rec.txt \
  || { cat rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
expect_window "$tr" cudaMemset=3 cudaDeviceSynchronize=1 cudaStreamQuery=0 cudaMalloc=0 \
  kernel:k_in=1 memset=3
grep -q "1 kernel, " rec.txt || { cat rec.txt; fail "record summary lacks kernels"; }
echo ok
