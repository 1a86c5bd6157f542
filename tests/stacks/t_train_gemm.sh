# On the simulated CUDA stack, every GEMM of examples/train (cublasSgemm_v2, cublasGemmEx,
# cublasLtMatmul at depth 0) has a stack whose innermost frame is the user function of
# examples/train.cu that called it (forward_fc, forward_classifier, backward_fc, ...), with its
# source line, and the frames outside it lead back to main.
. "$ROOT/tests/lib.sh"
train=$BUILD/examples/train
[ -e "$BUILD/simcuda/libcublas.so.13" ] || skip "simulated libcublas not built"
[ -x "$train" ] || skip "examples/train not built"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_PRELOAD" "$SIMRUN" "$train" --steps 3 >out.txt 2>err.txt \
  || { tail err.txt; fail "train failed under dlhook"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dlhook dump failed"
python3 - <<'PY' || fail "GEMM stacks do not name the user functions"
import json, re
ev = [json.loads(l) for l in open("dump.jsonl")]
gemm = [e for e in ev if e.get("type") == "api" and e["depth"] == 0 and
        e["name"] in ("cublasSgemm_v2", "cublasGemmEx", "cublasLtMatmul")]
assert len(gemm) >= 9, len(gemm)
seen = set()
for e in gemm:
    st = e.get("stack")
    assert st, ("no stack", e["name"])
    f0 = st[0]
    fn = f0["function"] or ""
    assert (f0["file"] or "").endswith("examples/train.cu"), (e["name"], f0)
    assert re.match(r"(forward|backward)\w*\(", fn), (e["name"], fn)
    assert f0["line"] > 0, f0
    assert any((f["function"] or "") == "main" for f in st), [f["function"] for f in st]
    seen.add((e["name"], fn.split("(")[0]))
print("ok:", sorted(seen))
PY
echo "ok"
