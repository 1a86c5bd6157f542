# Host samples built as an attacker would (hostile samples: 60,000 samples out of time order,
# unknown kinds, weights near 2^62, undefined stacks and functions, system call numbers up to
# UINT32_MAX, each sample's own state and function): every subcommand finishes within the bounds
# with exit 0; the unknown kind is passed over (40,000 samples counted). A batch whose weight_ns
# column is short (samples-short): its readable samples count, the batch is reported, exit 1.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
"$HOSTILE" samples s.dlh || fail "hostile samples"
every_subcommand s.dlh 0
for w in samples wait; do
  bounded "flame-$w" export -q -f folded --weight "$w" -o "$w.folded" s.dlh
  [ "$rc" = 0 ] || fail "folded --weight $w: exit $rc: $(cat "flame-$w.err")"
  bounded "svg-$w" export -q -f svg --weight "$w" -o "$w.svg" s.dlh
  [ "$rc" = 0 ] || fail "svg --weight $w: exit $rc"
done
python3 - stats-json.out <<'PY' || fail "stats --json samples of the hostile batch"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
assert s["cpu"] == 20000 and s["wait"] == 20000, (s["cpu"], s["wait"])
PY
"$HOSTILE" samples-short short.dlh || fail "hostile samples-short"
bounded short stats --json short.dlh
[ "$rc" = 1 ] || fail "samples-short: exit $rc"
grep -q 'short.dlh: inconsistent event batch' short.err || fail "samples-short: $(cat short.err)"
python3 - short.out <<'PY' || fail "samples-short: the readable samples"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
assert s["cpu"] + s["wait"] == 20000, (s["cpu"], s["wait"])
PY
echo ok
