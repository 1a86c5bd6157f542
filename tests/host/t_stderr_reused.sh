# Hazard: a program closes fd 2 and opens its own data file there (daemons, tools that log to
# fd 2 by number). dlhook's closing line, and its warnings even with DLHOOK_QUIET=1, went into
# that file. dlhook's messages go only to the stream fd 2 was when dlhook started: the program's
# file must be byte for byte what it is untraced, with the trace still written.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/limitsprog
need "$P"; need "$DLHOOK_LIB"
"$P" stderr "$T/plain.data" 100 >plain.out 2>plain.err; want=$?
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.err)"
# the closing line ("wrote ..."): printed by default
traced "$T/tr" "$P" stderr "$T/traced.data" 100 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want"
cmp -s plain.data traced.data || fail "the program's data file differs: $(cat traced.data)"
one_trace "$T/tr" >/dev/null
# a warning (the trace cannot be created, at the first call: fd 2 is the program's by then)
DLHOOK_QUIET=1 DLHOOK_OUTPUT="$T/missing/dir/x.dlh" LD_PRELOAD="$DLHOOK_PRELOAD" \
  "$P" stderr "$T/quiet.data" 100 >quiet.out 2>quiet.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc with a warning, untraced $want"
cmp -s plain.data quiet.data || fail "the program's data file got dlhook's warning: $(cat quiet.data)"
echo "ok: the program's fd-2 file is unchanged ($(wc -l <traced.data) lines), with the closing line and with a warning"
