#!/bin/sh
# run-tests: timeout=900
# dlhook advise on planted causes in a PyTorch loop (tests/torch/advise_py.py, no NVTX steps:
# they are found from the repeating calls): .item() every step (sync-in-loop), a DataLoader whose
# Dataset works in Python (input-starved, with the Dataset's line), a pure-Python function every
# step (cpu-bound-python), float32 matmuls without TF32 (no-tensor-cores); each ranked first or second at its planted line; the tuned loop has
# none of the three. The text output and the report's Findings section name them too.
. "$ROOT/tests/torch/common.sh"
S=$ROOT/tests/torch/advise_py.py
ln() { grep -n "# $1" "$S" | head -n 1 | cut -d: -f1; }
for c in item:sync-in-loop:PLANT-ITEM loader:input-starved:PLANT-LOADER pycpu:cpu-bound-python:PLANT-PYCPU; do
  mode=${c%%:*}; rest=${c#*:}; cls=${rest%%:*}; mark=${rest#*:}
  line=$(ln "$mark")
  [ -n "$line" ] || fail "no $mark in $S"
  try=1
  while :; do
    rm -rf "out-$mode"
    "$DLHOOK_BIN" record --sim -o "out-$mode" -- "$PY" "$S" "$mode" >"$mode.out" 2>"$mode.err" ||
      fail "record $mode: $(tail -n 5 "$mode.err")"
    "$DLHOOK_BIN" advise --json "$(one_trace "out-$mode")" >"$mode.json" || fail "advise $mode"
    # cpu-bound-python needs the main thread on CPU >= 50 % of the step (its on-CPU samples): a
    # loaded machine keeps it waiting for a CPU instead. Such a run (the steps' on-CPU samples,
    # `stats` steps, under half their length) is recorded again (twice at most): the machine
    # starved it, the program is not to blame
    [ "$mode" = pycpu ] && [ $try -lt 3 ] || break
    python3 -c "import json, sys; sys.exit('$cls' not in [f['class'] for f in json.load(open('$mode.json'))['findings'][:2]])" && break
    "$DLHOOK_BIN" stats --json "$(one_trace "out-$mode")" >"$mode.stats.json" || fail "stats $mode"
    oncpu=$(python3 -c "import json; r = json.load(open('$mode.stats.json'))['steps']['rows']; \
print(round(sum(x['sample_cpu_ns'] for x in r) / max(1, sum(x['dur_ns'] for x in r)), 2))")
    awk -v c="$oncpu" 'BEGIN { exit !(c < 0.5) }' || break
    echo "$mode run $try: no $cls in the first two, on CPU $oncpu of the steps at load $(cut -d' ' -f1 /proc/loadavg): recorded again"
    try=$((try + 1))
  done
  pyassert "$mode.json" "any(f['class'] == '$cls' and f['place'] == '$S:$line' for f in j['findings'][:2])"
  "$DLHOOK_BIN" advise "$(one_trace "out-$mode")" >"$mode.txt" || fail "advise text $mode"
  grep -q "^  [12]\. $cls .* at .*advise_py.py:$line" "$mode.txt" || fail "text $mode: $(cat "$mode.txt")"
done
fp=$(ln PLANT-FP32)
pyassert item.json "any(f['class'] == 'no-tensor-cores' and f['place'] == '$S:$fp' for f in j['findings'][:2])"
dl=$(ln PLANT-DATASET)
pyassert loader.json "[f for f in j['findings'] if f['class'] == 'input-starved'][0]['dataset_place'] in ('$S:$dl', '$S:$((dl - 1))')"
"$DLHOOK_BIN" record --sim -o out-tuned -- "$PY" "$S" tuned >tuned.out 2>tuned.err || fail "record tuned: $(tail -n 5 tuned.err)"
"$DLHOOK_BIN" advise --json "$(one_trace out-tuned)" >tuned.json || fail "advise tuned"
pyassert tuned.json "not {'sync-in-loop', 'input-starved', 'cpu-bound-python', 'no-tensor-cores'} & {f['class'] for f in j['findings']}"
"$DLHOOK_BIN" report -o loader.html "$(one_trace out-loader)" >/dev/null 2>&1 || fail "report"
grep -q '"class":"input-starved"' loader.html || fail "report: no input-starved finding"
echo ok
