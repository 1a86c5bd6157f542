"""memcmp_check.py TORCH.pickle SEG.json TENSOR.json — compares PyTorch's own snapshot (torch's
memory history, native caching allocator) with dlhook's ledger (`dlhook stats --memory --json`)
of the same run recorded without --torch-memory (segments) and of a second run of the same
deterministic workload recorded with --torch-memory (tensors). Segments: the same number of
segment allocations and frees and the same peak of reserved bytes, up to the segments dlhook saw
before torch's history began. Tensors: the same number of allocations and the same peak of
allocated bytes. Prints the figures; exits 1 on a mismatch.

Tolerances. Segments: dlhook sees every cudaMalloc from the process's start, torch's trace only
those after _record_memory_history (memcmp_py.py turns it on before the workload runs, so on the
simulator nothing comes before it); a segment made before and still live at the end is in torch's
`segments` list only, so dlhook may count up to those segments (and their bytes, in the peak)
more, and no other difference is allowed. Tensors: none. The workload is deterministic, its
requests do not depend on the backend, and torch's trace records each request's own size
(orig_size, not the rounded block), which is what cudaMallocAsync is asked for: the counts and
the peak must be equal to the byte. Frees too: torch's snapshot is taken after the workload's
namespace is gone, so what it frees is what dlhook sees freed by the process's exit."""
import json
import pickle
import sys


def replay(entries, plus, minus):
    live = peak = n = 0
    for e in entries:
        if e["action"] == plus:
            live += e["size"]
            n += 1
            peak = max(peak, live)
        elif e["action"] == minus:
            live -= e["size"]
    return n, peak


def main():
    snap = pickle.load(open(sys.argv[1], "rb"))
    seg = json.load(open(sys.argv[2]))["traces"][0]
    ten = json.load(open(sys.argv[3]))["traces"][0]
    tr = [e for d in snap["device_traces"] for e in d]
    # segments live before the history began are in torch's segments list, not in its trace
    pre = [s for s in snap["segments"] if not any(e["action"] == "segment_alloc" and e["addr"] == s["address"] for e in tr)]
    pre_bytes = sum(s["total_size"] for s in pre)
    n_seg, peak_seg = replay(tr, "segment_alloc", "segment_free")
    n_seg_free = sum(e["action"] == "segment_free" for e in tr)
    n_ten, peak_ten = replay(tr, "alloc", "free_completed")
    n_ten_free = sum(e["action"] == "free_completed" for e in tr)
    print("segments: torch %d allocs %d frees peak %d (+%d before its history, %d bytes); dlhook %d "
          "allocs %d frees peak %d" % (n_seg, n_seg_free, peak_seg, len(pre), pre_bytes,
                                       seg["allocations"], seg["frees"], seg["peak_bytes"]))
    print("tensors:  torch %d allocs %d frees peak %d; dlhook (--torch-memory run) %d allocs %d "
          "frees peak %d" % (n_ten, n_ten_free, peak_ten, ten["allocations"], ten["frees"],
                             ten["peak_bytes"]))
    bad = []
    if not (n_seg <= seg["allocations"] <= n_seg + len(pre)):
        bad.append("segment allocations differ")
    if seg["frees"] != n_seg_free:
        bad.append("segment frees differ")
    if not (peak_seg <= seg["peak_bytes"] <= peak_seg + pre_bytes):
        bad.append("peak reserved differs")
    if ten["allocations"] != n_ten:
        bad.append("tensor allocations differ")
    if ten["frees"] != n_ten_free:
        bad.append("tensor frees differ")
    if ten["peak_bytes"] != peak_ten:
        bad.append("peak allocated differs")
    if n_seg == 0 or n_ten == 0:
        bad.append("torch's snapshot has no segment or no tensor allocation: no history?")
    if bad:
        sys.exit("; ".join(bad))


if __name__ == "__main__":
    main()
