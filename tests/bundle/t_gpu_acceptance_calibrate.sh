#!/bin/sh
# run-tests: timeout=1800
# The calibration part of gpu-acceptance (scripts/gpu/calibrate.py) and this round's feature
# checks (scripts/gpu/features.py), run from the gpu-bundle unpacked elsewhere, as a GPU machine
# runs it (no build/ and no venv on PATH; the venv's Python given with --python), with the
# simulator on both sides (--sim --torch-on-sim): the simulator against itself. Each workload
# (calib_torch.py, train_torch.py gpt/transformer/cnn, examples/train) is recorded twice and
# every GPU unit of the compared steps must find its twin (a few synchronizing calls aside: a
# call that waited in one run may not in the other), every class must be there (GEMM fp32, TF32,
# fp16, bf16; convolution; attention; reductions; elementwise; collectives; copies H2D/D2H
# pinned/pageable and D2D; memset; launch and sync latency) and every device-time class at 1.00
# (the latencies follow the machine's load: present, not asserted), which proves the matching;
# summary.md, summary.json and simulator-calibration.md hold the table. Part 7: NCCL plugin
# events of examples/train's one-rank communicator pass, the "What dlhook cost or lost" section
# is found, and the memory snapshot checks pass or fail (the CNN's figures against torch's own
# snapshot: tests/torch/t_torch_memory_vs_torch.sh asserts them); part 8: the zoo's judge runs
# on one small case (resnet item) and reports recall and precision. A few minutes.
set -eu
. "$ROOT/tests/lib.sh"
TGZ="$BUILD/gpu-bundle.tar.gz"
[ -f "$TGZ" ] || skip "no $TGZ: run make gpu-bundle (downloads and builds libunwind, elfutils; CI does)"
PY="$BUILD/venv/bin/python"
[ -x "$PY" ] || skip "no $PY: run scripts/bootstrap-py (installs torch)"
"$PY" -c 'import torch' >/dev/null 2>&1 || skip "$PY has no torch: run scripts/bootstrap-py"
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" -xzf "$TGZ"
B="$T/unpacked/gpu-bundle"
ZOO=""
"$PY" -c 'import torchvision' >/dev/null 2>&1 && ZOO=",zoo"
rc=0
env -i PATH=/usr/bin:/bin HOME="$T" PYTHONWARNINGS=ignore "$B/scripts/gpu-acceptance" "$T/out" --sim \
  --torch-on-sim --python "$PY" --parts programs,calibrate,features$ZOO --train-steps 3 --calib-small \
  --calib-steps 5 --calib-warmup 2 --zoo-models resnet --zoo-causes item --zoo-steps 4 --zoo-warmup 1 \
  --zoo-repeat 1 --publish "$T/pub" >"$T/log" 2>&1 || rc=$?
grep -v '^  SKIP' "$T/log"
[ "$rc" -le 1 ] || fail "gpu-acceptance exit $rc"
python3 - "$T/out/summary.json" "$B" "$ZOO" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
st = {c["id"]: (c["status"], c["detail"]) for c in s["checks"]}
bad = []
if s["environment"]["root"] != sys.argv[2]:
    bad.append("ran dlhook from %s, not the unpacked bundle" % s["environment"]["root"])
for cid in ("calib.micro", "calib.gpt", "calib.transformer", "calib.cnn", "calib.train", "calib.table",
            "nccl.plugin_events", "ringwait.section"):
    if st.get(cid, ("missing",))[0] != "pass":
        bad.append("%s: %s" % (cid, st.get(cid)))
for cid in ("memory.snapshot", "memory.vs_torch"):  # the figures: t_torch_memory_vs_torch.sh
    if st.get(cid, ("missing",))[0] not in ("pass", "fail"):
        bad.append("%s: %s" % (cid, st.get(cid)))
C = s["figures"]["calibration"]
cls = C["classes"]
want = ["GEMM fp32", "GEMM tf32", "GEMM fp16", "GEMM bf16", "convolution (cuDNN)", "attention", "reductions",
        "elementwise", "collective (NCCL)", "copy H2D pinned", "copy H2D pageable", "copy D2H pinned",
        "copy D2H pageable", "copy D2D", "memset", "launch latency", "sync latency"]
for w in want:
    if not any(c.startswith(w) for c in cls):
        bad.append("no class %s in %s" % (w, sorted(cls)))
for c, x in cls.items():
    if "latency" not in c and not (0.99 <= x["ratio_median"] <= 1.01 and 0.95 <= x["ratio_p10"] and x["ratio_p90"] <= 1.05):
        bad.append("%s: simulated / simulated %.3f (%.3f-%.3f)" % (c, x["ratio_median"], x["ratio_p10"], x["ratio_p90"]))
for wl, x in C["workloads"].items():
    if x["matched"] < 0.95 * x["gpu_units"] or not x["step_ms_gpu"] or len(x["steps_compared"]) != 3:
        bad.append("workload %s: %d of %d matched, steps %s" % (wl, x["matched"], x["gpu_units"], x["steps_compared"]))
    other = [u for u in x["unmatched_top"] if u["class"] != "sync latency"]
    if other:
        bad.append("workload %s: unmatched %s" % (wl, other))
if sys.argv[3]:
    z = s["figures"].get("zoo")
    if not z or st.get("zoo.advise", ("missing",))[0] not in ("pass", "fail") or z["totals"]["errors"] or \
            z["totals"]["planted"] != 1:
        bad.append("zoo: %s %s" % (st.get("zoo.advise"), z and z["totals"]))
md = open(sys.argv[1].replace(".json", ".md")).read()
if "### Calibration: the simulator against the GPU" not in md or "| GEMM bf16" not in md:
    bad.append("summary.md has no calibration table")
doc = open(sys.argv[1].replace("summary.json", "simulator-calibration.md")).read()
if not doc.startswith("### Held against a GPU") or "| launch latency |" not in doc:
    bad.append("simulator-calibration.md: %r" % doc[:200])
if bad:
    print("FAIL: " + "\n  ".join(bad))
    sys.exit(1)
print("ok: %d classes; %s" % (len(cls), ", ".join("%s %d/%d" % (w, x["matched"], x["gpu_units"])
                                                    for w, x in C["workloads"].items())))
PY
[ -s "$T/pub/simulator-calibration.md" ] || fail "--publish: no simulator-calibration.md"
echo ok
