"""hta_ops.py KINETO_DIR [MIN] — Holistic Trace Analysis 0.5 on dlhook's Kineto export of a PyTorch
program, through the analyses that need operators: its call graph (HTA's CallGraph, built from
the cpu_op nesting) must put an aten op above the launch of at least MIN (default 0.98) of the
kernels, and the innermost one must be the op the export links the kernel to ("External id").
HTA's call graph mis-nests events of zero duration in whole microseconds (library calls under
1 us: its sort puts a sibling that starts in the same microsecond inside them, and its stack
then pops the wrong event); a kernel whose HTA stack holds such an event is counted apart: MIN is
asked of the others, and 75 % of all;
the CUDA kernel launch statistics cover every kernel; the frequent kernel sequences launched from
the op with most kernels are found. Prints what it saw; exits non-zero on a mismatch."""
import collections
import logging
import sys
import tempfile
import warnings

logging.disable(logging.WARNING)
warnings.simplefilter("ignore")
from hta.common.call_stack import CallGraph  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

kdir = sys.argv[1]
want = float(sys.argv[2]) if len(sys.argv) > 2 else 0.98
ta = TraceAnalysis(trace_dir=kdir)
rank = sorted(ta.t.traces.keys())[0]
df = ta.t.get_trace(rank)
sym = ta.t.symbol_table.get_sym_table()
name = df["name"].map(lambda i: sym[i])
cat = df["cat"].map(lambda i: sym[i])
ext_op = {}
for i in df.index[(cat == "cpu_op")]:
    ext_op[df.loc[i, "external_id"]] = name[i]
cg = CallGraph(ta.t, ranks=[rank])
kernels = df.index[cat == "kernel"]
under, same, by_op = 0, 0, collections.Counter()
zero, zero_same = 0, 0
for k in kernels:
    st = cg.get_stack_of_node(k, rank).dropna(subset=["name", "cat"])
    zdur = bool((st["dur"] == 0).any())
    ops = [sym[int(n)] for n, c in zip(st["name"], st["cat"])
           if sym[int(c)] == "cpu_op" and sym[int(n)].startswith("aten::")]
    # get_stack_of_node lists the launch's descendants, then its ancestors from the innermost
    if ops:
        under += 1
        inner = ops[0]
        by_op[inner] += 1
        ok = inner == ext_op.get(df.loc[k, "external_id"])
        same += ok
        zero_same += zdur and ok
    zero += zdur
n = len(kernels)
print(f"HTA call graph: {under} of {n} kernels under an aten op, {same} under the op of their External id")
print(f"  {zero} kernels with a zero-duration event in their HTA stack ({zero_same} of them right); "
      f"the others: {same - zero_same} of {n - zero} right")
print("  kernels by innermost aten op (HTA):", dict(by_op.most_common(8)))
assert n and same - zero_same >= want * (n - zero), (same - zero_same, n - zero)
assert under >= 0.75 * n and same >= 0.75 * n, (under, same, n)
ls = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
print("kernel launch statistics:", len(ls), "launches")
assert len(ls) >= want * n, (len(ls), n)
top = by_op.most_common(1)[0][0]
with tempfile.TemporaryDirectory() as d:
    fk = ta.get_frequent_cuda_kernel_sequences(operator_name=top, output_dir=d, min_pattern_len=1,
                                               rank=rank, visualize=False)
print(f"frequent kernel sequences from {top}: {len(fk)}")
assert len(fk) > 0
print("HTA ops OK")
