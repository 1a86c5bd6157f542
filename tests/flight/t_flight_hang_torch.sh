# run-tests: serial timeout=600
# The acceptance case in PyTorch: torchrun --nproc-per-node 4 on the simulator (4 devices), each
# rank all-reducing a tensor every step and reading it back (tests/flight/hang_ddp.py); rank 2
# stops at step 30 in Python host code that never returns. Under dlhook record --flight-recorder
# --hang=5, every rank dumps within the hang time (+ slack) of the stall, the ranks and the
# launcher are left running, and `dlhook hang` names rank 2, the collective the others wait in
# (ncclAllReduce, seq 30) and rank 2's Python line (in wait_for_a_file_that_never_comes).
. "$ROOT/tests/torch/common.sh"
TORCHRUN="$BUILD/venv/bin/torchrun"
[ -x "$TORCHRUN" ] || skip "no $TORCHRUN"
export SIMCUDA_DEVICES=4 OMP_NUM_THREADS=1
HANG=5
"$DLHOOK_BIN" record --sim --flight-recorder --hang=$HANG -o d -- "$TORCHRUN" --standalone \
  --nproc-per-node 4 "$ROOT/tests/flight/hang_ddp.py" >out 2>err &
job=$!
pids() { ls d 2>/dev/null | sed -n 's/.*-\([0-9][0-9]*\)\.flight.*/\1/p' | sort -u; }
cleanup() {
  for p in $(pids); do kill -9 "$p" 2>/dev/null; done
  kill -9 "$job" 2>/dev/null
  wait "$job" 2>/dev/null
}
i=0
while [ "$(ls d 2>/dev/null | grep -c -- '-r[0-3]-[0-9]*\.flight\.dlh$')" -lt 4 ] && [ $i -lt 3000 ]; do
  kill -0 "$job" 2>/dev/null || { tail -n 20 err; fail "the job ended"; }
  sleep 0.1; i=$((i + 1))
done
sleep 0.5
[ "$(ls d | grep -c -- '-r[0-3]-[0-9]*\.flight\.dlh$')" -eq 4 ] || { cleanup; fail "not every rank dumped: $(ls d)"; }
grep -q "rank 2: stuck at step 30" out || { cleanup; fail "rank 2 did not get stuck: $(cat out)"; }
for p in $(pids); do kill -0 "$p" 2>/dev/null || { cleanup; fail "process $p is gone after the dumps"; }; done
"$DLHOOK_BIN" hang d >hang.txt 2>hang.err || { cleanup; fail "dlhook hang: $(cat hang.err)"; }
"$DLHOOK_BIN" hang --json d >hang.json 2>>hang.err || { cleanup; fail "dlhook hang --json"; }
for f in d/*-r[0-3]-*.flight.dlh; do "$DLHOOK_BIN" dump --type flight "$f"; done >flight.jsonl || { cleanup; fail "dump"; }
cleanup
cat hang.txt
python3 - hang.json flight.jsonl "$HANG" <<'PY' || fail "dlhook hang does not say what happened"
import json, sys
h = json.load(open(sys.argv[1]))
fl = [json.loads(l) for l in open(sys.argv[2])]
hang = float(sys.argv[3])
c = [c for c in h["comms"] if len(c["ranks"]) == 4]
assert len(c) == 1, h["comms"]
c = c[0]
assert c["missing_ranks"] == [2] and c.get("waiting_op") == "ncclAllReduce", c
m = [x for x in h["missing"] if x["rank"] == 2]
assert len(m) == 1, h["missing"]
w = m[0]["threads"][0]["where"]
assert w and w["python"] and w["file"].endswith("tests/flight/hang_ddp.py") and \
    w["function"] == "wait_for_a_file_that_never_comes" and 14 <= w["line"] <= 21, w
stall = [x for x in fl if any(cm["rank"] == 2 and cm["nranks"] == 4 for cm in x["comms"])][0]
stall = [cm for cm in stall["comms"] if cm["nranks"] == 4][0]["end_ns"]
late = [(x["time_ns"] - stall) / 1e9 for x in fl]
assert max(late) <= hang + 5, late
print(f"rank 2 at {w['file']}:{w['line']} ({w['function']}), collective seq {c['waiting_seq']}; "
      f"dumps {min(late):.1f}..{max(late):.1f} s after the stall")
PY
echo ok
