# tests/torch/common.sh — sourced by the PyTorch reference workload tests (t_torch_*.sh).
# Python with torch comes from $BUILD/venv (scripts/bootstrap-py installs the torch package set);
# without it the tests skip. Every workload runs on the simulated CUDA stack bare
# (tests/simcuda/run) and under `dlhook record --sim`, which must leave its output and exit
# status unchanged. The recorded runs use --stacks none: complete traces with stacks at
# PyTorch scale are not asserted here (the writer did not finish in time with stacks on).
. "$ROOT/tests/lib.sh"
PY="$BUILD/venv/bin/python"
[ -x "$PY" ] || skip "no $PY: run scripts/bootstrap-py (installs torch)"
"$PY" -c 'import torch' >/dev/null 2>&1 || skip "$PY has no torch: run scripts/bootstrap-py"
need "$DLHOOK_BIN"
need "$DLHOOK_LIB"
need "$BUILD/simcuda/simcuda-audit.so"
W="$ROOT/tests/torch/workload.py"
# quiet numpy/c10 warnings on stderr are fine; stdout is what is compared
export PYTHONWARNINGS=ignore

# run_both NAME CMD...: CMD (a python invocation: "$PY" ARGS) bare on the simulator into
# NAME.bare.out, and under dlhook record into NAME.rec/ with output NAME.rec.out; both must exit
# 0 with identical stdout.
run_both() {
  name=$1; shift
  "$SIMRUN" "$@" >"$name.bare.out" 2>"$name.bare.err"
  brc=$?
  [ "$brc" -eq 0 ] || fail "$name: bare run exits $brc: $(tail -n 5 "$name.bare.err")"
  "$DLHOOK_BIN" record --sim --stacks none -o "$name.rec" -- "$@" >"$name.rec.out" 2>"$name.rec.err"
  rrc=$?
  [ "$rrc" -eq "$brc" ] || fail "$name: exit $rrc under dlhook, $brc bare: $(tail -n 5 "$name.rec.err")"
  cmp -s "$name.bare.out" "$name.rec.out" ||
    fail "$name: output differs under dlhook: $(diff "$name.bare.out" "$name.rec.out" | head)"
  grep -q '^done$' "$name.bare.out" || fail "$name: no 'done' line: $(cat "$name.bare.out")"
}

# trace_stats DIR OUT.json: `dlhook stats --json` over every trace in DIR; fails on dropped
# records or an incomplete trace
trace_stats() {
  ls "$1"/*.dlh >/dev/null 2>&1 || fail "no trace in $1"
  "$DLHOOK_BIN" stats --json "$1"/*.dlh >"$2" || fail "dlhook stats $1"
  grep -q 'no trailer\|damaged' "$1.err" 2>/dev/null && fail "incomplete trace: $(cat "$1.err")"
  pyassert "$2" 'j["dropped"] == 0'
}
