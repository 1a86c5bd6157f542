# run-tests: serial timeout=500
# The flight recorder stays bounded in long runs (accelerated), in two phases:
# A. bench/tight_loop at full rate (some 10-20 million calls a second, folded) for FLIGHT_SOAK_S
#    seconds (default 60) with DLHOOK_MEM_MB=32 and DLHOOK_FLIGHT_S=15: old frames are dropped
#    after 15 s, the window stays 15 s, nothing is dropped, the process's resident memory
#    (sampled every second) stays under its start + the budget (it creeps up by some 20-80 KB/s
#    in continuous mode alike, as the producer first touches the pages of its 8 MiB ring, which
#    the budget counts whole from the start), and a `dlhook ctl PID dump` in the middle and the
#    SIGTERM dump at the end both read back.
# B. tight_loop --vary (no call folds: ~10 million records a second, a few MB/s of frames) for
#    20 s with DLHOOK_MEM_MB=64 and DLHOOK_FLIGHT_S=120: the ring is bounded by bytes before
#    time: it holds at most half of the budget, the window is shorter than 120 s, dlhook's
#    counted memory stays under the budget and the resident memory under start + budget.
# Prints the figures (calls dropped in B are printed: a writer behind a loop this tight on a
# loaded machine drops in continuous mode too).
. "$ROOT/tests/lib.sh"
B=$BUILD/bench
need "$B/tight_loop"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
S=${FLIGHT_SOAK_S:-60}
export DLHOOK_MODE=flight DLHOOK_STACKS=none DLHOOK_HANG_S=0
soak() { # dir, seconds, ctl-dump second (0: none), tight_loop args...
  dir=$1 secs=$2 mid=$3; shift 3
  mkdir -p "$dir"
  DLHOOK_OUTPUT="$T/$dir/" LD_PRELOAD="$DLHOOK_PRELOAD" "$B/tight_loop" 100000000000 "$@" >"$dir.out" 2>"$dir.err" &
  pid=$!
  : >"$dir.rss"
  i=0
  while [ $i -lt "$secs" ]; do
    sleep 1; i=$((i + 1))
    kill -0 "$pid" 2>/dev/null || fail "$dir: tight_loop ended early: $(cat "$dir.err")"
    echo "$i $(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' /proc/$pid/status)" >>"$dir.rss"
    if [ $i -eq "$mid" ]; then "$DLHOOK_BIN" ctl "$pid" dump || fail "$dir: ctl dump"; fi
  done
  kill -TERM "$pid"
  wait "$pid"
  for f in "$dir"/*.flight*.dlh; do
    "$DLHOOK_BIN" dump --type flight,trailer,summary "$f" >"$f.jsonl" 2>"$f.err" || fail "$f: damaged: $(cat "$f.err")"
  done
}
S=${FLIGHT_SOAK_S:-60}
DLHOOK_FLIGHT_S=15 DLHOOK_MEM_MB=32 soak a "$S" $((S / 2))
[ "$(ls a | grep -c 'flight.*\.dlh$')" -eq 2 ] || fail "A: expected 2 dumps: $(ls a)"
DLHOOK_FLIGHT_S=120 DLHOOK_MEM_MB=64 soak b 20 0 --vary
[ "$(ls b | grep -c 'flight.*\.dlh$')" -eq 1 ] || fail "B: expected 1 dump: $(ls b)"
python3 - "$S" <<'PY' || fail "not bounded"
import glob, json, sys
s = int(sys.argv[1])
def rss(d):
    return [tuple(map(int, l.split())) for l in open(d + ".rss")]
def dumps(d):
    out = []
    for path in sorted(glob.glob(d + "/*.flight*.dlh.jsonl")):
        ev = [json.loads(l) for l in open(path)]
        fl = [e for e in ev if e["type"] == "flight"][0]
        tr = [e for e in ev if e["type"] == "trailer"][0]
        summ = [e for e in ev if e["type"] == "summary"][0]
        assert summ["complete"], path
        win = (fl["time_ns"] - fl["first_ns"]) / 1e9
        print(f"  {path.split('/')[-1][:-6]}: reason {fl['reason']}, ring {fl['ring_bytes'] / 2**20:.2f} MiB + "
              f"definitions {fl['defs_bytes'] / 1024:.1f} KiB in {fl['frames']} frames ({fl['frames_evicted']} dropped "
              f"from the ring), window {win:.1f} s, run so far: {tr['calls']} calls, {tr['dropped']} dropped, "
              f"dlhook's memory peak {tr['mem_peak_bytes'] / 2**20:.1f} MiB of {tr['mem_budget_bytes'] >> 20}")
        out.append((fl, tr, win))
    return out
r = rss("a")
at20 = dict(r).get(20, r[-1][1])
after = max(v for t, v in r if t >= 20)
print(f"A: {s} s, RSS {r[0][1] / 1024:.1f} MiB at 1 s, {at20 / 1024:.1f} at 20 s, at most {after / 1024:.1f} after, "
      f"{r[-1][1] / 1024:.1f} at the end")
assert max(v for t, v in r) <= r[0][1] + 32 * 1024, "A: resident memory above start + budget"
for fl, tr, win in dumps("a"):
    assert tr["dropped"] == 0, "A: dropped calls"
    assert win <= 17, f"A: window {win:.1f} s"
    assert tr["mem_peak_bytes"] <= tr["mem_budget_bytes"], "A: over the memory budget"
    if fl["reason"] == 1:
        assert fl["frames_evicted"] > 0 and win >= 14, "A: the final dump does not hold the 15 s window"
r = rss("b")
print(f"B: 20 s, RSS {r[0][1] / 1024:.1f} MiB at 1 s, at most {max(v for t, v in r) / 1024:.1f}, "
      f"{r[-1][1] / 1024:.1f} at the end")
for fl, tr, win in dumps("b"):
    budget = tr["mem_budget_bytes"]
    assert fl["ring_bytes"] + fl["defs_bytes"] <= budget // 2, "B: the ring holds more than half the budget"
    assert fl["frames_evicted"] > 0 and win < 120, "B: the byte cap did not bound the ring"
    assert tr["mem_peak_bytes"] <= budget, "B: over the memory budget"
    assert max(v for t, v in r) <= r[0][1] + (budget >> 10) + 8192, "B: resident memory above start + budget"
PY
echo ok
