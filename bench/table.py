#!/usr/bin/env python3
"""bench/table.py RAW — prints the overhead table of `make bench` from the raw figures that
bench/overhead-bench collects (one line of key=value pairs per run; "meta" lines carry the
settings).

Per case and variant: the per-operation figure (median of the repetitions and its range), the
nanoseconds added per intercepted call, the ratio to bare, the added time as a fraction of
uftrace's, CPU time added per call (all threads: dlhook's writer thread included), trace bytes
per call, peak RSS added, dropped records. Then the poll case (calls of each thread, program
against trace), the long runs, the rate-limited run and the overhead targets, each met or
missed. Figures that a run did not give (a dlhook without folding: no "folded"; a trace without
memory figures) print as "-"."""
import sys

TARGET_NS_OFF = 15.0        # wall ns added per call, tight loop, stacks off
TARGET_CPU_OFF = 25.0       # CPU ns added per call (program + writer), tight loop, stacks off
TARGET_NS_NATIVE = 300.0
TARGET_BYTES = 4.0
TARGET_MEM_MIB = 64.0       # peak RSS added, the long runs (stacks off, native stacks)
ACCEPT_LONG_N = 100000000   # the long run of the acceptance figure (LONG_N=100000000)

CASES = [
    ("tight-real", "(a) tight loop of cudaGetDevice, real libcudart (no GPU: returns at once)"),
    ("tight-vary", "(a) the same, consecutive calls differ (tight_loop --vary: the argument"
                   " alternates; nothing folds)"),
    ("tight-sim", "(a) tight loop of cudaGetDevice, simulated CUDA stack (CUPTI callbacks too)"),
    ("launch", "(b) launch loop, simulator: 2 <<<>>> launches, cudaMemcpyAsync, cublasSgemm"),
    ("train", "(c) build/examples/train, simulator"),
]
LABEL = {
    "bare": "bare",
    "none": "dlhook stacks=none",
    "nofold": "dlhook stacks=none, folding off",
    "flight": "dlhook stacks=none, flight",
    "native": "dlhook stacks=native",
    "mixed": "dlhook stacks=mixed",
    "uftrace": "uftrace record",
}
DLHOOK_VARIANTS = ("none", "nofold", "flight", "native", "mixed")
# the stacks mode of a variant (the trace's stacks_mode should say the same)
STACKS_OF = {"nofold": "none", "flight": "none"}
W = 32  # width of the variant column


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


