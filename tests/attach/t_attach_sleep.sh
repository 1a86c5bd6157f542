# run-tests: timeout=600
# Hazard: `dlhook attach` and `dlhook detach` stop the target's threads and run calls in one of
# them; a thread stopped inside a timed sleep (nanosleep, clock_nanosleep: -ERESTART_RESTARTBLOCK)
# must go on sleeping for the time it had left, not start the whole sleep over (a 4 s nanosleep
# took 5.6-6.1 s across an attach and a detach) nor return EINTR. 20 runs, nanosleep and
# clock_nanosleep (relative) alternately: the program measures its own 4 s sleep while dlhook
# attaches 0.5 s into it and detaches 1 s later; it must take 4 s within 0.3 s and return 0
# (beyond the time it waited for a CPU meanwhile, which a loaded machine adds: its schedstat).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
SLEEPER=$BUILD/tests/attach/sleeper
need "$SLEEPER"
bad=0 # (k, not i: wait_lines uses i)
for k in $(seq 1 20); do
  if [ $((k % 2)) = 1 ]; then how=nanosleep; else how=clock_nanosleep; fi
  rm -rf "$T/tr"
  start_bg run$k "$SLEEPER" $how 4000
  wait_lines run$k.out 1
  sleep 0.5
  if ! "$DLHOOK_BIN" attach "$PID" -o "$T/tr" >a$k.out 2>&1; then
    kill $PID 2>/dev/null; wait $PID 2>/dev/null
    grep -qi "not permitted\|ptrace_scope\|cannot trace" a$k.out && skip "ptrace is not allowed here: $(head -n 2 a$k.out)"
    fail "attach $k failed: $(cat a$k.out)"
  fi
  sleep 1
  "$DLHOOK_BIN" detach "$PID" >d$k.out 2>&1 || { kill $PID; wait $PID; fail "detach $k failed: $(cat d$k.out)"; }
  wait $PID || fail "run $k: exit status $?: $(cat run$k.err)"
  set -- $(sed -n 's/^slept //p' run$k.out)
  ms=${1:-?} rc=${3:-?} runq=${7:-?}
  # what a loaded machine added (the sleeper's wait for a CPU meanwhile) does not count
  own=$ms
  case $runq in ''|*[!0-9]*) ;; *) [ "$ms" != "?" ] && own=$((ms - runq)) ;; esac
  if [ "$rc" != 0 ] || [ "$ms" = "?" ] || [ "$ms" -lt 3700 ] || [ "$own" -gt 4300 ]; then
    echo "run $k ($how): $(cat run$k.out | tr '\n' ' ')"
    bad=1
  else
    echo "run $k ($how): slept $ms ms ($runq ms of it waiting for a CPU)"
  fi
done
[ $bad = 0 ] || fail "attach and detach changed a timed sleep (above)"
echo ok
