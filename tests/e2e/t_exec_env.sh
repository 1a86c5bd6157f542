# exec and posix_spawn with a cleaned environment: the preload and the DLHOOK_* settings still
# reach the new program (its calls land in DLHOOK_OUTPUT); DLHOOK_FOLLOW_EXEC=0 turns it off.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/execer
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
for mode in execve execvp spawn; do
  DLHOOK_QUIET=1 traced "$T/$mode" "$prog" $mode >$mode.out || fail "$mode: exit $?"
  grep -q "child LD_PRELOAD=set" $mode.out || fail "$mode: the child lost LD_PRELOAD"
  "$DLHOOK_BIN" stats --json "$T"/$mode/*.dlh >$mode.json || fail "$mode: traces unreadable"
  expect_calls $mode.json cudaRuntimeGetVersion=3 cudaGetDeviceCount=5
  pyassert $mode.json 'j["traces"] == 2'
done
DLHOOK_FOLLOW_EXEC=0 DLHOOK_QUIET=1 traced "$T/off" "$prog" spawn >off.out || fail "off: exit $?"
grep -q "child LD_PRELOAD=unset" off.out || fail "DLHOOK_FOLLOW_EXEC=0: the child was still preloaded"
"$DLHOOK_BIN" stats --json "$T"/off/*.dlh >off.json
pyassert off.json 'j["traces"] == 1'
echo ok
