# The same straggler run under Open MPI's mpirun -np 4 (OMPI_COMM_WORLD_* give the ranks):
# 4 rank traces with their ranks in the names, rank 2 named as the straggler (100 ms +-25%: see
# t_sim_straggler.sh).
# run-tests: serial
. "$ROOT/tests/lib.sh"
command -v mpirun >/dev/null 2>&1 || skip "mpirun (openmpi-bin) is not installed"
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
mkdir -p "$T/tr"
timeout 300 mpirun -np 4 --oversubscribe -x SIMCUDA_HOST_COMPUTE=0 -x DLHOOK_QUIET=1 \
  -x DLHOOK_OUTPUT="$T/tr/" -x LD_PRELOAD="$DLHOOK_LIB" -x TRAIN_NCCL_ID_FILE="$T/ncclid" \
  "$SIMRUN" "$BUILD/examples/train" --steps 20 --slow-rank 2 --slow-ms 100 >out.txt 2>err.txt \
  || { tail -20 err.txt; fail "mpirun failed"; }
for r in 0 1 2 3; do ls "$T"/tr/*-r$r-*.dlh >/dev/null 2>&1 || fail "no trace for rank $r: $(ls "$T/tr")"; done
"$DLHOOK_BIN" stats "$T"/tr/*.dlh | sed -n '/^Rank/,/^straggler/p'
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
pyassert stats.json 'j["straggler"]["rank"] == 2'
pyassert stats.json 'abs(j["straggler"]["mean_delay_ns"] - 100e6) <= 0.25 * 100e6'
echo ok
