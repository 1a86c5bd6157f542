# NVTX ranges of an unmodified program reach dlhook through NVTX_INJECTION64_PATH: each step's
# "ProfilerStep#N" range with its nested forward/backward/optimizer ranges, per thread, with
# the nesting depth and the enclosing range containing the nested ones.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcudart.so.13"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" --steps 3 >out.txt 2>err.txt || { cat err.txt; fail "train failed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump --type nvtx "$tr" >nvtx.jsonl || fail "dump failed"
python3 - <<'PY' || fail "NVTX ranges wrong"
import json
r = [json.loads(l) for l in open("nvtx.jsonl")]
steps = [e for e in r if e["args"]["message"].startswith("ProfilerStep#")]
assert [e["args"]["message"] for e in sorted(steps, key=lambda e: e["start_ns"])] == \
    ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"], steps
for s in steps:
    assert s["depth"] == 0 and s["dur_ns"] > 0
    inner = [e for e in r if e["tid"] == s["tid"] and e["depth"] == 1 and
             s["start_ns"] <= e["start_ns"] and e["start_ns"] + e["dur_ns"] <= s["start_ns"] + s["dur_ns"]]
    names = [e["args"]["message"] for e in sorted(inner, key=lambda e: e["start_ns"])]
    assert names == ["forward", "backward", "optimizer"], names
ar = [e for e in r if e["args"]["message"] == "allreduce"]
assert len(ar) == 3 and all(e["depth"] == 2 for e in ar), ar
print(len(r), "NVTX ranges, nesting ok")
PY
echo ok
