#!/bin/sh
# run-tests: timeout=900
# The CNN fed by DataLoader(num_workers=2, pin_memory=True): the workers are forked processes
# that never touch CUDA and end with os._exit. Bare and under dlhook: identical output and exit
# status; the main process leaves one complete trace with the calls, and each worker (forked
# by a sampled Python process: host sampling follows it) a complete trace of samples, no calls.
. "$ROOT/tests/torch/common.sh"
run_both dl "$PY" "$W" dataloader --steps 5
[ "$(grep -c '^step [0-4] loss ' dl.bare.out)" -eq 5 ] || fail "5 steps expected: $(cat dl.bare.out)"
n=$(ls dl.rec/*.dlh | wc -l)
[ "$n" -eq 3 ] || fail "expected 3 traces (the main process, 2 workers), found $n: $(ls dl.rec)"
trace_stats dl.rec s.json
pyassert s.json 'j["processes"] == 3 and any(a["name"] == "cudnnBackendExecute" for a in j["api"])'
with_calls=0
for f in dl.rec/*.dlh; do
  "$DLHOOK_BIN" stats --json "$f" >one.json 2>one.err || fail "dlhook stats $f: $(cat one.err)"
  grep -q 'no trailer\|damaged' one.err && fail "incomplete trace $f: $(cat one.err)"
  if python3 -c 'import json,sys; sys.exit(0 if json.load(open("one.json"))["calls"] > 0 else 1)'; then
    with_calls=$((with_calls + 1))
  fi
done
[ "$with_calls" -eq 1 ] || fail "expected calls in the main trace only, found them in $with_calls"
echo "t_torch_dataloader: OK"
