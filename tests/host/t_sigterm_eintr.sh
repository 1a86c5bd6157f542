# Hazard: a C program installs its SIGTERM handler without SA_RESTART and expects a blocking
# read() to fail with EINTR when SIGTERM comes (EINTR-based shutdown). dlhook's front handler
# keeps the program's flags: the read is interrupted, as without dlhook (a restarted read would
# return a byte sent 3 s later instead). The trace has every call.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1
"$P" eintr >plain.out 2>plain.err; want=$?
grep -q EINTR plain.out || fail "untraced run: $(cat plain.out plain.err)"
traced "$T/tr" "$P" eintr >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
"$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "trace unreadable"
expect_calls stats.json cudaGetDeviceCount=200
echo "ok: $(cat traced.out)"
