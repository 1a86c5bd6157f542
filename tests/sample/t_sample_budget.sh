# The host sampler keeps to its CPU budget (DLHOOK_SAMPLE_BUDGET, thousandths of the process's
# CPU time; issue 48: at 200 Hz on a PyTorch step the sampler thread woke at every tick, because
# the main thread alternates between running and waiting faster than a period and no look found
# it steady). tests/sample/budget.py keeps a sampler busy that way for 3 s at 1 kHz: its main
# thread alternates 2 ms of CPU and 2 ms of sleep, a helper thread wakes every millisecond.
# - `dlhook stats` says what dlhook's threads cost in CPU (writer, sampler, its handler,
#   symbolizer) against the whole process's, in the table and in --json (dlhook_cost.cpu);
# - with the default budget the sampler thread wakes at most a third as often as with
#   DLHOOK_SAMPLE_BUDGET=0 (no budget), and takes at most half its CPU time;
# - the wait samples keep their meaning: the helper thread's add up to at least half the time it
#   slept (each carries the time since the look before it), in both runs.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
PY=python3
for b in default 0; do
  rm -rf "$T/$b"
  if [ "$b" = default ]; then unset DLHOOK_SAMPLE_BUDGET; else export DLHOOK_SAMPLE_BUDGET=$b; fi
  DLHOOK_SAMPLE=always "$DLHOOK_BIN" record --sim --sample-hz 1000 -o "$T/$b" -- \
    "$PY" "$ROOT/tests/sample/budget.py" 3 >"$b.json" 2>"$b.err" || { cat "$b.err"; fail "budget.py failed ($b)"; }
  unset DLHOOK_SAMPLE_BUDGET
  cat "$b.json"
  "$DLHOOK_BIN" stats "$T/$b"/*.dlh >"$b.stats" 2>&1 || { cat "$b.stats"; fail "stats failed ($b)"; }
  grep "dlhook's CPU time" "$b.stats" || fail "stats does not say what dlhook's threads cost in CPU ($b)"
  "$DLHOOK_BIN" stats --json "$T/$b"/*.dlh >"$b.stats.json" || fail "stats --json failed ($b)"
  "$DLHOOK_BIN" dump --type sample "$T/$b"/*.dlh >"$b.samples" || fail "dump failed ($b)"
done
python3 - <<'PY' || fail "the sampler's budget"
import json
def load(b):
    run = json.load(open(f"{b}.json"))
    cpu = json.load(open(f"{b}.stats.json"))["dlhook_cost"]["cpu"]
    asleep = 0
    for line in open(f"{b}.samples"):
        s = json.loads(line)
        if s.get("type") == "sample" and s["kind"] == "wait" and s["tid"] == run["helper_tid"]:
            asleep += s["weight_ns"] / 1e9
    return run, cpu, asleep
ok = True
res = {b: load(b) for b in ("default", "0")}
for b, (run, cpu, asleep) in res.items():
    share = 100.0 * cpu["sampler_ns"] / max(cpu["process_ns"], 1)
    print(f"budget {b}: sampler woke {run['sampler_wakes']} times in {run['wall']:.2f} s, "
          f"{cpu['sampler_ns'] / 1e6:.1f} ms CPU ({share:.2f} % of the process's "
          f"{cpu['process_ns'] / 1e6:.0f} ms); the helper slept {run['helper_asleep']:.2f} s, "
          f"its wait samples {asleep:.2f} s")
    for k in ("writer_ns", "sampler_ns", "process_ns", "dlhook_ns"):
        if not cpu.get(k):
            print(f"budget {b}: dlhook_cost.cpu.{k} is missing or 0"); ok = False
    if asleep < 0.5 * run["helper_asleep"]:
        print(f"budget {b}: the helper's wait samples cover less than half its sleep"); ok = False
(rd, cd, _), (r0, c0, _) = res["default"], res["0"]
if not rd["sampler_wakes"] or not r0["sampler_wakes"]:
    print("no dlhook-sampler thread seen"); ok = False
elif rd["sampler_wakes"] * 3 > r0["sampler_wakes"]:
    print("with its budget the sampler wakes more than a third as often as without"); ok = False
if cd["sampler_ns"] * 2 > c0["sampler_ns"]:
    print("with its budget the sampler takes more than half the CPU it takes without"); ok = False
raise SystemExit(0 if ok else 1)
PY
echo ok
