# run-tests: timeout=900
# dlhook attach on a PyTorch training loop (tests/torch/workload.py cnn) running on the simulator
# without dlhook: attached after ~2 s of training, detached after ~1.5 s. The trace holds the
# steps of the window (cuDNN backend executions, cuBLAS(Lt) GEMMs, batch norm) linked to their
# kernels, with the Python frames of the calls (mixed stacks: CPython found in the running
# process); the loop runs to the end with the output and exit status of a bare run.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
. "$ROOT/tests/torch/common.sh"
# long enough that the loop is still running 2 + 1.5 s after step 10 on a fast machine (300 steps
# were done before the detach once recording got cheaper, and 1000 once re-seen native stacks
# were walked by libgcc)
STEPS=3000
"$SIMRUN" "$PY" "$W" cnn --steps $STEPS >bare.out 2>bare.err || { tail bare.err; fail "bare run failed"; }
start_bg run "$PY" "$W" cnn --steps $STEPS
i=0
until grep -q '^step 10 ' run.out; do
  i=$((i + 1)); [ $i -lt 12000 ] || { kill $PID; fail "the loop never reached step 10"; }; sleep 0.01
done
sleep 2
"$DLHOOK_BIN" attach "$PID" -o "$T/tr" --stacks mixed >a.out 2>&1 || { cat a.out; kill $PID; fail "attach failed"; }
s0=$(grep -c '^step ' run.out)
sleep 1.5 # ~300 steps at 5 ms (the trace's analysis below takes most of the test's time)
kill -0 "$PID" 2>/dev/null || fail "the loop ended within the attach window: raise STEPS"
"$DLHOOK_BIN" detach "$PID" >d.out 2>&1 || { cat d.out; kill $PID; fail "detach failed"; }
s1=$(grep -c '^step ' run.out)
wait "$PID"; rc=$?
[ $rc -eq 0 ] || { tail run.err; fail "attached run: exit $rc"; }
cmp bare.out run.out || fail "output differs from the bare run: $(diff bare.out run.out | head)"
[ $((s1 - s0)) -ge 3 ] || fail "only $((s1 - s0)) steps in the window: too slow to say anything"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >s.json || fail "stats failed"
"$DLHOOK_BIN" dump --type process,api,kernel "$tr" >d.jsonl || fail "dump failed"
python3 - s.json d.jsonl $((s1 - s0)) <<'PY' || fail "trace content"
import json, sys, collections
j = json.load(open(sys.argv[1]))
ev = [json.loads(l) for l in open(sys.argv[2])]
window = int(sys.argv[3])          # steps printed between attach and detach
calls = {a["name"]: a["calls"] for a in j["api"]}
assert j["attached"] and j["attached"][0]["detached"], j.get("attached")
# 2 convolutions a step, forward and backward: at least 3 executions per step of the window
# (the first and last steps may be partly outside)
ex = calls.get("cudnnBackendExecute", 0)
assert ex >= 3 * (window - 2), ("cudnnBackendExecute", ex, window)
blas = sum(a["calls"] for a in j["api"] if a["domain"] in ("cublas", "cublasLt"))
assert blas >= window - 2, ("cuBLAS calls", blas)
assert calls.get("cudnnBatchNormalizationForwardTrainingEx", 0) >= window - 2, calls
api = {e["corr"]: e for e in ev if e["type"] == "api" and e.get("corr")}
kern = [e for e in ev if e["type"] == "kernel"]
assert kern, "no kernel"
# every kernel of the window is linked to its call; at the window's edges a kernel may be of a
# call that was not recorded: launched before the attach, or by a call still running when the
# detach stopped the recording (its kernel ended and was flushed, the call did not end inside)
lo, hi = min(api), max(api)
edge = [k for k in kern if k.get("corr") and (k["corr"] < lo or k["corr"] > hi)]
unlinked = [k for k in kern if k.get("corr") not in api and k not in edge]
assert not unlinked, unlinked[:2]
edge = len(edge)
users = collections.Counter(api[k["corr"]]["name"] for k in kern if k.get("corr") in api)
assert users["cudnnBackendExecute"] > 0, users
py = [e for e in ev if e["type"] == "api" and any(f.get("python") for f in e.get("stack", []))]
assert py, "no call with Python frames"
files = {f["file"] for e in py for f in e["stack"] if f.get("python")}
assert any(f.endswith("workload.py") for f in files), sorted(files)[:10]
print(f"window: {window} steps; {ex} backend executions, {blas} cuBLAS(Lt) calls, {len(kern)} kernels "
      f"({edge} of calls outside the window), {len(py)} calls with Python frames")
PY
echo ok
