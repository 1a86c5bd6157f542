# Hazard: a program whose file size limit (RLIMIT_FSIZE) is smaller than the trace's first write
# must not be killed by SIGXFSZ at its first CUDA call. Every trace write happens on dlhook's
# writer thread, which blocks signals: the write fails with EFBIG there, dlhook warns once and
# the program goes on with its output and exit status unchanged.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"
# stdout goes through a pipe: the limit applies to files only (the program's own output stays)
{ "$P" fsize 1000 2>plain.err; echo $? >plain.rc; } | cat >plain.out; want=$(cat plain.rc)
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.err)"
{ traced "$T/tr" "$P" fsize 1000 2>traced.err; echo $? >traced.rc; } | cat >traced.out; rc=$(cat traced.rc)
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want (153 = SIGXFSZ): $(cat traced.err)"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
w=$(grep -c 'dlhook: warning' traced.err)
[ "$w" -le 1 ] || fail "$w warnings: $(cat traced.err)"
echo "ok: exit $rc under an 8-byte file size limit; $(grep 'dlhook: warning' traced.err)"
