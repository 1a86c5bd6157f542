# Issue 48: dlhook says how much it slowed the program. 600 threads x 2,000 calls (nothing folds)
# fill their rings faster than the writer drains them, so threads wait for the writer
# (DLHOOK_RING_WAIT_MS) instead of losing calls. Every wait is recorded on its thread, and:
#   - the trace has them (dump: "wait" lines, Counters.ring_waits) and 0 calls dropped; the
#     report draws them on the threads' lanes;
#   - `stats` says "threads waited N times, X ms (Y % of their time) for dlhook's writer" in its
#     first screen and in "What dlhook cost or lost", and `stats --json` has "dlhook_cost" with
#     every waiting thread;
#   - dlhook's peak memory stays within DLHOOK_MEM_MB (64 MiB) however many threads: the
#     writer's per-thread columns and the per-thread stack caches are inside the budget (they
#     took 102-110 MiB before);
#   - the waits match the slowdown measured against a bare run within 20 %: the share of the
#     waiting threads' time spent waiting, times the traced run's wall time, against the traced
#     run's wall time less the bare run's. The bare run is the median of 3 (the machine is
#     shared): a wall time is measured, never asserted on its own. A run that another load on
#     the machine upset (the slowdown off by more than 20 %, or calls dropped: the writer kept
#     off the CPU longer than DLHOOK_RING_WAIT_MS) is measured again, 3 times at most; the
#     other checks hold for every run.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1
attempt() {
  for i in 1 2 3; do "$P" many 600 2000 >"bare$i.out" || fail "bare run failed"; done
  rm -rf "$T/tr"; mkdir -p "$T/tr"
  DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_PRELOAD" "$P" many 600 2000 >traced.out 2>traced.err ||
    fail "traced run failed: $(tail -3 traced.err)"
  tr=$(one_trace "$T/tr")
  "$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats --json failed"
  "$DLHOOK_BIN" stats "$tr" >stats.txt || fail "stats failed"
  "$DLHOOK_BIN" dump --type wait,counters "$tr" >dump.txt || fail "dump failed"
  "$DLHOOK_BIN" report -o report.html "$tr" || fail "report failed"
  grep -q "dlhook: waiting for its writer" report.html || fail "the report does not draw the waits"
  grep -q '"type":"wait"' dump.txt || fail "no wait records in the trace"
  grep -q "threads waited [0-9]* times, [0-9.]* ms ([0-9.]* % of their time) for dlhook's writer" stats.txt ||
    fail "stats does not say the waits: $(grep -i wait stats.txt | head -3)"
  grep -q "^What dlhook cost or lost" stats.txt || fail "no 'What dlhook cost or lost' section"
  python3 - <<'PY'
import json, statistics
def kv(f):
    return {l.split()[0]: float(l.split()[1]) for l in open(f) if len(l.split()) == 2}
bare = statistics.median(kv(f"bare{i}.out")["wall_ms"] for i in (1, 2, 3))
d = kv("traced.out")
j = json.load(open("stats.json"))
c = j["dlhook_cost"]
waits, wait_ms, pct = c["ring_waits"], c["ring_wait_ns"] / 1e6, c["ring_wait_pct"]
threads = c["threads"]
explained = pct / 100 * d["wall_ms"]
slowdown = d["wall_ms"] - bare
print(f"traced {d['wall_ms']:.0f} ms vs bare {bare:.0f} ms: slowdown {slowdown:.0f} ms; "
      f"{waits} waits, {wait_ms:.0f} ms on {len(threads)} threads, {pct:.1f}% of their time: "
      f"{explained:.0f} ms of the traced run; dropped {c.get('calls_dropped')}")
bad, again = [], []
if waits <= 0 or wait_ms <= 0: bad.append("no waits in stats --json")
if len(threads) != c["waiting_threads"] or not threads: bad.append("per-thread waits missing")
if any(t["waits"] <= 0 or t["wait_ns"] <= 0 or t["time_ns"] < t["wait_ns"] for t in threads):
    bad.append("a thread's row is inconsistent")
if sum(t["wait_ns"] for t in threads) != c["ring_wait_ns"]: bad.append("threads do not add up")
m = j["dlhook_memory"]
print(f"dlhook peak {m['peak_bytes'] / 2**20:.1f} MiB of a {m['budget_bytes'] / 2**20:.0f} MiB budget: "
      + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in m["parts"].items()))
if m["peak_bytes"] > m["budget_bytes"]: bad.append("dlhook's memory above its budget")
if c.get("calls_dropped") != 0 or j["dropped"] != 0: again.append("calls dropped")
if abs(explained - slowdown) > 0.2 * slowdown:
    again.append(f"waits explain {explained:.0f} ms of a {slowdown:.0f} ms slowdown (more than 20% apart)")
for b in bad + again: print("FAIL:" if bad else "again:", b)
raise SystemExit(1 if bad else 2 if again else 0)
PY
}
n=0
while :; do
  n=$((n + 1))
  attempt
  rc=$?
  [ $rc = 0 ] && break
  [ $rc = 2 ] && [ $n -lt 3 ] && continue
  fail "see above"
done
echo ok
