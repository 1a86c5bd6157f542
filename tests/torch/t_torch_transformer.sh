#!/bin/sh
# run-tests: timeout=900
# A transformer block (layer norm, attention through scaled_dot_product_attention, GELU MLP;
# AdamW; bf16 autocast; 5 steps) runs on the simulated stack bare and under dlhook with
# identical output and exit status; its GEMMs reach cuBLAS(Lt) and its attention the backend
# (cuDNN graph or PyTorch's own flash kernels, as torch chooses), with kernels in the trace.
. "$ROOT/tests/torch/common.sh"
run_both tf "$PY" "$W" transformer --steps 5
[ "$(grep -c '^step [0-4] loss ' tf.bare.out)" -eq 5 ] || fail "5 steps expected: $(cat tf.bare.out)"
trace_stats tf.rec s.json
python3 - s.json <<'PY' || fail "trace content"
import json, sys
j = json.load(open(sys.argv[1]))
blas = sum(a["calls"] for a in j["api"] if a["domain"] in ("cublas", "cublasLt"))
assert blas >= 5 * 4, blas
names = [x["name"] for x in j["kernels"]]
attn = [x for x in names if "sdpa" in x or "flash" in x.lower() or "attention" in x.lower() or "cudnn" in x]
assert attn, sorted(set(names))[:40]
assert sum(x["count"] for x in j["kernels"]) >= 5 * 10
PY
echo "t_torch_transformer: OK"
