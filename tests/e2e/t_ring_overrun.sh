# A deliberately tiny ring overruns: drops are counted (calls + dropped = made), no hang. With
# folding off (every call a record) and no wait for the writer (DLHOOK_RING_WAIT_MS=0); with
# the default wait, the threads run at the writer's pace and none is dropped; with folding on,
# the same identical calls fold in the ring and none is dropped.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/threads
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
DLHOOK_RING_WAIT_MS=0 DLHOOK_FOLD=0 DLHOOK_RING_KB=4 DLHOOK_MEM_MB=1 traced "$T/tr" "$prog" 2 500000 >out.txt || fail "program failed"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
python3 - <<'PY' || fail "drops not accounted for"
import json
j = json.load(open("stats.json"))
calls = sum(a["calls"] for a in j["api"] if a["name"] == "cudaGetDevice")
print("folding off: recorded", calls, "dropped", j["dropped"])
assert j["dropped"] > 0, "expected drops with a 4 KiB ring"
assert calls + j["dropped"] == 1000000, calls + j["dropped"]
PY
DLHOOK_FOLD=0 DLHOOK_RING_KB=4 DLHOOK_MEM_MB=1 traced "$T/tw" "$prog" 2 500000 >out.txt || fail "program failed (wait)"
tr=$(one_trace "$T/tw")
"$DLHOOK_BIN" stats --json "$tr" >statsw.json || fail "stats failed"
python3 - <<'PY' || fail "calls lost with the wait for the writer"
import json
j = json.load(open("statsw.json"))
calls = sum(a["calls"] for a in j["api"] if a["name"] == "cudaGetDevice")
print("folding off, waiting for the writer: recorded", calls, "dropped", j["dropped"])
assert calls + j["dropped"] == 1000000, calls + j["dropped"]
# a wait runs out only when the writer is blocked for 100 ms
assert j["dropped"] <= 10000, j["dropped"]
PY
DLHOOK_RING_KB=4 DLHOOK_MEM_MB=1 traced "$T/tr2" "$prog" 2 500000 >out.txt || fail "program failed (folding on)"
tr=$(one_trace "$T/tr2")
"$DLHOOK_BIN" stats --json "$tr" >stats2.json || fail "stats failed"
python3 - <<'PY' || fail "folded calls not all counted"
import json
j = json.load(open("stats2.json"))
calls = sum(a["calls"] for a in j["api"] if a["name"] == "cudaGetDevice")
print("folding on: recorded", calls, "dropped", j["dropped"])
assert j["dropped"] == 0 and calls == 1000000, (calls, j["dropped"])
PY
echo ok
