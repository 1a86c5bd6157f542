#!/bin/sh
# run-tests: timeout=900
# Host sampling's answer to "why does my GPU idle": tests/torch/slow_dataset.py feeds a model
# from a Dataset that sleeps 50 ms an item. For the GPU's idle time between steps (no kernel for
# more than 20 ms), the main thread's wait samples must be in the DataLoader (num_workers=2:
# _MultiProcessingDataLoaderIter waiting for its workers), and the workers' traces must put
# their time at the Dataset's sleep line (Slow.__getitem__ at SLEEP_LINE); with num_workers=0
# the main thread itself waits at that line during the idle time; every wait sample of a
# worker's main thread has its Python frames, from the fork on. Same output as bare.
. "$ROOT/tests/torch/common.sh"
S=$ROOT/tests/torch/slow_dataset.py
LINE=$(grep -n '# SLEEP_LINE' "$S" | head -n 1 | cut -d: -f1)
for nw in 2 0; do
  run_both "w$nw" "$PY" "$S" "$nw" --steps 8
  "$DLHOOK_BIN" record --sim -o "m$nw" -- "$PY" "$S" "$nw" --steps 8 >"m$nw.out" 2>"m$nw.err" ||
    fail "num_workers=$nw: record failed: $(tail -n 5 "m$nw.err")"
  for f in "m$nw"/*.dlh; do
    "$DLHOOK_BIN" dump --type process,sample,kernel "$f" >>"m$nw.jsonl" 2>>"m$nw.dump.err" ||
      fail "num_workers=$nw: dump $f: $(cat "m$nw.dump.err")"
  done
  python3 - "m$nw.jsonl" "$nw" "$LINE" <<'PY' || fail "num_workers=$nw: the idle time is not explained"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
nw, line = int(sys.argv[2]), int(sys.argv[3])
kern = sorted((e["start_ns"], e["start_ns"] + e["dur_ns"], e["pid"]) for e in ev if e["type"] == "kernel")
assert kern, "no kernel"
main_pid = kern[0][2]
# the GPU's idle gaps: more than 20 ms without a kernel, between the first and the last one
# (how many depends on how fast the host runs the steps against the workers: at least 100 ms)
gaps = [(a[1], b[0]) for a, b in zip(kern, kern[1:]) if b[0] - a[1] > 20e6]
assert gaps and sum(g[1] - g[0] for g in gaps) >= 100e6, ("GPU idle gaps", gaps)
def in_gap(t): return any(lo <= t < hi for lo, hi in gaps)
def frames(e): return [(f.get("function", ""), f.get("file", ""), f.get("line", 0)) for f in e.get("stack", [])]
def at_sleep(e): return any(fn.endswith("__getitem__") and fi.endswith("slow_dataset.py") and ln == line for fn, fi, ln in frames(e))
smp = [e for e in ev if e["type"] == "sample"]
main = [e for e in smp if e["pid"] == main_pid and e["tid"] == main_pid and in_gap(e["time_ns"])]
idle = sum(g[1] - g[0] for g in gaps)
w_main = sum(e["weight_ns"] for e in main)
print(f"num_workers={nw}: {len(gaps)} idle gaps, {idle / 1e6:.1f} ms; main thread samples in them: {len(main)}, {w_main / 1e6:.1f} ms")
assert w_main >= 0.5 * idle, "the main thread's samples do not cover the idle time"
if nw:
    dl = sum(e["weight_ns"] for e in main if e["kind"] == "wait" and any("dataloader.py" in fi for _, fi, _ in frames(e)))
    print(f"  waiting in the DataLoader: {dl / 1e6:.1f} ms")
    assert dl >= 0.7 * w_main, "the main thread's wait during the idle time is not in the DataLoader"
    workers = {e["pid"] for e in smp if e["pid"] != main_pid}
    assert len(workers) == nw, ("worker traces with samples", workers)
    for pid in sorted(workers):
        ws = [e for e in smp if e["pid"] == pid and e["tid"] == pid]
        tot = sum(e["weight_ns"] for e in ws if e["kind"] == "wait")
        sl = sum(e["weight_ns"] for e in ws if e["kind"] == "wait" and at_sleep(e))
        bare = sum(1 for e in ws if e["kind"] == "wait" and not e.get("stack"))
        print(f"  worker {pid}: waits {tot / 1e6:.1f} ms, {sl / 1e6:.1f} ms at slow_dataset.py:{line}, "
              f"{bare} wait samples without Python frames")
        assert sl >= 60e6, "the worker's time at the Dataset's line is missing"
        # its Python frames from the fork on, not only after its first on-CPU sample (a worker
        # that sleeps in its Dataset may get none: its whole time then had no place)
        assert bare <= 2, "the worker's wait samples lack its Python frames"
else:
    sl = sum(e["weight_ns"] for e in main if e["kind"] == "wait" and at_sleep(e))
    print(f"  at slow_dataset.py:{line}: {sl / 1e6:.1f} ms")
    assert sl >= 0.7 * w_main, "the main thread's time during the idle time is not at the Dataset's line"
PY
done
echo "t_torch_sample_wait: OK"
