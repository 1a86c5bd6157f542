#!/bin/sh
# run-tests: timeout=900
# CUDA graphs in PyTorch, on the simulated stack (tests/torch/graph_models.py): a transformer
# block's forward captured once with torch.cuda.graph and replayed 100 times. Every replayed
# kernel and memset carries its graph node, which leads to the capture-time call and its stack
# (Block.forward's lines); dlhook stats counts 100 replays of the graph and names each node's
# operator. The operator agreement measure (op_agreement.py: kernel -> launch -> External id ->
# aten op, per kernel name) against torch.profiler's trace of the eager forward is >= 98 % for
# dlhook's eager run and for its graphed run. torch.profiler's own graphed trace links replayed
# kernels to cudaGraphLaunch only: its agreement with its own eager trace is printed (it has no
# operator for them). HTA reads the graphed export and finds each replayed kernel's operator. make_graphed_callables (forward and backward
# graphs of an MLP's training step) links every replayed kernel to a capture-time stack too.
. "$ROOT/tests/torch/common.sh"
. "$ROOT/tests/export/common.sh"
G="$ROOT/tests/torch/graph_models.py"
A="$ROOT/tests/torch/op_agreement.py"
"$SIMRUN" "$PY" "$G" eager --steps 20 --profile "$T/ref_eager.json" >ref_eager.out 2>ref_eager.err ||
  fail "eager under torch.profiler: $(tail -n 5 ref_eager.err)"
"$SIMRUN" "$PY" "$G" graph --steps 100 --profile "$T/ref_graph.json" >ref_graph.out 2>ref_graph.err ||
  fail "graph under torch.profiler: $(tail -n 5 ref_graph.err)"
for w in eager graph; do
  "$DLHOOK_BIN" record --sim -o "rec_$w" -- "$PY" "$G" $w --steps 100 >"rec_$w.out" 2>"rec_$w.err" ||
    fail "$w under dlhook: $(tail -n 5 "rec_$w.err")"
  grep -q '^done$' "rec_$w.out" || fail "$w: no done line"
  "$DLHOOK_BIN" export -q -f kineto -o "kin_$w" "rec_$w"/*.dlh || fail "$w: kineto export"
  python3 "$A" ref_eager.json "kin_$w"/*.pt.trace.json.gz --name "dlhook $w vs torch.profiler eager" >"agree_$w.txt" ||
    fail "$w: $(cat "agree_$w.txt")"
  head -n 1 "agree_$w.txt"
done
# torch.profiler's own graphed trace, measured the same way (informative: no floor)
python3 "$A" ref_eager.json ref_graph.json --min 0 --name "torch.profiler graph vs torch.profiler eager" >agree_ref_graph.txt
head -n 1 agree_ref_graph.txt

"$DLHOOK_BIN" dump rec_graph/*.dlh >graph.jsonl || fail "dump"
python3 - graph.jsonl "$G" <<'PY' || fail "replayed kernels not linked to their node and capture-time stack"
import json, sys, collections
ev = [json.loads(l) for l in open(sys.argv[1])]
api = {e["corr"]: e for e in ev if e["type"] == "api" and e.get("corr")}
nodes = {e["node"]: e for e in ev if e["type"] == "graphnode"}
rep = [e for e in ev if e["type"] in ("kernel", "memcpy", "memset") and e.get("graph_node")]
def made(n):
    for _ in range(8):
        x = nodes.get(n)
        if not x or not x.get("origin"): return x
        n = x["origin"]
lines = collections.Counter()
for e in rep:
    x = made(e["graph_node"])
    assert x and x.get("corr") in api, ("no making call", e)
    st = api[x["corr"]].get("stack", [])
    fr = [f for f in st if f.get("file") == sys.argv[2] and f.get("function") == "Block.forward"]
    assert fr, ("capture-time stack without Block.forward", api[x["corr"]]["name"], st[:6])
    lines[fr[0]["line"]] += 1
# in file order, a node (and the node it copies) comes before any work it ran: readers that take
# definitions as they come (dlhook stats' one pass, the exporters' first pass) link every record
seen, late = set(), 0
for e in ev:
    if e["type"] == "graphnode":
        seen.add(e["node"])
    elif e.get("graph_node"):
        x = nodes.get(e["graph_node"])
        late += e["graph_node"] not in seen or (x.get("origin") and x["origin"] not in seen) or made(e["graph_node"])["node"] not in seen
assert not late, f"{late} replayed records before their node in the file"
kn = sum(1 for e in rep if e["type"] == "kernel")
print(f"graph: {len(rep)} replayed records ({kn} kernels) of {len(set(e['graph_node'] for e in rep))} nodes, "
      f"all linked to capture-time stacks; Block.forward lines {dict(sorted(lines.items()))}")
assert kn >= 100 * 8 and len(rep) % 100 == 0, (kn, len(rep))
PY
"$DLHOOK_BIN" stats --json rec_graph/*.dlh >graph.json || fail "stats"
pyassert graph.json 'len(j["graphs"]) == 1 and j["graphs"][0]["replays"] == 100 and j["graphs"][0]["nodes"] >= 8'
pyassert graph.json 'all(n["made_by"] and n["op"] and n["op"].startswith("aten::") and n["where"] for n in j["graph_nodes"])'
pyassert graph.json 'any(n["op"] == "aten::gelu" for n in j["graph_nodes"]) and any(n["op"] == "aten::addmm" and n["made_by"] == "cublasLtMatmul" for n in j["graph_nodes"])'
# the operator table puts replayed GPU time on the capture-time operators
pyassert graph.json '{r["name"]: r for r in j["pytorch"]["operators"]}["aten::gelu"]["gpu_ns"] >= 100 * 2000'

# HTA reads the graphed export and runs its analyses. Its call graph nests a kernel under the
# cpu_ops around its launch by times alone; for replayed kernels the launch is the capture-time
# call (one per captured call, library calls included), so it finds their operator as for eager
# kernels (1134 of 1134 measured); asked as of the eager LM (t_torch_ops.sh, hta_ops.py).
need_venv_module hta
"$VPY" "$ROOT/tests/torch/hta_ops.py" kin_graph 0.98 >hta.out 2>&1 || fail "HTA on the graphed export: $(tail -n 20 hta.out)"
grep -m1 -i "call graph" hta.out || head -n 2 hta.out

"$DLHOOK_BIN" record --sim -o rec_graphed -- "$PY" "$G" graphed --steps 20 >rec_graphed.out 2>rec_graphed.err ||
  fail "make_graphed_callables under dlhook: $(tail -n 5 rec_graphed.err)"
"$DLHOOK_BIN" stats --json rec_graphed/*.dlh >graphed.json || fail "stats (graphed callables)"
python3 - graphed.json <<'PY' || fail "make_graphed_callables: replayed work not attributed"
import json, sys
j = json.load(open(sys.argv[1]))
gs, ns = j["graphs"], j["graph_nodes"]
print("make_graphed_callables: graphs", [(g["graph"], g["replays"], g["kernels"]) for g in gs])
assert len(gs) >= 2 and all(g["replays"] >= 20 for g in gs), gs
# the backward graph is captured on the autograd engine's thread: operators, no Python line
assert all(n["made_by"] and n["op"] for n in ns), [n for n in ns if not n["made_by"] or not n["op"]][:3]
assert any(n["op"] == "aten::gelu_backward" for n in ns) and any(n["op"] == "aten::gelu" and n["where"] for n in ns), ns
PY
echo ok
