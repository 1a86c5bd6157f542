# With the real CUDA libraries and no GPU, the example fails fast and cleanly: exit status 1
# (not a signal, not a hang) and a clear message naming the failed call. Skipped where a GPU is.
. "$ROOT/tests/examples/common.sh"
need_train "$TRAIN" "$TRAIN_STATIC"
if [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; then
  echo "skip: an NVIDIA device is present"; exit 77
fi
unset LD_PRELOAD LD_LIBRARY_PATH CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH
for b in "$TRAIN" "$TRAIN_STATIC"; do
  for args in "--steps 2" "--steps 2 --ranks 2"; do
    timeout 120 "$b" $args >out 2>err
    rc=$?
    [ $rc -eq 1 ] || { cat err; fail "$(basename "$b") $args: exit status $rc, expected 1"; }
    grep -q "error: cudaGetDeviceCount(&count) failed: cuda" err || { cat err; fail "$(basename "$b") $args: no clear error message"; }
    [ ! -s out ] || { cat out; fail "$(basename "$b") $args: printed on stdout"; }
  done
  tail -n 1 err
done
# bad options: usage error, exit 2
"$TRAIN" --bogus >out 2>err; rc=$?
[ $rc -eq 2 ] && grep -q "unknown option" err || fail "--bogus: exit $rc"
"$TRAIN" --help >out 2>&1 && grep -q -- "--ranks N" out || fail "--help"
echo "ok"
