# A gcc-built program linked with -lcudart, run against the real libcudart with no GPU: every
# call appears with its exact count and error code; output and exit code are unchanged.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/cudart_calls
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
"$prog" >bare.out 2>bare.err; bare_rc=$?
traced "$T/tr" "$prog" >pre.out 2>pre.err; rc=$?
[ "$rc" = "$bare_rc" ] || fail "exit code changed: $bare_rc -> $rc"
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
grep -v '^dlhook: wrote' pre.err | cmp -s - bare.err || { cat pre.err; fail "stderr changed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "dlhook stats failed"
expect_calls stats.json cudaGetDeviceCount=3 cudaMalloc=2 cudaMemcpy=1 cudaMemsetAsync=1 \
  cudaStreamCreate=1 cudaGetLastError=5 cudaFree=1 cudaGetErrorString=1 cudaRuntimeGetVersion=1
pyassert stats.json 'j["dropped"] == 0'
# Error codes: each call's ret in the trace equals what the program printed.
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dlhook dump failed"
python3 - <<'PY' || fail "return codes differ from the program's output"
import json
printed = {}
for line in open("bare.out"):
    name, _, v = line.strip().partition(" -> ")
    if v.lstrip("-").isdigit(): printed.setdefault(name, []).append(int(v))
seen = {}
for line in open("dump.jsonl"):
    e = json.loads(line)
    if e.get("type") == "api" and e["name"] in printed:
        seen.setdefault(e["name"], []).extend([e["ret"]] * e.get("count", 1))  # folded repeats
assert seen == printed, (seen, printed)
print("return codes match:", printed)
PY
# Arguments that matter are recorded: cudaMalloc's size, cudaMemcpy's kind.
python3 - <<'PY' || fail "arguments missing"
import json
ev = [json.loads(l) for l in open("dump.jsonl")]
m = [e for e in ev if e.get("name") == "cudaMalloc"]
assert all(e["args"].get("size") == 1 << 20 for e in m), m
c = [e for e in ev if e.get("name") == "cudaMemcpy"][0]
assert c["args"].get("kind") == 2 and c["args"].get("count") == 64, c
PY
echo "ok"
