# Helpers for the examples' tests (sourced, POSIX sh). Variables from tests/run-tests:
# ROOT, BUILD, SIMRUN, T.
TRAIN="$BUILD/examples/train"
TRAIN_STATIC="$BUILD/examples/train-static"

fail() { echo "FAIL: $*"; exit 1; }

need_train() {
  for b in "$@"; do
    [ -x "$b" ] || fail "$b is not built (make $b)"
  done
}

need_sim() {
  if [ ! -e "$BUILD/simcuda/libcudart.so.13" ] || [ ! -x "$SIMRUN" ]; then
    echo "skip: the simulated CUDA stack is not built yet ($BUILD/simcuda/libcudart.so.13, $SIMRUN)"
    exit 77
  fi
}

# run_sim OUT ERR CMD...: runs CMD on the simulator, stdout to OUT, stderr to ERR; returns its
# exit status (and shows stderr's tail when it is not 0).
run_sim() {
  _out=$1 _err=$2; shift 2
  "$SIMRUN" "$@" >"$_out" 2>"$_err"
  _rc=$?
  if [ $_rc -ne 0 ]; then
    echo "--- $* exited $_rc; stderr:"; tail -n 30 "$_err"; echo "--- stdout:"; tail -n 30 "$_out"
  fi
  return $_rc
}

# check_train_output FILE STEPS: the per-step lines and the closing line are there.
check_train_output() {
  grep -q "^step $2/$2 loss " "$1" || { cat "$1"; fail "no 'step $2/$2 loss' line in $1"; }
  [ "$(grep -c '^step [0-9]*/'"$2"' loss ' "$1")" -eq "$2" ] || { cat "$1"; fail "expected $2 step lines in $1"; }
  grep -q "^train: done, final loss " "$1" || { cat "$1"; fail "no closing line in $1"; }
}

same_output() {
  cmp -s "$1" "$2" || { echo "--- outputs differ:"; diff "$1" "$2" | head -40; fail "two runs gave different output"; }
}
