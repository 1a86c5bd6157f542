# The rings and the writer under ThreadSanitizer: tsan_stress (only in a TSAN=1 build) runs
# 8 long-lived and 2,000 short-lived calling threads against the TSan-built libdlhook.so; no
# data race is reported and every call is in the trace or counted as dropped.
. "$ROOT/tests/lib.sh"
p=$BUILD/tests/reliability/tsan_stress
[ -x "$p" ] || skip "not a TSAN=1 build (make TSAN=1 O=build-tsan; .ci/run-sanitizers)"
export DLHOOK_STACKS=none DLHOOK_QUIET=1
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" DLHOOK_OUTPUT="$T/tr/" "$p" >out.txt 2>err.txt; rc=$?
cat err.txt | head -n 60
[ $rc = 0 ] || fail "tsan_stress: exit $rc (66: a data race)"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
# a thread that got a small ring may drop records when the (slow, instrumented) writer lags:
# every call is either in the trace or counted as dropped
pyassert stats.json 'sum(a["calls"] for a in j["api"] if a["name"] == "cudaGetDevice") + j["dropped"] == 170000'
python3 -c "import json; j = json.load(open('stats.json')); print('recorded', sum(a['calls'] for a in j['api']), 'dropped', j['dropped'])"
echo ok
