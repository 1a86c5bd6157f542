# dlhook attach on a running CUDA program started without dlhook (simulator): attached after
# ~2 s, detached after ~3 s. The trace holds every call the program made in that window (checked
# against the program's own per-step log: check_window in common.sh) with the GPU work linked to
# it; the program runs to completion with the same output and exit status as a bare run.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
ARGS="--steps 700 --step-ms 10 --exit 3"
"$SIMRUN" "$ATTACHEE" $ARGS >bare.out 2>bare.err; brc=$?
[ $brc -eq 3 ] || { cat bare.err; fail "bare run: exit $brc, expected 3"; }

start_bg run "$ATTACHEE" $ARGS --log steps.log --hold release
wait_lines steps.log 1
sleep 2
"$DLHOOK_BIN" attach "$PID" -o "$T/tr" >attach.out 2>attach.err || { cat attach.err; kill $PID; fail "attach failed"; }
cat attach.out
grep -q "recording to $T/tr/.*\.dlh" attach.out || fail "attach does not name the trace: $(cat attach.out)"
sleep 3
"$DLHOOK_BIN" detach "$PID" >detach.out 2>detach.err || { cat detach.err; kill $PID; fail "detach failed"; }
cat detach.out
kill -0 "$PID" 2>/dev/null || fail "the program did not survive attach/detach"
touch release
wait "$PID"; rc=$?
[ $rc -eq 3 ] || { cat run.err; fail "attached run: exit $rc, expected 3"; }
cmp bare.out run.out || fail "output differs from the bare run: $(cat run.out)"
# nothing of dlhook active after detach: its stderr lines are the attach/detach notices only
grep -v '^dlhook: \(attached\|detached\|wrote\)' run.err && fail "unexpected messages on the program's stderr"
tr=$(one_trace "$T/tr")
check_window "$tr" steps.log 100
"$DLHOOK_BIN" stats "$tr" >stats.txt || fail "stats failed"
grep -q "recorded by dlhook attach (pid $PID, until detach)" stats.txt || fail "stats does not say attached: $(tail stats.txt)"
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats --json failed"
pyassert stats.json 'j["attached"][0]["detached"] and len(j["attached"][0]["not_hooked"]) >= 1'
echo ok
