# Host samples of a PyTorch program (on the simulated stack, sampled from start-up at 1000 Hz):
# the on-CPU time of its CPU matmuls goes to aten operators in stats --json samples.by_op
# (torch.c's view of each sample's native stack) and to the lines of work() in by_line, and the
# operator-folded on-CPU flame graph (--weight samples --fold op) holds the same operators.
. "$ROOT/tests/torch/common.sh"
cat >prog.py <<'PY'
import torch
x = torch.randn(384, 384)
lin = torch.nn.Linear(384, 384)
def work():
    for i in range(400):
        y = lin(x)
        z = torch.relu(y) @ x
    return z
work()
a = torch.randn(64, 64, device="cuda")
torch.cuda.synchronize()
PY
DLHOOK_SAMPLE_HZ=1000 "$DLHOOK_BIN" record --sim --sample always -o rec -- "$PY" prog.py >out.txt 2>err.txt \
  || fail "record: $(tail -n 5 err.txt)"
tr=$(one_trace rec)
"$DLHOOK_BIN" stats --json "$tr" >s.json || fail "stats --json"
python3 - s.json <<'PYC' || fail "samples by operator and line"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
ops = {o["name"]: o["cpu_ns"] for o in s["by_op"]}
print("by_op", sorted(ops.items(), key=lambda kv: -kv[1])[:6])
assert ops.get("aten::mm", 0) > 0 and ops.get("aten::addmm", 0) + ops.get("aten::linear", 0) > 0, ops
work = sum(l["cpu_ns"] for l in s["by_line"] if l["function"] == "work" and l["file"].endswith("prog.py"))
print("work()", work, "of", s["cpu_ns"])
assert work > 0 and work >= ops["aten::mm"] * 0.5, (work, ops)
PYC
"$DLHOOK_BIN" export -q -f folded --weight samples --fold op -o op.folded "$tr" || fail "folded --fold op"
grep -q 'aten::mm [0-9]*$' op.folded || fail "no aten::mm in the on-CPU flame graph by operator: $(head op.folded)"
echo "ok: samples of a PyTorch program by operator"
