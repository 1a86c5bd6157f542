# The straggler when the last arrival moves between ranks (the usual case without an injected
# slow rank): 4 synthetic rank traces, 20 collectives; rank 3 arrives last at 11 of them, 100 us
# late; ranks 0 and 1 are last at the other 9, 800 us late. `dlhook stats` must name rank 3 (the
# rank the others waited for most often) with a positive delay of about 100 us, not the rank
# with the largest (negative) mean delay over all collectives.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/gentrace"
GEN=$BUILD/tests/bin/gentrace
# per step (cycled over 20 steps), microseconds late
r0=0,0,0,0,0,0,0,0,0,0,0,800,0,800,0,800,0,800,0,0
r1=0,0,0,0,0,0,0,0,0,0,0,0,800,0,800,0,800,0,800,800
r2=0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0
r3=100,100,100,100,100,100,100,100,100,100,100,0,0,0,0,0,0,0,0,0
for r in 0 1 2 3; do
  eval late=\$r$r
  $GEN "r$r.dlh" --rank $r --world 4 --pid $((5000 + r)) --steps 20 --coll-late "$late" \
    || fail "gentrace rank $r"
done
"$DLHOOK_BIN" stats r0.dlh r1.dlh r2.dlh r3.dlh | sed -n '/^Rank/,/^straggler/p' | tee table.txt
grep -q '^straggler: rank 3, last at 11 of 20 collectives, 0.100 ms after' table.txt \
  || fail "the straggler line does not name rank 3, 0.100 ms late"
"$DLHOOK_BIN" stats --json r0.dlh r1.dlh r2.dlh r3.dlh >stats.json || fail "stats failed"
pyassert stats.json 'j["straggler"]["rank"] == 3'
pyassert stats.json 'j["straggler"]["arrived_last"] == 11 and j["straggler"]["collectives"] == 20'
pyassert stats.json 'abs(j["straggler"]["mean_delay_ns"] - 100e3) < 1e3'
pyassert stats.json '[r["arrived_last"] for r in j["ranks"]] == [4, 5, 0, 11]'
echo ok
