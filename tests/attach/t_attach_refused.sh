# The failure paths of dlhook attach/detach: each gives a clear message and a non-zero exit, and
# the target runs on untouched (same output and exit status as a bare run):
#   - a process of another user (root too is refused: never another user's process);
#   - no CAP_SYS_PTRACE while the target holds capabilities dlhook lacks (ptrace EPERM);
#   - a process already traced (strace): one tracer at a time;
#   - the process exits while it is being attached (killed while dlhook holds its thread);
#   - a process without CUDA loaded (refused: nothing to record);
#   - detach of a process that was never attached; bad PIDs and usage.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
ARGS="--steps 150 --step-ms 10"
"$SIMRUN" "$ATTACHEE" $ARGS >bare.out 2>bare.err || { cat bare.err; fail "bare run failed"; }

# usage and bad PIDs
"$DLHOOK_BIN" attach >u1.out 2>&1; [ $? -eq 2 ] || fail "attach without PID: not a usage error"
"$DLHOOK_BIN" attach abc >u2.out 2>&1; [ $? -eq 2 ] || fail "attach abc: not a usage error"
"$DLHOOK_BIN" attach 1 --duration -3 >u3.out 2>&1; [ $? -eq 2 ] || fail "negative duration accepted"
"$DLHOOK_BIN" attach 1 --stacks fancy >u4.out 2>&1; [ $? -eq 2 ] || fail "bad --stacks accepted"
"$DLHOOK_BIN" attach 999999999 >u5.out 2>&1; [ $? -eq 1 ] || fail "a PID out of range: $(cat u5.out)"
sh -c 'exit 0' & gone=$!; wait $gone
"$DLHOOK_BIN" attach $gone >u6.out 2>&1; [ $? -eq 1 ] || fail "attach to an exited process: $(cat u6.out)"
grep -q "no process $gone" u6.out || fail "no clear message: $(cat u6.out)"
"$DLHOOK_BIN" detach $gone >u7.out 2>&1; [ $? -eq 1 ] || fail "detach of an exited process: $(cat u7.out)"

# a process without CUDA: refused before it is touched
sleep 30 & sl=$!
"$DLHOOK_BIN" attach $sl -o "$T/nocuda" >nc.out 2>&1; rc=$?
kill -0 $sl || fail "the process without CUDA did not survive"
kill $sl
[ $rc -eq 1 ] || fail "attach to a process without CUDA: exit $rc"
grep -q "no CUDA library loaded" nc.out || fail "no clear message: $(cat nc.out)"

start_bg run "$ATTACHEE" $ARGS --log steps.log --hold release
wait_lines steps.log 5
# detach of a process never attached
"$DLHOOK_BIN" detach "$PID" >nd.out 2>&1; [ $? -eq 1 ] || fail "detach of a process never attached"
grep -q "not attached" nd.out || fail "no clear message: $(cat nd.out)"
# already traced (strace): one tracer at a time
if command -v strace >/dev/null; then
  strace -q -p "$PID" -o /dev/null & st=$!
  i=0
  until grep -q "^TracerPid:[[:space:]]*[1-9]" /proc/$PID/status; do
    i=$((i + 1)); [ $i -lt 1000 ] || { kill $st; fail "strace never attached"; }; sleep 0.01
  done
  "$DLHOOK_BIN" attach "$PID" -o "$T/traced" >tr.out 2>&1; rc=$?
  kill $st; wait $st 2>/dev/null
  [ $rc -eq 1 ] || fail "attach to a traced process: exit $rc: $(cat tr.out)"
  grep -q "already traced by process" tr.out || fail "no clear message: $(cat tr.out)"
else
  echo "note: no strace: the already-traced case is not exercised"
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  # no CAP_SYS_PTRACE (dropped from the bounding set: root's dlhook keeps its uid, loses the
  # capability): the target, root with all capabilities, cannot be traced
  setpriv --bounding-set=-sys_ptrace "$DLHOOK_BIN" attach "$PID" -o "$T/nocap" >cap.out 2>&1; rc=$?
  [ $rc -eq 1 ] || fail "attach without CAP_SYS_PTRACE: exit $rc: $(cat cap.out)"
  grep -q "not permitted to trace process $PID" cap.out || fail "no clear message: $(cat cap.out)"
  cat cap.out
else
  echo "note: not root (or no setpriv): the CAP_SYS_PTRACE case is not exercised"
fi
# the process exits while being attached: killed while dlhook holds its chosen thread
DLHOOK_TEST_ATTACH_PAUSE_MS=3000 "$DLHOOK_BIN" attach "$PID" -o "$T/killed" >k.out 2>&1 & at=$!
i=0
until grep -q "test pause" k.out 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 3000 ] || { kill $at; fail "attach never reached its pause"; }; sleep 0.01
done
kill -9 "$PID"
wait $at; rc=$?
[ $rc -eq 1 ] || fail "attach to a process that exited: exit $rc: $(cat k.out)"
grep -q "exited during the attach" k.out || fail "no clear message: $(cat k.out)"
wait "$PID" 2>/dev/null

# a process of another user (root is refused too)
# (the other user must be able to run the programs: a checkout under a private directory, such
# as a mktemp -d clone, is not exercised)
other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
   ! other sh -c "test -r '$SIMRUN' && test -x '$ATTACHEE'" 2>/dev/null; then
  echo "note: uid 65534 cannot reach $ATTACHEE (a private directory above the checkout); a process of another user not exercised"
elif [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  ND=$(mktemp -d /tmp/dlhook-attach-other.XXXXXX) || fail "mktemp"
  chmod 1777 "$ND"
  trap 'rm -rf "$ND"' EXIT
  setpriv --reuid=65534 --regid=65534 --clear-groups "$SIMRUN" "$ATTACHEE" $ARGS --log "$ND/log" --hold "$ND/release" >nobody.out 2>nobody.err & PID=$!
  wait_lines "$ND/log" 5
  "$DLHOOK_BIN" attach "$PID" -o "$T/other" >o.out 2>&1; rc=$?
  "$DLHOOK_BIN" detach "$PID" >o2.out 2>&1; rc2=$?
  touch "$ND/release"
  wait "$PID" || { cat nobody.err; fail "the other user's process did not survive"; }
  cmp bare.out nobody.out || fail "the other user's process printed something else"
  [ $rc -eq 1 ] && [ $rc2 -eq 1 ] || fail "attach/detach to another user's process: exit $rc/$rc2"
  grep -q "belongs to uid 65534" o.out || fail "no clear message: $(cat o.out)"
  grep -q "belongs to uid 65534" o2.out || fail "no clear message: $(cat o2.out)"
  [ ! -s nobody.err ] || fail "the other user's process got messages: $(cat nobody.err)"
else
  echo "note: not root (or no setpriv): a process of another user cannot be started here; not exercised"
fi
echo ok
