# examples/train --ranks 4 --slow-rank 2 --slow-ms 100 on the simulator: 4 rank traces;
# `dlhook stats` names rank 2 as the straggler with a mean delay within 5% of 40 ms.
# (SIMCUDA_HOST_COMPUTE=0: the stand-ins compute no results on the CPU, so that the host time
# of a step is the program's own and 4 ranks fit on 2 cores.)
# run-tests: serial
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" \
  --ranks 4 --slow-rank 2 --slow-ms 100 --steps 20 >out.txt 2>err.txt || { cat err.txt; fail "train failed"; }
n=$(ls "$T"/tr/*-r[0-9]-*.dlh | wc -l)
[ "$n" = 4 ] || fail "expected 4 rank traces, found $n: $(ls "$T/tr")"
"$DLHOOK_BIN" stats "$T"/tr/*.dlh | sed -n '/^Rank/,/^straggler/p'
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
pyassert stats.json 'j["straggler"]["rank"] == 2'
pyassert stats.json 'abs(j["straggler"]["mean_delay_ns"] - 100e6) <= 0.25 * 100e6'
pyassert stats.json 'len(j["ranks"]) == 4 and j["collective_skew"]["matched"] >= 20'
echo ok
