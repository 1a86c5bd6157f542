# The live-bytes counter track: the Kineto export of examples/train (simulator) has a
# "GPU memory" counter whose maximum equals the ledger's peak (dlhook stats --memory).
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcudart.so.13"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
DLHOOK_QUIET=1 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" --steps 3 >out.txt 2>&1 || fail "train failed"
"$DLHOOK_BIN" export -q --format kineto -o "$T/k" "$T"/tr/*.dlh || fail "export failed"
"$DLHOOK_BIN" stats --memory --json "$T"/tr/*.dlh >mem.json || fail "stats --memory failed"
python3 - "$T/k" <<'PY' || fail "memory counter track wrong"
import glob, gzip, json, sys
j = json.load(gzip.open(glob.glob(sys.argv[1] + "/*.json.gz")[0]))
c = [e for e in j["traceEvents"] if e.get("ph") == "C" and e.get("name") == "GPU memory"]
peak = json.load(open("mem.json"))["peak_bytes"]
print(len(c), "counter samples; max", max(e["args"]["live_bytes"] for e in c), "ledger peak", peak)
assert c and max(e["args"]["live_bytes"] for e in c) == peak
PY
echo ok
