#!/bin/sh
# run-tests: timeout=600
# The first screen of `dlhook report` on a PyTorch trace (issue 47): the reference workload
# (tests/torch/tiny_gpt2.py) recorded with the default stacks, its page opened in Debian's
# chromium at 1280x800 (Playwright from build/venv, offline). report_first_screen.py checks that
# the findings' headlines, the step breakdown (equal to `stats --json`'s step rows, adding up to
# 100 %) and the top operators by GPU time lie inside the window without scrolling, that the
# kernel table shows short names with the full name in the cell's tooltip and that a kernel's
# timeline tooltip shows both. Screenshots are left in the test's directory (*.png).
# Skipped (77) without torch, chromium or Playwright in build/venv (make venv).
. "$ROOT/tests/torch/common.sh"
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || skip "chromium is not installed (make test-tools installs it)"
"$PY" -c 'import playwright' 2>/dev/null || skip "playwright is not in $BUILD/venv (make venv)"
"$DLHOOK_BIN" record --sim -o ref.rec -- "$PY" "$ROOT/tests/torch/tiny_gpt2.py" --steps 5 \
  >ref.out 2>ref.err || fail "tiny_gpt2 under dlhook: $(tail -n 5 ref.err)"
"$DLHOOK_BIN" report -o report.html ref.rec/*.dlh || fail "report failed"
"$DLHOOK_BIN" stats --json ref.rec/*.dlh >stats.json || fail "stats failed"
timeout 240 "$PY" "$ROOT/tests/torch/report_first_screen.py" "$T/report.html" stats.json "$T" "$CHROME" \
  || fail "the report's first screen (above)"
echo ok
