# dump and stats on traces whose frames hold mutated packets: no crash, exit 0 or 1, the output
# is valid JSON, and exit 1 comes with an error line.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
D=$DLHOOK_BIN
damaged=0
seed=1
while [ "$seed" -le 60 ]; do
  "$BUILD/tests/bin/mktrace" f.dlh --fuzz "$seed" || fail "mktrace --fuzz $seed"
  "$D" dump --all f.dlh >d.jsonl 2>err; rc=$?
  case $rc in
    0) [ -s err ] && fail "seed $seed: exit 0 with stderr: $(cat err)" ;;
    1) [ -s err ] || fail "seed $seed: exit 1 without an error"; damaged=$((damaged + 1)) ;;
    *) cp f.dlh "$T/crash-$seed.dlh"; fail "seed $seed: dump exit $rc: $(cat err)" ;;
  esac
  mv d.jsonl "d-$seed.jsonl"
  "$D" stats --json f.dlh >"s-$seed.json" 2>err; rc=$?
  [ "$rc" -le 1 ] || fail "seed $seed: stats exit $rc: $(cat err)"
  "$D" stats f.dlh >/dev/null 2>&1; [ $? -le 1 ] || fail "seed $seed: stats table crashed"
  seed=$((seed + 1))
done
python3 - d-*.jsonl s-*.json <<'PY' || fail "invalid JSON output"
import json, sys
for f in sys.argv[1:]:
    if f.endswith(".json"):
        json.load(open(f, encoding="utf-8"))
    else:
        for l in open(f, encoding="utf-8"):
            json.loads(l)
PY
echo "$damaged of 60 mutated traces reported damage"
[ "$damaged" -gt 0 ] || fail "no mutation was detected"
echo ok
