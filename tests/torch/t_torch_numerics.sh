#!/bin/sh
# run-tests: timeout=900
# What PyTorch computes through the simulated libraries is right for small sizes: conv2d
# forward, input gradient and weight gradient through cuDNN's backend API (the graphs
# cudnn-frontend builds), a matmul through cuBLAS(Lt), batch norm through cuDNN, each against
# PyTorch on the CPU (tests/torch/numerics.py), bare and under dlhook (identical output).
. "$ROOT/tests/torch/common.sh"
"$SIMRUN" "$PY" "$ROOT/tests/torch/numerics.py" >bare.out 2>bare.err || fail "bare: $(tail -n 5 bare.err)"
[ "$(grep -c ' ok ' bare.out)" -eq 5 ] || fail "results differ from the CPU: $(cat bare.out)"
"$DLHOOK_BIN" record --sim --stacks none -o rec -- "$PY" "$ROOT/tests/torch/numerics.py" >rec.out 2>rec.err ||
  fail "under dlhook: $(tail -n 5 rec.err)"
cmp -s bare.out rec.out || fail "output differs under dlhook: $(diff bare.out rec.out)"
echo "t_torch_numerics: OK"
