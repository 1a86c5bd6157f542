"""report_first_screen.py PAGE.html STATS.json SHOTDIR [CHROMIUM] — helper of
t_torch_report_first_screen.sh (not a test itself): opens a `dlhook report` page of a PyTorch
trace in Debian's chromium (Playwright, offline) at 1280x800 and checks its first screen (issue
47): without scrolling, the findings' headlines (class, cost, place, fix), the step breakdown
(the step count, the median, five parts that add up to 100 % and equal those of `stats --json`'s
step rows) and the top operators (the five with the most GPU time, as `stats --json` counts
them) lie inside the window; the kernel table shows short names with the full name in its
tooltip, and the timeline's tooltip of a kernel shows both. Prints the figures; exit 1 on a
failure. A screenshot of the first screen is left in SHOTDIR (first-screen.png)."""
import json
import sys

from playwright.sync_api import sync_playwright

page_path, stats_path, shots = sys.argv[1], sys.argv[2], sys.argv[3]
chromium = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/chromium"
stats = json.load(open(stats_path))
W, H = 1280, 800
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def inside(page, sel):
    """The bounding boxes of the elements matching sel; all inside the window, none empty."""
    boxes = [page.locator(sel).nth(i).bounding_box() for i in range(page.locator(sel).count())]
    ok = bool(boxes) and all(b and b["width"] > 0 and b["height"] > 0 and b["x"] >= 0 and b["y"] >= 0
                             and b["x"] + b["width"] <= W and b["y"] + b["height"] <= H for b in boxes)
    return ok, boxes


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_context(viewport={"width": W, "height": H}, offline=True).new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto("file://" + page_path)
    page.wait_for_function("window.dlhReport !== undefined")
    page.screenshot(path=shots + "/first-screen.png")
    check(not errors, "no script errors: %s" % errors[:3])
    check(page.evaluate("window.scrollY") == 0, "the page opens at its top")

    # findings: the headlines of stats --json's findings, in order; the first three on screen
    want_f = stats.get("findings") or []
    items = page.eval_on_selector_all("#findings li", "lis => lis.map(li => li.innerText)")
    print("findings:", [i.splitlines()[0] for i in items] or page.inner_text("#findings"))
    if want_f:
        check(len(items) == len(want_f) and all(
            f["class"] in t and f["place"] in t and f["fix"] in t and "%.3f ms/step" % f["cost_ms_per_step"] in t
            for f, t in zip(want_f, items)), "each finding's headline: class, ms/step, place, fix")
        ok, boxes = inside(page, "#findings > ol > li:nth-child(-n+3)")
        check(ok, "the first %d findings are visible without scrolling: %s" % (min(3, len(want_f)), boxes))
    else:
        ok, boxes = inside(page, "#findings")
        check(ok and "no findings" in page.inner_text("#findings"), "no findings: said on the first screen")

    # the step breakdown: the step line of stats, parts from stats --json's rows
    rows = stats["steps"]["rows"]
    line = page.inner_text("#step-line")
    print("step line:", line)
    check(line.startswith("%d steps" % len(rows)), "the step line counts %d steps" % len(rows))
    tot = sum(r["dur_ns"] for r in rows)
    pcts = dict(page.eval_on_selector_all("#step-breakdown .legend span",
                                          "ss => ss.map(s => [s.dataset.cat, +s.dataset.pct])"))
    print("breakdown:", {k: round(v, 2) for k, v in pcts.items()})
    keys = ["compute_ns", "comm_ns", "copy_ns", "host_ns", "idle_ns"]
    check(sorted(pcts) == sorted(keys) and all(abs(pcts[k] - 100.0 * sum(r[k] for r in rows) / tot) < 1e-6
                                               for k in keys),
          "the five parts equal those of stats --json")
    check(abs(sum(pcts.values()) - 100) < 0.01, "the parts add up to 100 %% (%.3f)" % sum(pcts.values()))
    durs = sorted(r["dur_ns"] for r in rows)
    med = durs[len(durs) // 2]  # as the page writes a time (report.js, fmt)
    median = ("%.2f us" % (med / 1e3) if med < 1e6 else "%.3f ms" % (med / 1e6) if med < 1e9
              else "%.3f s" % (med / 1e9))
    check(median in line, "the median step %s is named" % median)
    for sel in ("#step-line", "#step-bar", "#step-breakdown .legend"):
        ok, boxes = inside(page, sel)
        check(ok, "%s is visible without scrolling: %s" % (sel, boxes))

    # the top operators: stats --json's five with the most GPU time
    ops = sorted(stats["pytorch"]["operators"], key=lambda o: (-o["gpu_ns"], -o["host_ns"]))[:5]
    shown = page.eval_on_selector_all("#top-ops-table tbody tr td:first-child", "tds => tds.map(t => t.textContent)")
    print("top operators:", shown)
    check(shown == [o["name"] for o in ops] and len(shown) == min(5, len(ops)) and shown,
          "the top operators are stats --json's by GPU time: %s" % [o["name"] for o in ops])
    ok, boxes = inside(page, "#top-ops-table tbody tr")
    check(ok, "every top operator row is visible without scrolling (%d rows)" % len(boxes))

    # kernel names: short in the table, the full name in the cell's tooltip
    cells = page.eval_on_selector_all("#top-kernels tbody td.n", "tds => tds.map(t => [t.textContent, t.title])")
    full = {k["name"] for k in stats["kernels"]} | {k.get("demangled", "") for k in stats["kernels"]}
    long_ = [c for c in cells if "<" in c[1]]
    print("kernel cells: %d, %d templated; e.g. %s" % (len(cells), len(long_), long_[:1]))
    check(long_ and all(len(c[0]) < len(c[1]) and c[0].split("<")[0] in c[1] for c in long_),
          "templated kernels: the cell shows the short name, its tooltip the full one")
    check(len({c[0] for c in cells}) >= 0.9 * len(cells), "kernel cells distinct (%d of %d)"
          % (len({c[0] for c in cells}), len(cells)))

    # the timeline: a templated kernel's tooltip shows its short name and its full name
    k = page.evaluate("""(() => { for (let li = 0; li < 500; li++) { let inf; try { inf = dlhReport.laneInfo(li) }
        catch (e) { break } if (inf.kind != 2) continue; const v = dlhReport.visible(2, undefined, 0)
        .filter(h => h[0] == li && dlhReport.name(h[0], h[1]).indexOf('<') >= 0); if (v.length) return v[0] } return null })()""")
    check(k is not None, "a templated kernel is on the timeline")
    if k:
        s, e = page.evaluate("dlhReport.span(%d, %d)" % tuple(k))
        page.evaluate("dlhReport.zoom(%f, %f)" % (s - 2 * (e - s), e + 2 * (e - s)))
        x, y = page.evaluate("dlhReport.point(%d, %d)" % tuple(k))
        page.mouse.move(x, y)
        page.wait_for_selector("#tl-tip", state="visible")
        tip = page.inner_text("#tl-tip")
        name = page.evaluate("dlhReport.name(%d, %d)" % tuple(k))
        print("tooltip:", tip.replace("\n", " | ")[:240])
        short = tip.splitlines()[0]
        check(name in tip and short != name and short.split("<")[0] in name,
              "the kernel's tooltip shows its short name (%s) and its full name" % short[:60])
        page.screenshot(path=shots + "/kernel-tooltip.png")
    check(not errors, "still no script errors: %s" % errors[:3])
    browser.close()

sys.exit(1 if failures else 0)
