"""shares_check.py FOLDED NAME=PERCENT... — the shares of the named functions in a folded
flame graph file ('frame;frame;... WEIGHT' lines): a stack's weight goes to the one named
function among its frames (a frame is the name itself or the name followed by a non-name
character: "f (file.py:3)", "f+0x12"); shares are of the named functions' sum. Prints them;
exit 1 when one is more than TOL (default 3) points off its PERCENT."""
import os
import re
import sys

tol = float(os.environ.get("TOL", "3"))
want = dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in sys.argv[2:])
got = dict.fromkeys(want, 0.0)
pats = {n: re.compile(r"^(?:.*[^A-Za-z0-9_.])?" + re.escape(n) + r"(?:$|[^A-Za-z0-9_])") for n in want}
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    stack, _, w = line.rpartition(" ")
    try:
        w = float(w)
    except ValueError:
        continue
    hit = {n for n in want for fr in stack.split(";") if pats[n].match(fr)}
    if len(hit) == 1:
        got[hit.pop()] += w
total = sum(got.values())
if total <= 0:
    print("shares_check: none of the functions in the folded stacks", file=sys.stderr)
    sys.exit(1)
bad = 0
for n, p in want.items():
    share = 100 * got[n] / total
    ok = abs(share - p) <= tol
    bad |= not ok
    print(f"{n}: {share:.1f} % (program: {p:.0f} %){'' if ok else '  OFF'}")
sys.exit(1 if bad else 0)
