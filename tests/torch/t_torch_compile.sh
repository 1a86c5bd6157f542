#!/bin/sh
# run-tests: timeout=1200
# torch.compile on the simulated stack (tests/torch/graph_models.py compile): a transformer
# block whose MLP computes gelu(fc1(h)) * fc2(h) + x, compiled by Inductor into Triton kernels.
# The recorder reads the generated code once (InductorKernel packets: each kernel's source nodes
# and aten ops, the lines that launch it); every Triton kernel then names its fused aten ops and
# the user's line: dlhook stats' torch.compile table, the Kineto export (kernel args and a cpu_op
# named "KERNEL <- aten ops" whose External id the kernel carries), the operator flame graph.
# The known fusion gelu+mul+add is checked by name. Then mode="reduce-overhead" (Inductor's
# kernels captured in CUDA graphs and replayed): the replayed Triton kernels are attributed to
# their capture-time launch line and fused ops at once. HTA reads the export.
# Inductor's cache (/tmp/torchinductor_$USER) makes later runs faster; the first compiles for
# about a minute on 2 cores.
. "$ROOT/tests/torch/common.sh"
. "$ROOT/tests/export/common.sh"
G="$ROOT/tests/torch/graph_models.py"
for mode in default reduce-overhead; do
  "$DLHOOK_BIN" record --sim -o "rec_$mode" -- "$PY" "$G" compile --steps 10 --compile-mode $mode \
    >"rec_$mode.out" 2>"rec_$mode.err" || fail "$mode under dlhook: $(tail -n 5 "rec_$mode.err")"
  grep -q '^done$' "rec_$mode.out" || fail "$mode: no done line: $(cat "rec_$mode.out")"
  "$DLHOOK_BIN" dump --type inductor,kernel rec_$mode/*.dlh >"$mode.jsonl" || fail "$mode: dump"
  "$DLHOOK_BIN" stats --json rec_$mode/*.dlh >"$mode.json" || fail "$mode: stats"
  "$DLHOOK_BIN" stats rec_$mode/*.dlh >"$mode.txt" || fail "$mode: stats (table)"
  "$DLHOOK_BIN" export -q -f kineto -o "kin_$mode" rec_$mode/*.dlh || fail "$mode: kineto export"
  "$DLHOOK_BIN" export -q -f folded --fold op -o "$mode.folded" rec_$mode/*.dlh || fail "$mode: folded"
  python3 - "$mode" "$G" <<'PY' || fail "$mode: Triton kernels not attributed"
import collections, glob, gzip, json, sys
mode, src = sys.argv[1], sys.argv[2]
ev = [json.loads(l) for l in open(mode + ".jsonl")]
ind = [e for e in ev if e["type"] == "inductor"]
assert ind, "no InductorKernel packet"
fused = [e for e in ind if all(w in e["kernel"] for w in ("gelu", "mul", "add"))]
assert fused, [e["kernel"] for e in ind]
for e in fused:
    ops = set(o.strip() for o in e["aten_ops"].split(","))
    assert {"aten::gelu", "aten::mul", "aten::add"} <= ops, e
    assert e["launch_lines"] and e["def_line"], e
    assert "gelu" in e["source_nodes"] and "mul" in e["source_nodes"], e
names = {e["kernel"] for e in ind}
triton = [e for e in ev if e["type"] == "kernel" and e["name"].startswith("triton_")]
assert triton and all(k["name"] in names for k in triton), [k["name"] for k in triton if k["name"] not in names][:3]
# stats: every Triton launch counted, with its ops, at a line of the user's file or in autotuning
j = json.load(open(mode + ".json"))
rows = j["inductor_kernels"]
assert sum(r["launches"] for r in rows) == len(triton), (sum(r["launches"] for r in rows), len(triton))
user = [r for r in rows if r["line"].startswith(src + ":")]
assert all(r["line"].startswith(src + ":") or r["line"] == "(Inductor autotuning)" for r in rows), rows
assert {r["kernel"] for r in user} == names, (sorted(names), user)
assert all(r["launches"] >= 9 for r in user), user
fr = [r for r in user if r["kernel"] == fused[0]["kernel"]][0]
print(f"{mode}: {len(ind)} Triton kernels; {fr['kernel']} \u2190 {fr['aten_ops']} at {fr['line']}: {fr['launches']} launches")
# Kineto: the kernel's args and the cpu_op of its External id
# (compile workers are processes of their own: the trace with the Triton kernels)
k = max((json.load(gzip.open(f))["traceEvents"] for f in glob.glob(f"kin_{mode}/*.pt.trace.json.gz")),
        key=lambda evs: sum(1 for e in evs if e.get("cat") == "kernel" and e["name"].startswith("triton_")))
ops = {e["args"].get("External id"): e["name"] for e in k if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
kk = [e for e in k if e.get("cat") == "kernel" and e["name"].startswith("triton_")]
assert len(kk) == len(triton)
for e in kk:
    assert "inductor aten ops" in e["args"], e
named = [e for e in kk if ops.get(e["args"]["External id"], "").startswith(e["name"] + " \u2190 aten::")]
assert len(named) >= sum(r["launches"] for r in user), (len(named), len(kk))
if mode == "reduce-overhead":
    rep = [e for e in kk if "graph node id" in e["args"]]
    assert rep and all(ops.get(e["args"]["External id"], "").startswith(e["name"] + " \u2190 ") for e in rep), rep[:2]
    assert j["graphs"] and max(g["replays"] for g in j["graphs"]) >= 8, j["graphs"]
    tn = [n for n in j["graph_nodes"] if n["work"].startswith("triton_")]
    assert tn and all(n["op"].startswith(n["work"] + " \u2190 ") and n["where"].startswith(src + ":") for n in tn), tn
    print(f"  {len(rep)} replayed Triton kernels under their capture-time op and line")
# the operator flame graph: GPU time under the "KERNEL <- aten ops" frames
w = sum(int(l.rsplit(" ", 1)[1]) for l in open(mode + ".folded") if fused[0]["kernel"] + " \u2190 " in l)
assert w > 0, "no GPU time under the fused kernel's operator frame"
PY
  grep -q "torch.compile kernel" "$mode.txt" || fail "$mode: no torch.compile table: $(cat "$mode.txt")"
done
# HTA opens the export and runs its kernel launch statistics (on the file of the process that
# ran the kernels: HTA takes one file per rank, and Inductor's compile workers are rank 0 too)
need_venv_module hta
mkdir -p hta_default
for f in kin_default/*.pt.trace.json.gz; do
  python3 -c 'import gzip,json,sys; sys.exit(0 if any(e.get("cat") == "kernel" and e["name"].startswith("triton_") for e in json.load(gzip.open(sys.argv[1]))["traceEvents"]) else 1)' "$f" &&
    cp "$f" hta_default/
done
"$VPY" - hta_default <<'PY' >hta.out 2>&1 || fail "HTA: $(tail -n 20 hta.out)"
import logging, sys, warnings
logging.disable(logging.WARNING); warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
rank = sorted(ta.t.traces.keys())[0]
df = ta.t.get_trace(rank)
sym = ta.t.symbol_table.get_sym_table()
names = df["name"].map(lambda i: sym[i])
tk = int((names.str.startswith("triton_") & (df["cat"].map(lambda i: sym[i]) == "kernel")).sum())
nops = len(names[names.str.contains("\u2190 aten::")].unique())
st = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)
print("HTA: %d Triton kernels, %d 'kernel \u2190 aten' operators, launch stats rows %d" % (tk, nops, len(st[rank])))
assert tk > 0 and nops > 0
PY
cat hta.out | tail -n 1
echo ok
