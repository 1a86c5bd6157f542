# The bundled example trains for 5 steps on the simulated CUDA stack, one rank, both builds;
# two runs print the same thing.
. "$ROOT/tests/examples/common.sh"
need_sim
need_train "$TRAIN"
run_sim out1 err1 "$TRAIN" --steps 5 || fail "train --steps 5 failed on the simulator"
check_train_output out1 5
run_sim out2 err2 "$TRAIN" --steps 5 || fail "second run failed"
same_output out1 out2
grep -q "^train: 1 rank " out1 || fail "no configuration line"
cat out1
echo "ok"
