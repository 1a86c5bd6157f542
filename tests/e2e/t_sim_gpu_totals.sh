# `dlhook stats` GPU totals of examples/train on the simulator equal the simulator's own
# accounting (SIMCUDA_REPORT): kernel count and time, memset and memcpy counts/bytes/time.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
SIMCUDA_REPORT=$T/sim.json DLHOOK_QUIET=1 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" --steps 5 \
  >out.txt 2>err.txt || { cat err.txt; fail "train failed"; }
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
python3 - "$T/sim.json" <<'PY' || fail "GPU totals differ from the simulator's accounting"
import json, sys
sim = json.load(open(sys.argv[1]))
g = json.load(open("stats.json"))
kinds = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
got_k = sum(k["count"] for k in g["kernels"])
print("simulator:", sim)
print("dlhook:   ", g["gpu"], "kernels", got_k)
assert got_k == sim["kernels"] and g["gpu"]["kernel_ns"] == sim["kernel_ns"]
m = g["gpu"]["memset"]
assert (m["count"], m["bytes"], m["total_ns"]) == (sim["memset"]["count"], sim["memset"]["bytes"], sim["memset"]["total_ns"])
mc = {c["kind"]: c for c in g["gpu"]["memcpy"]}
assert len(mc) == len(sim["memcpy"])
for k, v in sim["memcpy"].items():
    c = mc[kinds[int(k)]]
    assert (c["count"], c["bytes"], c["total_ns"]) == (v["count"], v["bytes"], v["total_ns"]), (k, c, v)
PY
echo ok
