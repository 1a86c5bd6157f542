#!/bin/sh
# The gpu-bundle (make gpu-bundle) unpacked somewhere else runs its acceptance script on the
# simulated CUDA stack: part 1 passes (examples/train traced, GPU ops linked to calls with stacks,
# NVTX steps, exports, test programs), and part 5's programs without PyTorch: dlhook advise ranks
# each planted cause of advise_loop, advise_gpu and examples/train --slow-rank first or second
# at its line (the tuned versions without it), pageable and pinned copies are recorded with
# their srcKind; PyTorch parts skip with a reason; summary.md/json written, and with --publish
# the summary and the logs' and Kineto traces' tarballs (what the device tool brings back).
# The bundle's libdlhook.so symbolizes through its linked-in elfutils (file:line of train.cu).
set -eu
TGZ="$BUILD/gpu-bundle.tar.gz"
# only `make gpu-bundle` builds the bundle (CI does, before make test); sanitizer builds have none
[ -f "$TGZ" ] || { echo "no $TGZ: run make gpu-bundle (downloads and builds libunwind, elfutils; CI does)"; exit 77; }
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" -xzf "$TGZ"
B="$T/unpacked/gpu-bundle"
rc=0
"$B/scripts/gpu-acceptance" "$T/out" --sim --publish "$T/pub" >"$T/acceptance.log" 2>&1 || rc=$?
cat "$T/acceptance.log"
[ "$rc" -le 1 ] || { echo "FAIL: gpu-acceptance --sim exit $rc"; cat "$T/out/summary.md" 2>/dev/null; exit 1; }  # 1: a failed check, read below
[ -s "$T/out/summary.md" ] && [ -s "$T/out/summary.json" ] || { echo "FAIL: no summary"; exit 1; }
python3 - "$T/out/summary.json" "$B" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
st = {c["id"]: c["status"] for c in s["checks"]}
bad = []
assert s["mode"] == "sim", s["mode"]
if s["environment"]["root"] != sys.argv[2]:
    bad.append("ran dlhook from %s, not the unpacked bundle" % s["environment"]["root"])
for cid in ("train-shared.runs", "train-shared.kernels", "train-shared.linked",
            "train-shared.nvtx_steps", "progs.cudart_calls", "progs.nvcc_shared"):
    if st.get(cid) != "pass":
        bad.append("%s: %s" % (cid, st.get(cid)))
for prog, modes in (("advise_loop", "sync malloc pageable tuned"),
                    ("advise_gpu", "launch occupancy sgemm memory comm fused occupied tf32 headroom overlap")):
    for m in modes.split():
        if st.get("advise.%s.%s" % (prog, m)) != "pass":
            bad.append("advise.%s.%s: %s" % (prog, m, st.get("advise.%s.%s" % (prog, m))))
for cid in ("copies.pageable", "copies.pinned"):
    if st.get(cid) != "pass":
        bad.append("%s: %s" % (cid, st.get(cid)))
# two simulated ranks' timing follows the machine's load (a 30 ms straggler was lost in the
# jitter of a 2-core machine at load 11 once in five runs): tests/advise/t_advise_gpu.sh asserts
# the verdict; here the run and its findings must be there
if st.get("advise.train.slow_rank") not in ("pass", "fail") or \
        not s["figures"]["advise"].get("train.slow_rank", {}).get("findings"):
    bad.append("advise.train.slow_rank: %s" % st.get("advise.train.slow_rank"))
ad = s["figures"]["advise"]
if ad["advise_loop.pageable"]["rank"] not in (1, 2) or not ad["advise_loop.pageable"]["findings"][0]["place"]:
    bad.append("advise figures: %s" % ad["advise_loop.pageable"])
cp = s["figures"]["copies"]
if cp["pageable"]["src_kinds"] != {"pageable": 20} or cp["tuned"]["src_kinds"] != {"pinned": 20}:
    bad.append("copies: %s" % cp)
for cid in ("train-shared.stacks", "train-shared.exports"):  # pass, or skip while the feature is missing
    if st.get(cid) not in ("pass", "skip"):
        bad.append("%s: %s" % (cid, st.get(cid)))
for cid in ("torch.runs", "compare.kernels_per_step", "compare.op_agreement", "overhead.target",
            "train-static.runs", "graphs.attributed", "compile.triton", "sampling.dataset_line",
            "advise.advise_py.item"):
    if st.get(cid) != "skip":
        bad.append("%s should skip on --sim: %s" % (cid, st.get(cid)))
fails = [c["id"] for c in s["checks"] if c["status"] == "fail" and c["id"] != "advise.train.slow_rank"]
if fails:
    bad.append("checks failed: %s" % fails)
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("summary: %(pass)d passed, %(fail)d failed, %(skip)d skipped" % s["counts"])
PY
# --publish: what comes back from the device machine (summary, logs, Kineto traces)
for f in summary.md summary.json logs.tar.gz kineto.tar.gz torchprof.tar.gz; do
  [ -s "$T/pub/$f" ] || { echo "FAIL: --publish wrote no $f"; ls -l "$T/pub"; exit 1; }
done
cmp -s "$T/pub/summary.json" "$T/out/summary.json" || { echo "FAIL: published summary differs"; exit 1; }
tar -tzf "$T/pub/logs.tar.gz" | grep -q '^logs/advise-advise_loop-sync.log$' || { echo "FAIL: logs.tar.gz"; tar -tzf "$T/pub/logs.tar.gz" | head; exit 1; }
tar -tzf "$T/pub/kineto.tar.gz" | grep -q 'train-shared-export/kineto/.*\.pt\.trace\.json' || { echo "FAIL: kineto.tar.gz"; tar -tzf "$T/pub/kineto.tar.gz" | head; exit 1; }
# stacks symbolized inside the process by the bundle's static elfutils: file:line of train.cu
if python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if any(c["id"]=="train-shared.stacks" and c["status"]=="pass" for c in s["checks"]) else 1)' "$T/out/summary.json"; then
  "$B/dlhook" dump "$T/out/train-shared/"*.dlh >"$T/dump.jsonl"
  grep -q '"file":"[^"]*train\.cu","line":[1-9]' "$T/dump.jsonl" \
    || { echo "FAIL: no train.cu file:line in the bundle's stacks"; grep -m 3 '"stack"' "$T/dump.jsonl" | cut -c1-600; exit 1; }
fi
echo "ok"
