#!/usr/bin/env python3
"""bench/trace_figures.py — the figures of one dlhook trace that bench/overhead-bench records,
printed as key=value pairs on one line (empty value: the trace or this dlhook does not say).

  trace_figures.py DLHOOK [--trailer] [--threads PROGRAM_OUTPUT] TRACE...

Always: calls (every call, folded repeats included), dropped, records (events on disk),
folded (calls folded into an earlier one), from `dlhook stats --json`. Keys that this dlhook's
stats do not have are left empty: the script works before and after folding exists.
--trailer: also the trace's own memory figures, mem_peak (bytes) and mem_budget, from stats
  --json when it has them, else from the trailer (`dlhook dump --type trailer`).
--threads OUT: check the calls of each thread against the program's own counts, read from OUT
  (lines "thread=K role=R tid=TID calls=N", bench/poll_threads). The trace's per-thread calls
  come from stats --json when it has them (a list of objects with "tid" and "calls"), else from
  `dlhook dump --type api`, counting each event's calls ("count" when the event stands for
  folded repeats). Prints thr_src (stats|dump), thr_ok (threads whose counts are equal),
  thr_n (threads of the program), thr_extra (calls in the trace on threads the program does
  not list) and pt=K:role:tid:program:trace,... (one entry per thread)."""
import json
import re
import subprocess
import sys

TID = re.compile(r'"tid":(\d+)')
# top-level keys that could carry the calls an event stands for (folded repeats)
COUNT_KEYS = ("count", "calls")
EXTRA_KEYS = ("folded", "repeats")  # calls beyond the first


def stats_json(dlhook, traces):
    try:
        out = subprocess.run([dlhook, "stats", "--json"] + traces, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=False).stdout
        return json.loads(out)
    except (OSError, ValueError):
        return None


def walk(x, path=()):
    """Every (path, key, value) of a JSON value."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield path, k, v
            yield from walk(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, path + (i,))


def per_thread_from_stats(d):
    """{tid: calls} from a list of per-thread objects anywhere in stats --json, or None."""
    if not isinstance(d, dict):
        return None
    for _, k, v in walk(d):
        if not isinstance(v, list) or not v or not all(isinstance(e, dict) for e in v):
            continue
        if not all("tid" in e for e in v):
            continue
        ck = next((c for c in ("calls", "api_calls", "count") if all(c in e for e in v)), None)
        if ck is None:
            continue
        res = {}
        for e in v:
            try:
                res[int(e["tid"])] = res.get(int(e["tid"]), 0) + int(e[ck])
            except (TypeError, ValueError):
                return None
        return res
    return None


def event_calls(ev):
    for k in COUNT_KEYS:
        if isinstance(ev.get(k), int) and ev[k] >= 1:
            return ev[k]
    for k in EXTRA_KEYS:
        if isinstance(ev.get(k), int) and ev[k] >= 0:
            return 1 + ev[k]
    return 1


def per_thread_from_dump(dlhook, traces):
    res = {}
    try:
        p = subprocess.Popen([dlhook, "dump", "--type", "api"] + traces, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1 << 20)
    except OSError:
        return None
    for line in p.stdout:
        if any('"%s"' % k in line for k in COUNT_KEYS + EXTRA_KEYS):
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            tid, n = ev.get("tid"), event_calls(ev)
        else:  # the common case, quickly: one call
            m = TID.search(line)
            tid, n = (int(m.group(1)) if m else None), 1
        if tid is not None:
            res[tid] = res.get(tid, 0) + n
    p.wait()
    return res


def program_threads(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                kv = dict(q.split("=", 1) for q in line.split() if "=" in q)
                if "thread" in kv and "tid" in kv and "calls" in kv:
                    rows.append((kv["thread"], kv.get("role", "?"), int(kv["tid"]), int(kv["calls"])))
    except (OSError, ValueError):
        pass
    return rows


def trailer(dlhook, traces):
    try:
        out = subprocess.run([dlhook, "dump", "--type", "trailer"] + traces,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return {}
    tr = {}
    for line in out.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        for k, v in d.items():
            if isinstance(v, int):
                tr[k] = max(tr.get(k, 0), v) if k.startswith("mem_") else tr.get(k, 0) + v
    return tr


def mem_from_stats(d):
    """(peak, budget) bytes of dlhook's own memory when stats --json states them (the totals:
    of several candidates, the one nearest the top)."""
    if not isinstance(d, dict):
        return None, None
    peak, budget = [], []
    for path, k, v in walk(d):
        if not isinstance(v, (int, float)) or (path and path[0] in ("gpu", "steps")):
            continue
        if not ("mem" in k or any(isinstance(p, str) and "mem" in p for p in path)):
            continue
        if "peak" in k:
            peak.append((len(path), int(v)))
        elif "budget" in k:
            budget.append((len(path), int(v)))
    return (min(peak)[1] if peak else None), (min(budget)[1] if budget else None)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit("usage: trace_figures.py DLHOOK [--trailer] [--threads OUT] TRACE...")
    dlhook, args = args[0], args[1:]
    want_trailer, prog_out = False, None
    while args and args[0].startswith("--"):
        if args[0] == "--trailer":
            want_trailer, args = True, args[1:]
        elif args[0] == "--threads" and len(args) > 1:
            prog_out, args = args[1], args[2:]
        else:
            sys.exit("trace_figures.py: unknown option %s" % args[0])
    traces = args
    d = stats_json(dlhook, traces) if traces else None
    fig = {}
    if isinstance(d, dict):
        for k in ("calls", "dropped", "records", "folded"):
            if isinstance(d.get(k), (int, float)):
                fig[k] = int(d[k])
    if want_trailer and traces:
        peak, budget = mem_from_stats(d)
        if peak is None or budget is None or "folded" not in fig:
            tr = trailer(dlhook, traces)
            peak = peak if peak is not None else tr.get("mem_peak_bytes")
            budget = budget if budget is not None else tr.get("mem_budget_bytes")
            if "folded" not in fig and "folded" in tr:
                fig["folded"] = tr["folded"]
        fig["mem_peak"], fig["mem_budget"] = peak, budget
    if prog_out is not None:
        rows = program_threads(prog_out)
        pt, src = per_thread_from_stats(d), "stats"
        if pt is None and traces:
            pt, src = per_thread_from_dump(dlhook, traces), "dump"
        if pt is None:
            pt = {}
        ok = sum(1 for _, _, tid, n in rows if pt.get(tid) == n)
        known = {tid for _, _, tid, _ in rows}
        fig["thr_src"] = src
        fig["thr_ok"] = ok
        fig["thr_n"] = len(rows)
        fig["thr_extra"] = sum(n for tid, n in pt.items() if tid not in known)
        fig["pt"] = ",".join("%s:%s:%d:%d:%s" % (k, role, tid, n, pt.get(tid, 0))
                             for k, role, tid, n in rows)
    keys = ["calls", "dropped", "records", "folded"]
    if want_trailer:
        keys += ["mem_peak", "mem_budget"]
    if prog_out is not None:
        keys += ["thr_src", "thr_ok", "thr_n", "thr_extra", "pt"]
    print(" ".join("%s=%s" % (k, "" if fig.get(k) is None else fig[k]) for k in keys))


if __name__ == "__main__":
    main()
