# report_browser.py — helper of t_report_browser.sh (not a test itself): drives Debian's
# chromium with Playwright over a `dlhook report` page, offline, and checks what a user does:
# the step table equals `dlhook stats --json`, clicking a step zooms the timeline to it, a
# kernel's tooltip names it with its duration and the call that launched it, clicking a call
# highlights the kernel it launched (the pixel turns orange), wheel and box zoom, table sort.
# usage: python report_browser.py PAGE.html STATS.json SHOTDIR [CHROMIUM]
import json
import sys

from playwright.sync_api import sync_playwright

page_path, stats_path, shots = sys.argv[1], sys.argv[2], sys.argv[3]
chromium = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/chromium"
stats = json.load(open(stats_path))
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
    errors, requests = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("request", lambda r: requests.append(r.url))
    page.goto("file://" + page_path)
    page.wait_for_function("window.dlhReport !== undefined")
    page.screenshot(path=shots + "/1-page.png", full_page=False)
    check(not errors, "no script errors: %s" % errors[:3])
    external = [u for u in requests if not u.startswith(("file:", "data:", "about:"))]
    check(not external, "nothing requested from the network: %s" % external[:3])

    # lanes are grouped by rank; the launcher is not "rank -1"
    groups = page.evaluate("Array.from(new Set([...Array(200).keys()].map(i => { try { return dlhReport.laneInfo(i).group } catch (e) { return null } }).filter(x => x)))")
    print("groups:", groups)
    check(any(g.startswith("rank 1 ") for g in groups) and any("(no rank)" in g for g in groups), "groups are labelled rank N, the launcher by its name")
    check(not any("rank -1" in g for g in groups), "no group is labelled rank -1")

    # the Findings section (dlhook advise) is the first section and lists stats --json's findings
    heads = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
    check(heads and heads[0] == "Findings", "Findings is the first section: %s" % heads[:3])
    items = page.eval_on_selector_all("#findings li", "lis => lis.map(li => li.innerText)")
    want_f = stats.get("findings") or []
    print("findings:", [i.splitlines()[0] for i in items] or page.inner_text("#findings"))
    if want_f:
        check(len(items) == len(want_f) and all(f["class"] in t and f["place"] in t and f["fix"] in t
                                                for f, t in zip(want_f, items)),
              "each finding is shown in rank order with its class, place and fix")
    else:
        check(page.inner_text("#findings").strip() == "no findings above the thresholds",
              "no findings: the section says so")

    # the step table is dlhook stats --json's
    rows = page.eval_on_selector_all("#step-table tbody tr", """trs => trs.map(tr =>
        Array.from(tr.cells).slice(0, 8).map(td => td.dataset.v === undefined ? td.textContent : +td.dataset.v))""")
    want = {(r["rank"], r["step"]): r for r in stats["steps"]["rows"]}
    check(len(rows) == len(want) and len(rows) > 0, "step table has %d rows, stats %d" % (len(rows), len(want)))
    keys = ["dur_ns", "compute_ns", "comm_ns", "copy_ns", "host_ns", "idle_ns"]
    bad = []
    for r in rows:
        s = want.get((r[0], r[1]))
        if not s or [s[k] for k in keys] != r[2:8] or sum(r[3:8]) != r[2]:
            bad.append(r)
    check(not bad, "every step row equals stats --json and its parts add up: %s" % bad[:2])
    summary = page.inner_text("#step-summary")
    print("summary:", summary)
    ss, sg = stats["steps"]["slowest_step"], stats.get("straggler")
    check("Slowest step: step %d" % ss["step"] in summary, "the slowest step is named")
    if sg:
        check("Straggler: rank %d" % sg["rank"] in summary and sg["mean_delay_ns"] > 0,
              "the straggler is named with a positive delay")

    # zoom into one step: click the row of rank 1, step 3
    target = [r for r in stats["steps"]["rows"] if r["rank"] == 1 and r["step"] == 3][0]
    page.click("#step-table tbody tr:has(td:nth-child(1)[data-v='1']):has(td:nth-child(2)[data-v='3'])")
    v = page.evaluate("dlhReport.view()")
    width = v[1] - v[0]
    check(abs(width - target["dur_ns"] * 1.04) < 0.01 * target["dur_ns"],
          "clicking step 3 of rank 1 zooms to it (%.3f ms wide, step %.3f ms)" % (width / 1e6, target["dur_ns"] / 1e6))
    page.screenshot(path=shots + "/2-step.png")

    # hover a kernel of rank 1 and read its tooltip (the simulator's timings vary from run to
    # run: when step 3 shows no linked kernel, the next steps of rank 1 are tried; a kernel of at
    # least one pixel: a step that a loaded machine stretched draws short kernels narrower)
    q = "dlhReport.visible(2, 'rank 1', 1).filter(h => dlhReport.linked(h[0], h[1]).length && dlhReport.name(h[0], h[1]).indexOf('Memcpy') < 0)"
    kern = page.evaluate(q)
    for st in (4, 5, 6, 7, 8, 2, 1):
        if kern:
            break
        page.click("#step-table tbody tr:has(td:nth-child(1)[data-v='1']):has(td:nth-child(2)[data-v='%d'])" % st)
        kern = page.evaluate(q)
    check(len(kern) > 0, "kernels of rank 1 are visible in a step (%d)" % len(kern))
    if kern:
        li, j = kern[len(kern) // 2]
        name = page.evaluate("dlhReport.name(%d, %d)" % (li, j))
        x, y = page.evaluate("dlhReport.point(%d, %d)" % (li, j))
        page.mouse.move(x, y)
        page.wait_for_selector("#tl-tip", state="visible")
        tip = page.inner_text("#tl-tip")
        tb = page.locator("#tl-tip").bounding_box()
        check(tb is not None and 0 <= tb["x"] and tb["x"] + tb["width"] <= 1400 and
              0 <= tb["y"] and tb["y"] + tb["height"] <= 900, "the tooltip is inside the window: %s" % tb)
        print("tooltip:", tip.replace("\n", " | ")[:300])
        check(name in tip and "duration" in tip and "launched by:" in tip,
              "the tooltip names the kernel %s, its duration and its launch" % name[:40])
        page.screenshot(path=shots + "/3-tooltip.png")

    # click a call of rank 1 that launched a kernel (zoomed so that both are wide enough):
    # the kernel is highlighted
    calls = page.evaluate("""dlhReport.visible(0, 'rank 1', 0).filter(h => dlhReport.linked(h[0], h[1]).some(k =>
        dlhReport.laneInfo(k[0]).kind == 2 && dlhReport.name(k[0], k[1]).indexOf('Memcpy') < 0))""")
    check(len(calls) > 0, "calls of rank 1 in the step launched kernels (%d)" % len(calls))
    if calls:
        li, j = calls[len(calls) // 2]
        call = page.evaluate("dlhReport.name(%d, %d)" % (li, j))
        k = [q for q in page.evaluate("dlhReport.linked(%d, %d)" % (li, j))
             if page.evaluate("dlhReport.laneInfo(%d).kind" % q[0]) == 2][0]
        kname = page.evaluate("dlhReport.name(%d, %d)" % tuple(k))
        cs, ks = page.evaluate("dlhReport.span(%d, %d)" % (li, j)), page.evaluate("dlhReport.span(%d, %d)" % tuple(k))
        a, b = min(cs[0], ks[0]), max(cs[1], ks[1])
        page.evaluate("dlhReport.zoom(%f, %f)" % (a - 0.2 * (b - a), b + 0.2 * (b - a)))
        x, y = page.evaluate("dlhReport.point(%d, %d)" % (li, j))
        page.mouse.click(x, y)
        check(page.evaluate("dlhReport.selected()") == call, "clicking selects the call %s" % call)
        check(kname in page.evaluate("dlhReport.highlighted()"), "its kernel %s is highlighted" % kname[:40])
        check(kname in page.inner_text("#tl-selection"), "the selection panel names the kernel")
        kx, ky = page.evaluate("dlhReport.point(%d, %d)" % tuple(k))
        px = page.evaluate("dlhReport.pixel(%f, %f)" % (kx, ky))
        print("call %s -> kernel %s; kernel pixel after the click: %s" % (call, kname[:50], px))
        check(px[0] > 200 and 90 < px[1] < 190 and px[2] < 120, "the kernel is drawn orange")
        page.screenshot(path=shots + "/4-highlight.png")

    # wheel zoom in around the middle, then a box zoom with shift+drag
    box = page.evaluate("(() => { const r = document.getElementById('tl-canvas').getBoundingClientRect(); return [r.left, r.top, r.width] })()")
    before = page.evaluate("dlhReport.view()")
    page.mouse.move(box[0] + 190 + (box[2] - 190) / 2, max(box[1], 0) + 40)
    page.mouse.wheel(0, -400)
    after = page.evaluate("dlhReport.view()")
    check(after[1] - after[0] < 0.7 * (before[1] - before[0]), "the wheel zooms in")
    y0 = max(box[1], 0) + 40
    page.keyboard.down("Shift")
    page.mouse.move(box[0] + 300, y0)
    page.mouse.down()
    page.mouse.move(box[0] + 400, y0, steps=4)
    page.mouse.up()
    page.keyboard.up("Shift")
    boxed = page.evaluate("dlhReport.view()")
    ratio = (boxed[1] - boxed[0]) / (after[1] - after[0])
    check(abs(ratio - 100.0 / (box[2] - 190)) < 0.02, "shift+drag zooms to the box (ratio %.3f)" % ratio)
    page.click("#tl-reset")

    # sortable tables: sort top kernels by count
    page.click("#top-kernels th:nth-child(2)")
    counts = page.eval_on_selector_all("#top-kernels tbody tr td:nth-child(2)", "tds => tds.map(t => +t.dataset.v)")
    check(counts == sorted(counts, reverse=True) and len(counts) > 1, "top kernels sort by count")
    check(page.locator("#collectives").count() == 1 and page.locator("#gemms").count() == 1,
          "GEMM and collective tables are there")
    page.screenshot(path=shots + "/5-full.png", full_page=True)
    check(not errors, "still no script errors: %s" % errors[:3])
    browser.close()

sys.exit(1 if failures else 0)
