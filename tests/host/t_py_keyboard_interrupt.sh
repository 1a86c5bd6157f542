# Hazard: an uncaught KeyboardInterrupt ends CPython by SIGINT with the default action put back
# (a kill of itself). A job started with SIGINT ignored (a background job of a non-interactive
# shell, nohup) lost its whole trace that way: dlhook saw SIGINT ignored at start-up and let
# the later default through, so nothing flushed it (0 of 201 calls). Whether SIGINT was ignored
# at start-up or not, and whether the interrupt is raised or comes by the signal, the job dies of
# SIGINT as untraced (exit 130) and its trace has every call, the last one too.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
command -v python3 >/dev/null || skip "no python3"
need_cudart
PY="$ROOT/tests/host/py_keyboard_interrupt.py"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
for start in default ignored; do
  for how in raise signal; do
    trap=; [ $start = ignored ] && trap="trap '' INT;"
    sh -c "$trap exec python3 \"$PY\" \"$CUDART\" 200 $how" >plain.out 2>plain.err; want=$?
    [ "$want" = 130 ] || fail "$start/$how: untraced exit $want: $(cat plain.out plain.err)"
    rm -rf "$T/tr"
    sh -c "$trap DLHOOK_OUTPUT=\"$T/tr/\" LD_PRELOAD=\"$DLHOOK_PRELOAD\" exec python3 \"$PY\" \"$CUDART\" 200 $how" \
      >traced.out 2>traced.err; rc=$?
    [ "$rc" = "$want" ] || fail "$start/$how: exit $rc, untraced $want: $(cat traced.out traced.err)"
    cmp -s plain.out traced.out || fail "$start/$how: output differs: $(cat traced.out)"
    "$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "$start/$how: trace unreadable"
    expect_calls stats.json cudaGetDeviceCount=200 cudaSetDevice=1
  done
done
echo "ok: uncaught KeyboardInterrupt (raised or by SIGINT, SIGINT ignored at start or not): exit 130, 201 calls"
