"""Compares the operator attribution of two Kineto traces of the same program: torch.profiler's
own (REF) and dlhook's export (OURS), read with the same code.

  op_agreement.py REF.json[.gz] OURS.json[.gz] [--min 0.98] [--name NAME]

For every kernel: its correlation id -> the runtime call that launched it -> that call's
"External id" -> the cpu_op with that id; when that op is not an aten op (an autograd node),
the innermost aten cpu_op of the thread that contains the launch. For each kernel name, the
share of its launches attributed to each aten op is compared between the two traces; a kernel
agrees to the extent its shares agree (1 - half the L1 distance of the two distributions), and
the figure is the launch-weighted mean over kernel names (of the reference). Prints the figure
and the disagreeing kernels; exits 1 below --min.
"""
import argparse
import bisect
import collections
import gzip
import json
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)["traceEvents"]


def kernel_ops(events, keep=None, aten_only=True):
    """[(kernel event, its operator or None)] for the kernels of a trace (those keep(kernel)
    accepts, when given): kernel -> correlation -> launching runtime/driver call -> its "External
    id" -> that cpu_op; when that op is not an aten op (aten_only) or is missing, the innermost
    cpu_op (aten op when aten_only) of the launch's thread that contains the launch."""
    ops, launches, kernels = {}, {}, []
    by_tid = collections.defaultdict(list)
    for e in events:
        cat, a = e.get("cat"), e.get("args") or {}
        if e.get("ph") != "X":
            continue
        if cat == "cpu_op":
            if "External id" in a:
                ops[a["External id"]] = e["name"]
            if not aten_only or e["name"].startswith("aten::"):
                by_tid[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e.get("dur", 0), e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in a:
            launches[a["correlation"]] = e
        elif cat == "kernel" and (keep is None or keep(e)):
            kernels.append(e)
    for v in by_tid.values():
        v.sort(key=lambda x: (x[0], -x[1]))
    starts = {k: [x[0] for x in v] for k, v in by_tid.items()}
    out = []
    for k in kernels:
        a = k.get("args") or {}
        op = None
        la = launches.get(a.get("correlation"))
        ext = (la.get("args") or {}).get("External id") if la else a.get("External id")
        cand = ops.get(ext)
        if cand and (cand.startswith("aten::") or not aten_only):
            op = cand
        elif la:
            key = (la["pid"], la["tid"])
            v = by_tid.get(key, [])
            i = bisect.bisect_right(starts.get(key, []), la["ts"])
            best = None
            for s, e, n in v[max(0, i - 2000):i]:
                if s <= la["ts"] and la["ts"] + la.get("dur", 0) <= e and (best is None or e - s <= best[0]):
                    best = (e - s, n)
            op = best[1] if best else None
        out.append((k, op))
    return out


def attribution(events, keep=None):
    """{kernel name: Counter(aten op or "(no aten op)": launches)}"""
    out = collections.defaultdict(collections.Counter)
    for k, op in kernel_ops(events, keep):
        out[k["name"]][op or "(no aten op)"] += 1
    return out


def agreement(ref, ours):
    """(figure 0..1, reference kernels, [(name, ref ops, our ops)] that differ) of two
    attribution() results; figure None when the reference has no kernel."""
    total = sum(sum(c.values()) for c in ref.values())
    if not total:
        return None, 0, []
    agree, bad = 0.0, []
    for name, rc in ref.items():
        n = sum(rc.values())
        oc = ours.get(name, collections.Counter())
        m = sum(oc.values())
        if m:
            ops = set(rc) | set(oc)
            l1 = sum(abs(rc[o] / n - oc[o] / m) for o in ops)
        else:
            l1 = 2.0
        share = 1 - l1 / 2
        agree += n * share
        if share < 0.999:
            bad.append((name, dict(rc), dict(oc)))
    return agree / total, total, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("ours")
    ap.add_argument("--min", type=float, default=0.98)
    ap.add_argument("--name", default="")
    args = ap.parse_args()
    ref, ours = attribution(load(args.ref)), attribution(load(args.ours))
    fig, total, bad = agreement(ref, ours)
    if fig is None:
        print("no kernel in the reference trace", file=sys.stderr)
        return 1
    kn = sum(sum(c.values()) for c in ours.values())
    print(f"{args.name}: kernels torch.profiler {total} ({len(ref)} names), dlhook {kn} "
          f"({len(ours)} names); attribution agreement {100 * fig:.2f} %")
    for name, rc, oc in bad[:20]:
        print(f"  differs: {name[:90]}\n    torch.profiler {rc}\n    dlhook         {oc}")
    return 0 if fig >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
