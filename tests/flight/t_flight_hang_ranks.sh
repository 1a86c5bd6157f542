# run-tests: serial timeout=400
# A hung 4-rank job on the simulator (examples/train --ranks 4, NCCL all-reduces every step):
# rank 2 stops at step 30 in host code (stall_in_host_code, spinning), the others wait in their
# next all-reduce. With DLHOOK_MODE=flight and DLHOOK_HANG_S=3, within the hang time (+ slack for
# a loaded machine) of the stall every rank writes its dump (ranks 0, 1, 3: a call in flight for
# 3 s; rank 2: the job's request file), the job is left running (dlhook neither kills nor
# unblocks it), and `dlhook hang` names rank 2 as the one that never entered the collective
# the others wait in (seq, ncclAllReduce) and its line: stall_in_host_code in train.cu.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"; need "$BUILD/examples/train"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "simulated CUDA stack not built"
HANG=3
mkdir -p d
DLHOOK_MODE=flight DLHOOK_HANG_S=$HANG DLHOOK_OUTPUT="$T/d/" "$SIMRUN" env LD_PRELOAD="$DLHOOK_LIB" \
  "$BUILD/examples/train" --ranks 4 --steps 100000 --slow-rank 2 --stall-step 30 >out 2>err &
job=$!
cleanup() {
  for f in d/*.flight*.dlh; do # the ranks (their pids are in the dump names), then the launcher
    p=$(echo "$f" | sed -n 's/.*-\([0-9][0-9]*\)\.flight.*/\1/p')
    [ -n "$p" ] && [ "$p" != "$job" ] && kill -9 "$p" 2>/dev/null
  done
  kill -9 "$job" 2>/dev/null
  wait "$job" 2>/dev/null
}
i=0
while [ "$(ls d 2>/dev/null | grep -c -- '-r[0-3]-[0-9]*\.flight\.dlh$')" -lt 4 ] && [ $i -lt 1800 ]; do
  kill -0 "$job" 2>/dev/null || { cat err; fail "the job ended"; }
  sleep 0.1; i=$((i + 1))
done
sleep 0.5
[ "$(ls d | grep -c -- '-r[0-3]-[0-9]*\.flight\.dlh$')" -eq 4 ] || { cleanup; fail "not every rank dumped: $(ls d)"; }
# the job goes on hanging: every rank still there
for f in d/*-r[0-3]-*.flight.dlh; do
  p=$(echo "$f" | sed -n 's/.*-\([0-9][0-9]*\)\.flight.*/\1/p')
  kill -0 "$p" 2>/dev/null || { cleanup; fail "rank process $p is gone after the dumps"; }
done
kill -0 "$job" 2>/dev/null || { cleanup; fail "the launcher is gone"; }
grep "flight recorder: wrote" err | sed 's/^/  /'
"$DLHOOK_BIN" hang d >hang.txt 2>hang.err || { cleanup; fail "dlhook hang failed: $(cat hang.err)"; }
"$DLHOOK_BIN" hang --json d >hang.json 2>>hang.err || { cleanup; fail "dlhook hang --json failed"; }
for f in d/*-r[0-3]-*.flight.dlh; do "$DLHOOK_BIN" dump --type flight "$f"; done >flight.jsonl || { cleanup; fail "dump of a dump"; }
"$DLHOOK_BIN" stats d/*-r[0-3]-*.flight.dlh >stats.txt 2>stats.err || { cleanup; fail "dlhook stats of the dumps: $(cat stats.err)"; }
cleanup
cat hang.txt
python3 - hang.json flight.jsonl "$HANG" <<'PY' || fail "dlhook hang does not say what happened"
import json, sys
h = json.load(open(sys.argv[1]))
fl = [json.loads(l) for l in open(sys.argv[2])]
hang = float(sys.argv[3])
assert len(h["comms"]) == 1, h["comms"]
c = h["comms"][0]
assert c["nranks"] == 4 and len(c["ranks"]) == 4, c
assert c["missing_ranks"] == [2], c["missing_ranks"]
assert c.get("waiting_op") == "ncclAllReduce", c
seqs = {r["rank"]: r["last_seq"] for r in c["ranks"]}
assert c["waiting_seq"] == seqs[2] + 1 and all(seqs[r] >= c["waiting_seq"] for r in (0, 1, 3)), seqs
assert all(r["in_call"] for r in c["ranks"] if r["rank"] != 2), c["ranks"]
m = h["missing"]
assert len(m) == 1 and m[0]["rank"] == 2, m
main = m[0]["threads"][0]
w = main["where"]
assert w and "stall_in_host_code" in w["function"] and w["file"].endswith("examples/train.cu") and w["line"] > 0, main
assert not main["in_call"], main
# every rank dumped within the hang time of the stall (rank 2's last all-reduce), + 4 s slack
stall = [x for x in fl if any(cm["rank"] == 2 for cm in x["comms"])][0]["comms"][0]["end_ns"]
for x in fl:
    late = (x["time_ns"] - stall) / 1e9
    assert late <= hang + 4, f"a dump {late:.1f} s after the stall"
    assert x["reason"] in (3, 5), x["reason"]
print(f"rank 2 named at {w['file']}:{w['line']} ({w['function']}); dumps "
      f"{min((x['time_ns'] - stall) / 1e9 for x in fl):.1f}..{max((x['time_ns'] - stall) / 1e9 for x in fl):.1f} s after the stall")
PY
grep -q "ncclAllReduce" stats.txt || fail "dlhook stats of the dumps shows no all-reduce"
grep -q "rank 2 never entered it\|never entered seq" hang.txt || fail "the text report does not name rank 2"
echo ok
