# dlhook stats: exact counts on mktrace traces, JSON and table, several traces.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mktrace" a.dlh || fail "mktrace"
"$D" stats --json a.dlh >s.json 2>err || fail "stats --json: exit $?: $(cat err)"
expect_calls s.json ncclAllReduce=2 cublasSgemm_v2=5 cudaMemcpy=10 cuLaunchKernel=100 \
  cudaMalloc=3 nvtxRangePushA=1
python3 - s.json <<'PY' || fail "stats content"
import json, sys
j = json.load(open(sys.argv[1]))
api = j["api"]
assert [a["name"] for a in api] == ["ncclAllReduce", "cublasSgemm_v2", "cudaMemcpy",
    "cuLaunchKernel", "cudaMalloc", "nvtxRangePushA"], [a["name"] for a in api]
m = {a["name"]: a for a in api}
assert m["cudaMalloc"] == {"name": "cudaMalloc", "domain": "cudart", "calls": 3, "errors": 1,
    "total_ns": 600, "mean_ns": 200, "max_ns": 300}, m["cudaMalloc"]
assert m["cudaMemcpy"]["errors"] == 1 and m["cudaMemcpy"]["total_ns"] == 10000
assert m["ncclAllReduce"]["domain"] == "nccl" and m["ncclAllReduce"]["mean_ns"] == 10000
assert j["kernels"] == [
    {"name": "_Z6kernelPfi", "short_name": "kernel", "count": 100, "total_ns": 50000, "mean_ns": 500, "max_ns": 500},
    {"name": "_Z4gemmv", "short_name": "gemm", "count": 20, "total_ns": 20000, "mean_ns": 1000, "max_ns": 1000}], j["kernels"]
assert j["dropped"] == 5 and j["records"] == 251 and j["traces"] == 1, j
assert j["processes"] == 1 and j["threads"] == 2 and j["calls"] == 121 and j["errors"] == 2, j
PY

# two traces: counts add up; dropped = trailer of a (5) + last counters of b (4)
"$BUILD/tests/bin/mktrace" b.dlh --pid 77 --no-trailer || fail "mktrace b"
"$D" stats --json a.dlh b.dlh >s2.json || fail "stats two"
expect_calls s2.json ncclAllReduce=4 cuLaunchKernel=200 cudaMalloc=6
pyassert s2.json 'j["dropped"] == 9 and j["traces"] == 2 and j["processes"] == 2 and j["threads"] == 4'
pyassert s2.json 'j["kernels"][0]["count"] == 200'

# table: readable in 100 columns, has every function and the totals
"$D" stats a.dlh >table.txt || fail "stats table"
awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' table.txt || fail "table wider than 100 columns"
# kernel names are shown short in the table: the base name, no parameters (names.c)
for f in ncclAllReduce cublasSgemm_v2 cudaMemcpy cuLaunchKernel cudaMalloc nvtxRangePushA kernel gemm; do
  grep -q "^$f " table.txt || fail "table lacks $f"
done
# the first screen leads (no steps, no PyTorch: the API functions), then the full tables
head -n 1 table.txt | grep -q '^Summary of 1 trace (1 process, 2 threads): 121 API calls, 2 distinct kernels$' ||
  fail "first line: $(head -n 1 table.txt)"
sed -n '2,/^(the full tables follow/p' table.txt >first.txt
grep -q '^Steps: ' first.txt && grep -q '^Findings: ' first.txt && grep -q '^API functions by host time' first.txt &&
  grep -q '^  kernel  ' first.txt && grep -q '^dlhook itself: 251 records (5 dropped)' first.txt ||
  fail "first screen: $(cat first.txt)"
[ "$(wc -l <first.txt)" -le 40 ] || fail "first screen longer than 40 lines"
grep -q '^PyTorch operators' first.txt && fail "a trace without PyTorch has PyTorch rows"
# --summary: that screen only; --all: the tables only; --table: the one named
"$D" stats --summary a.dlh >sum.txt && ! grep -q '^Function ' sum.txt && grep -q '^Summary of' sum.txt ||
  fail "--summary: $(cat sum.txt)"
"$D" stats --all a.dlh >all.txt && head -n 1 all.txt | grep -q '^Function ' && ! grep -q '^Summary' all.txt ||
  fail "--all: $(head -n 3 all.txt)"
"$D" stats --table kernels a.dlh >k.txt && head -n 2 k.txt | grep -q '^Kernel ' && ! grep -q '^Function ' k.txt ||
  fail "--table kernels: $(cat k.txt)"
"$D" stats --table api,findings a.dlh >af.txt && grep -q '^Function ' af.txt && grep -q '^Findings$' af.txt ||
  fail "--table api,findings: $(cat af.txt)"
"$D" stats --table nosuch a.dlh 2>err.txt && fail "--table nosuch accepted"
grep -q 'no such table' err.txt || fail "--table nosuch: $(cat err.txt)"
grep -q "^cudaMalloc  *cudart  *3  *1 " table.txt || fail "table row: $(grep cudaMalloc table.txt)"
grep -q "1 trace, 1 process, 2 threads, 251 records, 5 dropped" table.txt || fail "table footer: $(tail -1 table.txt)"

# a trace without API calls
"$BUILD/tests/bin/mktrace" c.dlh && head -c 16 c.dlh >hdr.dlh
"$D" stats --json hdr.dlh >s3.json || fail "stats on an empty trace"
pyassert s3.json 'j["api"] == [] and j["kernels"] == [] and j["traces"] == 1'
echo ok
