#!/bin/sh
# cuDNN's backend graph API on the simulator (tests/simcuda/libtests/t_sim_lib_cudnn builds an
# NHWC 8x64x56x56 convolution with a 64x64x3x3 filter, pad 1, stride 1 and runs it through
# cudnnBackendExecute): the execution is recorded with the shape its descriptors were built with
# and flops = 2 N K P Q C R S; `dlhook stats` lists it in the convolution table. The legacy
# convolution calls of the same program carry dilation and groups.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
P="$BUILD/tests/bin/t_sim_lib_cudnn"
[ -x "$P" ] || skip "$P not built"
[ -e "$BUILD/simcuda/libcudnn.so.9" ] && [ -x "$SIMRUN" ] || skip "simulated CUDA stack not built"
mkdir -p tr
# Its exit status is not checked: the stand-in libcudnn finds cuBLAS through weak references that
# any preloaded library defining cublas* satisfies before libcublas is loaded (its GEMM algorithm
# then fails under dlhook; reported to the simulator's owner). The backend part is unaffected.
DLHOOK_OUTPUT="$T/tr/" "$SIMRUN" env LD_PRELOAD="$DLHOOK_LIB" "$P" >out 2>err
f=$(one_trace tr)
"$DLHOOK_BIN" dump "$f" >d.jsonl || fail dump
"$DLHOOK_BIN" stats --json "$f" >s.json || fail stats
python3 - d.jsonl s.json <<'PY' || fail "backend execution args"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ex = [e for e in ev if e.get("type") == "api" and e["name"] == "cudnnBackendExecute"]
assert ex, "no cudnnBackendExecute"
a = ex[0]["args"]
want = dict(op=1, N=8, C=64, H=56, W=56, K=64, R=3, S=3, pad=1, stride=1, dilation=1, groups=1,
            dtype=0, flops=2*8*64*56*56*64*3*3)
bad = {k: (a.get(k), v) for k, v in want.items() if a.get(k) != v}
assert not bad, "cudnnBackendExecute args: %s" % bad
convs = [c for c in json.load(open(sys.argv[2]))["convs"] if c["function"] == "cudnnBackendExecute"]
assert len(convs) == 1 and convs[0]["direction"] == "fwd" and convs[0]["flops"] == want["flops"], convs
grouped = [e for e in ev if e.get("type") == "api" and e["name"].startswith("cudnnConvolution")
           and e["args"].get("groups") == 2]
assert grouped, "no grouped convolution recorded with groups=2"
PY
echo "cudnnBackendExecute recorded with its convolution's shape and flops"
