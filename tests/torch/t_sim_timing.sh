#!/bin/sh
# run-tests: timeout=600
# The simulator keeps a GPU's time on a PyTorch program (docs/simulator.md): a tiny GPT-2
# (tests/torch/tiny_gpt2.py) under dlhook --sim, whose cuBLAS(Lt) calls return after their
# host-side cost (median <= 50 us; the simulator used to compute every GEMM inside the call:
# 65 ms mean) while their kernels take the cost model's time on the device; a training step is
# what Python, the launches and the waits for the device take (<= 150 ms on an idle 2-core
# machine; asserted with room for a loaded one: the 2.2 s of before must fail). The results of
# small library calls are still right (t_torch_numerics).
. "$ROOT/tests/torch/common.sh"
G=$ROOT/tests/torch/tiny_gpt2.py
"$SIMRUN" "$PY" "$G" --steps 8 --json bare.json >bare.out 2>bare.err || fail "bare: $(tail -n 5 bare.err)"
"$DLHOOK_BIN" record --sim -o rec -- "$PY" "$G" --steps 8 --json rec.json >rec.out 2>rec.err ||
  fail "under dlhook: $(tail -n 5 rec.err)"
"$DLHOOK_BIN" dump "$(one_trace rec)" >dump.jsonl || fail "dump"
"$PY" - dump.jsonl bare.json rec.json <<'PYEOF' || fail "$(cat check.out)"
import json, statistics, sys
lib, gemm_kernels = {}, []
for line in open(sys.argv[1]):
    if not line.startswith('{"type":"api"') and '"type":"gpu"' not in line[:40]:
        continue
    e = json.loads(line)
    if e["type"] == "api" and e["domain"] in ("cublas", "cublasLt", "cudnn") and (
            e["name"] in ("cublasLtMatmul", "cublasGemmEx", "cublasGemmStridedBatchedEx",
                          "cublasSgemm_v2", "cublasSgemmStridedBatched") or "Execute" in e["name"]):
        lib.setdefault(e["name"], []).append(e["dur_ns"])
out = open("check.out", "w")
ok = True
for name, d in sorted(lib.items()):
    med = statistics.median(d) / 1e3
    print(f"{name}: {len(d)} calls, median host time {med:.1f} us", file=out)
    ok &= med <= 50
if not lib:
    print("no cuBLAS call recorded", file=out)
    ok = False
for f in sys.argv[2:]:
    ms = statistics.median(json.load(open(f))["step_ms"])
    print(f"{f}: median step {ms:.1f} ms", file=out)
    ok &= ms <= 600
out.close()
print(open("check.out").read())
sys.exit(0 if ok else 1)
PYEOF
# the device did the GEMMs: their kernels are on the timeline with the cost model's time
"$DLHOOK_BIN" stats --json "$(one_trace rec)" >stats.json || fail "stats"
pyassert stats.json 'sum(k["count"] for k in j["kernels"] if "gemm" in k["name"]) >= 8 * 20'
echo ok
