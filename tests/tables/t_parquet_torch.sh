# The tables of a PyTorch trace (tests/torch/workload.py cnn on the simulator): the operators
# table has aten operators, autograd nodes and Python frames; per operator, the calls inside it,
# the kernels they launched and their GPU time (dlhook analyze's operators, by correlation id)
# equal the operator table of dlhook stats --json.
# run-tests: timeout=600
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
"$VPY" -c "import torch" 2>/dev/null || skip "torch missing in $BUILD/venv"
cd "$T" || exit 1
"$DLHOOK_BIN" record --sim -o rec -- "$VPY" "$ROOT/tests/torch/workload.py" cnn --steps 2 >rec.out 2>rec.err ||
  fail "record: $(tail -n 5 rec.err)"
"$DLHOOK_BIN" export --format parquet -q -o pq rec/*.dlh || fail "export failed"
"$DLHOOK_BIN" analyze --json --only operators pq >an.json || fail "analyze failed"
"$DLHOOK_BIN" stats --json rec/*.dlh >stats.json || fail "stats failed"
"$DLHOOK_BIN" sql --format csv pq "SELECT kind, count(*) AS n FROM operators GROUP BY kind ORDER BY kind" >kinds.csv
grep -q '^op,' kinds.csv && grep -q '^autograd,' kinds.csv && grep -q '^python,' kinds.csv ||
  fail "operators table: $(cat kinds.csv)"
python3 - an.json stats.json <<'PY' || fail "operators differ from dlhook stats"
import json, sys
a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = {r[0]: dict(zip(a["operators"]["columns"], r)) for r in a["operators"]["rows"]}
st = {o["name"]: o for o in s["pytorch"]["operators"]}
bad = []
for name, o in st.items():
    if not o["name"].startswith("aten::"): continue
    r = t.get(name)
    if r is None:
        if o["calls"]: bad.append("%s missing" % name)
        continue
    for k in ("calls", "kernels", "gpu_ns"):
        if r[k] != o[k]: bad.append("%s %s: tables %s, stats %s" % (name, k, r[k], o[k]))
print("%d aten operators compared" % sum(1 for n in st if n.startswith("aten::")))
for b in bad[:20]: print(b, file=sys.stderr)
sys.exit(1 if bad or not st else 0)
PY
echo ok
