# Hazard: a stack overflow's SIGSEGV cannot run a handler on the overflowed stack. dlhook gives
# each recording thread an alternate signal stack (set up lazily, at the thread's first recorded
# call), so the fatal-signal flush still runs: the trace is complete (every call, and the
# trailer), and the program dies of SIGSEGV as without dlhook.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
ulimit -c 0
"$P" overflow 5000 >plain.out 2>/dev/null; want=$?
[ "$want" = 139 ] || fail "untraced run: exit $want (expected 139, SIGSEGV)"
traced "$T/tr" "$P" overflow 5000 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want: $(cat traced.err)"
cmp -s plain.out traced.out || fail "output differs"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "trace damaged: $(cat traced.err)"
expect_calls stats.json cudaGetDeviceCount=5000
"$DLHOOK_BIN" dump "$tr" 2>/dev/null | grep '"type":"summary"' | grep -q '"complete":true' ||
  fail "no trailer: $("$DLHOOK_BIN" dump "$tr" 2>&1 | grep summary)"
echo "ok: stack overflow: exit $rc, 5000 calls and the trailer in the trace"
