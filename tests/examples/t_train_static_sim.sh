# The statically linked build (nvcc's default cudart) trains on the simulated CUDA stack too and
# prints what the shared build prints.
. "$ROOT/tests/examples/common.sh"
need_sim
need_train "$TRAIN" "$TRAIN_STATIC"
if ! run_sim out1 err1 "$TRAIN_STATIC" --steps 5 --batch 16; then
  # The real static cudart needs the driver's private export tables (cuGetExportTable); a
  # simulator that does not provide them fails the very first runtime call this way.
  if grep -q "cudaGetDeviceCount(&count) failed: cudaErrorNotSupported" err1; then
    echo "skip: the simulated driver does not support the static cudart (cuGetExportTable)"
    exit 77
  fi
  fail "train-static failed on the simulator"
fi
check_train_output out1 5
run_sim out2 err2 "$TRAIN" --steps 5 --batch 16 || fail "train failed on the simulator"
same_output out1 out2
echo "ok"
