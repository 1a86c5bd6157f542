#!/bin/sh
# run-tests: timeout=2400
# gpu-acceptance's PyTorch parts with the real PyTorch wheel of the venv on the simulated CUDA
# stack (--torch-on-sim): the transformer against torch.profiler (kernels per step and per name,
# the operator agreement), a CUDA graph replayed 8 times and a torch.compile'd block (default and
# reduce-overhead, 3 steps each) against torch.profiler (kernel counts per name equal over the
# steps both hold kernels in: torch.profiler on the simulator loses the kernels of the first
# replays after its start, listed as such; every replayed kernel linked; the shares of replayed and Triton kernels attributed to an operator
# reported, and passing or skipping with "not in this build" as the trace has graph node ids and
# Inductor records or not), host sampling on slow_dataset.py (the workers' samples at the
# Dataset's line) and dlhook advise on advise_py.py. The verdicts that hang on the machine's
# timing (the main thread's share of waits in the DataLoader, the workers' samples at the
# Dataset's line, advise_py's planted classes: on this 2-core machine under load the simulated
# backward pass and the starved interpreter change them) are asserted by
# tests/torch/t_torch_sample_wait.sh and t_torch_advise.sh; here their figures must be in
# summary.json. When the loaded machine made dlhook drop records (counted in the trace, e.g. 570
# of 64,000 in one run), the checks that need every call may fail, naming the drops. A few
# minutes (two compilations).
set -eu
. "$ROOT/tests/lib.sh"
B="$BUILD/gpu-bundle"
[ -x "$B/scripts/gpu-acceptance" ] || skip "no $B: run make gpu-bundle (downloads and builds libunwind, elfutils; CI does)"
PY="$BUILD/venv/bin/python"
[ -x "$PY" ] || skip "no $PY: run scripts/bootstrap-py (installs torch)"
"$PY" -c 'import torch' >/dev/null 2>&1 || skip "$PY has no torch: run scripts/bootstrap-py"
export PYTHONWARNINGS=ignore
rc=0
"$B/scripts/gpu-acceptance" "$T/out" --sim --torch-on-sim --python "$PY" \
  --parts torch,graphs,compile,sampling,advise --workloads transformer --torch-steps 6 \
  --torchprof-steps 6 --warmup 2 --torch-batch 8 --graph-steps 8 --compile-steps 3 \
  --publish "$T/pub" >"$T/log" 2>&1 || rc=$?
grep -v '^  SKIP' "$T/log"
[ "$rc" -le 1 ] || fail "gpu-acceptance exit $rc"
python3 - "$T/out/summary.json" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
st = {c["id"]: (c["status"], c["detail"]) for c in s["checks"]}
F = s["figures"]
bad = []
def want(cid, ok):
    if st.get(cid, ("missing", ""))[0] not in ok:
        bad.append("%s: %s" % (cid, st.get(cid)))
# on this loaded machine the writer may fall behind: records dropped (counted in the trace) leave
# GPU ops without their call; then the checks that need every call say so and fail
dropped = F["torch_dlhook"]["transformer"]["dropped"]
for cid in ("torch.linked", "compare.op_agreement", "torch.hta"):
    want(cid, ("pass", "fail") if dropped else ("pass",))
if dropped and "records dropped" not in st["torch.linked"][1] and st["torch.linked"][0] == "fail":
    bad.append("torch.linked fails without naming the dropped records: %s" % (st["torch.linked"],))
for cid in ("torch.runs", "torch.kernels_per_step", "torch.timestamps", "torch.exports",
            "torchprof.trace", "compare.kernels_per_step", "compare.kernel_names",
            "graphs.runs", "graphs.kernel_names", "graphs.linked", "compile.runs", "compile.kernel_names",
            "compile-ro.kernel_names", "copies.pageable", "copies.pinned",
            "advise.advise_loop.pageable", "advise.advise_gpu.launch"):
    want(cid, ("pass",))
for cid in ("graphs.attributed", "compile.triton", "compile-ro.attributed"):
    want(cid, ("pass", "skip"))
    if st.get(cid, ("", ""))[0] == "skip" and "not in this build" not in st[cid][1]:
        bad.append("%s skips for another reason: %s" % (cid, st[cid][1]))
for cid in ("sampling.dataloader", "sampling.dataset_line", "advise.advise_py.item", "advise.advise_py.item_fp32",
            "advise.advise_py.loader", "advise.advise_py.pycpu", "advise.advise_py.tuned"):
    want(cid, ("pass", "fail"))  # timing-dependent verdicts: their own tests assert them
# the figures behind them
a = F["attribution"]
if a["graphs"]["dlhook"]["kernels"] != 8 * 40 or a["graphs"]["torch_profiler"]["kernels"] < 4 * 40:
    bad.append("replayed kernels (8 replays of 40) %s" % a["graphs"])
if not a["compile-ro"]["torch_profiler"]["kernels"] or not a["compile.triton"]["dlhook"]["kernels"]:
    bad.append("reduce-overhead replays / Triton kernels %s / %s" % (a["compile-ro"], a["compile.triton"]))
if a["compile.triton"]["torch_profiler"]["any"] < 0.9:  # Inductor's own cpu_op while profiling
    bad.append("torch.profiler's Triton kernels without their op: %s" % a["compile.triton"])
kn = F["kernel_names"]
for k in ("graphs", "compile", "compile-ro"):
    if not kn[k]["kernels_dlhook"] or kn[k]["differ"] or kn[k]["steps_lost_by_dlhook"] or \
            2 * kn[k]["steps_compared"] < kn[k]["steps"]:
        bad.append("kernel names %s: %s" % (k, kn[k]))
if F["op_agreement"]["transformer"]["agreement"] < (0.9 if dropped else 0.98):
    bad.append("op agreement %s" % F["op_agreement"])
sm = F["sampling"]
if not sm["gaps"] or len(sm["workers"]) != 2 or not sm["main_samples_ms"] or \
        not all(w["wait_ms"] > 0 for w in sm["workers"]):
    bad.append("sampling figures %s" % sm)
ad = F["advise"]
for k in ("advise_py.item", "advise_py.loader", "advise_py.pycpu"):
    if k not in ad or "rank" not in ad[k] or not ad[k]["planted_at"].startswith("advise_py.py:"):
        bad.append("advise figures %s: %s" % (k, ad.get(k)))
md = open(sys.argv[1].replace(".json", ".md")).read()
for h in ("### CUDA graphs and torch.compile", "### Host sampling", "### dlhook advise on the planted causes",
          "Operator agreement with torch.profiler"):
    if h not in md:
        bad.append("summary.md has no %r" % h)
if bad:
    print("FAIL: " + "\n  ".join(bad))
    sys.exit(1)
print("ok: %(pass)d passed, %(fail)d failed (timing-dependent), %(skip)d skipped" % s["counts"])
PY
tar -tzf "$T/pub/torchprof.tar.gz" | grep -q '^graphs-torchprof.trace.json.gz$' ||
  fail "torchprof.tar.gz: $(tar -tzf "$T/pub/torchprof.tar.gz")"
tar -tzf "$T/pub/kineto.tar.gz" | grep -q '^graphs-export/kineto/.*pt.trace.json.gz$' ||
  fail "kineto.tar.gz: $(tar -tzf "$T/pub/kineto.tar.gz")"
echo ok
