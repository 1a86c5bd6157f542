# --window START:END keeps the events that overlap the window (times from the trace's start),
# in every format.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 10 || fail gentrace
# steps are about 9.6 us apart from t = 1 us: a 0:9us window holds step 0 only (its GPU work ends at 8.3 us)
"$DLHOOK_BIN" export -q -f kineto --window 0:9us -o k g.dlh || fail "kineto window"
zcat k/*.gz >k.json
pyassert k.json "[e['name'] for e in j['traceEvents'] if e['name'].startswith('ProfilerStep#')] == ['ProfilerStep#0']"
pyassert k.json "sum(1 for e in j['traceEvents'] if e.get('cat') == 'kernel') == 4"
"$DLHOOK_BIN" export -q -f folded --window 0:9us -o w.folded g.dlh || fail "folded window"
grep -qxF 'main;train;backward;cudaLaunchKernel;backward(float*) 1300' w.folded || fail "window folded: $(cat w.folded)"
"$DLHOOK_BIN" export -q -f folded --window 0.000009: -o r.folded g.dlh || fail "open window"
grep -qxF 'main;train;backward;cudaLaunchKernel;backward(float*) 11700' r.folded || fail "open window: $(cat r.folded)"
"$DLHOOK_BIN" export -q -f tensorboard --window 1ms:2ms -o tb g.dlh || fail "empty window"
for bad in 5 5:1 x:y 1:2parsecs; do
  "$DLHOOK_BIN" export -f folded --window "$bad" -o x g.dlh 2>err && fail "--window $bad accepted"
  grep -q 'bad --window' err || fail "--window $bad: $(cat err)"
done
echo ok