def loop_cpu(run):
    """CPU ns per call of the timed loop alone (tight loops): the calling thread's and the
    other threads' (the writer's) CPU during the loop, per timed call; no start-up, no exit (a
    thread that ended before the loop's end does not count: the writer lives to the end)."""
    sc, oc, tc = num(run, "self_cpu_ns"), num(run, "loop_other_cpu_ns"), num(run, "timed_calls")
    if sc is None or oc is None or not tc:
        return None
    return (sc + oc) / tc


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
        self.loop_cpu = [loop_cpu(r) for r in runs]
        # events on disk per call (folding: fewer than 1), calls folded per call
        self.rec_call = median([num(r, "records") / num(r, "calls")
                                if num(r, "records") is not None and num(r, "calls") else None
                                for r in runs])
        self.fold_call = median([num(r, "folded") / num(r, "calls")
                                 if num(r, "folded") is not None and num(r, "calls") else None
                                 for r in runs])
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
    p("  CPU+     user+sys ns added per call, whole process, all threads (dlhook's writer thread,"
      " start-up and exit included);")
    p("  loop+    the same for the timed loop alone (tight loops: the calling thread's CPU in the"
      " loop + the other threads' CPU, per call);")
    p("  CPU/uft  CPU+ as a fraction of uftrace's;  B/call  trace bytes per call")
    p("  RSS+     peak RSS over bare, MiB (uftrace: its largest process);  dropped  max of dlhook"
      " stats --json 'dropped'")
    p("  stacks=none folds consecutive identical calls of a thread into one record (the default);"
      " 'folding off' is DLHOOK_FOLD=0")
    p("")
    row = "  %-*s %9s %-19s %9s %7s %8s %8s %7s %7s %7s %8s %8s"
    hdr = (row % (W, "variant", "per-op", "(range)", "added ns", "x bare", "/uftrace", "CPU+ ns",
                  "loop+", "CPU/uft", "B/call", "RSS+ MiB", "dropped"))
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

        def diff(x, attr):
            a, b = x.m(attr), bare.m(attr) if bare else None
            return None if a is None or b is None or not cpo else (a - b) / cpo

        def added_of(v):
            x = vs[v]
            if case == "train":
                if not (bare and dcalls and v in v1 and "bare" in v1):
                    return None, None, None
                try:
                    t = ((x.m("op") - v1[v].m("op")) - (bare.m("op") - v1["bare"].m("op"))) / dcalls
                    c = ((x.m("cpu_op") - v1[v].m("cpu_op")) -
                         (bare.m("cpu_op") - v1["bare"].m("cpu_op"))) / dcalls
                except TypeError:
                    return None, None, None
                return t, c, None
            if not bare or not cpo or x.m("op") is None or bare.m("op") is None:
                return None, None, None
            t = (x.m("op") - bare.m("op")) / cpo
            # loop+: per call already (not per op)
            lc = None
            if x.m("loop_cpu") is not None and bare.m("loop_cpu") is not None:
                lc = x.m("loop_cpu") - bare.m("loop_cpu")
            return t, diff(x, "cpu_op"), lc

        added = {v: added_of(v) for v in vs}
        uf, ufc = added.get("uftrace", (None, None, None))[:2]
        for v, x in vs.items():
            a, c, lc = added[v]
            ratio = x.m("op") / bare.m("op") if bare and x.m("op") and bare.m("op") else None
            dl = v in DLHOOK_VARIANTS
            vs_uf = a / uf if a is not None and uf and dl else None
            c_uf = c / ufc if c is not None and ufc and dl else None
            cpo_v = x.cpo if dl and x.cpo else cpo
            bpc = x.m("bytes_op") / cpo_v if x.m("bytes_op") and cpo_v else None
            rss = (x.rss - bare.rss) / 1024 if bare and x.rss and bare.rss else None
            label = LABEL.get(v, v)
            if x.mode and dl and x.mode != STACKS_OF.get(v, v):
                label += " (=%s)" % x.mode
            if x.failed:
                label += " %d FAILED" % x.failed
            isb = v == "bare"
            p(row % (W, label, fmt(x.m("op") * scale if x.m("op") is not None else None),
                     x.rng(scale), "" if isb else fmt(a), fmt(ratio, 2),
                     "" if not dl else fmt(vs_uf, 2), "" if isb else fmt(c),
                     "" if isb or lc is None else fmt(lc), "" if not dl else fmt(c_uf, 2),
                     "" if isb else fmt(bpc, 2), "" if isb else fmt(rss),
                     "" if not dl else fmt(x.drop, 0)))
            figures[(case, v)] = dict(added=a, cpu=c, loop_cpu=lc, vs_uf=vs_uf, cpu_uf=c_uf, ratio=ratio,
                                      bpc=bpc, rss=rss, drop=x.drop, mode=x.mode,
                                      rec_call=x.rec_call, fold_call=x.fold_call)
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
        recs = ["%s %s%s" % (LABEL.get(v, v).replace("dlhook ", ""), fmt(vs[v].rec_call, 3),
                             "" if vs[v].fold_call is None
                             else " (folded %s)" % fmt(vs[v].fold_call, 3))
                for v in vs if v in DLHOOK_VARIANTS and vs[v].rec_call is not None]
        if recs and case.startswith("tight"):
            p("  records on disk per call (folded: calls folded into an earlier one, per call): "
              + "; ".join(recs))
        if case.startswith("tight") and any(vs[v].drop for v in vs if v in DLHOOK_VARIANTS):
            p("  (dropped: the writer did not get the CPU to keep up in the pauses; see the"
              " rate-limited run)")
        p("")

    def runs_of(case, v):
        return [r for r in runs if r.get("case") == case and r.get("variant") == v]

    # ---- the poll case
    pb, pn = runs_of("poll", "bare"), runs_of("poll", "none")
    if pn:
        p("Poll: %s worker threads x %s calls of cudaGetDevice (consecutive calls differ), flat out"
          " in 64 chunks with a %s us pause after each," % (
              meta.get("POLL_THREADS", "?"), meta.get("POLL_CALLS", "?"), meta.get("PAUSE_US", "?")))
        p("  and a thread calling cudaStreamQuery(0) flat out until they are done (identical"
          " calls); dlhook stacks=none; %d runs" % len(pn))
        wb = median([num(r, "metric") for r in pb])
        wn = median([num(r, "metric") for r in pn])
        p("  workers' ns per call: bare %s, dlhook %s (+%s)" % (
            fmt(wb), fmt(wn), fmt(wn - wb if wn is not None and wb is not None else None)))
        verdicts = []
        for r in pn:
            rows = []
            for e in (r.get("pt") or "").split(","):
                f = e.split(":")
                if len(f) == 5:
                    rows.append(f)
            ok, n = num(r, "thr_ok"), num(r, "thr_n")
            extra, drop = num(r, "thr_extra") or 0, num(r, "dropped")
            good = (drop == 0 and n and ok == n and extra == 0 and r.get("status", "0") == "0")
            verdicts.append(good)
            p("  run %s: %s of %s threads with exactly their calls in the trace (per-thread counts"
              " from %s), %s dropped, %s calls (%s folded), %s records, %s calls on other"
              " threads%s" % (
                  r.get("rep", "?"), fmt(ok, 0), fmt(n, 0), r.get("thr_src") or "-", fmt(drop, 0),
                  fmt(num(r, "calls"), 0), fmt(num(r, "folded"), 0), fmt(num(r, "records"), 0),
                  fmt(extra, 0), "" if r.get("status", "0") == "0" else ", FAILED"))
            if rows and (r is pn[0] or not good):
                p("    %-6s %-7s %8s %12s %12s" % ("thread", "role", "tid", "program", "trace"))
                for k, role, tid, prog, tr in rows:
                    p("    %-6s %-7s %8s %12s %12s%s" % (k, role, tid, prog, tr,
                                                         "" if prog == tr else "  differs"))
        figures["poll"] = dict(ok=all(verdicts), runs=len(pn), good=sum(verdicts),
                               drop=max((num(r, "dropped") or 0) for r in pn))
        p("")

    # ---- the long runs
    def long_run(case, v, what):
        mb, mn = runs_of(case, "bare"), runs_of(case, v)
        if not (mb and mn):
            return None
        rb = median([num(r, "maxrss_kb") for r in mb])
        rn = median([num(r, "maxrss_kb") for r in mn])
        calls = median([num(r, "prog_calls") for r in mn])
        rec = median([num(r, "calls") for r in mn])
        drop = max((num(r, "dropped") or 0) for r in mn)
        peak = max((num(r, "mem_peak") or 0) for r in mn) or None
        budget = median([num(r, "mem_budget") for r in mn])
        f = dict(rss=(rn - rb) / 1024 if rn and rb else None, calls=calls, peak=peak,
                 budget=budget)
        p("  %s: %s calls: peak RSS %s MiB bare, %s MiB traced: +%s MiB; dlhook's own peak"
          " (trace): %s MiB of a %s MiB budget;" % (
              what, fmt(calls, 0), fmt(rb / 1024 if rb else None), fmt(rn / 1024 if rn else None),
              fmt(f["rss"]), fmt(peak / 1048576 if peak else None),
              fmt(budget / 1048576 if budget else None)))
        p("    %s calls recorded, %s dropped" % (fmt(rec, 0), fmt(drop, 0)))
        return f

    if runs_of("mem-long", "none") or runs_of("mem-stacks", "native"):
        p("Long runs: tight loop flat out, consecutive calls differ (nothing folds: every call is"
          " a record; a full ring drops records, memory does not grow)")
        m = long_run("mem-long", "none", "stacks off")
        if m:
            figures["mem"] = m
            short = figures.get(("tight-real", "none"), {}).get("rss")
            p("    (+%s MiB in the %s-call tight-loop runs above)" % (fmt(short), meta.get("N", "?")))
        m = long_run("mem-stacks", "native", "native stacks, depth %s" % meta.get("DEPTH", "?"))
        if m:
            figures["mem-stacks"] = m
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

    # ---- targets, from the figures of this run
    p("Targets (this run's figures):")

    def target(name, value, ok, note=""):
        p("  %-68s %-34s %s%s" % (name, value, {True: "met", False: "MISSED", None: "n/a"}[ok],
                                  ("  " + note) if note else ""))

    def ok_le(x, lim):
        return None if x is None else x <= lim

    tight = (("tight-real", "none", "calls fold"), ("tight-real", "nofold", "folding off"),
             ("tight-vary", "none", "calls differ, folding on"))
    for case, v, what in tight:
        f = figures.get((case, v))
        if f is None:
            continue
        target("<= +%g ns per call, wall, stacks off, %s" % (TARGET_NS_OFF, what),
               "%s ns (%s)" % (fmt(f["added"]), case), ok_le(f["added"], TARGET_NS_OFF),
               "x bare %s%s" % (fmt(f["ratio"], 2), "" if f["vs_uf"] is None else
                                ", %s of uftrace's" % fmt(f["vs_uf"], 2)))
    for case, v, what in tight:
        f = figures.get((case, v))
        if f is None:
            continue
        target("<= +%g ns CPU per call (program + writer), %s" % (TARGET_CPU_OFF, what),
               "%s ns (%s)" % (fmt(f["cpu"]), case), ok_le(f["cpu"], TARGET_CPU_OFF),
               "loop alone %s ns%s" % (fmt(f["loop_cpu"]), "" if f["cpu_uf"] is None else
                                      ", %s of uftrace's" % fmt(f["cpu_uf"], 2)))
    for case in ("tight-real", "tight-vary"):
        f, c = figures.get((case, "flight")), figures.get((case, "none"))
        if f is None or c is None or f["added"] is None or c["added"] is None:
            continue
        target("flight recorder: per-call cost as continuous mode (+1 ns or 10 %)",
               "%s ns vs %s ns (%s)" % (fmt(f["added"]), fmt(c["added"]), case),
               f["added"] <= max(c["added"] * 1.1, c["added"] + 1.0),
               "CPU %s vs %s ns" % (fmt(f["cpu"]), fmt(c["cpu"])))
    po = figures.get("poll")
    if po:
        target("%s threads flat out + 1 polling: 0 dropped, exact calls" % meta.get(
            "POLL_THREADS", "?"), "%s of %s runs exact, %s dropped" % (
                po["good"], po["runs"], fmt(po["drop"], 0)), po["ok"])
    f = figures.get(("tight-real", "native"), {})
    a = f.get("added")
    if f:
        target("<= %g ns added per call, native stacks, depth %s" % (TARGET_NS_NATIVE,
                                                                     meta.get("DEPTH")),
               "%s ns (real libcudart)" % fmt(a), ok_le(a, TARGET_NS_NATIVE),
               "" if f.get("mode") in (None, "native") else "(effective mode: %s)" % f.get("mode"))
    for v, what in (("nofold", "folding off"), ("none", "folding on")):
        bpcs = [(c, figures.get((c, v), {}).get("bpc")) for c in ("tight-real", "tight-sim")]
        bpcs = [(c, b) for c, b in bpcs if b is not None]
        if bpcs:
            target("<= %g bytes per call on disk, repetitive calls, %s" % (TARGET_BYTES, what),
                   ", ".join("%s B" % fmt(b, 2) for c, b in bpcs) + " (tight loops)",
                   all(b <= TARGET_BYTES for c, b in bpcs))
    for key, what in (("mem", "stacks off"), ("mem-stacks", "native stacks")):
        m = figures.get(key)
        if not m:
            continue
        note = ""
        if m["peak"]:
            note = "dlhook's own peak %s MiB" % fmt(m["peak"] / 1048576)
        if key == "mem-stacks" and (m["calls"] or 0) < ACCEPT_LONG_N:
            note += ("; " if note else "") + "acceptance: LONG_N=%d" % ACCEPT_LONG_N
        target("extra memory <= %g MiB however long the run, %s" % (TARGET_MEM_MIB, what),
               "+%s MiB at %s calls" % (fmt(m["rss"]), fmt(m["calls"], 0)),
               ok_le(m["rss"], TARGET_MEM_MIB), note)
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
