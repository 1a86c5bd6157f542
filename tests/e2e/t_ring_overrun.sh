# A deliberately tiny ring overruns: drops are counted (calls + dropped = made), no hang.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/threads
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
DLHOOK_RING_KB=4 DLHOOK_MEM_MB=1 traced "$T/tr" "$prog" 2 500000 >out.txt || fail "program failed"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
python3 - <<'PY' || fail "drops not accounted for"
import json
j = json.load(open("stats.json"))
calls = sum(a["calls"] for a in j["api"] if a["name"] == "cudaGetDevice")
print("recorded", calls, "dropped", j["dropped"])
assert j["dropped"] > 0, "expected drops with a 4 KiB ring"
assert calls + j["dropped"] == 1000000, calls + j["dropped"]
PY
echo ok
