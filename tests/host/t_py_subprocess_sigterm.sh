# Hazard: CPython >= 3.10 starts subprocess children with vfork; the child resets its signal
# handlers with sigaction() in the parent's memory. dlhook's table of the program's handlers must
# not be rewritten there: after a subprocess call, a job's SIGTERM handler (save a checkpoint)
# still runs, and the job exits 0 as it does without dlhook. The trace is complete: every call
# before the signal, and the trailer.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
command -v python3 >/dev/null || skip "no python3"
need_cudart
PY="$ROOT/tests/host/py_checkpoint.py"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
python3 "$PY" "$CUDART" 500 >plain.out 2>plain.err; want=$?
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.err)"
traced "$T/tr" python3 "$PY" "$CUDART" 500 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want: $(cat traced.out traced.err)"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "trace unreadable"
expect_calls stats.json cudaGetDeviceCount=1000
echo "ok: SIGTERM handler ran after subprocess.run, exit $rc, 1000 calls in the trace"
