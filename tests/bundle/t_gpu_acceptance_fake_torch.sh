#!/bin/sh
# gpu-acceptance's PyTorch parts (2-3) on the simulator, with a stand-in for python3 + PyTorch
# (fake_torch_python.py runs examples/train and fakes step times and torch.profiler's trace from
# it): the trace analysis, the kernel-per-step comparison, the operator agreement, the overhead
# ratios of every mode (stacks none, mixed, mixed with 200 and 1000 Hz sampling, whose runs'
# sample counts come from dlhook stats) and the summary work before a GPU machine ever runs
# them. Parts 4-5 need the real PyTorch: t_gpu_acceptance_torch_sim.sh.
set -eu
B="$BUILD/gpu-bundle"
[ -x "$B/scripts/gpu-acceptance" ] || { echo "no $B: run make gpu-bundle (downloads and builds libunwind, elfutils; CI does)"; exit 77; }
export FAKE_TORCH_ROOT="$B"
rc=0
"$B/scripts/gpu-acceptance" "$T/out" --sim --torch-on-sim --python "$ROOT/tests/bundle/fake_torch_python.py" \
  --workloads transformer --torch-steps 4 --overhead-steps 3 --warmup 1 --rounds 2 \
  --parts programs,torch,overhead >"$T/log" 2>&1 || rc=$?
cat "$T/log"
python3 - "$T/out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
st = {c["id"]: (c["status"], c["detail"]) for c in s["checks"]}
bad = []
for cid in ("torch.runs", "torch.kernels_per_step", "torch.linked", "torch.timestamps",
            "torch.exports", "torchprof.trace", "compare.kernels_per_step",
            "compare.kernel_names", "compare.op_agreement", "overhead.ratios", "overhead.target"):
    if st.get(cid, ("missing",))[0] != "pass":
        bad.append("%s: %s" % (cid, st.get(cid)))
for cid in ("torch.cublaslt_shapes", "torch.python_frames", "torch.memory_peak", "torch.hta"):
    if st.get(cid, ("missing",))[0] not in ("pass", "skip"):  # skip while the feature is missing
        bad.append("%s: %s" % (cid, st.get(cid)))
ov = s["figures"].get("overhead", {}).get("transformer", {})
r = ov.get("ratio_to_bare", {})
want = {"bare": 1.0, "dlhook-none": 1.05, "dlhook-mixed": 1.05, "dlhook": 1.05, "dlhook-hz1000": 1.05,
        "torchprof": 1.2, "torchprof-stack": 1.5}
if any(abs(r.get(m, 0) - v) > 1e-6 for m, v in want.items()):
    bad.append("overhead ratios %s (want %s)" % (r, want))
# the sampled runs' samples (examples/train under the stand-in: sampled from its first CUDA call)
smp = ov.get("sampling", {})
if set(smp) != {"dlhook", "dlhook-hz1000"} or not all(v.get("hz") and "handler_ns" in v for v in smp.values()):
    bad.append("sampling figures of the sampled runs: %s" % smp)
oa = s["figures"].get("op_agreement", {}).get("transformer", {})
if not oa.get("kernels") or oa.get("agreement") != 1.0:
    bad.append("op agreement %s" % oa)
kp = s["figures"].get("kernels_per_step", {}).get("transformer", {})
if not kp.get("steps_compared") or kp.get("steps_equal") != kp.get("steps_compared"):
    bad.append("kernels per step %s" % kp)
md = open(sys.argv[1].replace(".json", ".md")).read()
if "ratio to bare" not in md or "torch.profiler, with_stack=True" not in md or \
        "--sample-hz 1000" not in md or "Operator agreement with torch.profiler: 100.00 %" not in md:
    bad.append("summary.md has no overhead table")
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
print("ok: %s" % st["compare.kernels_per_step"][1])
PY
[ "$rc" = 0 ] || { echo "FAIL: gpu-acceptance exit $rc"; exit 1; }
# the analyses brought back to this machine: HTA and xprof on the PyTorch part's exports
if [ -x "$BUILD/venv/bin/python" ] && "$BUILD/venv/bin/python" -c 'import hta, xprof' 2>/dev/null; then
  VPY="$BUILD/venv/bin/python" sh "$ROOT/scripts/gpu/offline-checks" "$T/out" >"$T/offline.log" 2>&1 ||
    { echo "FAIL: offline-checks"; cat "$T/offline.log"; exit 1; }
  grep -q '| transformer | HTA | pass' "$T/offline.log" && grep -q '| transformer | xprof | pass' "$T/offline.log" ||
    { echo "FAIL: offline-checks table"; cat "$T/offline.log"; exit 1; }
  echo "offline checks: $(grep -c '| pass' "$T/offline.log") passed"
fi
