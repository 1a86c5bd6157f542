# CUPTI made unavailable (library absent; or already owned by another subscriber): the program
# runs unchanged, one warning names the situation, and API calls are still recorded.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/tests/progs/nvcc_shared"; need "$DLHOOK_LIB"
prog=$BUILD/tests/progs/nvcc_shared
# a copy of the simulated stack without libcupti
mkdir nocupti
for f in "$BUILD"/simcuda/*.so*; do case "$f" in *cupti*) ;; *) ln -s "$f" nocupti/ ;; esac; done
LD_LIBRARY_PATH=$T/nocupti "$prog" >bare.out 2>&1; bare_rc=$?
LD_LIBRARY_PATH=$T/nocupti CUDA_HOME=/nonexistent DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_LIB" "$prog" >pre.out 2>pre.err; rc=$?
cat pre.err
[ "$rc" = "$bare_rc" ] || fail "exit code changed: $bare_rc -> $rc"
cmp -s bare.out pre.out || fail "output changed"
n=$(grep -c 'dlhook: warning: CUPTI' pre.err)
[ "$n" = 1 ] || fail "expected one CUPTI warning, got $n"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json
expect_calls stats.json cudaMalloc=1 __cudaLaunchKernel=4 cudaDeviceSynchronize=1
echo ok
