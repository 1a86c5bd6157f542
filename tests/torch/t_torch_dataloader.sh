#!/bin/sh
# run-tests: timeout=900
# The CNN fed by DataLoader(num_workers=2, pin_memory=True): the workers are forked processes
# that never touch CUDA and end with os._exit. Bare and under dlhook: identical output and exit
# status; the workers leave no trace, the main process one complete trace.
. "$ROOT/tests/torch/common.sh"
run_both dl "$PY" "$W" dataloader --steps 5
[ "$(grep -c '^step [0-4] loss ' dl.bare.out)" -eq 5 ] || fail "5 steps expected: $(cat dl.bare.out)"
n=$(ls dl.rec/*.dlh | wc -l)
[ "$n" -eq 1 ] || fail "expected one trace (the main process), found $n: $(ls dl.rec)"
trace_stats dl.rec s.json
pyassert s.json 'j["processes"] == 1 and any(a["name"] == "cudnnBackendExecute" for a in j["api"])'
echo "t_torch_dataloader: OK"
