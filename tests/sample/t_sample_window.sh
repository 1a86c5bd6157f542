# Host samples follow the capture window and `dlhook attach`: the example on the simulator with
# `--delay 0.6 --duration 0.6` at 1 kHz has samples (on-CPU and wait) only inside the window its
# calls were recorded in, none from the 0.6 s before it nor after it; and a program started
# without dlhook and attached for ~1.5 s has samples only between attach and detach, and no
# sampling timer left armed in it after detach (/proc/PID/timers, where the kernel has it).
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$DLHOOK_LIB"
need "$BUILD/simcuda/libcudart.so.13"
need "$BUILD/examples/train"
# window MIN_SPAN_S MAX_SPAN_S TRACE: every sample of TRACE lies in its recording window, from
# the anchor that opened it (CAPTURE_OPEN, else START) to the one that closed it (CAPTURE_CLOSE,
# else END: detach or exit), 5 ms of slack at each end; the calls too; the samples (on-CPU and
# wait) span at least MIN_SPAN_S and at most MAX_SPAN_S seconds.
window() {
  "$DLHOOK_BIN" dump --type sample,api,anchor "$3" >dump.jsonl || fail "dump $3"
  python3 - "$1" "$2" dump.jsonl <<'PY' || fail "samples outside the window of $3"
import json, sys
lo_span, hi_span = float(sys.argv[1]) * 1e9, float(sys.argv[2]) * 1e9
calls, samples, kinds, anchors = [], [], set(), {}
for l in open(sys.argv[3]):
    e = json.loads(l)
    if e["type"] == "api":
        calls.append(e["start_ns"])
    elif e["type"] == "sample":
        samples.append(e["time_ns"]); kinds.add(e["kind"])
    elif e["type"] == "anchor":
        anchors.setdefault(e["kind"], e["trace_ns"])
assert calls, "no calls recorded"
assert samples, "no samples recorded"
w0 = anchors.get(3, anchors.get(0))
w1 = anchors.get(4, anchors.get(2))
s0, s1 = min(samples), max(samples)
print("window %.3f s: calls %.3f..%.3f s, %d samples %.3f..%.3f s (%s) after it opened" % (
    (w1 - w0) / 1e9, (min(calls) - w0) / 1e9, (max(calls) - w0) / 1e9, len(samples),
    (s0 - w0) / 1e9, (s1 - w0) / 1e9, ",".join(sorted(kinds))))
slack = 5e6
out = [s for s in samples if s < w0 - slack or s > w1 + slack]
assert not out, "%d of %d samples outside the window" % (len(out), len(samples))
out = [c for c in calls if c < w0 - slack or c > w1 + slack]
assert not out, "%d of %d calls outside the window" % (len(out), len(calls))
assert lo_span <= s1 - s0 <= hi_span, "the samples span %.3f s" % ((s1 - s0) / 1e9)
PY
}

# 1. a capture window: --delay 0.6 --duration 0.6 of a run of ~3 s (4000 steps: outside the
# window they run at the simulator's speed, ~0.55 ms each)
"$DLHOOK_BIN" record --sim --sample-hz 1000 --delay 0.6 --duration 0.6 -o cw -- \
  "$BUILD/examples/train" --steps 4000 >/dev/null 2>cw.err || fail "record: $(cat cw.err)"
tr=$(one_trace cw)
window 0.3 0.65 "$tr"
# a whole run of ~3 s for comparison (3000 steps, all recorded, ~1 ms each with native stacks):
# several times as many on-CPU samples (wait samples are not compared: their density follows the
# sampler's CPU budget, DLHOOK_SAMPLE_BUDGET, which the two runs spend differently)
"$DLHOOK_BIN" record --sim --sample-hz 1000 -o all -- "$BUILD/examples/train" --steps 3000 \
  >/dev/null 2>all.err || fail "record all: $(cat all.err)"
n_win=$("$DLHOOK_BIN" dump --type sample "$tr" | grep -c '"kind":"cpu"')
n_all=$("$DLHOOK_BIN" dump --type sample "$(one_trace all)" | grep -c '"kind":"cpu"')
echo "on-CPU samples: window $n_win, whole run $n_all"
[ "$n_all" -gt $((n_win * 2)) ] || fail "the window ($n_win on-CPU samples) is not a part of the run ($n_all)"

# 2. dlhook attach: samples between attach and detach only, no timer left behind
[ "$(uname -m)" = x86_64 ] || { echo "attach part skipped: x86-64 only"; echo ok; exit 0; }
if [ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ]; then
  echo "attach part skipped: ptrace disabled"; echo ok; exit 0
fi
A=$BUILD/tests/attach/attachee
[ -x "$A" ] || { echo "attach part skipped: no $A"; echo ok; exit 0; }
"$SIMRUN" "$A" --steps 500 --step-ms 10 --log steps.log --hold release >run.out 2>run.err &
PID=$!
i=0
while [ "$(cat steps.log 2>/dev/null | wc -l)" -lt 1 ]; do
  i=$((i + 1)); [ $i -lt 6000 ] || { kill $PID; fail "the program never started"; }
  sleep 0.01
done
sleep 0.5
DLHOOK_SAMPLE_HZ=1000 "$DLHOOK_BIN" attach "$PID" -o at >attach.out 2>attach.err ||
  { cat attach.err; kill $PID; fail "attach failed"; }
sleep 1.5
"$DLHOOK_BIN" detach "$PID" >detach.out 2>detach.err || { cat detach.err; kill $PID; fail "detach failed"; }
timers=
[ -r "/proc/$PID/timers" ] && timers=$(grep -c '^ID:' "/proc/$PID/timers")
touch release
wait "$PID" || fail "the attached program failed: $(cat run.err)"
window 0.5 2.5 "$(one_trace at)"
if [ -n "$timers" ]; then
  echo "POSIX timers left in the program after detach: $timers"
  [ "$timers" -eq 0 ] || fail "$timers sampling timers left armed after detach"
fi
echo ok
