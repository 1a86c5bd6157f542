"""Checks a `dlhook export -f memory-snapshot` pickle with PyTorch's own reader,
torch.cuda._memory_viz, against `dlhook stats --memory --json` (t_torch_memory_snapshot.sh).

usage: memsnap_check.py SNAPSHOT STATS.json LEVEL [USER_FILE]
Prints one line of figures; exits 1 with the reason on a mismatch."""
import json
import pickle
import pickletools
import sys

from torch.cuda import _memory_viz as mv


def main():
    path, stats_path, level = sys.argv[1:4]
    user_file = sys.argv[4] if len(sys.argv) > 4 else None
    raw = open(path, "rb").read()
    # only opcodes that pytorch.org/memory_viz's own unpickler (MemoryViz.js) reads
    browser = {"PROTO", "EMPTY_DICT", "MARK", "SETITEMS", "EMPTY_LIST", "APPENDS", "BININT",
               "BININT1", "BININT2", "LONG1", "BINUNICODE", "LONG_BINPUT", "LONG_BINGET",
               "TUPLE2", "NEWTRUE", "NEWFALSE", "NONE", "STOP", "SHORT_BINUNICODE", "BINPUT",
               "BINGET", "MEMOIZE", "FRAME"}
    ops = {op.name for op, _, _ in pickletools.genops(raw)}
    if ops - browser:
        sys.exit(f"opcodes memory_viz cannot read: {sorted(ops - browser)}")
    snap = pickle.loads(raw)
    stats = json.load(open(stats_path))["traces"][0]
    if snap["dlhook"]["level"] != level:
        sys.exit(f"level {snap['dlhook']['level']}, expected {level}")
    acts = {}
    for d in snap["device_traces"]:
        for e in d:
            acts[e["action"]] = acts.get(e["action"], 0) + 1
            for k in ("addr", "size", "stream", "time_us", "frames"):
                if k not in e:
                    sys.exit(f"trace entry without {k}: {e}")
    allocs = acts.get("alloc" if level == "tensor" else "segment_alloc", 0)
    frees = acts.get("free_completed" if level == "tensor" else "segment_free", 0)
    if allocs != stats["allocations"] or frees != stats["frees"]:
        sys.exit(f"{allocs} allocs / {frees} frees, dlhook stats --memory says "
                 f"{stats['allocations']} / {stats['frees']}")
    live = sum(b["size"] for s in snap["segments"] for b in s["blocks"]
               if b["state"] == "active_allocated")
    reserved = sum(s["total_size"] for s in snap["segments"])
    if level == "tensor" and live != stats["live_at_exit_bytes"]:
        sys.exit(f"{live} bytes live in the segments, stats says {stats['live_at_exit_bytes']}")
    if level == "segment" and reserved != stats["live_at_exit_bytes"]:
        sys.exit(f"{reserved} bytes reserved, stats says {stats['live_at_exit_bytes']}")
    # the peak of the replayed actions equals the ledger's
    cur = peak = 0
    for e in snap["device_traces"][0]:
        if e["action"] == "segment_alloc":
            cur += e["size"]
        elif e["action"] == "segment_free":
            cur -= e["size"]
        peak = max(peak, cur)
    if len(snap["device_traces"]) == 1 and peak != stats["peak_bytes"]:
        sys.exit(f"peak {peak}, dlhook stats --memory says {stats['peak_bytes']}")
    # torch's own functions on it
    ident = lambda s: s
    for html in (mv.trace_plot(snap), mv.trace_plot(snap, plot_segments=True),
                 mv.segment_plot(snap)):
        if "snapshot.pickle" not in html:
            sys.exit("a _memory_viz plot without the snapshot")
    summary = mv.segsum(snap)
    text = mv.trace(snap)
    flame = mv.memory(snap, format_flamegraph=ident) + mv.segments(snap, format_flamegraph=ident)
    if f"{sum(len(d) for d in snap['device_traces'])} entries" not in text:
        sys.exit("_memory_viz.trace does not list every entry")
    mv.filter_alloc_free_pairs(pickle.loads(raw))
    if user_file:
        frames = [f for d in snap["device_traces"] for e in d for f in e["frames"]]
        if not any(f["filename"].endswith(user_file) and f["line"] > 0 for f in frames):
            sys.exit(f"no frame of {user_file} with its line")
        if not any(f["filename"].endswith(".so") or ".so." in f["filename"] for f in frames):
            sys.exit("no native frame")
    print(f"{level}: {allocs} allocs, {frees} frees, peak {peak}, {len(snap['segments'])} "
          f"segments at the end, {len(summary)} chars of segsum, {len(flame)} of flame lines")


if __name__ == "__main__":
    main()
