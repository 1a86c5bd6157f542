# run-tests: serial timeout=600
# dlhook report's memory section at scale, in a real browser: tests/progs/memory churn makes 2
# million allocations (and as many frees) from three places on the simulator; the page of its
# trace stays small (memtl.c bins the timeline: the section's data is < 1 MB whatever the
# allocations) and, in Debian's chromium driven by Playwright (report_memory_browser.py), draws
# the memory timeline within 3 s of the page's start with no script error, the peak of `dlhook
# stats --memory --json` at its place, the three places, their stacks at the peak, a zoom that
# redraws in < 100 ms and a tooltip. Skipped (77) without chromium or Playwright in build/venv.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/progs/memory"
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || skip "chromium is not installed (make test-tools installs it)"
VPY=$BUILD/venv/bin/python
"$VPY" -c 'import playwright' 2>/dev/null || skip "playwright is not in $BUILD/venv (make venv)"
N=2000000
DLHOOK_QUIET=1 "$DLHOOK_BIN" record --sim -o "$T/tr" -- "$BUILD/tests/progs/memory" churn $N \
  >rec.txt 2>&1 || { tail rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --memory --json "$tr" >mem.json || fail "stats --memory failed"
pyassert mem.json "j['traces'][0]['allocations'] == $N and j['traces'][0]['frees'] == $N"
"$DLHOOK_BIN" report -o report.html "$tr" || fail "report failed"
python3 - report.html <<'PY' || fail "the memory section's data is too large"
import sys
s = open(sys.argv[1]).read()
i = s.find('id="dlh-memtl">')
j = s.find("</script>", i)
print("page %d bytes, memory section data %d bytes" % (len(s), j - i))
assert 0 < j - i < 1 << 20
PY
timeout 300 "$VPY" "$ROOT/tests/record/report_memory_browser.py" "$T/report.html" mem.json "$T" 3000 \
  "$CHROME" weights activations workspace || fail "the memory section failed in the browser (above)"
echo ok
