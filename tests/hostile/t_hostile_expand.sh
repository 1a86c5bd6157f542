# Small traces that expand: 26 M identical sub-microsecond calls, one event each, compressed to
# ~20 KB (and 64 M in ~50 KB), took `report` 1.4 GiB / 30 s and `export -f tensorboard` 1.9 GiB /
# 27 s, `merge` 42 s. The reader holds a trace to an event budget proportional to its size
# (dlh_format.h, DLH_EVENTS_*): every subcommand stays within the CPU and memory bounds, reads the
# events before the budget ran out, and says which limit it hit with an offset and exit 1. The
# same 26 M calls as folded repeats (ApiBatch.count) are a valid trace read in full: a folded
# event costs what one event costs, whatever the calls it stands for.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
for k in repeats repeats-big; do
  "$HOSTILE" $k $k.dlh || fail "hostile $k"
  echo "== $k: $(wc -c <$k.dlh) bytes"
  every_subcommand $k.dlh 1
  for s in merge symbolize; do
    bounded $s $s -o $s.out.$k $k.dlh
    [ "$rc" = 1 ] || fail "$s on $k: exit $rc, expected 1: $(cat $s.err)"
  done
  grep -q "$k.dlh: damaged trace: .*takes the trace over [0-9]* events (API events and GPU records: 512 Ki, and 8 per byte of the file" \
    report.err || fail "$k: report says $(cat report.err)"
  n=$(api_events $k.dlh)
  [ "$n" -ge 500000 ] || fail "$k: $n API calls read, expected those within the budget"
done
"$HOSTILE" folded folded.dlh || fail "hostile folded"
echo "== folded: $(wc -c <folded.dlh) bytes"
every_subcommand folded.dlh 0
for s in merge symbolize; do
  bounded $s $s -o $s.out.folded folded.dlh
  [ "$rc" = 0 ] || fail "$s on folded: exit $rc: $(cat $s.err)"
done
python3 - <<'PY' || fail "stats --json of the folded trace"
import json
j = json.load(open("stats-json.out"))
assert j["calls"] == 400 * 65536 + 10, j["calls"]
PY
echo ok
