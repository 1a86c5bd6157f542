# Issue 48: a flight recorder dump keeps what dlhook cost the program. Four threads call the
# runtime flat out with rings that cannot grow (DLHOOK_RING_KB=16), so they wait for the writer
# (DLHOOK_RING_WAIT_MS); `dlhook ctl PID dump` while they run: the dump has the waits of its
# window ("wait" events on the waiting threads) and the totals (Counters.ring_waits), and
# `dlhook stats` of the dump says them.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_MODE=flight DLHOOK_FLIGHT_S=30 DLHOOK_HANG_S=0 DLHOOK_RING_KB=16
d="$T/fl"; mkdir -p "$d"
DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$P" alt 4 6000 >run.out 2>run.err &
pid=$!
sleep 2
"$DLHOOK_BIN" ctl "$pid" dump || { kill -9 "$pid"; fail "ctl dump refused"; }
i=0
while [ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 0 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
kill -9 "$pid"; wait "$pid" 2>/dev/null
[ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 1 ] || fail "expected one dump: $(ls "$d")"
f=$(ls "$d"/*.flight.dlh)
"$DLHOOK_BIN" dump --type wait,counters "$f" >dump.txt || fail "damaged dump"
"$DLHOOK_BIN" stats "$f" >stats.txt || fail "stats of the dump failed"
python3 - <<'PY' || fail "see above"
import json
ev = [json.loads(l) for l in open("dump.txt")]
w = [e for e in ev if e["type"] == "wait"]
c = [e for e in ev if e["type"] == "counters"][-1]
print(f"dump: {len(w)} wait events on {len({e['tid'] for e in w})} threads, "
      f"{sum(e['count'] for e in w)} waits; counters: {c.get('ring_waits')} waits, "
      f"{c.get('ring_wait_ns', 0) / 1e6:.1f} ms")
bad = []
if not w: bad.append("no wait events in the dump")
if not c.get("ring_waits") or c["ring_waits"] < sum(e["count"] for e in w):
    bad.append("the dump's counters lack the waits")
for b in bad: print("FAIL:", b)
raise SystemExit(1 if bad else 0)
PY
grep -q "threads waited [0-9]* times" stats.txt || fail "stats of the dump does not say the waits"
echo ok
