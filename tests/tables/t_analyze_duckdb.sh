# dlhook analyze on DuckDB over the tables of examples/train --ranks 4 --slow-rank 2 --slow-ms
# 100: the straggler is rank 2, late by about 100 ms per collective, as `dlhook stats` says;
# every rank has its steps, kernels and memory peak; dlhook sql answers a query and fails
# cleanly on a bad one, a missing dataset and missing arguments.
# run-tests: serial
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
record_ranks 12
"$DLHOOK_BIN" export --format parquet -q -o "$T/pq" "$T"/tr/*.dlh || fail "export failed"
"$DLHOOK_BIN" analyze --json "$T/pq" >an.json || fail "analyze failed"
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
"$DLHOOK_BIN" analyze "$T/pq" | sed -n '/== straggler/,/^$/p'
python3 - an.json stats.json <<'PY' || fail "analyze results are wrong"
import json, sys
a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def rows(name):
    r = a[name]
    return [dict(zip(r["columns"], x)) for x in r["rows"]]
bad = []
st = rows("straggler")
if len(st) != 1 or st[0]["rank"] != 2: bad.append("straggler: %r" % st)
elif abs(st[0]["delay_ns"] - 100e6) > 0.25 * 100e6: bad.append("straggler delay: %r" % st)
elif st[0]["rank"] != s["straggler"]["rank"]: bad.append("stats names another straggler")
sk = rows("collective_skew")[0]
if sk["matched"] != s["collective_skew"]["matched"] or sk["ranks"] != 4: bad.append("skew: %r" % sk)
rk = rows("ranks")
if sorted(r["rank"] for r in rk) != [0, 1, 2, 3]: bad.append("ranks: %r" % rk)
if sum(r["arrived_last"] for r in rk) != sk["matched"]: bad.append("arrived_last do not add up")
steps = rows("steps")
srows = [r for r in s["steps"]["rows"] if r.get("rank", -1) >= 0]
if sorted((r["rank"], r["step"]) for r in steps) != sorted((r["rank"], r["step"]) for r in srows):
    bad.append("steps differ from stats: %d vs %d rows" % (len(steps), len(srows)))
kn = rows("kernels")
if sum(k["count"] for k in kn) != sum(k["count"] for k in s["kernels"]): bad.append("kernel counts")
if len(rows("memory_peaks")) != 4 or len(rows("overlap")) != 4: bad.append("memory/overlap rows")
for b in bad: print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
n=$("$DLHOOK_BIN" sql --format csv "$T/pq" "SELECT count(*) AS n FROM gpu WHERE kind = 'kernel'" | tail -1)
[ "$n" = "$(python3 -c 'import json; print(sum(k["count"] for k in json.load(open("stats.json"))["kernels"]))')" ] ||
  fail "dlhook sql kernel count $n"
"$DLHOOK_BIN" sql "$T/pq" "SELECT nope FROM calls" 2>err.txt; rc=$?
[ "$rc" = 1 ] && grep -q "dlhook sql:" err.txt || fail "bad query: exit $rc, $(cat err.txt)"
"$DLHOOK_BIN" sql "$T/none" "SELECT 1" 2>err.txt; rc=$?
[ "$rc" = 1 ] && grep -q "none" err.txt || fail "missing dataset: exit $rc, $(cat err.txt)"
"$DLHOOK_BIN" analyze 2>err.txt; rc=$?
[ "$rc" = 2 ] || fail "analyze without DIR: exit $rc"
"$DLHOOK_BIN" analyze --engine nope "$T/pq" 2>err.txt; rc=$?
[ "$rc" = 2 ] || fail "analyze --engine nope: exit $rc"
echo ok
