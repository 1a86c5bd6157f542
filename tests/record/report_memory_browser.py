# report_memory_browser.py — helper of t_report_memory_browser.sh (not a test itself): opens a
# `dlhook report` page in Debian's chromium through Playwright, offline, and checks its memory
# section: drawn within the time budget after the page starts loading (performance.now() when
# report_mem.js finished its first drawing), no script error, the peak that `dlhook stats
# --memory --json` says, the places, stacks at the peak, zooming and the tooltip.
# usage: python report_memory_browser.py PAGE.html MEMORY.json SHOTDIR BUDGET_MS [CHROMIUM]
import json
import sys
import time

from playwright.sync_api import sync_playwright

page_path, mem_path, shots, budget = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
chromium = sys.argv[5] if len(sys.argv) > 5 else "/usr/bin/chromium"
mem = json.load(open(mem_path))
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    # a first load warms the browser (its start, the file cache); the second is measured
    page.goto("file://" + page_path)
    page.wait_for_function("window.dlhMemory && window.dlhMemory.drawnAt !== null", timeout=120000)
    t0 = time.monotonic()
    page.reload()
    page.wait_for_function("window.dlhMemory && window.dlhMemory.drawnAt !== null", timeout=120000)
    wall = (time.monotonic() - t0) * 1000
    drawn = page.evaluate("window.dlhMemory.drawnAt")
    nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
    print("memory timeline drawn at %.0f ms after navigation start (wall %.0f ms; DOM content "
          "loaded %.0f ms, load %.0f ms)" % (drawn, wall, nav["domContentLoadedEventEnd"], nav["loadEventEnd"]))
    check(drawn <= budget, "memory timeline drawn within %.0f ms: %.0f ms" % (budget, drawn))
    check(not errors, "no script errors: %s" % errors[:3])
    page.locator("#memtl").scroll_into_view_if_needed()
    page.screenshot(path=shots + "/memory.png", full_page=False)
    tr = mem["traces"][0]
    n = page.evaluate("window.dlhMemory.traces.length")
    check(n == len(mem["traces"]), "one memory timeline per trace: %d" % n)
    pk = page.evaluate("window.dlhMemory.traces[0].peak()")
    check(pk[1] == tr["peak_bytes"], "the peak is stats --memory's: %s vs %s" % (pk[1], tr["peak_bytes"]))
    cols = page.evaluate("window.dlhMemory.traces[0].columns()")
    check(cols > 500, "the chart fills the canvas: %d pixel columns" % cols)
    keys = page.evaluate("window.dlhMemory.traces[0].keys()")
    print("places:", keys)
    want = [k for k in sys.argv[6:]] if len(sys.argv) > 6 else []
    check(all(any(w in k for k in keys) for w in want), "places %s drawn: %s" % (want, keys))
    # the bin drawn at the peak holds the peak (never smoothed away)
    at = page.evaluate("(() => { const T = window.dlhMemory.traces[0]; return T.at(T.peak()[0]).total; })()")
    check(abs(at - tr["peak_bytes"]) <= 1024 * len(keys), "the value drawn at the peak is the peak: %s" % at)
    # interactive: zooming into a tenth around the peak and back redraws fast
    ms = page.evaluate("""(() => { const T = window.dlhMemory.traces[0], v = T.view(), p = T.peak()[0];
        const w = (v[1] - v[0]) / 10, a = performance.now();
        for (let i = 0; i < 10; i++) { T.zoom(p - w / 2, p + w / 2); T.zoom(v[0], v[1]); }
        return (performance.now() - a) / 20; })()""")
    check(ms < 100, "a zoom redraws in %.1f ms (< 100)" % ms)
    # hovering the chart shows the places at the pointer
    box = page.locator("#memtl canvas").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] - 40)
    tip = page.locator("#memtl .mem-tip").first
    check(tip.is_visible() and "live at" in tip.inner_text(), "the tooltip names the live bytes")
    stacks = page.locator("#memtl details.mem-stack").count()
    check(stacks > 0, "allocation stacks at the peak: %d" % stacks)
    rows = page.locator("#memtl table.mem-at-peak tbody tr").count()
    check(rows > 0, "live at the peak by place: %d rows" % rows)
    browser.close()

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
