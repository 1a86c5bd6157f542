# tests/lib.sh — helpers for end-to-end test scripts (sourced; POSIX sh).
# Variables from tests/run-tests: ROOT BUILD DLHOOK_LIB DLHOOK_BIN SIMRUN CUDA_HOME T
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 77; }
need() { [ -e "$1" ] || skip "missing $1 (not built)"; }
# What to preload: libdlhook.so, after the ASan runtime when $ASAN_LIB names it (a library built
# with ASAN=1 needs libasan first in LD_PRELOAD: ASAN_LIB=$(cc -print-file-name=libasan.so)).
DLHOOK_PRELOAD="${ASAN_LIB:+$ASAN_LIB }$DLHOOK_LIB"
# Runs a command under dlhook with output to directory $1; remaining args: the command.
traced() { d=$1; shift; DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$@"; }
# The single trace file in a directory.
one_trace() {
  n=$(ls "$1"/*.dlh 2>/dev/null | wc -l)
  [ "$n" -eq 1 ] || fail "expected 1 trace in $1, found $n: $(ls "$1")"
  ls "$1"/*.dlh
}
# jq-like checks with python3: pyassert FILE 'python expression over j (the parsed JSON)'
pyassert() {
  python3 - "$1" "$2" <<'PY' || fail "assertion failed: $2"
import json, sys
j = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2], {"j": j})
if not ok:
    print("assertion false:", sys.argv[2], file=sys.stderr)
    sys.exit(1)
PY
}
# Checks `dlhook stats --json` output: expect_calls STATS.json name=count ...
expect_calls() {
  f=$1; shift
  python3 - "$f" "$@" <<'PY' || fail "call counts differ"
import json, sys
j = json.load(open(sys.argv[1]))
calls = {a["name"]: a for a in j["api"]}
bad = 0
for kv in sys.argv[2:]:
    name, n = kv.split("=")
    got = calls.get(name, {}).get("calls", 0)
    if got != int(n):
        print(f"{name}: expected {n} calls, trace has {got}", file=sys.stderr); bad = 1
sys.exit(bad)
PY
}
# The real libcudart.so.13 (the loader's cache, else the toolkit's) in $CUDART; skips without it.
need_cudart() {
  CUDART=$(ldconfig -p | sed -n 's/.*libcudart.so.13 .*=> //p' | head -n 1)
  [ -n "$CUDART" ] || CUDART=$CUDA_HOME/lib64/libcudart.so.13
  [ -e "$CUDART" ] || skip "no libcudart.so.13"
}
