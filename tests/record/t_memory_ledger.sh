# The GPU memory ledger on the simulator: tests/progs/memory allocates 1, 2, 3 (leaked, by
# leak_buffer), 4 MiB (cudaMallocAsync) with frees in between: peak 9 MiB, one leak of 3 MiB
# whose stack names leak_buffer, an out-of-memory error with 2 live allocations (5 MiB), and
# 5 MiB through the driver API (cuMemAlloc_v2, cuMemFree_v2), seen through CUPTI.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcudart.so.13"; need "$BUILD/tests/progs/memory"
"$DLHOOK_BIN" record --sim --stacks native -o "$T/tr" -- "$BUILD/tests/progs/memory" >out.txt 2>rec.txt \
  || { cat rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --memory --json "$tr" >mem.json || fail "stats --memory failed"
pyassert mem.json 'j["peak_bytes"] == 9 << 20'
pyassert mem.json 'len(j["leaks"]) == 1 and j["leaks"][0]["bytes"] == 3 << 20'
pyassert mem.json 'j["traces"][0]["allocations"] == 5 and j["traces"][0]["frees"] == 4'  # + cuMemAlloc_v2/cuMemFree_v2 (CUPTI)
pyassert mem.json 'len(j["traces"][0]["ooms"]) == 1 and j["traces"][0]["ooms"][0]["live_bytes"] == 5 << 20'
pyassert mem.json 'sorted(a["bytes"] for a in j["traces"][0]["ooms"][0]["live"]) == [2 << 20, 3 << 20]'
if python3 -c 'import json,sys; sys.exit(0 if json.load(open("mem.json"))["leaks"][0]["stack"] else 1)'; then
  pyassert mem.json 'any("leak_buffer" in f for f in j["leaks"][0]["stack"])'
else
  echo "note: no call stacks recorded; the leak's stack is not checked"
fi
"$DLHOOK_BIN" stats --memory "$tr" >mem.txt || fail "stats --memory (table) failed"
grep -q "9.00 MiB" mem.txt || { cat mem.txt; fail "table lacks the peak"; }
awk 'length > 100 { exit 1 }' mem.txt || { cat mem.txt; fail "table wider than 100 columns"; }
# no PyTorch: the tables by operator, module and line are empty, said in one line
pyassert mem.json 'all(t[b] == [] for t in j["traces"] for b in ("by_operator", "by_module", "by_line"))'
grep -q "by operator, module, line: none (no PyTorch in this trace)" mem.txt ||
  { cat mem.txt; fail "table does not say there is no PyTorch"; }
echo ok
