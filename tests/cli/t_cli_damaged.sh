# Damaged, truncated, empty and foreign files: everything readable is printed, then one error
# line on stderr and exit 1.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mktrace" a.dlh || fail "mktrace"
size=$(wc -c <a.dlh)
"$D" dump --type api a.dlh >full.jsonl || fail "dump full"

# every truncation point: exit 0 only at frame boundaries; output is a prefix of the full dump
prev=-1; boundaries=0
i=16
while [ "$i" -lt "$size" ]; do
  head -c "$i" a.dlh >cut.dlh
  "$D" dump --type api cut.dlh >cut.jsonl 2>err
  rc=$?
  n=$(wc -l <cut.jsonl)
  head -n "$n" full.jsonl | cmp -s - cut.jsonl || fail "cut at $i: output is not a prefix"
  [ "$n" -ge "$prev" ] || fail "cut at $i: fewer events ($n) than a shorter cut ($prev)"
  prev=$n
  if [ "$rc" -eq 0 ]; then
    boundaries=$((boundaries + 1)); [ -s err ] && fail "cut at $i: exit 0 with stderr: $(cat err)"
  else
    [ "$rc" -eq 1 ] || fail "cut at $i: exit $rc"
    [ "$(wc -l <err)" -eq 1 ] || fail "cut at $i: $(cat err)"
    grep -q "cut.dlh: damaged trace: .*offset" err || fail "cut at $i: $(cat err)"
  fi
  i=$((i + 7))
done
[ "$prev" -gt 0 ] || fail "no events from truncated files"

# truncated in the last frame: all earlier frames printed, with the summary, then the error
head -c $((size - 5)) a.dlh >t.dlh
"$D" dump t.dlh >t.jsonl 2>err
[ $? -eq 1 ] || fail "truncated: exit status"
grep -q '"type":"summary"' t.jsonl || fail "truncated: no summary"
grep -q '"complete":false' t.jsonl || fail "truncated: summary says complete"
grep -q 'truncated frame at offset' err || fail "truncated: $(cat err)"
"$D" stats --json t.dlh >ts.json 2>err
[ $? -eq 1 ] || fail "stats truncated: exit status"
pyassert ts.json 'j["traces"] == 1 and j["calls"] > 0'

# corrupt bytes near the end (the first frames stay intact)
python3 - a.dlh c.dlh <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(b) - 12, len(b) - 4): b[i] ^= 0x5a
open(sys.argv[2], "wb").write(b)
PY
"$D" dump c.dlh >c.jsonl 2>err
[ $? -eq 1 ] || fail "corrupt: exit status"
grep -q '"type":"process"' c.jsonl || fail "corrupt: lost the first frame"
grep -q "c.dlh: damaged trace" err || fail "corrupt: $(cat err)"

# empty, foreign, wrong version
: >empty.dlh
"$D" dump empty.dlh >o 2>err; [ $? -eq 1 ] || fail "empty: exit"
grep -qx "dlhook: empty.dlh: empty file" err || fail "empty: $(cat err)"
echo "hello, world" >foreign.dlh
"$D" stats foreign.dlh >o 2>err; [ $? -eq 1 ] || fail "foreign: exit"
grep -q "not a dlhook trace" err || fail "foreign: $(cat err)"
printf 'DLHTRACE\011\000\000\000\000\000\000\000' >v9.dlh
"$D" dump v9.dlh >o 2>err; [ $? -eq 1 ] || fail "version: exit"
grep -q "unsupported format version 9" err || fail "version: $(cat err)"
echo ok
