#!/bin/sh
# run-tests: timeout=600
# t_torch_memory_ops: `dlhook record --torch-memory` makes PyTorch allocate every tensor through
# cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), and `dlhook stats --memory
# --json` attributes those allocations to aten operators and modules (by_operator, by_module,
# from the allocating call's stack). The cnn workload's output must stay that of a bare run, and
# the option must keep a backend the user named (with a warning) and append to other settings.
. "$ROOT/tests/torch/common.sh"
cd "$T" || exit 1

"$SIMRUN" "$PY" "$W" cnn --steps 2 >bare.out 2>bare.err || fail "bare run: $(tail -n 5 bare.err)"
"$DLHOOK_BIN" record --sim --torch-memory -o rec -- "$PY" "$W" cnn --steps 2 >rec.out 2>rec.err ||
  fail "record --torch-memory: $(tail -n 5 rec.err)"
cmp -s bare.out rec.out || fail "output differs under --torch-memory: $(diff bare.out rec.out | head)"
ls rec/*.dlh >/dev/null 2>&1 || fail "no trace in rec"
"$DLHOOK_BIN" stats --memory --json rec/*.dlh >mem.json || fail "dlhook stats --memory --json"
pyassert mem.json 'len(j["traces"]) == 1'
pyassert mem.json 'j["traces"][0]["allocations"] >= 50'
pyassert mem.json 'any(r["name"].startswith("aten::") and r["bytes"] > 0 for r in j["traces"][0]["by_operator"])'
pyassert mem.json 'any(r["name"] in ("aten::empty", "aten::empty_strided") for r in j["traces"][0]["by_operator"])'
pyassert mem.json 'any(r["name"].endswith("Conv2d.forward") and r["allocations"] > 0 for r in j["traces"][0]["by_module"])'
pyassert mem.json 'all(r["peak_live_bytes"] <= r["bytes"] and r["leaked_bytes"] <= r["bytes"] for t in j["traces"] for b in ("by_operator", "by_module", "by_line") for r in t[b])'
pyassert mem.json 'sum(r["peak_live_bytes"] for r in j["traces"][0]["by_operator"]) <= j["traces"][0]["peak_bytes"]'
"$DLHOOK_BIN" stats --memory rec/*.dlh >mem.txt || fail "dlhook stats --memory"
grep -q '^  operator ' mem.txt || fail "no operator table: $(cat mem.txt)"

# the caching allocator alone: far fewer allocations reach CUDA
"$DLHOOK_BIN" record --sim -o plain -- "$PY" "$W" cnn --steps 2 >plain.out 2>plain.err ||
  fail "record: $(tail -n 5 plain.err)"
cmp -s bare.out plain.out || fail "output differs under dlhook: $(diff bare.out plain.out | head)"
"$DLHOOK_BIN" stats --memory --json plain/*.dlh >plain.json || fail "dlhook stats --memory --json plain"
python3 - mem.json plain.json <<'PY' || fail "--torch-memory does not show more allocations"
import json, sys
a, b = (json.load(open(p))["traces"][0]["allocations"] for p in sys.argv[1:3])
sys.exit(0 if a > 2 * b else 1)
PY

# PYTORCH_CUDA_ALLOC_CONF: appended to, or a user's backend kept with a warning (the program
# prints what it sees)
cat >conf.py <<'PY'
import os
print(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
PY
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False "$DLHOOK_BIN" record --torch-memory -o c1 -- \
  "$PY" conf.py >c1.out 2>c1.err
grep -qx 'expandable_segments:False,backend:cudaMallocAsync' c1.out || fail "not appended: $(cat c1.out)"
PYTORCH_CUDA_ALLOC_CONF=backend:native "$DLHOOK_BIN" record --torch-memory -o c2 -- \
  "$PY" conf.py >c2.out 2>c2.err
grep -qx 'backend:native' c2.out || fail "user's backend not kept: $(cat c2.out)"
grep -q 'names a backend already' c2.err || fail "no warning: $(cat c2.err)"
exit 0
