# A call that a host sample interrupts loses the handler's time from its duration
# (dlh_thread_hot.stolen), never more: with a sample landing between the start of a call and
# the reading of the stolen ticks, the subtraction once went below the call's start and gave
# durations of ~7e18 ns. 500,000 calls at 1,000 Hz: every call shorter than the whole run.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/progs/threads"
for i in 1 2 3; do
  rm -rf "out$i"
  "$DLHOOK_BIN" record --sim --sample-hz 1000 -o "out$i" -- "$BUILD/tests/progs/threads" 1 500000 \
    >/dev/null 2>err || fail "record: $(cat err)"
  "$DLHOOK_BIN" stats --json "$(one_trace "out$i")" >"s$i.json" || fail "stats"
  pyassert "s$i.json" "j['api'] and all(a['max_ns'] < 60e9 and a['total_ns'] < 600e9 for a in j['api'])"
done
echo ok
