# Issue 48: a host sample that lands while its thread is inside dlhook's own store (ring.c) is
# kept and attributed to the call being recorded, not lost. One thread calls the runtime flat
# out for 2 s (tests/reliability/threadload alt: consecutive calls differ, nothing folds), sampled
# at 1 kHz from the start: at most 0.1 % of the samples lost (the store took 12 % of them before),
# and the samples taken inside a store name the call ("in_call" in dump, SampleBatch.api_fn).
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
mkdir -p "$T/s"
DLHOOK_QUIET=1 DLHOOK_SAMPLE=always DLHOOK_SAMPLE_HZ=1000 DLHOOK_OUTPUT="$T/s/" \
  LD_PRELOAD="$DLHOOK_PRELOAD" "$P" alt 1 2000 >run.out 2>run.err || fail "traced run failed: $(tail -3 run.err)"
tr=$(one_trace "$T/s")
"$DLHOOK_BIN" dump --type sample,counters "$tr" >dump.txt || fail "dump failed"
python3 - <<'PY' || fail "see above"
import json
samples, in_call, c = 0, 0, None
for l in open("dump.txt"):
    j = json.loads(l)
    if j["type"] == "sample" and j["kind"] == "cpu":
        samples += 1
        in_call += j.get("in_call", "").startswith("cudaGetDevice")
    elif j["type"] == "counters":
        c = j
lost, written = c["samples_lost"], c["samples"]
pct = 100.0 * lost / max(written + lost, 1)
print(f"on-CPU samples {samples} ({in_call} inside dlhook's store of a call), written {written}, lost {lost} ({pct:.2f}%)")
bad = []
if samples < 10: bad.append(f"only {samples} on-CPU samples in 2 s at 1 kHz")
if pct > 0.1: bad.append(f"{pct:.2f}% of the samples lost (more than 0.1%)")
if in_call == 0: bad.append("no sample attributed to the call being stored")
for b in bad: print("FAIL:", b)
raise SystemExit(1 if bad else 0)
PY
echo ok
