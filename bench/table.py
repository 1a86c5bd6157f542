#!/usr/bin/env python3
"""bench/table.py RAW — prints the overhead table of `make bench` from the raw figures that
bench/overhead-bench collects (one line of key=value pairs per run; "meta" lines carry the
settings).

Per case and variant: the per-operation figure (median of the repetitions and its range), the
nanoseconds added per intercepted call, the ratio to bare, the added time as a fraction of
uftrace's, CPU time added per call (all threads: dlhook's writer thread included), trace bytes
per call, peak RSS added, dropped records. Then the long run, the rate-limited run and the
overhead targets, each met or missed."""
import sys

TARGET_NS_OFF = 30.0
TARGET_NS_NATIVE = 300.0
TARGET_BYTES = 4.0
TARGET_MEM_MIB = 64.0

CASES = [
    ("tight-real", "(a) tight loop of cudaGetDevice, real libcudart (no GPU: returns at once)"),
    ("tight-sim", "(a) tight loop of cudaGetDevice, simulated CUDA stack (CUPTI callbacks too)"),
    ("launch", "(b) launch loop, simulator: 2 <<<>>> launches, cudaMemcpyAsync, cublasSgemm"),
    ("train", "(c) build/examples/train, simulator"),
]
LABEL = {
    "bare": "bare",
    "none": "dlhook stacks=none",
    "native": "dlhook stacks=native",
    "mixed": "dlhook stacks=mixed",
    "uftrace": "uftrace record",
}
DLHOOK_VARIANTS = ("none", "native", "mixed")


