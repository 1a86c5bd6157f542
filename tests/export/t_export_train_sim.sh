# End to end: the bundled example trains on the simulated CUDA stack under `dlhook record`; the
# flame graph puts each kernel under the call stack of the call that launched it (cuDNN,
# cuBLAS, NCCL calls and kernel launches from the program's functions), GPU weights add up to
# the trace's GPU time; the Kineto export is read by Holistic Trace Analysis.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "the simulated CUDA stack is not built"
[ -x "$BUILD/examples/train" ] || skip "$BUILD/examples/train is not built"
"$SIMRUN" "$DLHOOK_BIN" record -o tr -- "$BUILD/examples/train" --steps 3 >out 2>err ||
  fail "record failed: $(tail -n 20 err)"
tr=$(one_trace tr)
"$DLHOOK_BIN" export -q -f folded -o g.folded "$tr" || fail "export folded"
all=$(gpu_total "$tr" kernel,memcpy,memset)
[ "$all" -gt 0 ] || fail "no GPU time in the trace"
[ "$(awk '{s += $NF} END {print s}' g.folded)" = "$all" ] || fail "folded weights differ from the GPU time $all"
grep -q ';train_step(' g.folded || fail "no train_step frame: $(head -n 5 g.folded)"
grep -q ';cudnnConvolution[A-Za-z]*;' g.folded || fail "no cuDNN call as a launching frame"
grep -qE ';cublas(Sgemm_v2|GemmEx|LtMatmul);' g.folded || fail "no cuBLAS call as a launching frame"
grep -q ';ncclGroupEnd;ncclDevKernel\|;ncclAllReduce;ncclDevKernel' g.folded || fail "no NCCL kernel under its call"
grep -q 'launch not found\|no launching call' g.folded && fail "kernels without their launch: $(grep 'not found\|no launching' g.folded)"
# a differential flame graph against a longer run: the same stacks, more GPU time per stack
"$SIMRUN" "$DLHOOK_BIN" record -o tr5 -- "$BUILD/examples/train" --steps 5 >out5 2>err5 ||
  fail "record --steps 5 failed: $(tail -n 20 err5)"
"$DLHOOK_BIN" diff -q -o d.folded "$tr" "$(one_trace tr5)" || fail "diff"
"$DLHOOK_BIN" diff -q -o d.svg "$tr" "$(one_trace tr5)" || fail "diff svg"
awk '/;train_step\(/ { n++; if ($(NF-1) * 5 != $NF * 3) bad++ } END { exit !(n > 0 && bad == 0) }' d.folded ||
  fail "train_step stacks should scale 3:5: $(grep ';train_step(' d.folded | head -n 5)"
for f in svg speedscope pprof perfetto tensorboard; do
  "$DLHOOK_BIN" export -q -f $f -o out.$f "$tr" || fail "export $f"
done
"$DLHOOK_BIN" export -q -f kineto -o kin "$tr" || fail "export kineto"
need_venv_module hta
"$VPY" - kin <<'PY' || fail "HTA could not read the example's export"
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
df = ta.t.get_trace(0)
sym = ta.t.symbol_table.get_sym_table()
cats = df["cat"].map(lambda i: sym[i])
k = df[cats == "kernel"]
launches = set(df[cats.isin(["cuda_runtime", "cuda_driver"]) & (df["correlation"] > 0)]["correlation"])
print("kernels", len(k), "with their launch", sum(1 for c in k["correlation"] if c in launches))
assert len(k) > 0 and any(c in launches for c in k["correlation"])
PY
echo ok
