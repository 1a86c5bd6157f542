#!/bin/sh
# run-tests: timeout=900
# A CNN training loop (conv, batch norm, relu, linear; SGD; AMP autocast fp16 with GradScaler;
# 5 steps) runs on the simulated stack bare and under dlhook with identical output and exit
# status, and the trace holds what PyTorch really calls: convolutions through the cuDNN backend
# API (cudnn-frontend: engine heuristics, execution plans; fprop, dgrad and wgrad kernels),
# batch norm through cudnnBatchNormalization*Ex, the linear layer through cuBLAS(Lt), each
# linked to its kernels.
. "$ROOT/tests/torch/common.sh"
run_both cnn "$PY" "$W" cnn --steps 5
[ "$(grep -c '^step [0-4] loss ' cnn.bare.out)" -eq 5 ] || fail "5 steps expected: $(cat cnn.bare.out)"
trace_stats cnn.rec s.json
python3 - s.json <<'PY' || fail "trace content"
import json, sys
j = json.load(open(sys.argv[1]))
calls = {a["name"]: a for a in j["api"]}
def n(name): return calls.get(name, {}).get("calls", 0)
for f in ("cudnnBackendExecute", "cudnnBackendFinalize", "cudnnBatchNormalizationForwardTrainingEx",
          "cudnnBatchNormalizationBackwardEx"):
    assert n(f) > 0, (f, sorted(calls)[:50])
    assert calls[f]["errors"] == 0 or f == "cudnnBackendFinalize", calls[f]
# 2 convolutions x 5 steps: forward, and wgrad (+ dgrad for the second)
assert n("cudnnBackendExecute") >= 5 * 5, n("cudnnBackendExecute")
blas = sum(a["calls"] for a in j["api"] if a["domain"] in ("cublas", "cublasLt"))
assert blas >= 5 * 3, blas
k = {x["name"] for x in j["kernels"]}
for tag in ("_fprop_", "_dgrad_", "_wgrad_", "bn_fw_tr", "bn_bw"):
    assert any(tag in x for x in k), (tag, sorted(k)[:40])
assert j["gpu"]["kernel_ns"] > 0
PY
echo "t_torch_cnn_amp: OK"
