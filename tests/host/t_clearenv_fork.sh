# Hazard: a program that clears its environment (clearenv) and then forks a worker: the worker's
# trace must go where DLHOOK_OUTPUT said when the program started, not into the current
# directory. The settings of a process are read once, at start-up, and a forked child keeps them.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
mkdir cwd
(cd cwd && "$P" clearenv 500) >plain.out 2>&1; want=$?
(cd cwd && traced "$T/tr" "$P" clearenv 500) >traced.out 2>&1; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
[ -z "$(ls cwd)" ] || fail "a trace landed in the current directory: $(ls cwd)"
n=$(ls "$T"/tr/*.dlh | wc -l)
[ "$n" = 2 ] || fail "expected 2 traces (parent, worker) in DLHOOK_OUTPUT, found $n"
for f in "$T"/tr/*.dlh; do "$DLHOOK_BIN" stats --json "$f" >"$f.json" || fail "$f unreadable"; done
python3 - "$T"/tr/*.json <<'PY' || fail "counts differ"
import json, sys
got = sorted({a["name"]: a["calls"] for a in json.load(open(f))["api"]}.get("cudaGetDeviceCount", 0) for f in sys.argv[1:])
assert got == [10, 500], got
PY
echo "ok: parent and worker traces in DLHOOK_OUTPUT after clearenv"
