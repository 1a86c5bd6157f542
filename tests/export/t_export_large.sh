# Large traces stream: memory stays bounded (peak RSS far below what holding the events would
# take), no progress line when stderr is not a terminal (t_progress_tty.sh shows it on one), and
# flame-graph weights still add up.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
[ -x /usr/bin/time ] || skip "/usr/bin/time missing (Debian package time)"
$GEN big.dlh --events 2000000 --threads 4 || fail gentrace
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }
for f in folded perfetto kineto tensorboard; do
  DLHOOK_PROGRESS_AFTER=0 /usr/bin/time -v -o time.$f "$DLHOOK_BIN" export -f $f -o out.$f big.dlh 2>err.$f ||
    fail "export $f: $(tail -n 5 err.$f)"
  grep -q 'events/s' err.$f && fail "$f: progress on stderr, which is not a terminal: $(head -c 300 err.$f)"
  kb=$(rss time.$f)
  echo "$f: peak RSS $kb KiB"
  # 2 million events: anything that kept them would need hundreds of MiB
  [ "$kb" -lt 122880 ] || fail "$f: peak RSS $kb KiB"
done
all=$(gpu_total big.dlh kernel,memcpy,memset)
[ "$(awk '{s += $NF} END {print s}' out.folded)" = "$all" ] || fail "folded weights differ on the large trace"
echo ok
