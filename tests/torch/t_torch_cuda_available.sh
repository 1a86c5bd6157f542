#!/bin/sh
# run-tests: timeout=900
# The PyTorch wheel (its own cudart, CUPTI, cuBLAS, NCCL found through DT_RPATH) runs on the
# simulated CUDA stack: `tests/simcuda/run python -c "import torch;
# print(torch.cuda.is_available())"` prints True, bare and under `dlhook record --sim`; without
# the rtld-audit redirection (SIMCUDA_REDIRECT=0) the wheel's real cudart is used and it prints
# False, which is the hazard the redirection exists for. The wheel's cuFFT, cuSOLVER and
# cuSPARSE (not simulated: their real copies load) fail with PyTorch errors, not crashes.
. "$ROOT/tests/torch/common.sh"
PROG='import torch; print(torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")'
"$SIMRUN" "$PY" -c "$PROG" >bare.out 2>bare.err || fail "bare: $(tail -n 5 bare.err)"
grep -qx 'True 1 NVIDIA H100 80GB HBM3 (simulated)' bare.out || fail "bare: $(cat bare.out) $(tail -n 3 bare.err)"
"$DLHOOK_BIN" record --sim --stacks none -o rec -- "$PY" -c "$PROG" >rec.out 2>rec.err ||
  fail "record: $(tail -n 5 rec.err)"
cmp -s bare.out rec.out || fail "record --sim: $(cat rec.out)"
SIMCUDA_REDIRECT=0 "$SIMRUN" "$PY" -c "$PROG" >off.out 2>off.err
grep -q '^False ' off.out || fail "SIMCUDA_REDIRECT=0 still reaches the simulator: $(cat off.out)"
cat >libs.py <<'PY'
import torch
x = torch.randn(8, device="cuda")
for name, f in [("fft", lambda: torch.fft.fft(x)),
                ("linalg.inv", lambda: torch.linalg.inv(torch.eye(3, device="cuda"))),
                ("sparse.mm", lambda: torch.sparse.mm(torch.eye(3).to_sparse().cuda(), torch.ones(3, 3, device="cuda")))]:
    try:
        f()
        torch.cuda.synchronize()
        print(name, "ok")
    except RuntimeError as e:
        print(name, "RuntimeError")
PY
"$SIMRUN" "$PY" libs.py >libs.out 2>libs.err || fail "cuFFT/cuSOLVER/cuSPARSE: exit $?: $(tail -n 5 libs.err)"
[ "$(grep -c '^[a-z.]* \(ok\|RuntimeError\)$' libs.out)" -eq 3 ] || fail "cuFFT/cuSOLVER/cuSPARSE: $(cat libs.out)"
echo "t_torch_cuda_available: OK"
