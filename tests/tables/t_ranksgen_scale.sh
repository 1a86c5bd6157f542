# ranksgen makes 64 rank traces of one job from the recordings of 2 ranks (one late by 30 ms per
# step): dlhook export --format parquet + dlhook analyze name the planted straggler (rank 21)
# and its delay as dlhook stats does on the same traces, and every rank's counts equal its
# template's (the copies keep them).
# run-tests: serial
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
need "$BUILD/tests/bin/ranksgen"; need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"
SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 traced "$T/tpl" "$SIMRUN" "$BUILD/examples/train" \
  --ranks 2 --slow-rank 1 --slow-ms 30 --steps 8 >train.out 2>train.err || { cat train.err; fail "train failed"; }
mkdir -p "$T/job"
"$BUILD/tests/bin/ranksgen" -o "$T/job" -n 64 --straggler 21 --jitter-us 300 \
  "$T"/tpl/*-r0-*.dlh "$T"/tpl/*-r1-*.dlh || fail "ranksgen failed"
[ "$(ls "$T"/job/*.dlh | wc -l)" = 64 ] || fail "expected 64 traces"
"$DLHOOK_BIN" export --format parquet -q -o "$T/pq" "$T"/job/*.dlh || fail "export failed"
"$DLHOOK_BIN" analyze --json --only straggler,ranks,collective_skew "$T/pq" >an.json || fail "analyze failed"
"$DLHOOK_BIN" stats --json "$T"/job/*.dlh >stats.json || fail "stats failed"
"$DLHOOK_BIN" sql --format csv "$T/pq" "SELECT rank, sum(count) AS calls FROM calls GROUP BY rank ORDER BY rank" >calls.csv
python3 - an.json stats.json calls.csv <<'PY' || fail "the straggler or the counts are wrong"
import json, sys
a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
st = dict(zip(a["straggler"]["columns"], a["straggler"]["rows"][0]))
print("tables: rank %d, %.3f ms; stats: rank %d, %.3f ms" % (st["rank"], st["delay_ns"] / 1e6,
      s["straggler"]["rank"], s["straggler"]["mean_delay_ns"] / 1e6))
bad = []
if st["rank"] != 21 or s["straggler"]["rank"] != 21: bad.append("straggler not rank 21")
if abs(st["delay_ns"] - s["straggler"]["mean_delay_ns"]) > 0.05 * s["straggler"]["mean_delay_ns"]:
    bad.append("delays differ by more than 5%")
sk = dict(zip(a["collective_skew"]["columns"], a["collective_skew"]["rows"][0]))
if sk["ranks"] != 64 or sk["matched"] != s["collective_skew"]["matched"]: bad.append("skew %r" % sk)
rows = [l.strip().split(",") for l in open(sys.argv[3])][1:]
calls = {int(r): int(c) for r, c in rows}
if len(calls) != 64 or len(set(v for k, v in calls.items() if k != 21)) != 1: bad.append("calls per rank %r" % calls)
for b in bad: print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
echo ok
