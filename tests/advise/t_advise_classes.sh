# dlhook advise on planted causes (tests/progs/advise_loop.c): each class is ranked first or
# second and names the planted line; the tuned loop gives no finding of any class.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
# the planted places are file:line: names at exit may take longer than 200 ms on a loaded machine
export DLHOOK_EXIT_MS=10000
need "$DLHOOK_LIB"
need "$BUILD/simcuda/libcudart.so.13"
P=$BUILD/tests/progs/advise_loop
need "$P"
SRC=$ROOT/tests/progs/advise_loop.c
for c in sync:sync-in-loop:PLANT-SYNC malloc:malloc-in-loop:PLANT-MALLOC pageable:pageable-h2d:PLANT-PAGEABLE; do
  mode=${c%%:*}; rest=${c#*:}; cls=${rest%%:*}; mark=${rest#*:}
  line=$(grep -n "$mark \*/" "$SRC" | cut -d: -f1)
  [ -n "$line" ] || fail "no $mark in $SRC"
  "$DLHOOK_BIN" record --sim -o "out-$mode" -- "$P" "$mode" >/dev/null 2>err || fail "record $mode: $(cat err)"
  tr=$(one_trace "out-$mode")
  "$DLHOOK_BIN" advise --json "$tr" >"$mode.json" || fail "advise $mode"
  pyassert "$mode.json" "[f['class'] for f in j['findings'][:2]].count('$cls') == 1 and \
any(f['class'] == '$cls' and f['place'].startswith('advise_loop.c:$line ') and f['evidence']['calls'] >= 19 \
and f['cost_ms_per_step'] > 0 for f in j['findings'][:2])"
  "$DLHOOK_BIN" stats --json "$tr" >"$mode.stats.json" || fail "stats $mode"
  pyassert "$mode.stats.json" "j['findings'][:2] and '$cls' in [f['class'] for f in j['findings'][:2]]"
  "$DLHOOK_BIN" advise "$tr" >"$mode.txt" || fail "advise text $mode"
  grep -q "^  [12]\. $cls .* at advise_loop.c:$line " "$mode.txt" || fail "text $mode: $(cat "$mode.txt")"
done
"$DLHOOK_BIN" record --sim -o out-tuned -- "$P" tuned >/dev/null 2>err || fail "record tuned: $(cat err)"
tr=$(one_trace out-tuned)
"$DLHOOK_BIN" advise --json "$tr" >tuned.json || fail "advise tuned"
pyassert tuned.json "j['findings'] == []"
"$DLHOOK_BIN" advise "$tr" >tuned.txt || fail "advise tuned text"
grep -q "no findings above the thresholds" tuned.txt || fail "tuned: $(cat tuned.txt)"
# dlhook report: a Findings section first, fed by the findings of the embedded stats
"$DLHOOK_BIN" report -o sync.html "$(one_trace out-sync)" >/dev/null 2>&1 || fail "report"
grep -q '<h2>Findings</h2>' sync.html || fail "report: no Findings section"
grep -q '"findings":\[{"rank":1,"class":"sync-in-loop"' sync.html || fail "report: no findings data"
first=$(grep -o '<h2>[A-Za-z]*' sync.html | head -1)
[ "$first" = "<h2>Findings" ] || fail "report: first section is $first"
# usage: no trace is a usage error
"$DLHOOK_BIN" advise >/dev/null 2>&1; [ $? -eq 2 ] || fail "advise without a trace: not exit 2"
echo ok
