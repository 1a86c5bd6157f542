#!/bin/sh
# examples/train with 2 ranks on the simulator: its GEMMs (cublasSgemm_v2, cublasGemmEx,
# cublasLtMatmul), convolutions (forward, backward data, backward filter) and grouped
# all-reduces appear in `dlhook dump` and `dlhook stats --json` with the shapes, FLOPs and bytes
# examples/train.cu uses (batch 32, 16x16 images, conv 1->8 stride 1 and 8->8 stride 2, fc
# 512->64->10), linked to their simulated kernels; the communicator hash is the same on both
# ranks and seq counts the operations; busbw = algbw x 2(n-1)/n with algbw = bytes / GPU time.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"; need "$BUILD/examples/train"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "simulated CUDA stack not built"
mkdir -p tr
DLHOOK_OUTPUT="$T/tr/" "$SIMRUN" env LD_PRELOAD="$DLHOOK_LIB" "$BUILD/examples/train" --ranks 2 --steps 3 \
  >out 2>err || { tail err; fail "train --ranks 2 failed"; }
# the launcher may leave a trace of its own (it makes the NCCL id): the ranks' are *-r<N>-*
n=$(ls tr/*-r[0-9]*-*.dlh | wc -l)
[ "$n" -eq 2 ] || fail "expected 2 rank traces, found $n: $(ls tr)"
for f in tr/*-r[0-9]*-*.dlh; do "$DLHOOK_BIN" dump "$f" >"$(basename "$f").jsonl" || fail "dump $f"; done
"$DLHOOK_BIN" stats --json tr/*-r[0-9]*-*.dlh >stats.json || fail "stats"
"$DLHOOK_BIN" stats tr/*-r[0-9]*-*.dlh >stats.txt || fail "stats table"
python3 - stats.json *.jsonl <<'PY' || fail "library args or stats"
import json, sys
bad = 0
def check(c, msg):
    global bad
    if not c:
        print("FAIL:", msg); bad = 1
gemms = {  # (function, m, n, k): flops
    ("cublasSgemm_v2", 64, 32, 512): 2*64*32*512, ("cublasLtMatmul", 10, 32, 64): 2*10*32*64,
    ("cublasGemmEx", 64, 10, 32): 2*64*10*32, ("cublasSgemm_v2", 512, 64, 32): 2*512*64*32,
    ("cublasSgemm_v2", 64, 32, 10): 2*64*32*10, ("cublasSgemm_v2", 512, 32, 64): 2*512*32*64}
convs = {  # (function, C, stride): flops = 2 N K P Q C R S
    ("cudnnConvolutionForward", 1, 1): 2*32*8*16*16*1*9, ("cudnnConvolutionForward", 8, 2): 2*32*8*8*8*8*9,
    ("cudnnConvolutionBackwardFilter", 1, 1): 2*32*8*16*16*1*9,
    ("cudnnConvolutionBackwardFilter", 8, 2): 2*32*8*8*8*8*9,
    ("cudnnConvolutionBackwardData", 8, 2): 2*32*8*8*8*8*9}
reduce_bytes = {72*4, 8*4, 576*4, 32768*4, 64*4, 640*4, 10*4, 4}
hashes = set()
for path in sys.argv[2:]:
    ev = [json.loads(l) for l in open(path)]
    api = [e for e in ev if e.get("type") == "api"]
    kcorr = {e["corr"] for e in ev if e.get("type") == "kernel"}
    seen_g, seen_c, seqs = set(), set(), []
    for e in api:
        a, n = e["args"], e["name"]
        if e["depth"] == 0 and n in ("cublasSgemm_v2", "cublasGemmEx", "cublasLtMatmul"):
            key = (n, a["m"], a["n"], a["k"])
            check(key in gemms, "unexpected GEMM %s" % (key,))
            check(a["flops"] == gemms.get(key), "%s flops %s" % (key, a["flops"]))
            check(a["dtype"] == 0 and a["batch"] == 1, "%s dtype/batch" % (key,))
            check(e.get("corr") in kcorr, "%s has no linked kernel" % (key,))
            seen_g.add(key)
        if n.startswith("cudnnConvolution") and e["depth"] == 0:
            key = (n, a["C"], a["stride"])
            check(key in convs, "unexpected convolution %s" % (key,))
            check((a["N"], a["H"], a["W"], a["K"], a["R"], a["S"], a["pad"], a["groups"]) ==
                  (32, 16, 16, 8, 3, 3, 1, 1), "%s shape %s" % (key, a))
            check(a["flops"] == convs.get(key), "%s flops %s" % (key, a["flops"]))
            seen_c.add(key)
        if n == "ncclAllReduce":
            check(a["bytes"] == a["count"] * 4 and a["bytes"] in reduce_bytes, "allreduce bytes %s" % a)
            check(a["nranks"] == 2 and a["group"] == 1 and a["datatype"] == 7, "allreduce comm %s" % a)
            hashes.add(a["comm_hash"]); seqs.append(a["seq"])
    check(seen_g == set(gemms), "%s: GEMMs missing: %s" % (path, set(gemms) - seen_g))
    check(seen_c == set(convs), "%s: convolutions missing: %s" % (path, set(convs) - seen_c))
    check(seqs == list(range(len(seqs))) and len(seqs) == 3 * 9, "%s: seq %s" % (path, seqs))
    ends = [e for e in api if e["name"] == "ncclGroupEnd"]
    check(ends and all(e.get("corr") in kcorr for e in ends), "ncclGroupEnd without linked kernels")
check(len(hashes) == 1 and 0 not in hashes, "comm_hash differs across ranks: %s" % hashes)
# (several ranks: ranks.c also writes a "collectives" member, an object: take the list)
def pairs(kv):
    d = {}
    for k, v in kv:
        if k == "collectives" and isinstance(d.get(k), list) and not isinstance(v, list):
            continue
        d[k] = v
    return d
s = json.load(open(sys.argv[1]), object_pairs_hook=pairs)
check({(g["function"], g["m"], g["n"], g["k"]) for g in s["gemms"]} == set(gemms), "stats gemms")
for g in s["gemms"]:
    check(g["time"] == "gpu" and g["calls"] == 6, "gemm row %s" % g)
    check(abs(g["tflops_per_s"] - g["flops"] / g["total_ns"] / 1e3) < 1e-9, "tflops %s" % g)
    check(g["flops"] == 6 * gemms[(g["function"], g["m"], g["n"], g["k"])], "gemm flops %s" % g)
check(len(s["convs"]) == len(convs), "stats convs %s" % s["convs"])
colls = s["collectives"]
check(isinstance(colls, list) and {c["bytes"] for c in colls} == reduce_bytes, "stats collectives")
for c in colls:
    check(c["op"] == "AllReduce" and c["nranks"] == 2 and c["time"] == "gpu", "collective row %s" % c)
    alg = c["bytes"] * c["calls"] / c["total_ns"] if c["total_ns"] else 0
    check(abs(c["algbw_gb_per_s"] - alg) < 1e-6 * max(alg, 1), "algbw %s" % c)
    check(abs(c["busbw_gb_per_s"] - alg * 2 * (2 - 1) / 2) < 1e-6 * max(alg, 1), "busbw %s" % c)
sys.exit(bad)
PY
grep -q "^GEMM " stats.txt && grep -q "^Convolution " stats.txt && grep -q "^Collective " stats.txt \
  || { cat stats.txt; fail "stats table lacks the library tables"; }
awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' stats.txt || fail "table wider than 100"
echo "train on the simulator: GEMM, convolution and all-reduce args and stats right"
