# Hazard: DLHOOK_SIGNAL=11 (or 7, 8, 4, 5, 6) would install dlhook's capture toggle on a fault
# signal: a segfault then returns from the handler, faults again, forever. The library refuses
# such a DLHOOK_SIGNAL (one warning, SIGUSR2 is used): the program dies of its fault exactly as
# without dlhook, same exit status.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
ulimit -c 0
for c in "SEGV segv" "11 segv" "7 bus" "BUS bus" "8 fpe" "4 ill" "6 abort" "5 trap"; do
  set -- $c
  timeout 10 "$V" crash $2 100 >plain.out 2>/dev/null; want=$?
  DLHOOK_SIGNAL=$1 timeout 20 env LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/tr-$1/" "$V" crash $2 100 >traced.out 2>traced.err; rc=$?
  [ "$rc" != 124 ] || fail "DLHOOK_SIGNAL=$1, $2: the program hangs (timed out)"
  [ "$rc" = "$want" ] || fail "DLHOOK_SIGNAL=$1, $2: exit $rc, untraced $want: $(cat traced.err)"
  cmp -s plain.out traced.out || fail "DLHOOK_SIGNAL=$1, $2: output differs"
  grep -q "ignoring DLHOOK_SIGNAL" traced.err || fail "DLHOOK_SIGNAL=$1: no warning: $(cat traced.err)"
  echo "DLHOOK_SIGNAL=$1 refused; $2 ends with exit $rc as untraced"
done
