# A C program calls cuBLAS (real libcublas, no GPU) through three nested functions of its own:
# each recorded call's stack names them innermost first, with file:line, and the program's
# output and exit code are unchanged.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/stacks/cublas_nested
src=$ROOT/tests/stacks/cublas_nested.c
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
"$prog" >bare.out 2>&1; bare_rc=$?
traced "$T/tr" "$prog" >pre.out 2>pre.err; rc=$?
[ "$rc" = "$bare_rc" ] || fail "exit code changed: $bare_rc -> $rc"
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dlhook dump failed"
L1=$(grep -n '/\* CALL-L1 \*/' "$src" | head -1 | cut -d: -f1)
L2=$(grep -n '/\* CALL-L2 \*/' "$src" | head -1 | cut -d: -f1)
L3=$(grep -n '/\* CALL-L3 \*/' "$src" | head -1 | cut -d: -f1)
python3 - "$L1" "$L2" "$L3" <<'PY' || fail "stacks do not show the nested functions"
import json, sys
l1, l2, l3 = map(int, sys.argv[1:])
ev = [json.loads(l) for l in open("dump.jsonl")]
proc = [e for e in ev if e["type"] == "process"][0]
assert proc["stacks_mode"] == "native", proc["stacks_mode"]
gemms = [e for e in ev if e.get("name") == "cublasSgemm_v2"]
assert sum(e.get("count", 1) for e in gemms) == 3, gemms  # repeats may fold
for e in gemms:
    st = e.get("stack")
    assert st, e
    got = [(f["function"], (f["file"] or "").rsplit("/", 1)[-1], f["line"]) for f in st[:4]]
    want = [("gemm_inner", "cublas_nested.c", l3), ("gemm_middle", "cublas_nested.c", l2),
            ("gemm_outer", "cublas_nested.c", l1), ("main", "cublas_nested.c", None)]
    for g, w in zip(got, want):
        assert g[0] == w[0] and g[1] == w[1] and (w[2] is None or g[2] == w[2]), (got, want)
    assert st[0]["module"].endswith("/cublas_nested"), st[0]
    assert all(f["pc"].startswith("0x") for f in st)
    assert not any("dlh_" in (f["function"] or "") or (f["module"] or "").endswith("libdlhook.so")
                   for f in st), "dlhook's own frames are in the stack"
# the same call site gives the same interned stack
assert len({e["stack_id"] for e in gemms}) == 1
create = [e for e in ev if e.get("name") == "cublasCreate_v2"][0]
assert create["stack"][0]["function"] == "main"
print("ok:", [f["function"] for f in gemms[0]["stack"]])
PY
# Definitions: every stack, symbol and module used is in the trace.
"$DLHOOK_BIN" dump --type stack,symbol,module "$tr" >defs.jsonl || fail "dump --type failed"
grep -q '"type":"module".*cublas_nested' defs.jsonl || fail "no ModuleDef for the program"
grep -q '"type":"symbol".*"gemm_inner"' defs.jsonl || fail "no SymbolDef for gemm_inner"
# DLHOOK_STACKS=none: no stacks; a bad depth warns and keeps the default.
DLHOOK_STACKS=none traced "$T/none" "$prog" >/dev/null 2>&1 || true
"$DLHOOK_BIN" dump "$(one_trace "$T/none")" >none.jsonl
grep -q '"stack"' none.jsonl && fail "DLHOOK_STACKS=none still records stacks"
grep -q '"stacks_mode":"none"' none.jsonl || fail "stacks_mode is not none"
DLHOOK_STACK_DEPTH=2 traced "$T/d2" "$prog" >/dev/null 2>&1 || true
"$DLHOOK_BIN" dump "$(one_trace "$T/d2")" >d2.jsonl
python3 - <<'PY' || fail "DLHOOK_STACK_DEPTH=2 not honoured"
import json
ev = [json.loads(l) for l in open("d2.jsonl")]
g = [e for e in ev if e.get("name") == "cublasSgemm_v2"]
assert g and all([f["function"] for f in e["stack"]] == ["gemm_inner", "gemm_middle"] for e in g), g[0]
PY
echo "ok"
