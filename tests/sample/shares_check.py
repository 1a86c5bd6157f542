"""shares_check.py [--by weight|count] FILE... NAME=PERCENT... — the shares of the named
functions in the profiles FILE (summed over them): a folded flame graph file ('frame;frame;...
WEIGHT' lines, weights only) or a gzipped pprof profile (`dlhook export --format pprof`, a .gz
file: its first value is the count of samples, its second their weight). A stack's weight (or
count, --by count) goes to the one named function among its frames (a frame is the name itself
or the name followed by a non-name character: "f (file.py:3)", "f+0x12"); shares are of the
named functions' sum. Prints them (and for pprof files the number of samples); exit 1 when one
share is more than TOL (default 3) points off its PERCENT."""
import gzip
import os
import re
import sys

from pb import fields, varint

tol = float(os.environ.get("TOL", "3"))
args = sys.argv[1:]
by = "weight"
if args[:1] == ["--by"]:
    by, args = args[1], args[2:]
files = [a for a in args if "=" not in a]
want = dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in args if "=" in kv)
got = dict.fromkeys(want, 0.0)
pats = {n: re.compile(r"^(?:.*[^A-Za-z0-9_.])?" + re.escape(n) + r"(?:$|[^A-Za-z0-9_])") for n in want}
count = 0


def named(frames):
    """the one named function among the frames, or None"""
    hit = {n for n in want for fr in frames if pats[n].match(fr)}
    return hit.pop() if len(hit) == 1 else None



def ints(v):
    """a repeated integer field's value: packed (bytes) or one"""
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof(path):
    """(frames innermost first, count, weight) per sample of a gzipped profile.proto"""
    strs, funcs, locs, samples = [], {}, {}, []
    for f, v in fields(gzip.open(path).read()):
        if f == 6:
            strs.append(v.decode(errors="replace"))
        elif f == 5:
            d = dict(fields(v))
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif f == 4:
            lid, fns = 0, []
            for g, w in fields(v):
                if g == 1:
                    lid = w
                elif g == 4:  # Line: function_id; inlined frames innermost first
                    fns.append(dict(fields(w)).get(1, 0))
            locs[lid] = fns
        elif f == 2:
            ids, vals = [], []
            for g, w in fields(v):
                if g == 1:
                    ids += ints(w)
                elif g == 2:
                    vals += ints(w)
            samples.append((ids, vals))
    for ids, vals in samples:
        frames = [strs[funcs.get(fn, 0)] for lid in ids for fn in locs.get(lid, [])]
        yield frames, vals[0], vals[1] if len(vals) > 1 else vals[0]


for path in files:
    if path.endswith(".gz"):
        for frames, n, w in pprof(path):
            k = named(frames)
            count += n
            if k:
                got[k] += n if by == "count" else w
        continue
    if by == "count":
        sys.exit("shares_check: --by count needs pprof files (folded stacks have weights only)")
    for line in open(path, errors="replace"):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        try:
            w = float(w)
        except ValueError:
            continue
        k = named(stack.split(";"))
        if k:
            got[k] += w
total = sum(got.values())
if total <= 0:
    print("shares_check: none of the functions in the stacks", file=sys.stderr)
    sys.exit(1)
bad = 0
for n, p in want.items():
    share = 100 * got[n] / total
    ok = abs(share - p) <= tol
    bad |= not ok
    print(f"{n}: {share:.1f} % (program: {p:.0f} %){'' if ok else '  OFF'}")
if count:
    print(f"by {by}: {count} samples")
sys.exit(1 if bad else 0)
