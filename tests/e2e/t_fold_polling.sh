# Folding: 4 threads calling at full speed (calls that differ: one record each) and 1 thread
# polling cudaStreamQuery (identical calls: folded in the ring). Against the real libcudart (no
# GPU) and on the simulator (CUPTI's callbacks too): no drop, and the trace holds exactly each
# thread's calls (the program's own counts), the polling ones in a few folded events. With
# DLHOOK_FOLD=0 the poller's calls are one record each.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/poller
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
check() { # DIR OUT FOLD(1/0)
  tr=$(one_trace "$1")
  "$DLHOOK_BIN" dump "$tr" >"$1.jsonl" || fail "dump failed"
  "$DLHOOK_BIN" stats --json "$tr" >"$1.stats" || fail "stats failed"
  python3 - "$1.jsonl" "$1.stats" "$2" "$3" <<'PY' || fail "counts differ ($1)"
import collections, json, sys
dump, stats, out, fold = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
want = {}
for line in open(out):
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    if "tid" in kv:
        want[int(kv["tid"])] = (kv["fn"], int(kv["calls"]))
calls = collections.Counter()
events = collections.Counter()
for line in open(dump):
    e = json.loads(line)
    if e.get("type") == "api":
        calls[(e["tid"], e["name"])] += e.get("count", 1)
        events[(e["tid"], e["name"])] += 1
s = json.load(open(stats))
assert s["dropped"] == 0, ("dropped", s["dropped"])
for tid, (fn, n) in want.items():
    assert calls[(tid, fn)] == n, (tid, fn, "program", n, "trace", calls[(tid, fn)])
poll = [(t, fn) for t, (fn, n) in want.items() if fn == "cudaStreamQuery"][0]
np = want[poll[0]][1]
print("poller: %d calls in %d events; workers: %s" % (np, events[poll],
      [calls[(t, fn)] for t, (fn, n) in want.items() if fn != "cudaStreamQuery"]))
if fold:
    assert np < 100 or events[poll] * 10 <= np, ("polling calls not folded", events[poll], np)
    total = sum(a["calls"] for a in s["api"])
    assert total == sum(n for fn, n in want.values()) + 1, (total, want)
else:
    assert events[poll] == np, ("folding off, yet", events[poll], "events for", np, "calls")
PY
}
traced "$T/real" "$prog" 4 200000 >real.out 2>real.err || { cat real.err; fail "program failed"; }
check "$T/real" real.out 1
# (64 MiB rings for a flat-out poller that folds nothing, and a memory budget that holds four of
# them: under the default 64 MiB budget the rings halve to fit, and the last thread's came down to
# 64 KiB, which dropped calls whenever the writer fell behind)
DLHOOK_FOLD=0 DLHOOK_RING_KB=65536 DLHOOK_MEM_MB=1024 traced "$T/nofold" "$prog" 2 20000 >nofold.out 2>nofold.err || { cat nofold.err; fail "program failed"; }
check "$T/nofold" nofold.out 0
if [ -e "$BUILD/simcuda/libcupti.so.13" ]; then
  traced "$T/sim" "$SIMRUN" "$prog" 4 100000 >sim.out 2>sim.err || { cat sim.err; fail "program failed (simulator)"; }
  check "$T/sim" sim.out 1
fi
echo ok
