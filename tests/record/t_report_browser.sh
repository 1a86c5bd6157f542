# dlhook report in a real browser: Debian's chromium driven by Playwright (PyPI, package set
# scripts/py-requirements/report.txt, executable_path=/usr/bin/chromium) over the page of the
# 4-rank example on the simulator, offline. report_browser.py checks: no script error and no
# network request; the Findings section first, listing `stats --json`'s findings (class,
# place, fix) or saying there are none; lanes grouped by rank (the launcher is not "rank -1");
# the step table equals `dlhook stats --json` and each row's parts add up to the step; clicking
# a step zooms the timeline to it; hovering a kernel shows its tooltip (name, duration,
# launching call); clicking a call highlights its kernel (orange pixels); wheel and box zoom;
# tables sort. The page of 4 ranks x 20 steps stays under 2 MB. Screenshots are left in the
# test's directory (*.png).
# Skipped (77) without chromium or without Playwright in build/venv (make venv).
# run-tests: serial
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || skip "chromium is not installed (make test-tools installs it)"
VPY=$BUILD/venv/bin/python
"$VPY" -c 'import playwright' 2>/dev/null || skip "playwright is not in $BUILD/venv (make venv)"
SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 "$DLHOOK_BIN" record --sim -o "$T/tr" -- \
  "$BUILD/examples/train" --ranks 4 --steps 20 >rec.txt 2>&1 || { tail rec.txt; fail "record failed"; }
n=$(ls "$T"/tr/*-r[0-9]-*.dlh | wc -l)
[ "$n" = 4 ] || fail "expected 4 rank traces, found $n: $(ls "$T/tr")"
"$DLHOOK_BIN" report -o report.html "$T"/tr/*.dlh || fail "report failed"
size=$(wc -c <report.html)
echo "page: $size bytes"
[ "$size" -le 2097152 ] || fail "the page of 4 ranks x 20 steps is $size bytes (budget 2 MB)"
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
timeout 240 "$VPY" "$ROOT/tests/record/report_browser.py" "$T/report.html" stats.json "$T" "$CHROME" \
  || fail "the page failed in the browser (above)"
echo ok
