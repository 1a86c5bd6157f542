# torch.compile's generated code without torch (tests/e2e/inductor/): a module laid out as
# Inductor writes it (under a torchinductor_ directory: each Triton kernel's definition under its
# "Source Nodes / Original ATen" comment, a call() that launches them with NAME.run(...), one
# launch spread over two lines, a decoy comment inside a kernel's source), run by drive.py through
# a stand-in runtime (site-packages/fakeinductor.py: cuModuleGetFunction + cuLaunchKernel, as
# Triton launches) 5 times eagerly, then captured in a CUDA graph replayed 20 times. The recorder
# reads the file once into InductorKernel packets; dlhook stats names every launch's fused aten
# ops and the driver's line, the replays' at the capture line; the Kineto export's kernels carry
# the fused ops; graph nodes name the launching line's operator.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$DLHOOK_LIB"
command -v python3 >/dev/null || skip "no python3"
python3 -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)' ||
  skip "python3 $(python3 -V) has no mixed stacks in dlhook (3.10-3.13)"
D="$ROOT/tests/e2e/inductor"
export PYTHONDONTWRITEBYTECODE=1 # nothing written into the source tree
"$SIMRUN" python3 "$D/drive.py" "$D" >bare.txt 2>bare.err || fail "bare run: $(cat bare.err)"
DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_PRELOAD" "$SIMRUN" python3 "$D/drive.py" "$D" >out.txt 2>err.txt ||
  fail "run under dlhook: $(cat err.txt)"
cmp -s bare.txt out.txt || fail "output differs under dlhook"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump --type inductor,kernel "$tr" >dump.jsonl || fail "dump"
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats"
"$DLHOOK_BIN" stats "$tr" >stats.txt || fail "stats (table)"
"$DLHOOK_BIN" export -q -f kineto --no-gzip -o kin "$tr" || fail "kineto export"
eager=$(grep -n '# eager run' "$D/drive.py" | cut -d: -f1)
capt=$(grep -n '# captured run' "$D/drive.py" | cut -d: -f1)
python3 - "$D" "$eager" "$capt" <<'PY' || fail "Inductor kernels not attributed"
import glob, json, sys
d, eager, capt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gen = d + "/torchinductor_test/ab/cgen.py"
src = open(gen).read().split("\n")
ev = [json.loads(l) for l in open("dump.jsonl")]
ind = {e["kernel"]: e for e in ev if e["type"] == "inductor"}
assert set(ind) == {"triton_poi_fused_add_gelu_mul_0", "triton_poi_fused_relu_1"}, ind
g, r = ind["triton_poi_fused_add_gelu_mul_0"], ind["triton_poi_fused_relu_1"]
assert g["file"] == gen and g["aten_ops"] == "aten::gelu, aten::mul, aten::add" and g["source_nodes"] == "gelu, mul, add", g
assert r["aten_ops"] == "aten::relu" and r["source_nodes"] == "relu", r   # "Unsorted Source Nodes"
assert src[g["def_line"] - 1].startswith("triton_poi_fused_add_gelu_mul_0 = async_compile.triton("), g
run = [i + 1 for i, l in enumerate(src) if "triton_poi_fused_add_gelu_mul_0.run(" in l][0]
assert g["launch_lines"] == [run, run + 1], g                        # a launch over two lines
assert len(r["launch_lines"]) == 1 and ".run(" in src[r["launch_lines"][0] - 1], r
j = json.load(open("stats.json"))
rows = {(x["kernel"], x["line"]): x for x in j["inductor_kernels"]}
for k in ind:
    assert rows[(k, f"{d}/drive.py:{eager}")]["launches"] == 5, rows
    assert rows[(k, f"{d}/drive.py:{capt}")]["launches"] == 20, rows   # replays: the capture line
assert len(rows) == 4, rows
gs = j["graphs"]
assert len(gs) == 1 and gs[0]["replays"] == 20 and gs[0]["nodes"] == 2, gs
for n in j["graph_nodes"]:
    assert n["made_by"] == "cuLaunchKernel" and n["op"].startswith(n["work"] + " \u2190 aten::"), n
    assert n["where"] == f"{d}/drive.py:{capt}", n
k = json.load(open(glob.glob("kin/*.json")[0]))["traceEvents"]
kk = [e for e in k if e.get("cat") == "kernel"]
assert len(kk) == 50 and all(e["args"]["inductor aten ops"] == ind[e["name"]]["aten_ops"] for e in kk), kk[:2]
print("inductor: 2 kernels, 50 launches (40 replayed) attributed to their fused ops and lines")
PY
grep -q "triton_poi_fused_add_gelu_mul_0 ← aten::gelu, aten::mul, aten::add at " stats.txt || fail "stats table: $(cat stats.txt)"
echo ok
