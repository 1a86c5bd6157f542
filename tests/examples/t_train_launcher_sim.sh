# Under an external launcher (torchrun's RANK/LOCAL_RANK/WORLD_SIZE, mpirun's OMPI_COMM_WORLD_*)
# each process is one rank; rank 0 publishes the NCCL id in TRAIN_NCCL_ID_FILE, the others poll it.
. "$ROOT/tests/examples/common.sh"
need_sim
need_train "$TRAIN"
export TRAIN_NCCL_ID_FILE="$T/nccl-id" TRAIN_NCCL_ID_TIMEOUT=60
# rank 1 starts first: it must wait for rank 0's file
(RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 "$SIMRUN" "$TRAIN" --steps 3 >r1.out 2>r1.err; echo $? >r1.rc) &
sleep 1
RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 "$SIMRUN" "$TRAIN" --steps 3 >r0.out 2>r0.err; echo $? >r0.rc
wait
[ "$(cat r0.rc)" = 0 ] && [ "$(cat r1.rc)" = 0 ] || { tail r0.err r1.err; fail "torchrun-style ranks failed: $(cat r0.rc) $(cat r1.rc)"; }
check_train_output r0.out 3
grep -q "launcher: torchrun" r0.out || fail "rank 0 did not see torchrun's environment"
[ ! -s r1.out ] || fail "rank 1 printed on stdout"
[ ! -e "$TRAIN_NCCL_ID_FILE" ] || fail "the NCCL id file was left behind"

export TRAIN_NCCL_ID_FILE="$T/nccl-id-mpi"
(OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_SIZE=2 "$SIMRUN" "$TRAIN" --steps 3 >m1.out 2>m1.err; echo $? >m1.rc) &
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_SIZE=2 "$SIMRUN" "$TRAIN" --steps 3 >m0.out 2>m0.err; echo $? >m0.rc
wait
[ "$(cat m0.rc)" = 0 ] && [ "$(cat m1.rc)" = 0 ] || { tail m0.err m1.err; fail "mpirun-style ranks failed"; }
grep -q "launcher: mpirun" m0.out || fail "rank 0 did not see mpirun's environment"
# same data, same model: same losses whichever launcher started the ranks
grep '^step' r0.out >a; grep '^step' m0.out >b
same_output a b
# a rank whose rank 0 never shows up gives up with a clear message, exit 1
TRAIN_NCCL_ID_FILE="$T/never" TRAIN_NCCL_ID_TIMEOUT=1 RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 \
  "$SIMRUN" "$TRAIN" --steps 1 >n.out 2>n.err
rc=$?
[ $rc -eq 1 ] && grep -q "rank 1: error: no NCCL id from rank 0" n.err || { cat n.err; fail "lonely rank: exit $rc"; }
echo "ok"
