# tests/export/common.sh — helpers for the exporter tests (sourced after tests/lib.sh).
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/gentrace"
GEN=$BUILD/tests/bin/gentrace
VPY=$BUILD/venv/bin/python
# Skips unless the venv made by scripts/bootstrap-py has the Python module $1.
need_venv_module() {
  [ -x "$VPY" ] || skip "no $VPY (make venv: scripts/bootstrap-py)"
  "$VPY" -c "import $1" 2>/dev/null || skip "python module $1 missing in $BUILD/venv (make venv: scripts/bootstrap-py)"
}
need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed (${2:-make test-tools})"; }
# Sum of durations of GPU records of the given kinds, from `dlhook dump`.
gpu_total() { # trace kinds(comma)
  "$DLHOOK_BIN" dump --type "$2" "$1" | python3 -c '
import json, sys
print(sum(json.loads(l).get("dur_ns", 0) for l in sys.stdin if l.strip()))'
}
