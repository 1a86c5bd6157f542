# `dlhook stats --json` "steps": the breakdown of each step (NVTX range "step N") into compute,
# communication, copies, host overhead and idle is exclusive and exact. Synthetic rank traces
# with known GPU timings (gentrace: 4 compute kernels of 1000..1300 ns, a 400 ns copy and a
# 100 ns memset per step, then an all-reduce that ends 1 ms after the step's work and starts
# late on one rank): compute 4600 ns, copies 500 ns, communication 1 ms minus the lateness, the
# lateness counted as idle, and the five parts add up to the step.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/gentrace"
GEN=$BUILD/tests/bin/gentrace
$GEN r0.dlh --rank 0 --world 2 --pid 6000 --steps 6 --coll-late 0 || fail "gentrace rank 0"
$GEN r1.dlh --rank 1 --world 2 --pid 6001 --steps 6 --coll-late 0,0,300,0,0,0 || fail "gentrace rank 1"
"$DLHOOK_BIN" stats --json r0.dlh r1.dlh >stats.json || fail "stats failed"
python3 - stats.json <<'PY' || fail "step breakdown wrong"
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
rows = {(r["rank"], r["step"]): r for r in s["rows"]}
assert len(rows) == 12, len(rows)
parts = ["compute_ns", "comm_ns", "copy_ns", "host_ns", "idle_ns"]
base = rows[(0, 0)]
for (rank, step), r in rows.items():
    assert sum(r[k] for k in parts) == r["dur_ns"], r
    assert r["compute_ns"] == 4600 and r["copy_ns"] == 500, r
    late = 300000 if (rank, step) == (1, 2) else 0
    assert r["comm_ns"] == 1000000 - late, r
    assert r["idle_ns"] == base["idle_ns"] + late, (r, base)
    assert r["host_ns"] == base["host_ns"], r
assert s["slowest_rank"]["rank"] == 1, s["slowest_rank"]
print("ok: 12 steps; compute 4600, copies 500, host %d, idle %d ns" % (base["host_ns"], base["idle_ns"]))
PY
echo ok
