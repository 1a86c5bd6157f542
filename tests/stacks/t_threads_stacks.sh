# Stack interning under concurrency: 8 threads intern the same 13 distinct stacks at the same
# time; every call's stack holds exactly its own recursion depth (device arg + 1 frames of rec),
# there are exactly 13 stack ids, and no call lacks its stack.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/stacks/threads_stacks
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
traced "$T/tr" "$prog" >out.txt 2>err.txt || { cat err.txt; fail "program failed"; }
"$DLHOOK_BIN" dump "$(one_trace "$T/tr")" >dump.jsonl || fail "dlhook dump failed"
python3 - <<'PY' || fail "stacks wrong under concurrency"
import json
ev = [json.loads(l) for l in open("dump.jsonl")]
calls = [e for e in ev if e.get("name") == "cudaSetDevice"]
assert len(calls) == 16000, len(calls)
ids = set()
for e in calls:
    st = e.get("stack")
    assert st, "a call without its stack"
    names = [f["function"] for f in st]
    n = 0
    while n < len(names) and names[n] == "rec": n += 1
    assert n == e["args"]["device"] + 1, (e["args"], names)
    assert names[n] == "worker", names
    ids.add(e["stack_id"])
assert len(ids) == 13, len(ids)
print("ok:", len(calls), "calls,", len(ids), "stacks")
PY
echo "ok"