def parse(path):
    """Runs and meta settings. A run's line holds calls= twice when the program printed its
    own count (dlhook's first, then the tight loop's: prog_calls), and wall_ns= twice (runstat's
    first, then the program's: prog_wall_ns)."""
    runs, meta = [], {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "meta":
                for q in parts[1:]:
                    if "=" in q:
                        k, v = q.split("=", 1)
                        meta[k] = v
                continue
            kv = {}
            for q in parts:
                if "=" not in q:
                    continue
                k, v = q.split("=", 1)
                if k in kv and k in ("calls", "wall_ns"):
                    kv["prog_" + k] = v
                else:
                    kv[k] = v
            runs.append(kv)
    return runs, meta


def num(d, k):
    try:
        return float(d.get(k, ""))
    except ValueError:
        return None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def fmt(x, nd=1):
    if x is None:
        return "-"
    if abs(x) >= 10000:
        return "%.0f" % x
    if abs(x) >= 1000:
        return "%.*f" % (min(nd, 0), x)
    return "%.*f" % (nd, x)


def ops_of(run, case):
    """Units of work of one run: calls (tight loops), iterations (launch loop), 1 (train)."""
    if case.startswith("train"):
        return 1.0
    if case == "launch":
        return num(run, "all_iters")
    return num(run, "prog_calls")


def per_op(run, case):
    if case.startswith("train"):
        return num(run, "wall_ns")
    return num(run, "metric")


def cpu_ns(run):
    u, s = num(run, "user_us"), num(run, "sys_us")
    return None if u is None or s is None else (u + s) * 1e3


class Var:
    """Medians of one variant of one case."""

    def __init__(self, runs, case):
        self.runs = runs
        self.op = [per_op(r, case) for r in runs]
        ops = [ops_of(r, case) for r in runs]
        self.cpu_op = [cpu_ns(r) / o if cpu_ns(r) is not None and o else None
                       for r, o in zip(runs, ops)]
        # intercepted calls per op: recorded + dropped (a dropped call was intercepted too)
        self.cpo = median([(num(r, "calls") + (num(r, "dropped") or 0)) / o
                           if num(r, "calls") and o else None for r, o in zip(runs, ops)])
        self.ops = median(ops)
        self.calls = median([num(r, "calls") for r in runs])
        self.bytes_op = [num(r, "bytes") / o if num(r, "bytes") and o else None
                         for r, o in zip(runs, ops)]
        self.rss = median([num(r, "maxrss_kb") for r in runs])
        drops = [num(r, "dropped") for r in runs]
        self.drop = max((d for d in drops if d is not None), default=None)
        self.failed = sum(1 for r in runs if r.get("status", "0") != "0")
        modes = [r.get("mode") for r in runs if r.get("mode")]
        self.mode = modes[0] if modes else None

    def m(self, attr):
        return median(getattr(self, attr))

    def rng(self, scale):
        xs = [x for x in self.op if x is not None]
        return "(%s..%s)" % (fmt(min(xs) * scale), fmt(max(xs) * scale)) if xs else ""


def variants(runs, case):
    names = []
    for r in runs:
        if r.get("case") == case and r["variant"] not in names:
            names.append(r["variant"])
    return {v: Var([r for r in runs if r.get("case") == case and r["variant"] == v], case)
            for v in names}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: table.py RAW")
    runs, meta = parse(sys.argv[1])
    out = []
    p = out.append
    p("")
    p("Overhead, median of %s repetitions (variants alternate; range of the per-op figure in"
      " brackets)" % meta.get("REPS", "?"))
    p("  per-op   the loops' own timing (median of 1024 or 256 chunks: a chunk in which the"
      " process was descheduled does not count;")
    p("           the tight loops sleep %s us after every 16th chunk so that the writer keeps up"
      " and every call is recorded);" % meta.get("PAUSE_US", "?"))
    p("           launch loop: host issue time per iteration (time waiting in"
      " cudaStreamSynchronize excluded); train: wall ms")
    p("  added    ns added per intercepted call: (per-op - bare per-op) / calls per op (train:"
      " between a 1-step and the full run)")
    p("  x bare   per-op ratio to bare;   /uftrace  dlhook's added time as a fraction of"
      " uftrace's (uftrace = 1)")
    p("  CPU+     user+sys ns added per call, all threads (dlhook's writer thread included);"
      "  B/call  trace bytes per call")
    p("  RSS+     peak RSS over bare, MiB (uftrace: its largest process);  dropped  max of dlhook"
      " stats --json 'dropped'")
    p("")
    hdr = ("  %-26s %9s %-19s %9s %8s %8s %8s %7s %8s %8s"
           % ("variant", "per-op", "(range)", "added ns", "x bare", "/uftrace", "CPU+ ns", "B/call",
              "RSS+ MiB", "dropped"))
    figures = {}
    for case, title in CASES:
        vs = variants(runs, case)
        if not vs:
            continue
        bare = vs.get("bare")
        ref = next((vs[v] for v in DLHOOK_VARIANTS if v in vs and vs[v].cpo), None)
        cpo = ref.cpo if ref else None
        scale = 1e-6 if case == "train" else 1.0
        if case == "train":
            v1 = variants(runs, "train-1")
            r1 = next((v1[v] for v in DLHOOK_VARIANTS if v in v1 and v1[v].calls), None)
            dcalls = ref.calls - r1.calls if ref and r1 and ref.calls and r1.calls else None
            sub = ("--steps %s: %s calls recorded per run (%s in a 1-step run); per-op = wall ms"
                   % (meta.get("STEPS", "?"), fmt(ref.calls if ref else None, 0),
                      fmt(r1.calls if r1 else None, 0)))
        elif case == "launch":
            sub = ("%s calls recorded per iteration, %s iterations per run; per-op = ns of issue"
                   " time per iteration" % (fmt(cpo), fmt(ref.ops if ref else None, 0)))
        else:
            nb = bare.ops if bare else None
            ns_ = next((vs[v].ops for v in ("native", "mixed") if v in vs), None)
            sub = ("%s calls per run (stacks: %s), from %s stack frames; per-op = ns per call"
                   % (fmt(nb, 0), fmt(ns_, 0), meta.get("DEPTH", "?")))
        p(title)
        p("  " + sub)
        p(hdr)
        p("  " + "-" * (len(hdr) - 2))

        def added_of(v):
            x = vs[v]
            if case == "train":
                if not (bare and dcalls and v in v1 and "bare" in v1):
                    return None, None
                try:
                    t = ((x.m("op") - v1[v].m("op")) - (bare.m("op") - v1["bare"].m("op"))) / dcalls
                    c = ((x.m("cpu_op") - v1[v].m("cpu_op")) -
                         (bare.m("cpu_op") - v1["bare"].m("cpu_op"))) / dcalls
                except TypeError:
                    return None, None
                return t, c
            if not bare or not cpo or x.m("op") is None or bare.m("op") is None:
                return None, None
            t = (x.m("op") - bare.m("op")) / cpo
            c = None
            if x.m("cpu_op") is not None and bare.m("cpu_op") is not None:
                c = (x.m("cpu_op") - bare.m("cpu_op")) / cpo
            return t, c

        added = {v: added_of(v) for v in vs}
        uf = added.get("uftrace", (None, None))[0]
        for v, x in vs.items():
            a, c = added[v]
            ratio = x.m("op") / bare.m("op") if bare and x.m("op") and bare.m("op") else None
            vs_uf = a / uf if a is not None and uf and v in DLHOOK_VARIANTS else None
            cpo_v = x.cpo if v in DLHOOK_VARIANTS and x.cpo else cpo
            bpc = x.m("bytes_op") / cpo_v if x.m("bytes_op") and cpo_v else None
            rss = (x.rss - bare.rss) / 1024 if bare and x.rss and bare.rss else None
            label = LABEL.get(v, v)
            if x.mode and v in DLHOOK_VARIANTS and x.mode != v:
                label += " (=%s)" % x.mode
            if x.failed:
                label += " %d FAILED" % x.failed
            isb = v == "bare"
            p("  %-26s %9s %-19s %9s %8s %8s %8s %7s %8s %8s"
              % (label, fmt(x.m("op") * scale if x.m("op") is not None else None),
                 x.rng(scale), "" if isb else fmt(a), fmt(ratio, 2),
                 "" if v not in DLHOOK_VARIANTS else fmt(vs_uf, 2), "" if isb else fmt(c),
                 "" if isb else fmt(bpc, 2), "" if isb else fmt(rss),
                 "" if v not in DLHOOK_VARIANTS else fmt(x.drop, 0)))
            figures[(case, v)] = dict(added=a, bpc=bpc, rss=rss, drop=x.drop, mode=x.mode)
        if case == "train" and "bare" in v1:
            st = ["%s %s ms" % (v if v != "uftrace" else "uftrace", fmt(v1[v].m("op") / 1e6 -
                                                                         v1["bare"].m("op") / 1e6))
                  for v in v1 if v != "bare" and v1[v].m("op") is not None]
            p("  start-up + exit over bare (1-step run): " + ", ".join(st))
            xs = sorted(y for y in bare.op if y is not None)
            if dcalls and len(xs) >= 2:
                # half the bare runs' range, per call: added figures smaller than this are noise
                p("  run-to-run noise: +-%s ns per call (half the range of the bare runs / calls):"
                  " per-call figures below it are noise" % fmt((xs[-1] - xs[0]) / 2 / dcalls))
        if case.startswith("tight") and any(vs[v].drop for v in vs if v in DLHOOK_VARIANTS):
            p("  (dropped: the writer did not get the CPU to keep up in the pauses; see the"
              " rate-limited run)")
        p("")

    # ---- the long run and the rate-limited run
    def runs_of(case, v):
        return [r for r in runs if r.get("case") == case and r.get("variant") == v]

    mb, mn = runs_of("mem-long", "bare"), runs_of("mem-long", "none")
    if mb and mn:
        rb = median([num(r, "maxrss_kb") for r in mb])
        rn = median([num(r, "maxrss_kb") for r in mn])
        calls = median([num(r, "prog_calls") for r in mn])
        rec = median([num(r, "calls") for r in mn])
        drop = max((num(r, "dropped") or 0) for r in mn)
        short = figures.get(("tight-real", "none"), {}).get("rss")
        figures["mem"] = dict(rss=(rn - rb) / 1024 if rn and rb else None, calls=calls)
        p("Long run: tight loop, %s calls flat out, stacks off: peak RSS %s MiB bare, %s MiB"
          " traced: +%s MiB (+%s MiB in the %s-call runs above);"
          % (fmt(calls, 0), fmt(rb / 1024), fmt(rn / 1024), fmt(figures["mem"]["rss"]), fmt(short),
             meta.get("N", "?")))
        p("  %s recorded, %s dropped (the ring is full while the writer catches up:"
          " records are dropped, memory does not grow)" % (fmt(rec, 0), fmt(drop, 0)))
        p("")
    rb_, rn_ = runs_of("rate", "bare"), runs_of("rate", "none")
    if rn_:
        p("Rate-limited run: tight loop paced to %s calls/s from one thread (busy-wait on the"
          " clock, no catch-up after a preemption)" % meta.get("RATE", "?"))
        p("  %-20s %10s %9s %8s %11s %6s %6s %6s %6s %7s %8s %9s"
          % ("variant", "calls", "paced/s", "ns/call", "max call ns", ">10us", ">100us", ">1ms",
             "nvcsw", "nivcsw", "dropped", "writer ns"))

        def writer_ns(r):
            o, c = num(r, "other_cpu_ns"), num(r, "calls")
            return o / c if o and c else None

        for v, rr in (("bare", rb_), ("none", rn_)):
            for r in rr:
                p("  %-20s %10s %9s %8s %11s %6s %6s %6s %6s %7s %8s %9s"
                  % (LABEL[v], fmt(num(r, "prog_calls"), 0), fmt(num(r, "paced_rate"), 0),
                     fmt(num(r, "metric")), fmt(num(r, "max_call_ns"), 0),
                     fmt(num(r, "calls_over_10us"), 0), fmt(num(r, "calls_over_100us"), 0),
                     fmt(num(r, "calls_over_1ms"), 0), fmt(num(r, "nvcsw"), 0),
                     fmt(num(r, "nivcsw"), 0), "" if v == "bare" else fmt(num(r, "dropped"), 0),
                     "" if v == "bare" else fmt(writer_ns(r))))
        p("  (ns/call includes the pacing's clock reads; nvcsw: the calling thread blocked"
          " (voluntary context switches) during the loop;")
        p("   nivcsw: it was preempted; writer ns: CPU time of dlhook's writer thread per recorded"
          " call, from /proc/self/task/*/schedstat)")
        wn = median([writer_ns(r) for r in rn_])
        if wn:
            p("  the writer thread needs %s ns of CPU per call: %.0f%% of one core at %s calls/s"
              " (it keeps up when it gets that share)" % (fmt(wn), wn * float(meta.get("RATE", 0))
                                                           / 1e7, meta.get("RATE", "?")))
        figures["rate"] = dict(
            writer_ns=wn,
            nivcsw=median([num(r, "nivcsw") for r in rn_]),
            drop=max((num(r, "dropped") or 0) for r in rn_),
            rate=median([num(r, "paced_rate") for r in rn_]),
            nvcsw=max((num(r, "nvcsw") or 0) for r in rn_),
            bare_nvcsw=max((num(r, "nvcsw") or 0) for r in rb_) if rb_ else 0,
            max_call=max((num(r, "max_call_ns") or 0) for r in rn_),
            bare_max=max((num(r, "max_call_ns") or 0) for r in rb_) if rb_ else None)
        p("")

    # ---- targets
    p("Targets:")

    def target(name, value, ok, note=""):
        p("  %-50s %-32s %s%s" % (name, value, {True: "met", False: "MISSED", None: "n/a"}[ok],
                                  ("  " + note) if note else ""))

    def ok_le(x, lim):
        return None if x is None else x <= lim

    a = figures.get(("tight-real", "none"), {}).get("added")
    target("<= %g ns added per call, stacks off" % TARGET_NS_OFF, "%s ns (real libcudart)" % fmt(a),
           ok_le(a, TARGET_NS_OFF))
    f = figures.get(("tight-real", "native"), {})
    a = f.get("added")
    target("<= %g ns added per call, native stacks, depth %s" % (TARGET_NS_NATIVE, meta.get("DEPTH")),
           "%s ns (real libcudart)" % fmt(a), ok_le(a, TARGET_NS_NATIVE),
           "" if f.get("mode") in (None, "native") else "(effective mode: %s)" % f.get("mode"))
    bpcs = [(c, figures.get((c, "none"), {}).get("bpc")) for c in ("tight-real", "tight-sim")]
    bpcs = [(c, b) for c, b in bpcs if b is not None]
    target("<= %g bytes per call on disk, repetitive calls" % TARGET_BYTES,
           ", ".join("%s B" % fmt(b, 2) for c, b in bpcs) + " (tight loops)" if bpcs else "-",
           all(b <= TARGET_BYTES for c, b in bpcs) if bpcs else None)
    m = figures.get("mem")
    if m:
        target("extra memory <= %g MiB however long the run" % TARGET_MEM_MIB,
               "+%s MiB at %s calls" % (fmt(m["rss"]), fmt(m["calls"], 0)),
               ok_le(m["rss"], TARGET_MEM_MIB))
    rt = figures.get("rate")
    if rt:
        target("no drops at %s calls/s from one thread" % meta.get("RATE", "?"),
               "%s dropped (paced at %s/s)" % (fmt(rt["drop"], 0), fmt(rt["rate"], 0)),
               rt["drop"] == 0,
               "writer: %s ns CPU per call, %s%% of a core" % (
                   fmt(rt["writer_ns"]), fmt(rt["writer_ns"] * float(meta.get("RATE", 0)) / 1e7, 0))
               if rt["writer_ns"] else "")
        target("the writer never stalls the program",
               "%s blocking switches (bare %s)" % (fmt(rt["nvcsw"], 0), fmt(rt["bare_nvcsw"], 0)),
               rt["nvcsw"] <= rt["bare_nvcsw"],
               "slowest call %s us (bare %s us; preemption)" % (
                   fmt(rt["max_call"] / 1e3), fmt((rt["bare_max"] or 0) / 1e3)))
    if "seconds" in meta:
        p("(%s s for these runs)" % meta["seconds"])
    print("\n".join(out))


if __name__ == "__main__":
    main()
