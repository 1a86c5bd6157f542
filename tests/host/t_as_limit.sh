# Hazard: a tight RLIMIT_AS (ulimit -v) that the program lives within untraced. Address space
# dlhook reserves is address space the program cannot have: at start-up dlhook reserved the
# stack arena and tables (137 MiB), so what the program then loads before its first CUDA call
# (libcudart, its data) failed to fit up to 128 MiB above its own peak. Under a finite limit
# dlhook's budget is a sixteenth of it and its reservations (the arena, rings, its threads'
# stacks) stay within the budget: from 32 MiB above the program's peak on, the program's output
# and exit status are as untraced, and the trace reads. Each limit is tried 5 times (the
# address-space layout is random).
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/limitsprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
(ulimit -v 1000000) 2>/dev/null || skip "cannot set RLIMIT_AS"
"$P" as 64 100 >plain.out 2>plain.err || fail "untraced run failed: $(cat plain.out plain.err)"
peak=$(sed -n 's/^vm_peak_kb //p' plain.err)
[ -n "$peak" ] || fail "no VmPeak: $(cat plain.err)"
tried=0
for round in 1 2 3 4 5; do
  for slack in 32 48 64 96 128 160 192; do
    lim=$((peak + slack * 1024))
    (ulimit -v $lim; exec "$P" as 64 100) >bare.out 2>/dev/null; want=$?
    [ "$want" = 0 ] || continue # the program itself does not fit (layout): not this case
    rm -rf "$T/tr"
    (ulimit -v $lim; DLHOOK_QUIET=1 DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_PRELOAD" exec "$P" as 64 100) \
      >traced.out 2>traced.err; rc=$?
    [ "$rc" = "$want" ] || fail "RLIMIT_AS $((lim >> 10)) MiB ($slack MiB above the program's peak): exit $rc, untraced $want: $(cat traced.out traced.err)"
    cmp -s bare.out traced.out || fail "RLIMIT_AS $((lim >> 10)) MiB ($slack MiB above the program's peak): $(cat traced.out), untraced $(cat bare.out)"
    w=$(grep -c 'dlhook: warning' traced.err)
    [ "$w" -le 1 ] || fail "$slack MiB above: $w warnings: $(cat traced.err)"
    "$DLHOOK_BIN" stats "$(one_trace "$T/tr")" >stats.out 2>&1 || fail "$slack MiB above: the trace does not read: $(cat stats.out)"
    tried=$((tried + 1))
  done
done
[ "$tried" -gt 0 ] || skip "the program does not fit under any of the limits here"
echo "ok: the program's peak is $((peak >> 10)) MiB; $tried runs from 32 to 192 MiB above it, all as untraced"
