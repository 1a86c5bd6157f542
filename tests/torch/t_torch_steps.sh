#!/bin/sh
# run-tests: timeout=600
# Steps from PyTorch itself (command/lib/stepfind.c) in a loop without NVTX ranges
# (tests/torch/steps_py.py): set-up (model.to("cuda"), pageable copies, a synchronize), then 6
# iterations. With an optimizer, advise, stats --json, the report and the Parquet steps table
# (analyze) all give 5 steps from "optimizer" (one per Optimizer.step, from the end of one to
# the end of the next), the same ones (advise leaves out the first, the warm-up), and no step
# contains a call of the set-up lines; advise names nothing at a set-up line. Without an optimizer (forward and backward only) the steps
# come from "backward".
. "$ROOT/tests/torch/common.sh"
S=$ROOT/tests/torch/steps_py.py
N=6
for mode in optimizer backward; do
  "$DLHOOK_BIN" record --sim -o "out-$mode" -- "$PY" "$S" "$mode" --steps $N --item >"$mode.out" 2>"$mode.err" ||
    fail "record $mode: $(tail -n 5 "$mode.err")"
  grep -q '^done' "$mode.out" || fail "$mode: no 'done' line: $(cat "$mode.out")"
  tr=$(one_trace "out-$mode")
  "$DLHOOK_BIN" advise --json "$tr" >"$mode.adv.json" || fail "advise $mode"
  pyassert "$mode.adv.json" "j['steps'][0]['steps'] == $N - 2 and j['steps'][0]['steps_from'] == '$mode'"
  pyassert "$mode.adv.json" "all(f['evidence']['steps_from'] == '$mode' for f in j['findings'])"
  setup=$(grep -n '# SETUP' "$S" | cut -d: -f1 | sed "s|^|'$S:|; s|\$|',|" | tr -d '\n')
  pyassert "$mode.adv.json" "not [f for f in j['findings'] if f['place'] in ($setup)]"
  "$DLHOOK_BIN" advise "$tr" >"$mode.adv.txt" || fail "advise text $mode"
  "$DLHOOK_BIN" stats --json "$tr" >"$mode.stats.json" || fail "stats $mode"
  "$DLHOOK_BIN" dump --type api "$tr" >"$mode.dump" || fail "dump $mode"
  python3 - "$mode" "$S" "$N" <<'PY' || fail "$mode: stats steps wrong"
import json, sys
mode, src, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
setup = {i + 1 for i, l in enumerate(open(src).read().split("\n")) if "# SETUP" in l}
rows = json.load(open(mode + ".stats.json"))["steps"]["rows"]
adv = json.load(open(mode + ".adv.json"))["steps"][0]
assert len(rows) == n - 1 and all(r["steps_from"] == mode for r in rows), rows
assert [r["step"] for r in rows] == list(range(1, n)), rows
# the same steps as advise, which leaves out the first (the warm-up): their summed duration
assert sum(r["dur_ns"] for r in rows[1:]) == adv["step_ns"], (rows, adv)
# consecutive: each step starts where the one before ended
assert all(rows[i]["start_ns"] + rows[i]["dur_ns"] == rows[i + 1]["start_ns"] for i in range(n - 2)), rows
first = rows[0]["start_ns"]
setup_end = 0
for l in open(mode + ".dump"):
    e = json.loads(l)
    if e.get("type") != "api" or not e.get("stack"):
        continue
    if any(f.get("python") and f.get("file") == src and f.get("line") in setup for f in e["stack"]):
        setup_end = max(setup_end, e["start_ns"] + e["dur_ns"])
assert setup_end, "no call of the set-up lines"
assert setup_end <= first, ("the first step starts inside the set-up", setup_end, first)
print("ok: %d steps from %s; set-up ends %.3f ms before the first" % (len(rows), mode, (first - setup_end) / 1e6))
PY
done
grep -q "4 steps, one per Optimizer.step" optimizer.adv.txt || grep -q "over 4 steps" optimizer.adv.txt ||
  fail "advise text: $(cat optimizer.adv.txt)"
"$DLHOOK_BIN" report -o opt.html "$(one_trace out-optimizer)" >/dev/null 2>&1 || fail "report"
grep -q '"steps_from":"optimizer"' opt.html || fail "report: no steps from the optimizer"
grep -q 'one per Optimizer.step call' opt.html || fail "report: the Steps section does not say where its steps come from"
# the Parquet steps table and dlhook analyze: the same steps
VPY=$BUILD/venv/bin/python
if "$VPY" -c "import pyarrow, duckdb" 2>/dev/null; then
  export DLHOOK_PYTHON=$VPY PYTHONPATH=$ROOT/command/python
  "$DLHOOK_BIN" export --format parquet -q -o pq "$(one_trace out-optimizer)" || fail "export parquet"
  "$DLHOOK_BIN" analyze --json --only steps pq >an.json || fail "analyze"
  python3 - <<'PY' || fail "analyze's steps differ from stats"
import json
a = json.load(open("an.json"))["steps"]
rows = [dict(zip(a["columns"], r)) for r in a["rows"]]
s = json.load(open("optimizer.stats.json"))["steps"]["rows"]
assert [(r["step"], r["steps_from"], r["dur_ns"]) for r in rows] == \
    [(r["step"], r["steps_from"], r["dur_ns"]) for r in s], (rows, s)
PY
fi
echo ok
