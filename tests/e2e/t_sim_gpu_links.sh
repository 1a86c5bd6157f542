# On the simulator, examples/train under dlhook: every kernel, memcpy and memset links (corr) to
# the API call that launched it, GPU times follow their launches, and the GPU records carry
# the fields CUPTI gives (names, grid/block, bytes and copy kinds).
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" --steps 4 >out.txt 2>err.txt || { cat err.txt; fail "train failed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dump failed"
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
python3 - <<'PY' || fail "GPU records do not link to their calls"
import json, collections
ev = [json.loads(l) for l in open("dump.jsonl")]
api = {e["corr"]: e for e in ev if e["type"] == "api" and e.get("corr")}
gpu = [e for e in ev if e["type"] in ("kernel", "memcpy", "memset")]
kinds = collections.Counter(e["type"] for e in gpu)
print("gpu records:", dict(kinds), "api calls with corr:", len(api))
assert kinds["kernel"] > 0 and kinds["memcpy"] > 0 and kinds["memset"] > 0, kinds
unlinked = [e for e in gpu if e.get("corr") not in api]
assert not unlinked, ("unlinked", unlinked[:3])
late = [e for e in gpu if e["start_ns"] < api[e["corr"]]["start_ns"]]
assert not late, ("GPU work starts before its launch", late[:3])
users = collections.Counter(api[e["corr"]]["name"] for e in gpu)
print("launched by:", dict(users))
for want in ("__cudaLaunchKernel", "cublasSgemm_v2", "cudnnConvolutionForward", "ncclGroupEnd"):
    assert users[want] > 0, "no GPU work linked to " + want
k = next(e for e in gpu if e["type"] == "kernel" and e["name"].startswith("_Z"))
assert len(k["vals"]) >= 9 and k["vals"][3] > 0, k   # grid/block present
PY
pyassert stats.json 'len(j["kernels"]) > 0 and all(k["count"] > 0 for k in j["kernels"])'
echo ok
