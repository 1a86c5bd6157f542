# Hazard: a program started with SIGTERM ignored (nohup, a shell's `trap '' TERM`, a supervisor)
# sets a handler of its own that puts the default back and re-raises, or puts the default back
# itself and later gets SIGTERM. dlhook installed its front handler only at start-up, where the
# signal was ignored, and never later: the process died of SIGTERM with its calls unwritten (0 of
# 300 in the trace). The trace must be complete whenever the process dies of the signal.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/silentprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
for mode in reraise dfl; do
  sh -c "trap '' TERM; exec \"$P\" $mode 300" >plain.out 2>&1; want=$?
  [ "$want" = 143 ] || fail "$mode: untraced exit $want, not SIGTERM: $(cat plain.out)"
  rm -rf "$T/tr"
  sh -c "trap '' TERM; DLHOOK_OUTPUT=\"$T/tr/\" LD_PRELOAD=\"$DLHOOK_PRELOAD\" exec \"$P\" $mode 300" \
    >traced.out 2>&1; rc=$?
  [ "$rc" = "$want" ] || fail "$mode: exit $rc, untraced $want: $(cat traced.out)"
  "$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "$mode: trace unreadable"
  expect_calls stats.json cudaGetDeviceCount=300
done
echo "ok: died of SIGTERM that was ignored at start, 300 calls in the trace (reraise, dfl)"
