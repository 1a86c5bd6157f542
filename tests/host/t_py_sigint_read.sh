# Hazard: dlhook's front handler for SIGINT/SIGTERM must keep the program's own flags. CPython
# installs its SIGINT handler without SA_RESTART and relies on EINTR: Ctrl-C during a blocking
# os.read() (after a subprocess call) raises KeyboardInterrupt, exactly as without dlhook; with a
# forced SA_RESTART the read would restart and the job would not stop.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
command -v python3 >/dev/null || skip "no python3"
need_cudart
PY="$ROOT/tests/host/py_sigint_read.py"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
python3 "$PY" "$CUDART" 200 >plain.out 2>plain.err; want=$?
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.out plain.err)"
traced "$T/tr" python3 "$PY" "$CUDART" 200 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want: $(cat traced.out traced.err)"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "trace unreadable"
expect_calls stats.json cudaGetDeviceCount=200
echo "ok: KeyboardInterrupt in os.read, exit $rc, 200 calls in the trace"
