# Attach, detach, attach again: two traces of one process, each holding every call of its own
# window; the second ends by itself (--duration), after which detach says there is nothing to
# detach; a third attach lasts until the program exits (its trace is finished at exit). The
# program's output and exit status stay those of a bare run.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
ARGS="--steps 600 --step-ms 10"
"$SIMRUN" "$ATTACHEE" $ARGS >bare.out 2>bare.err || { cat bare.err; fail "bare run failed"; }

start_bg run "$ATTACHEE" $ARGS --log steps.log --hold release
wait_lines steps.log 20
"$DLHOOK_BIN" attach "$PID" -o "$T/one" >a1.out 2>&1 || { cat a1.out; kill $PID; fail "attach 1 failed"; }
sleep 1.5
"$DLHOOK_BIN" detach "$PID" >d1.out 2>&1 || { cat d1.out; kill $PID; fail "detach 1 failed"; }
sleep 0.5
# (the target's memory written through ptrace only, as where /proc/PID/mem refuses writes)
DLHOOK_TEST_ATTACH_PTRACE_MEM=1 "$DLHOOK_BIN" attach "$PID" -o "$T/two" --duration 1.5 --stacks none >a2.out 2>&1 || { cat a2.out; kill $PID; fail "attach 2 failed"; }
# attaching twice at once is refused, the recording goes on
"$DLHOOK_BIN" attach "$PID" -o "$T/three" >a3.out 2>&1 && fail "a second attach while attached succeeded"
grep -q "already attached" a3.out || fail "no clear message: $(cat a3.out)"
i=0
until grep -q "duration ended" run.err; do
  i=$((i + 1)); [ $i -lt 3000 ] || fail "--duration did not end the recording"; sleep 0.01
done
"$DLHOOK_BIN" detach "$PID" >d2.out 2>&1 && fail "detach after the duration ended succeeded"
grep -q "not attached" d2.out || fail "no clear message: $(cat d2.out)"
# a third time, and the program ends while attached: that trace is finished at its exit
"$DLHOOK_BIN" attach "$PID" -o "$T/four" >a4.out 2>&1 || { cat a4.out; kill $PID; fail "attach 4 failed"; }
touch release
wait "$PID" || { cat run.err; fail "attached run failed"; }
t4=$(one_trace "$T/four")
"$DLHOOK_BIN" stats "$t4" >s4.txt 2>&1 || fail "the trace of the exit while attached is damaged: $(cat s4.txt)"
grep -q "recorded by dlhook attach (pid $PID, until the process ended)" s4.txt || fail "$(tail -5 s4.txt)"
cmp bare.out run.out || fail "output differs from the bare run"
t1=$(one_trace "$T/one"); t2=$(one_trace "$T/two")
[ "$t1" != "$t2" ] || fail "one trace file for two attaches"
check_window "$t1" steps.log 30
check_window "$t2" steps.log 30
"$DLHOOK_BIN" dump --type process "$t2" | grep -q '"stacks_mode":"none"' || fail "--stacks none not applied"
python3 - "$t1.jsonl" "$t2.jsonl" <<'PY' || fail "the two windows overlap"
import json, sys
def steps(f):
    return [json.loads(l)["args"]["value"] for l in open(f) if '"name":"cudaMemset"' in l]
s1, s2 = steps(sys.argv[1]), steps(sys.argv[2])
assert s1[-1] < s2[0], (s1[-1], s2[0])
print("windows:", s1[0], s1[-1], "and", s2[0], s2[-1])
PY
[ -z "$(ls "$T/three" 2>/dev/null)" ] || fail "the refused attach left a trace"
echo ok
