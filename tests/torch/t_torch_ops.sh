#!/bin/sh
# run-tests: timeout=1200
# The operator view (command/lib/torch.c) against torch.profiler, on the simulated stack: each
# workload (tests/torch/workload.py cnn, transformer, dataloader; tests/torch/ops_models.py lm,
# resnet) runs once under torch.profiler (CPU+CUDA, its Kineto trace exported) and once under
# `dlhook record` with the default stacks (exported to Kineto). op_agreement.py reads both files
# with the same code: for each kernel name, the share of its launches attributed to each
# innermost aten op (kernel -> correlation -> launch -> External id -> cpu_op) must agree for
# >= 98 % of the kernels. Then on the LM: the stats tables (operators with GPU time and GEMM
# shapes, modules, user lines), HTA's call graph, kernel launch statistics and frequent kernel
# sequences on the export; a trace without stacks and one of a program without PyTorch say in
# one line why there is nothing to derive.
. "$ROOT/tests/torch/common.sh"
. "$ROOT/tests/export/common.sh"
M="$ROOT/tests/torch/ops_models.py"
A="$ROOT/tests/torch/op_agreement.py"
for w in "$W cnn" "$W transformer" "$W dataloader" "$M lm" "$M resnet"; do
  set -- $w
  prog=$1 name=$2
  "$SIMRUN" "$PY" "$prog" "$name" --steps 3 --profile "$T/ref_$name.json" >"ref_$name.out" 2>"ref_$name.err" ||
    fail "$name under torch.profiler: $(tail -n 5 "ref_$name.err")"
  "$DLHOOK_BIN" record --sim -o "rec_$name" -- "$PY" "$prog" "$name" --steps 3 >"rec_$name.out" 2>"rec_$name.err" ||
    fail "$name under dlhook: $(tail -n 5 "rec_$name.err")"
  cmp -s "ref_$name.out" "rec_$name.out" || fail "$name: output differs: $(diff "ref_$name.out" "rec_$name.out" | head)"
  "$DLHOOK_BIN" export -q -f kineto -o "kin_$name" "rec_$name"/*.dlh || fail "$name: kineto export"
  python3 "$A" "ref_$name.json" "kin_$name"/*.pt.trace.json.gz --name "$name" >"agree_$name.txt" ||
    fail "$name: $(cat "agree_$name.txt")"
  head -n 1 "agree_$name.txt"
done

# stats: operators, modules, lines
"$DLHOOK_BIN" stats --json rec_lm/*.dlh >lm.json || fail "stats --json"
python3 - lm.json "$M" <<'PY' || fail "stats tables"
import json, sys
p = json.load(open(sys.argv[1]))["pytorch"]
ops = {r["name"]: r for r in p["operators"]}
assert p["none"] is None, p["none"]
for op in ("aten::mm", "aten::addmm", "aten::native_layer_norm", "aten::embedding_dense_backward"):
    assert op in ops, (op, sorted(ops)[:40])
assert ops["aten::mm"]["gpu_ns"] > 0 and ops["aten::mm"]["kernels"] > 0, ops["aten::mm"]
assert any(s["shape"].startswith("gemm ") for s in ops["aten::mm"]["shapes"]), ops["aten::mm"]
assert any(r["name"].startswith("autograd::engine::evaluate_function: ") for r in p["operators"])
for r in p["operators"]:
    assert r["self_host_ns"] <= r["host_ns"], r
mods = {r["name"]: r for r in p["modules"]}
blk = "LM.forward > Sequential.forward > Block.forward > Attention.forward > Linear.forward"
assert blk in mods and mods[blk]["gpu_ns"] > 0, sorted(mods)
lines = [r["name"] for r in p["lines"]]
assert any(l.startswith(sys.argv[2] + ":") for l in lines), lines[:10]
assert p["gpu_attributed_ns"] > 0.9 * p["gpu_ns"], p
print("operators", len(ops), "modules", len(mods), "lines", len(lines))
PY
"$DLHOOK_BIN" stats rec_lm/*.dlh >lm.txt || fail "stats"
grep -q '^PyTorch operators' lm.txt || fail "no operator table: $(cat lm.txt)"
grep -q 'aten::mm' lm.txt || fail "no aten::mm in the table"
grep -q '^Modules' lm.txt || fail "no module table"

# The export's own nesting: every kernel's launch (cuda_runtime) lies inside a cpu_op of the same
# thread that has the launch's External id: exact, whatever the timing.
python3 - kin_lm/*.pt.trace.json.gz <<'PY' || fail "launches outside their operator in the export"
import collections, gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
ops = collections.defaultdict(list)
for e in ev:
    if e.get("cat") == "cpu_op":
        ops[e["args"].get("External id")].append(e)
rt = {e["args"].get("correlation"): e for e in ev if e.get("cat") == "cuda_runtime"}
ks = [e for e in ev if e.get("cat") == "kernel"]
out = [k for k in ks if not any(o["tid"] == r["tid"] and o["ts"] <= r["ts"] and r["ts"] + r.get("dur", 0) <= o["ts"] + o["dur"]
                                for r in [rt.get(k["args"].get("correlation"))] if r
                                for o in ops.get(r["args"].get("External id"), []))]
print(f"export nesting: {len(ks) - len(out)} of {len(ks)} kernel launches inside their operator")
assert ks and not out, out[:3]
PY
# HTA reads the operators of the export. HTA's call graph rebuilds the nesting by times alone and
# mis-nests calls that last 0 whole microseconds (hta_ops.py, docs/pytorch.md): 98 % is asked of
# the kernels whose HTA stack has none, 75 % of all (87-100 % seen); the export's own links
# above are exact.
need_venv_module hta
"$VPY" "$ROOT/tests/torch/hta_ops.py" kin_lm 0.98 >hta.out 2>&1 || fail "HTA: $(tail -n 20 hta.out)"
cat hta.out

# native stacks: operators and autograd nodes, no Python frames (no modules)
"$DLHOOK_BIN" record --sim --stacks native -o nat -- "$PY" "$M" resnet --steps 1 >/dev/null 2>nat.err ||
  fail "record --stacks native: $(tail -n 3 nat.err)"
"$DLHOOK_BIN" stats --json nat/*.dlh >nat.json || fail "stats (native)"
pyassert nat.json 'any(r["name"] == "aten::cudnn_convolution" and r["gpu_ns"] > 0 for r in j["pytorch"]["operators"]) and not j["pytorch"]["modules"]'

# DDP ranks (torchrun, NCCL): each rank's trace has its operators
TORCHRUN="$BUILD/venv/bin/torchrun"
if [ -x "$TORCHRUN" ]; then
  SIMCUDA_DEVICES=2 OMP_NUM_THREADS=1 "$DLHOOK_BIN" record --sim -o ddp -- "$TORCHRUN" --standalone \
    --nproc-per-node 2 "$W" ddp --steps 2 >ddp.out 2>ddp.err || fail "ddp under dlhook: $(tail -n 20 ddp.err)"
  for t in ddp/*-r[01]-*.dlh; do
    "$DLHOOK_BIN" stats --json "$t" >ddp.json || fail "stats $t"
    pyassert ddp.json 'any(r["name"] == "aten::convolution_backward" and r["kernels"] > 0 for r in j["pytorch"]["operators"])'
  done
fi

# nothing to derive: no stacks, no PyTorch
"$DLHOOK_BIN" record --sim --stacks none -o nost -- "$PY" "$M" resnet --steps 1 >/dev/null 2>nost.err ||
  fail "record --stacks none: $(tail -n 3 nost.err)"
"$DLHOOK_BIN" stats nost/*.dlh >nost.txt || fail "stats (no stacks)"
grep -q 'PyTorch operators: recorded without call stacks' nost.txt || fail "no stacks: $(tail -n 5 nost.txt)"
if [ -x "$BUILD/examples/train" ]; then
  "$DLHOOK_BIN" record --sim -o plain -- "$BUILD/examples/train" --steps 2 >/dev/null 2>&1 || fail "record train"
  "$DLHOOK_BIN" stats plain/*.dlh >plain.txt || fail "stats (no PyTorch)"
  [ "$(grep -c 'PyTorch operators' plain.txt)" -eq 1 ] || fail "no PyTorch: $(tail -n 5 plain.txt)"
  grep -q 'no PyTorch in these traces' plain.txt || fail "no PyTorch: $(tail -n 5 plain.txt)"
fi
echo "t_torch_ops: OK"
