# The analyses' SQL files run unchanged on Spark (pyspark, local[*]) and give exactly the
# results of DuckDB over the tables of 4 rank traces with a planted straggler (rank 2).
# run-tests: serial timeout=600
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
command -v java >/dev/null 2>&1 || skip "no java (make test-tools installs a JDK)"
"$VPY" -c "import pyspark" 2>/dev/null || skip "pyspark missing in $BUILD/venv (scripts/bootstrap-py tables)"
record_ranks 8
"$DLHOOK_BIN" export --format parquet -q -o "$T/pq" "$T"/tr/*.dlh || fail "export failed"
"$DLHOOK_BIN" analyze --json "$T/pq" >duck.json || fail "analyze (duckdb) failed"
"$DLHOOK_BIN" analyze --engine spark --master 'local[2]' --json "$T/pq" >spark.json 2>spark.err ||
  { tail -20 spark.err; fail "analyze (spark) failed"; }
python3 - duck.json spark.json <<'PY' || fail "the engines differ"
import json, sys
d, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = [k for k in d if d[k] != s.get(k)]
for k in bad: print("%s:\n duckdb %s\n spark  %s" % (k, d[k], s.get(k)), file=sys.stderr)
st = d["straggler"]["rows"]
if not st or st[0][1] != 2: bad.append("straggler %r" % st)
n = sum(len(v["rows"]) for v in d.values())
print("%d analyses, %d rows, identical on both engines" % (len(d), n))
sys.exit(1 if bad or set(d) != set(s) else 0)
PY
echo ok
