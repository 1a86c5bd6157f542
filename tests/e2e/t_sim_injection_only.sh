# CUPTI alone, as for a program with statically linked cudart: examples/train on the simulator
# with only CUDA_INJECTION64_PATH=libdlhook.so (no LD_PRELOAD, so no wrapper is reached). Every
# runtime call is recorded from the CUPTI callbacks with the same counts as through the
# wrappers (less the noise calls filtered by default and module registration, which happens
# before CUDA is initialised), every GPU record links to a recorded
# call, and that call's stack starts in the program (train.cu), not in CUPTI or the driver.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
DLHOOK_QUIET=1 DLHOOK_STACKS=native traced "$T/pre" "$SIMRUN" "$BUILD/examples/train" --steps 3 >a.out 2>&1 || fail "preload run failed"
DLHOOK_QUIET=1 DLHOOK_STACKS=native DLHOOK_OUTPUT="$T/inj/" CUDA_INJECTION64_PATH="$DLHOOK_LIB" \
  "$SIMRUN" "$BUILD/examples/train" --steps 3 >b.out 2>&1 || { cat b.out; fail "injection-only run failed"; }
"$DLHOOK_BIN" stats --json "$T"/pre/*.dlh >pre.json || fail "stats (preload)"
"$DLHOOK_BIN" stats --json "$T"/inj/*.dlh >inj.json || fail "stats (injection)"
"$DLHOOK_BIN" dump "$T"/inj/*.dlh >inj.jsonl || fail "dump (injection)"
python3 - <<'PY' || fail "injection-only recording differs"
import json
noise = {"cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount",
         "cudaStreamIsCapturing", "cudaDeviceGetAttribute",
         # module registration runs in static constructors and at exit, outside the time
         # CUDA is initialised: no CUPTI tool sees it
         "__cudaRegisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterFatBinaryEnd",
         "__cudaUnregisterFatBinary"}
def cudart(f):
    return {a["name"]: a["calls"] for a in json.load(open(f))["api"]
            if a["domain"] == "cudart" and a["name"] not in noise}
pre, inj = cudart("pre.json"), cudart("inj.json")
assert pre == inj, {k: (pre.get(k), inj.get(k)) for k in set(pre) | set(inj) if pre.get(k) != inj.get(k)}
ev = [json.loads(l) for l in open("inj.jsonl")]
api = {e["corr"]: e for e in ev if e["type"] == "api" and e.get("corr")}
gpu = [e for e in ev if e["type"] in ("kernel", "memcpy", "memset")]
assert gpu and all(e.get("corr") in api for e in gpu), "unlinked GPU records"
launches = [api[e["corr"]] for e in gpu if e["type"] == "kernel"]
bad = [a["name"] for a in launches
       if not a.get("stack") or "libcupti" in (a["stack"][0].get("module") or "")
       or not any("train.cu" in (f.get("file") or "") for f in a["stack"])]
assert not bad, ("launch stacks without the program's frames", bad[:5])
print(len(pre), "runtime functions with equal counts;", len(gpu), "GPU records linked")
PY
echo ok
