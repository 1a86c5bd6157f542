"""first_screen.py STATS.txt [--torch] — checks the text of `dlhook stats` (issue 47): the first
40 lines hold the step line, the findings' line and (--torch) the top operators; no line of the
first screen is wider than 100 columns; in the kernel table at least 90 % of the displayed names
are distinct, in the module table every displayed path. Prints the figures."""
import sys

path, torch = sys.argv[1], "--torch" in sys.argv[2:]
lines = open(path, encoding="utf-8").read().split("\n")
first = lines[:40]
err = []


def has(prefix):
    return any(ln.startswith(prefix) for ln in first)


if not lines[0].startswith("Summary of "):
    err.append("the first line is not the summary: %r" % lines[0])
steps = [ln for ln in first if ln.startswith("Steps: ")]
if not steps or steps[0].startswith("Steps: none"):
    err.append("no step line in the first 40 lines: %r" % steps)
if not has("Findings: "):
    err.append("no findings line in the first 40 lines")
if torch:
    i = next((k for k, ln in enumerate(first) if ln.startswith("Operators by GPU time")), None)
    if i is None or not first[i + 1].strip().startswith("aten::"):
        err.append("no top operators in the first 40 lines")
    if not has("Operators by host time"):
        err.append("no operators by host time in the first 40 lines")
end = next((k for k, ln in enumerate(lines) if ln.startswith("(the full tables follow")), len(lines))
if end >= 40:
    err.append("the first screen has %d lines (at most 40)" % (end + 1))
wide = [ln for ln in lines[:end + 1] if len(ln) > 100]
if wide:
    err.append("first screen wider than 100 columns: %r" % wide[0])

# the kernel table: from its header to the blank line after it; the name is the first 57 columns
k0 = next((k for k, ln in enumerate(lines) if ln.startswith("Kernel ") and "Count" in ln), None)
if k0 is None:
    err.append("no kernel table")
else:
    names = []
    for ln in lines[k0 + 1:]:
        if not ln.strip():
            break
        names.append(ln[:57].rstrip())
    share = len(set(names)) / len(names)
    print("kernel table: %d rows, %d distinct names (%.0f %%)" % (len(names), len(set(names)),
                                                                 100 * share))
    if share < 0.9:
        err.append("kernel table: %.0f %% of the names distinct: %r" % (100 * share, sorted(names)))
if torch:
    m0 = next((k for k, ln in enumerate(lines) if ln.startswith("Modules (")), None)
    if m0 is None:
        err.append("no module table")
    else:
        mods = []
        for ln in lines[m0 + 2:]:
            if not ln.strip() or ln.startswith("  ... "):
                break
            mods.append(ln[2:50].rstrip())
        print("module table: %d rows, %d distinct paths" % (len(mods), len(set(mods))))
        if len(set(mods)) != len(mods):
            err.append("module table: paths read alike: %r" % mods)
for e in err:
    print("FAIL:", e)
sys.exit(1 if err else 0)
