# The trace is complete (trailer written) on every normal way a program ends: return from
# main, exit() from another thread, SIGTERM/SIGINT with default action (the process still dies
# of the signal), and the program's own SIGINT handler (chained; its exit code survives).
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/signals
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
complete() { # trace dir: a trailer is present and the reader sees no damage
  tr=$(one_trace "$1")
  "$DLHOOK_BIN" dump "$tr" >"$1.jsonl" || fail "dump of $tr reported damage"
  grep -q '"type":"summary"' "$1.jsonl" || fail "no summary/trailer in $tr"
  n=$(grep -c '"name":"cudaGetDevice"' "$1.jsonl")
  [ "$n" -gt 0 ] || fail "no calls recorded in $tr"
  echo "$1: $n calls"
}
# exit() from a second thread
traced "$T/a" "$prog" exitthread >/dev/null; rc=$?
[ $rc = 5 ] || fail "exitthread: exit code $rc, expected 5"
complete "$T/a"
for sig in TERM INT; do
  case $sig in TERM) num=15 ;; INT) num=2 ;; esac
  # background jobs of a script start with SIGINT ignored: give the program the default back
  env --default-signal=$sig DLHOOK_OUTPUT="$T/s$sig/" LD_PRELOAD="$DLHOOK_LIB" "$prog" \
    >out$sig.txt 2>err$sig.txt & pid=$!
  for i in $(seq 600); do grep -q ready out$sig.txt 2>/dev/null && break; sleep 0.05; done
  sleep 0.2; kill -$sig $pid; wait $pid; rc=$?
  want=$((128 + num))
  [ $rc = $want ] || fail "SIG$sig: exit status $rc, expected $want (death by signal)"
  complete "$T/s$sig"
done
# the program's own handler runs and decides the exit code
env DLHOOK_OUTPUT="$T/h/" LD_PRELOAD="$DLHOOK_LIB" "$prog" handler >outh.txt & pid=$!
for i in $(seq 600); do grep -q ready outh.txt 2>/dev/null && break; sleep 0.05; done
sleep 0.2; kill -INT $pid; wait $pid; rc=$?
[ $rc = 3 ] || fail "own handler: exit code $rc, expected 3"
grep -q "handler ran for signal 2" outh.txt || fail "the program's handler did not run"
complete "$T/h"
echo ok
