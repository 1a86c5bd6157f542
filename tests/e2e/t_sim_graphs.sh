# CUDA graphs without PyTorch, on the simulator (tests/progs/graphs.cu): a graph made by stream
# capture (two kernels, a memset, a copy, each from a function of its own) replayed 100 times and
# one made with explicit node calls replayed 50 times. Every replayed kernel, copy and memset
# carries its graph node, the node leads (through its executable copy) to the call that made it,
# whose stack is the capture-time one; dlhook stats counts replays, nodes and GPU time per graph
# and names each node's making call; the Kineto export links replayed kernels to the capture-time
# launch (correlation) and names the replay's cudaGraphLaunch; the GPU-weighted flame graph puts
# the replayed time on the capture-time stacks; the Parquet gpu table has graph, graph_node and
# launch_corr (SQL per graph). cudaGraphLaunch stays one call per replay.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/tests/progs/graphs"; need "$DLHOOK_LIB"
"$SIMRUN" "$BUILD/tests/progs/graphs" 100 >bare.txt 2>bare.err || fail "bare run failed: $(cat bare.err)"
traced "$T/tr" "$SIMRUN" "$BUILD/tests/progs/graphs" 100 >out.txt 2>err.txt || { cat err.txt; fail "graphs failed"; }
cmp -s bare.txt out.txt || fail "output differs under dlhook"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dump failed"
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
"$DLHOOK_BIN" stats "$tr" >stats.txt || fail "stats (table) failed"
"$DLHOOK_BIN" export -f kineto --no-gzip -o kineto "$tr" || fail "kineto export failed"
"$DLHOOK_BIN" export -f folded -o gpu.folded "$tr" || fail "folded export failed"
python3 - <<'PY' || fail "replayed work not linked to its capture-time call"
import json, collections
ev = [json.loads(l) for l in open("dump.jsonl")]
api = {e["corr"]: e for e in ev if e["type"] == "api" and e.get("corr")}
nodes = {e["node"]: e for e in ev if e["type"] == "graphnode"}
gpu = [e for e in ev if e["type"] in ("kernel", "memcpy", "memset")]
replayed = [e for e in gpu if e.get("graph_node")]
eager = [e for e in gpu if not e.get("graph_node")]
print("records:", len(gpu), "replayed:", len(replayed), "nodes:", len(nodes))
# 100 x (2 kernels + memset + copy) + 50 x (memset + kernel); 10 eager kernels
assert len(replayed) == 500, len(replayed)
assert len(eager) == 10 and all(e["name"].startswith("_Z7g_eager") for e in eager), eager[:2]
def made(n):
    for _ in range(8):
        x = nodes.get(n)
        if x is None: return None
        if not x.get("origin"): return x
        n = x["origin"]
makers = collections.Counter()
for e in replayed:
    x = made(e["graph_node"])
    assert x and x.get("corr") in api, ("node without its call", e)
    call = api[x["corr"]]
    fns = [f.get("function") or "" for f in call.get("stack", [])]
    where = next((f.split("(")[0] for f in fns if f.startswith(("capture_", "build_explicit"))), None)
    assert where, ("capture-time stack missing", call["name"], fns[:4])
    makers[(call["name"], where, e["type"])] += 1
    # the graph launch is the record's own corr, a cudaGraphLaunch call
    assert api[e["corr"]]["name"] == "cudaGraphLaunch", api.get(e["corr"])
print(dict(makers))
want = {("__cudaLaunchKernel", "capture_scale", "kernel"): 100, ("__cudaLaunchKernel", "capture_add", "kernel"): 100,
        ("cudaMemsetAsync", "capture_clear", "memset"): 100, ("cudaMemcpyAsync", "capture_copy", "memcpy"): 100,
        ("cudaGraphAddKernelNode", "build_explicit", "kernel"): 50, ("cudaGraphAddMemsetNode", "build_explicit", "memset"): 50}
assert dict(makers) == want, makers
launches = sum(1 for e in ev if e["type"] == "api" and e["name"] == "cudaGraphLaunch")
assert launches == 150, launches
PY
pyassert stats.json 'sorted((g["replays"], g["nodes"], g["kernels"], g["copies"], g["memsets"]) for g in j["graphs"]) == [(50, 2, 50, 0, 50), (100, 4, 200, 100, 100)]'
pyassert stats.json 'len(j["graph_nodes"]) == 6 and all(n["made_by"] and n["where"] for n in j["graph_nodes"])'
pyassert stats.json 'any(n["made_by"] == "cudaGraphAddKernelNode" and n["where"].startswith("build_explicit") and n["runs"] == 50 for n in j["graph_nodes"])'
grep -q "Made by (capture-time call)" stats.txt || fail "no graph node table: $(cat stats.txt)"
python3 - <<'PY' || fail "Kineto export: replayed kernels not linked to their capture-time launch"
import json
import glob
ev = json.load(open(glob.glob("kineto/*.json")[0]))["traceEvents"]
rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
ks = [e for e in ev if e.get("cat") == "kernel" and "graph node id" in e.get("args", {})]
assert len(ks) == 250, len(ks)
for k in ks:
    a = k["args"]
    assert rt[a["correlation"]]["name"] in ("cudaLaunchKernel", "__cudaLaunchKernel", "cudaGraphAddKernelNode"), rt.get(a["correlation"])
    assert rt[a["graph launch correlation"]]["name"] == "cudaGraphLaunch"
    assert rt[a["correlation"]]["ts"] < rt[a["graph launch correlation"]]["ts"]
print("kineto: %d replayed kernels linked to capture-time launches" % len(ks))
PY
# the replayed GPU time (2 us per record on the simulator) lies on the capture-time stacks
python3 - <<'PY' || fail "flame graph: replayed GPU time not on the capture-time stacks"
w = {}
for l in open("gpu.folded"):
    stack, v = l.rsplit(" ", 1)
    for fn in ("capture_scale", "capture_add", "capture_clear", "capture_copy", "build_explicit"):
        if fn in stack: w[fn] = w.get(fn, 0) + int(v)
print(w)
assert all(w.get(fn, 0) > 0 for fn in ("capture_scale", "capture_add", "capture_clear", "capture_copy", "build_explicit")), w
assert w["capture_scale"] == w["capture_add"] and w["build_explicit"] == w["capture_scale"], w
PY
# the Parquet/SQL tables: replayed records with their graph, node and launch (when the venv has
# pyarrow and duckdb)
VPY=$BUILD/venv/bin/python
if [ -x "$VPY" ] && "$VPY" -c 'import pyarrow, duckdb' 2>/dev/null; then
  DLHOOK_PYTHON=$VPY "$DLHOOK_BIN" export -q -f parquet -o pq "$tr" || fail "parquet export"
  DLHOOK_PYTHON=$VPY "$DLHOOK_BIN" sql --format csv pq "select graph, count(*) as n, count(distinct launch_corr) as replays from gpu where graph_node is not null group by graph order by graph" >sql.csv ||
    fail "sql"
  python3 -c 'import csv,sys; r=[(int(x["n"]), int(x["replays"])) for x in csv.DictReader(open("sql.csv"))]; sys.exit(0 if r == [(400, 100), (100, 50)] else "sql: %r" % r)' ||
    fail "sql per graph: $(cat sql.csv)"
else
  echo "sql: skipped (no pyarrow/duckdb in $BUILD/venv)"
fi
echo ok
