# --ranks 4: the program starts 4 rank processes that meet in NCCL (id passed in TRAIN_NCCL_ID);
# all exit 0 and two runs print the same thing. A slow rank changes timing, not output.
. "$ROOT/tests/examples/common.sh"
need_sim
need_train "$TRAIN"
run_sim out1 err1 "$TRAIN" --steps 5 --ranks 4 || fail "train --ranks 4 failed on the simulator"
check_train_output out1 5
grep -q "^train: 4 ranks (launcher: train)" out1 || { cat out1; fail "no 4-rank configuration line"; }
grep -q "all 4 ranks finished" err1 || { cat err1; fail "launcher did not report 4 finished ranks"; }
run_sim out2 err2 "$TRAIN" --steps 5 --ranks 4 || fail "second run failed"
same_output out1 out2
run_sim out3 err3 "$TRAIN" --steps 5 --ranks 2 --slow-rank 1 --slow-ms 20 || fail "slow-rank run failed"
check_train_output out3 5
echo "ok"
