# Folded repeats (one API event standing for COUNT identical calls) in dump, stats (table and
# JSON: every call counted, time, folded, dlhook's memory; GEMM FLOPs and collective bytes
# multiplied), stats --memory untouched, and symbolize keeping them: mktrace --folded.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mktrace" a.dlh --folded || fail "mktrace --folded"

# dump: count and span_ns on the folded events only; the trailer's and summary's totals
"$D" dump --all a.dlh >dump.jsonl 2>err || fail "dump: exit $?: $(cat err)"
python3 - dump.jsonl <<'PY' || fail "dump content"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
api = [o for o in lines if o["type"] in ("api", "nvtx")]
assert len(api) == 125, len(api)
folded = {o["name"]: o for o in api if "count" in o}
assert set(folded) == {"cudaStreamQuery", "cublasGemmEx", "ncclReduceScatter"}, folded
q = folded["cudaStreamQuery"]
assert q["count"] == 1234 and q["span_ns"] == 123400 and q["dur_ns"] == 24680 and q["ret"] == 600, q
assert folded["cublasGemmEx"]["count"] == 4 and folded["cublasGemmEx"]["span_ns"] == 9000
assert folded["ncclReduceScatter"]["count"] == 3 and folded["ncclReduceScatter"]["tid"] == 1235
assert all("span_ns" not in o for o in api if "count" not in o)
tr = [o for o in lines if o["type"] == "trailer"][0]
assert tr["calls"] == 1363 and tr["folded"] == 1238 and tr["records"] == 255, tr
assert tr["mem_budget_bytes"] == 64 << 20 and tr["mem_peak_bytes"] == 3 << 20, tr
assert tr["mem_parts"] == [{"name": "rings", "peak_bytes": 2 << 20, "bytes": 1 << 20},
                           {"name": "writer", "peak_bytes": 1 << 20, "bytes": 512 << 10}], tr
assert [o.get("calls") for o in lines if o["type"] == "counters"] == [None, 1363]
s = lines[-1]
assert s["type"] == "summary" and s["calls"] == 1363 and s["api_calls"] == 1363, s
assert s["api_events"] == 125 and s["folded"] == 1238 and s["records"] == 255, s
PY

# stats --json: every call counts, the time is the calls' own, max = the folded calls' average
"$D" stats --json a.dlh >s.json 2>err || fail "stats --json: exit $?: $(cat err)"
expect_calls s.json cudaStreamQuery=1235 cublasGemmEx=4 ncclReduceScatter=3 cudaMalloc=3 \
  cuLaunchKernel=100
python3 - s.json <<'PY' || fail "stats content"
import json, sys
j = json.load(open(sys.argv[1]))
m = {a["name"]: a for a in j["api"]}
q = m["cudaStreamQuery"]
assert q == {"name": "cudaStreamQuery", "domain": "cudart", "calls": 1235, "errors": 1234,
             "total_ns": 24710, "mean_ns": 20, "max_ns": 30}, q
assert m["cublasGemmEx"]["total_ns"] == 8000 and m["cublasGemmEx"]["max_ns"] == 2000
assert j["calls"] == 1363 and j["api_events"] == 125 and j["folded"] == 1238, j
assert j["errors"] == 2 + 1234 and j["records"] == 255, j
assert j["total_ns"] == 50610 + 24710 + 8000 + 30000, j["total_ns"]
g = j["gemms"]
assert len(g) == 1 and g[0]["calls"] == 4 and g[0]["flops"] == 4 * 2 * 64 ** 3, g
assert g[0]["total_ns"] == 8000 and g[0]["mean_ns"] == 2000, g
c = [x for x in j["collectives"] if x["function"] == "ncclReduceScatter"]
assert len(c) == 1 and c[0]["calls"] == 3 and c[0]["bytes"] == 4096 and c[0]["total_ns"] == 30000, c
# algbw: the bytes of all 3 calls in their 30 us
assert abs(c[0]["algbw_gb_per_s"] - 3 * 4096 / 30000) < 1e-9, c
mem = j["dlhook_memory"]
assert mem["budget_bytes"] == 64 << 20 and mem["peak_bytes"] == 3 << 20, mem
assert mem["parts"] == {"rings": 2 << 20, "writer": 1 << 20}, mem
t = mem["traces"]
assert len(t) == 1 and t[0]["pid"] == 1234 and t[0]["parts"]["writer"] == {
    "peak_bytes": 1 << 20, "bytes": 512 << 10}, t
PY

# the table: the folded calls counted, a line on the folding and dlhook's memory
"$D" stats a.dlh >table.txt || fail "stats table"
awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' table.txt || fail "table wider than 100 columns"
grep -q "^cudaStreamQuery  *cudart  *1235  *1234 " table.txt || fail "table row: $(grep cudaStreamQuery table.txt)"
grep -q "^total  *1363 " table.txt || fail "total row: $(grep ^total table.txt)"
grep -q "^1238 folded repeats .*1363 calls in 125 events" table.txt || fail "no folding line: $(tail -5 table.txt)"
grep -q "^dlhook memory: peak 3.00 MiB of a 64.00 MiB budget" table.txt || fail "no memory line"
grep -q "^  rings .*2.00 MiB" table.txt || fail "no memory part"
grep -q "^cublasGemmEx  *64x64x64 .* 4 " table.txt || fail "GEMM row: $(grep cublasGemmEx table.txt)"

# a trace without folding or memory figures says nothing about them
"$BUILD/tests/bin/mktrace" plain.dlh || fail "mktrace"
"$D" stats --json plain.dlh >p.json || fail "stats plain"
pyassert p.json 'j["folded"] == 0 and "dlhook_memory" not in j and j["calls"] == j["api_events"] == 121'
"$D" stats plain.dlh >ptable.txt || fail "stats plain table"
grep -q "folded\|dlhook memory" ptable.txt && fail "plain trace: $(tail -3 ptable.txt)"

# two traces: calls and folded add up, dlhook_memory per trace
"$D" stats --json a.dlh a.dlh >two.json || fail "stats two"
pyassert two.json 'j["calls"] == 2726 and j["folded"] == 2476 and len(j["dlhook_memory"]["traces"]) == 2'

# stats --memory (the GPU memory ledger) keeps its keys
"$D" stats --memory --json a.dlh >m.json || fail "stats --memory"
pyassert m.json '"traces" in j and "peak_bytes" in j and "dlhook_memory" not in j'

# symbolize rewrites the trace: folded events and the trailer's figures survive
"$D" symbolize -o sym.dlh a.dlh >/dev/null || fail "symbolize"
"$D" dump --all sym.dlh >sym.jsonl || fail "dump symbolized"
python3 - dump.jsonl sym.jsonl <<'PY' || fail "symbolize lost folded events"
import json, sys
def pick(f):
    l = [json.loads(x) for x in open(f)]
    return ([o for o in l if o["type"] == "api"], [o for o in l if o["type"] == "trailer"])
a, ta = pick(sys.argv[1])
b, tb = pick(sys.argv[2])
key = lambda o: (o["tid"], o["start_ns"])
assert sorted(a, key=key) == sorted(b, key=key)
for k in ("calls", "folded", "mem_parts", "mem_peak_bytes", "mem_budget_bytes"):
    assert ta[0][k] == tb[0][k], (k, ta, tb)
PY
echo ok
