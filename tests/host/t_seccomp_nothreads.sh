# Hazard: a seccomp filter (a container's, a sandbox's) that forbids new threads. dlhook's writer
# thread cannot be created: the program must run as without dlhook (output, exit status, its own
# pthread_create failing the same way), dlhook warns once, and no trace file is left that
# `dlhook stats` rejects (it left an empty one): a trace exists only once it has been started.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/limitsprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
"$P" nothreads 100 >plain.out 2>plain.err; want=$?
[ "$want" = 77 ] && skip "$(cat plain.out)"
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.out plain.err)"
traced "$T/tr" "$P" nothreads 100 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want: $(cat traced.err)"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
w=$(grep -c 'dlhook: warning' traced.err)
[ "$w" = 1 ] || fail "$w warnings, expected 1: $(cat traced.err)"
for f in $(find "$T/tr" -type f 2>/dev/null); do
  "$DLHOOK_BIN" stats "$f" >stats.out 2>stats.err || fail "a trace that does not read is left: $f ($(stat -c %s "$f") bytes): $(cat stats.err)"
done
echo "ok: $(cat traced.out); $(grep 'dlhook: warning' traced.err); files left: $(find "$T/tr" -type f 2>/dev/null | wc -l)"
