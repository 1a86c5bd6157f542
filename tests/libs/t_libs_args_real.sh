#!/bin/sh
# Library calls against the real cuBLAS, cuBLASLt, cuDNN and NCCL (no GPU needed: every call may
# fail, and must still be recorded with its status and the arguments that explain it): GEMM m, n,
# k, batch, dtype and flops (cublasSgemm_v2, cublasGemmEx, cublasGemmStridedBatchedEx,
# cublasSgemmGroupedBatched, and cublasLtMatmul read from its descriptor and layouts), the
# convolution's N C H W K R S, stride,
# padding, groups and flops, the all-reduce's bytes and group depth. Twice: the program linked
# against the libraries, and the same program reaching every function through
# dlopen(RTLD_LOCAL) + dlsym, which must be recorded identically.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
CUDA_INC="$CUDA_HOME/include" CUDA_LIB="$CUDA_HOME/lib64"
for so in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  [ -f "$CUDA_LIB/$so" ] || skip "$CUDA_LIB/$so not found"
done
CC=${CC:-cc}
$CC -o linked "$ROOT/tests/progs/libcalls.c" -I"$CUDA_INC" -L"$CUDA_LIB" -lcublas -lcublasLt \
  -lcudnn -lnccl -Wl,-rpath,"$CUDA_LIB" || fail "cannot build the linked program"
$CC -DDLOPEN -o opened "$ROOT/tests/progs/libcalls.c" -I"$CUDA_INC" -ldl || fail "cannot build the dlopen program"
for p in linked opened; do
  mkdir -p "$p.d"
  LD_LIBRARY_PATH="$CUDA_LIB" traced "$p.d" ./$p >"$p.out" 2>"$p.err" || fail "$p exited $?: $(cat $p.err)"
  LD_LIBRARY_PATH="$CUDA_LIB" ./$p >"$p.plain" 2>/dev/null
  cmp -s "$p.out" "$p.plain" || fail "$p: output differs under dlhook"
  "$DLHOOK_BIN" dump "$(one_trace "$p.d")" >"$p.jsonl" || fail "dump $p"
  python3 - "$p.jsonl" "$p.out" <<'PY' || fail "$p: arguments"
import json, sys
status = {}
for l in open(sys.argv[2]):
    n, s = l.split()
    status[n] = int(s)
calls = {}
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("type") == "api" and j["depth"] == 0:
        calls.setdefault(j["name"], []).append(j)
want = {
    "cublasSgemm_v2": dict(m=128, n=64, k=32, batch=1, transa=1, transb=0, dtype=0, flops=2*128*64*32),
    "cublasGemmEx": dict(m=256, n=128, k=64, batch=1, dtype=14, ctype=0, compute_type=68, flops=2*256*128*64),
    "cublasGemmStridedBatchedEx": dict(m=64, n=64, k=16, batch=8, transb=1, dtype=2, flops=2*64*64*16*8),
    "cublasSgemmGroupedBatched": dict(m=4, n=5, k=7, batch=5, group_count=2, dtype=0,
                                      flops=2*4*5*7*3 + 2*8*6*9*2),
    "cublasLtMatmul": dict(m=96, n=48, k=80, batch=3, transa=1, transb=0, dtype=2, flops=2*96*48*80*3),
    "cudnnConvolutionForward": dict(N=8, C=16, H=32, W=32, K=32, R=3, S=3, pad=1, stride=2,
                                    dilation=1, groups=2, dtype=2, workspace=4096,
                                    flops=2*8*32*16*16*16*3*3//2),
    "ncclAllReduce": dict(count=1000, datatype=6, op=0, bytes=2000, group=1),
    "ncclCommInitRank": dict(nranks=1, rank=0),
}
bad = 0
for name, args in want.items():
    if name not in calls:
        print("missing call", name); bad = 1; continue
    c = calls[name][0]
    if name in status and c["ret"] != status[name]:
        print(name, "ret", c["ret"], "but the program saw", status[name]); bad = 1
    for k, v in args.items():
        if c["args"].get(k) != v:
            print(name, k, "=", c["args"].get(k), "expected", v); bad = 1
# every call the program printed is in the trace
for n in status:
    real = {"cublasCreate": "cublasCreate_v2"}.get(n, n)
    if real not in calls:
        print("call not recorded:", real); bad = 1
sys.exit(bad)
PY
done
# the dlopen'ed program records exactly the calls of the linked one
for p in linked opened; do
  python3 -c "
import json,sys
print(sorted((j['name'], j['ret']) for j in map(json.loads, open('$p.jsonl')) if j.get('type')=='api'))" >"$p.calls"
done
cmp -s linked.calls opened.calls || { diff linked.calls opened.calls; fail "dlopen/dlsym program recorded differently"; }
echo "real libraries: GEMM, cuBLASLt, convolution and NCCL args right, linked and through dlopen"
