# Hazard: DLHOOK_OUTPUT naming a device or a FIFO. /dev/null, /dev/full and /dev/stdout created
# new files in /dev (null.1: the name is taken, so the next free name was used). A trace is
# never created inside /dev or a pseudo file system, and is never a stream into something else:
# /dev/null records nothing and says so once (silent with DLHOOK_QUIET=1); /dev/full,
# /dev/stdout, a FIFO and the directory /dev itself are refused with one warning. The program's
# output and exit status are as untraced, and no FIFO is opened (a FIFO without a reader would
# block). /dev/shm, a file system of its own, still takes traces.
# run-tests: serial
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"
export DLHOOK_STACKS=none
"$V" out 100 >plain.out 2>/dev/null; want=$?
mkfifo fifo || skip "cannot make a FIFO here"
touch start; sleep 1
new_in_dev() { find /dev -maxdepth 2 -newer "$T/start" -type f 2>/dev/null; }
for o in /dev/null /dev/full /dev/stdout /dev/ "$T/fifo"; do
  timeout 30 env DLHOOK_OUTPUT="$o" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >out.txt 2>err.txt; rc=$?
  # what it wrote where it must not: listed, and removed (only regular files dlhook wrote)
  bad=$(new_in_dev | while read -r f; do head -c 8 "$f" | grep -q DLHTRACE && echo "$f"; done)
  for f in $bad; do rm -f "$f"; done
  [ -z "$bad" ] || fail "DLHOOK_OUTPUT=$o created $bad"
  [ "$rc" = "$want" ] || fail "DLHOOK_OUTPUT=$o: exit $rc, untraced $want: $(cat err.txt)"
  cmp -s plain.out out.txt || fail "DLHOOK_OUTPUT=$o: output differs: $(head -c 300 out.txt)"
  n=$(grep -c '^dlhook:' err.txt)
  [ "$n" = 1 ] || fail "DLHOOK_OUTPUT=$o: $n messages, expected 1: $(cat err.txt)"
  case $o in
    /dev/null) grep -q 'nothing is recorded' err.txt || fail "/dev/null: $(cat err.txt)" ;;
    *) grep -q 'dlhook: warning: cannot record to' err.txt || fail "$o: $(cat err.txt)" ;;
  esac
  echo "$o: $(cat err.txt)"
done
DLHOOK_QUIET=1 DLHOOK_OUTPUT=/dev/null LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >out.txt 2>err.txt
[ ! -s err.txt ] || fail "DLHOOK_QUIET=1 with /dev/null: $(cat err.txt)"
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d /dev)" ]; then
  d=$(mktemp -d /dev/shm/dlhook-test.XXXXXX)
  DLHOOK_QUIET=1 DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >/dev/null 2>err.txt
  n=$(ls "$d" | wc -l); rm -rf "$d"
  [ "$n" = 1 ] || fail "no trace in /dev/shm: $(cat err.txt)"
fi
echo "ok: nothing created in /dev; one message each"
