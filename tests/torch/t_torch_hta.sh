#!/bin/sh
# run-tests: timeout=900
# Holistic Trace Analysis on the PyTorch reference workload: the CNN + AMP training loop (5 steps
# marked with NVTX ProfilerStep#N ranges, forward/backward/optimizer inside) recorded on the
# simulated stack with dlhook's default settings, exported to Kineto JSON, and read by HTA 0.5:
# every analysis runs and agrees with `dlhook stats` (tests/export/hta_analyses.py): kernels and
# kernel time, every kernel reached from a launch, queue length per stream, 5 profiler steps, GPU
# user annotations, a critical path with a CPU-bound share, frequent kernel sequences.
. "$ROOT/tests/torch/common.sh"
. "$ROOT/tests/export/common.sh"
need_venv_module hta
"$DLHOOK_BIN" record --sim -o tr -- "$PY" "$ROOT/tests/torch/cnn_nvtx_steps.py" >rec.out 2>rec.err ||
  fail "record failed: $(tail -n 20 rec.err)"
grep -q '^done$' rec.out || fail "the workload did not finish: $(cat rec.out)"
"$DLHOOK_BIN" export -q -f kineto -o kin tr/*.dlh || fail "kineto export failed"
"$DLHOOK_BIN" stats --json tr/*.dlh >s.json || fail "stats failed"
python3 -c 'import json; print(json.dumps({"0": json.load(open("s.json"))}))' >stats.json
"$VPY" "$ROOT/tests/export/hta_analyses.py" kin stats.json 5 >hta.out 2>&1 || fail "HTA: $(tail -n 30 hta.out)"
grep -q "HTA OK" hta.out || fail "HTA did not finish: $(tail -n 30 hta.out)"
grep -E "kernels covered|critical path CPU-bound" hta.out
echo ok
