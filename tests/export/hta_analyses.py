"""hta_analyses.py KINETO_DIR STATS_JSON [STEPS] — runs every analysis of Holistic Trace Analysis
0.5 on a Kineto export and checks its numbers against `dlhook stats --json` of the same traces:
kernels (count and time per rank), every kernel launched from a runtime call in the kernel launch
statistics, a queue length per stream, the profiler steps, a critical path with a CPU-bound
share, frequent kernel sequences, comm/comp overlap, idle time, stragglers. Prints what it
found; exits non-zero (AssertionError) on the first mismatch. Used by t_export_hta_*.sh."""
import json
import logging
import os
import sys
import tempfile

logging.disable(logging.WARNING)
import warnings  # noqa: E402
warnings.simplefilter("ignore", FutureWarning)
import pandas as pd  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

kdir, stats_path = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else None
stats = json.load(open(stats_path))  # one `dlhook stats --json` object per rank: {rank: obj}
# the last step counts too (HTA leaves it out by default: it may be cut short by the profiler)
ta = TraceAnalysis(trace_dir=kdir, include_last_profiler_step=True)
ranks = sorted(ta.t.traces.keys())
print("ranks", ranks)
assert ranks == sorted(int(r) for r in stats), (ranks, list(stats))
sym = ta.t.symbol_table.get_sym_table()
for r in ranks:
    df = ta.t.get_trace(r)
    names = df["name"].map(lambda i: sym[i])
    cats = df["cat"].map(lambda i: sym[i])
    k = df[cats == "kernel"]
    want = stats[str(r)]
    nk = sum(x["count"] for x in want["kernels"])
    print("rank", r, "kernels", len(k), "stats", nk)
    assert len(k) == nk, (len(k), nk)
    # kernel time: whole µs per kernel (each end rounded to the nearest) against the ns of stats
    kus, kns = int(k["dur"].sum()), want["gpu"]["kernel_ns"]
    print("  kernel time", kus, "us; stats", kns / 1000.0, "us")
    assert abs(kus - kns / 1000.0) <= nk, (kus, kns)
    # every event has an External id; flows only from calls that launched work
    assert (df["index_correlation"].notna()).all()
    launches = df[names.isin(["cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel"]) & (df["correlation"] > 0)]
    linked = set(launches["correlation"]) & set(k["correlation"])
    print("  kernels linked to a launch", len(linked))
    assert len(linked) == len(k), (len(linked), len(k))
    # one ProfilerStep#N per step
    ps = names[names.str.startswith("ProfilerStep#") & (cats == "user_annotation")]
    if steps is not None:
        assert len(ps) == len(set(ps)) == steps, sorted(ps)

print("profiler steps", ta.get_profiler_steps())
if steps is not None:
    assert len(ta.get_profiler_steps()) == steps

tb = ta.get_temporal_breakdown(visualize=False)
print(tb.to_string())
for r in ranks:
    row = tb[tb["rank"] == r].iloc[0]
    assert row["compute_time(us)"] + row["non_compute_time(us)"] > 0

kb = ta.get_gpu_kernel_breakdown(visualize=False)
print(kb[0].to_string())
assert "COMPUTATION" in set(kb[0]["kernel_type"])

ls = ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
for r in ranks:
    want = stats[str(r)]
    nk = sum(x["count"] for x in want["kernels"])
    df = ta.t.get_trace(r)
    nmem = int(((df["stream"] != -1) & df["cat"].map(lambda i: sym[i]).isin(["gpu_memcpy", "gpu_memset"])).sum())
    kc = set(df[df["cat"].map(lambda i: sym[i]) == "kernel"]["correlation"])
    covered = kc & set(ls[r]["correlation"])
    print("launch stats rank", r, len(ls[r]), "launches; kernels covered", len(covered), "of", nk)
    assert len(covered) == len(kc) == nk, (len(covered), len(kc), nk)

ql = ta.get_queue_length_summary(ranks=ranks)
print(ql.to_string() if ql is not None else ql)
assert ql is not None and len(ql) > 0
qstreams = set(ql.reset_index()["stream"]) if "stream" in ql.reset_index().columns else set()
for r in ranks:
    df = ta.t.get_trace(r)
    streams = set(df[(df["stream"] > 0) & (df["cat"].map(lambda i: sym[i]) == "kernel")]["stream"])
    print("rank", r, "kernel streams", sorted(streams), "queue length streams", sorted(qstreams))
    assert streams <= qstreams, (streams, qstreams)

print(ta.get_comm_comp_overlap(visualize=False).to_string())
it = ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
print(it[0].head().to_string())

ua = ta.get_gpu_user_annotation_breakdown(visualize=False)
print("gpu user annotations:", None if ua is None else ua.head().to_string())
assert ua is not None and len(ua) > 0

cp, ok = ta.critical_path_analysis(rank=ranks[0], annotation="ProfilerStep", instance_id=1)
assert ok, "critical path analysis failed"
summ = cp.summary()
print(summ.to_string())
cpu = sum(v for k, v in summ.items() if "cpu" in str(k).lower())
print("critical path CPU-bound share", cpu)
os.environ["CRITICAL_PATH_CPU_SHARE"] = str(cpu)

with tempfile.TemporaryDirectory() as d:
    fk = ta.get_frequent_cuda_kernel_sequences(operator_name="ProfilerStep", output_dir=d,
                                               min_pattern_len=3, rank=ranks[0], visualize=False)
    print("frequent kernel sequences", len(fk))
    assert len(fk) > 0

# HTA 0.5's straggler analysis looks for kernels named "ncclKernel*" (NCCL before 2.19); NCCL
# 2.19 and later (and the simulator) name them "ncclDevKernel_*"
if len(ranks) > 1 and any(n.startswith("ncclKernel") for n in sym):
    st = ta.get_potential_stragglers(visualize=False)
    print("stragglers", st)
else:
    print("straggler analysis: skipped (no kernel named ncclKernel*)")
print("HTA OK")
