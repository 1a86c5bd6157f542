"""features.py — the checks of scripts/gpu/acceptance.py for this round's features, each skipping
with its reason where the feature or what it needs is missing:

  nccl.*     NCCL's profiler plugin events (docs/nccl-profiler.md) in examples/train's trace (one
             rank: a 1-GPU communicator): Coll events with algorithm, protocol and channels, and
             KernelCh events whose GPU start and end fall inside the NCCL kernel's record;
  memory.*   `dlhook record --torch-memory` and `dlhook export -f memory-snapshot` on a CNN
             (workload.py cnn): torch.cuda._memory_viz's functions on the snapshots
             (memsnap_check.py: its alloc/free counts equal `dlhook stats --memory`), and the
             figures against PyTorch's own `_record_memory_history` snapshot of the same
             workload (memcmp_check.py; docs/memory.md);
  ringwait.* `dlhook stats`' section "What dlhook cost or lost" and `stats --json`'s dlhook_cost
             on a PyTorch trace (the threads' waits for dlhook's writer, drops, lost samples);
  zoo.*      `dlhook advise` on a reduced model zoo (tests/zoo/zoo.py), judged by
             tests/zoo/judge.py's judge() on the machine's own timing: recall, precision, set-up
             findings, each planted finding's cost against the measured saving.
Standard library only (Python 3.8+)."""
import argparse
import glob
import importlib.util
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def find(bundle_rel, source_rel):
    for rel in (bundle_rel, source_rel):
        p = os.path.join(TOP, rel)
        if os.path.isfile(p):
            return p
    return None


def dump(r, types, traces):
    p = subprocess.run([r.dlhook, "dump", "--type", types] + traces, capture_output=True, text=True)
    out = []
    for line in p.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        o.pop("stack", None)
        out.append(o)
    return out


# ---------------------------------------------------------------------------- NCCL plugin events
def nccl(r):
    item = ("nccl.plugin_events", "NCCL profiler plugin: Coll (algorithm, protocol, channels) and KernelCh "
            "inside the NCCL kernel")
    traces = sorted(glob.glob(os.path.join(r.out, "train-shared", "*.dlh"))) or \
        sorted(glob.glob(os.path.join(r.out, "calib", "calib-train-gpu", "*.dlh")))
    if not traces:
        exe = os.path.join(r.root, "examples", "train")
        if not os.path.isfile(exe):
            return r.check(item[0], 7, item[1], "skip", "examples/train not in the bundle")
        _, traces, _ = r.record("nccl-train", [exe, "--steps", "3"], os.path.join(r.out, "nccl-train"))
        if not traces:
            return r.check(item[0], 7, item[1], "fail", "examples/train left no trace (logs/nccl-train.log)")
    ev = dump(r, "api,kernel,nccl", traces)
    calls = [e for e in ev if e["type"] == "api" and e.get("domain") == "nccl"]
    nev = [e for e in ev if e["type"] == "nccl"]
    kern = [e for e in ev if e["type"] == "kernel" and str(e.get("name", "")).startswith("nccl")]
    if not calls:
        return r.check(item[0], 7, item[1], "skip", "examples/train made no NCCL call")
    if not nev:
        return r.check(item[0], 7, item[1], "fail", "%d NCCL calls, no plugin event (NCCL older than 2.23 has "
                       "no profiler plugin: see the NCCL version in logs/train-shared.log)" % len(calls))
    comms = [e for e in nev if e.get("event") == "NCCL_COMM" and e.get("phase") == "start"]
    coll = [e for e in nev if e.get("event") == "NCCL_COLL" and e.get("phase") == "start"]
    chs = {e["id"]: e for e in nev if e.get("event") == "NCCL_KERNEL_CH" and e.get("phase") == "start"}
    ends = {}
    for e in nev:  # a KernelCh's state with a GPU time: its end (KernelChStop)
        if e.get("phase") == "state" and e.get("id") in chs and e.get("gpu_ns"):
            ends[e["id"]] = e["gpu_ns"]
    nranks = max([c.get("nranks", 0) for c in comms] or [0])
    if not coll:
        return r.check(item[0], 7, item[1], "skip" if nranks == 1 else "fail",
                       "%d NCCL calls, %d plugin events, %d communicator(s) of %d rank(s), no Coll event%s"
                       % (len(calls), len(nev), len(comms), nranks,
                          ": NCCL's one-rank path enqueues no collective; needs two GPUs" if nranks == 1 else ""))
    full = [c for c in coll if c.get("algo") and c.get("proto") and c.get("channels")]
    spans = sorted((k["start_ns"], k["start_ns"] + (k.get("dur_ns") or 0)) for k in kern)
    tol = 2000  # ns: the two clocks' conversions
    inside, offs = 0, []
    for i, ch in chs.items():
        s, e = ch.get("gpu_ns"), ends.get(i)
        if s is None:
            continue
        k = [sp for sp in spans if sp[0] - tol <= s <= sp[1] + tol]
        if k and e is not None and k[0][0] - tol <= e <= k[0][1] + tol:
            inside += 1
        if k:
            offs.append(s - k[0][0])
    offs.sort()
    fig = {"nccl_calls": len(calls), "events": len(nev), "communicators": len(comms), "nranks": nranks,
           "coll": len(coll), "coll_with_algo_proto_channels": len(full), "kernel_ch": len(chs),
           "kernel_ch_inside_kernel": inside, "nccl_kernels": len(kern),
           "kernel_ch_start_minus_kernel_start_ns": {"median": offs[len(offs) // 2], "min": offs[0],
                                                     "max": offs[-1]} if offs else None,
           "examples": [{k: c.get(k) for k in ("func", "count", "dtype", "algo", "proto", "channels", "warps")}
                        for c in coll[:3]]}
    r.figures["nccl_plugin"] = fig
    ok = len(full) == len(coll) and chs and inside == len(chs)
    return r.check(item[0], 7, item[1], "pass" if ok else "fail",
                   "%d Coll events (%d with algorithm, protocol, channels; e.g. %s), %d KernelCh (%d inside "
                   "an NCCL kernel, start offset median %s ns) over %d NCCL kernels; %d rank(s)"
                   % (len(coll), len(full), ", ".join("%s %s/%s/%s ch" % (c.get("func"), c.get("algo"), c.get("proto"),
                                                                           c.get("channels")) for c in coll[:1]),
                      len(chs), inside, fig["kernel_ch_start_minus_kernel_start_ns"]["median"] if offs else "-",
                      len(kern), nranks))


# ---------------------------------------------------------------------------- memory snapshots
def memory(r):
    items = [("memory.snapshot", "--torch-memory and export -f memory-snapshot: _memory_viz reads both levels, "
              "counts equal stats --memory"),
             ("memory.vs_torch", "memory figures against PyTorch's own _record_memory_history snapshot")]
    if r.torch_why:
        return r.skip_all(7, items, r.torch_why)
    scripts = {n: find("scripts/gpu/%s" % n, "tests/torch/%s" % n)
               for n in ("memcmp_py.py", "memsnap_check.py", "memcmp_check.py", "workload.py")}
    if not all(scripts.values()):
        return r.skip_all(7, items, "not in the bundle: %s" % ", ".join(n for n, p in scripts.items() if not p))
    if not r.have(40 if r.deadline else 0, 7, items):
        return
    print("part 7: memory snapshots", flush=True)
    d = os.path.join(r.out, "memory")
    os.makedirs(d, exist_ok=True)
    env = r.env_torch()
    tp = os.path.join(d, "cnn.torch.pickle")
    wl = [scripts["workload.py"], "cnn", "--steps", "2"]
    runs = {}
    for lv, opts, first in (("seg", [], tp), ("ten", ["--torch-memory"], "-")):
        rc, traces, _ = r.record("memory-%s" % lv, [r.python, scripts["memcmp_py.py"], first] + wl,
                                 os.path.join(d, lv), env=env, opts=opts, timeout=240)
        if rc != 0 or not traces:
            for i in items:
                r.check(i[0], 7, i[1], "fail", "the %s run: exit %d, %d traces (logs/memory-%s.log)"
                        % (lv, rc, len(traces), lv))
            return
        main = traces if len(traces) == 1 else traces[:1]
        sj = os.path.join(d, "%s.stats.json" % lv)
        with open(sj, "w") as f:
            subprocess.run([r.dlhook, "stats", "--memory", "--json"] + main, stdout=f, stderr=subprocess.DEVNULL)
        pk = os.path.join(d, "%s.pickle" % lv)
        rc2, _, _ = r.run("memory-%s-export" % lv, [r.dlhook, "export", "-f", "memory-snapshot", "-o", pk] + main)
        runs[lv] = (sj, pk, rc2)
    out, bad = [], []
    for lv, level in (("seg", "segment"), ("ten", "tensor")):
        sj, pk, rc2 = runs[lv]
        if rc2 != 0 or not os.path.isfile(pk):
            bad.append("%s: export exit %d" % (level, rc2))
            continue
        rc, text, _ = r.run("memory-%s-check" % lv, [r.python, scripts["memsnap_check.py"], pk, sj, level], env=env)
        (out if rc == 0 else bad).append(text.strip().splitlines()[-1] if text.strip() else "exit %d" % rc)
    r.figures["memory_snapshot"] = {"checks": out, "failed": bad}
    r.check(items[0][0], 7, items[0][1], "fail" if bad else "pass", "; ".join(bad + out)[:400])
    if not os.path.isfile(tp):
        return r.check(items[1][0], 7, items[1][1], "fail", "no torch snapshot (logs/memory-seg.log)")
    rc, text, _ = r.run("memory-vs-torch", [r.python, scripts["memcmp_check.py"], tp, runs["seg"][0], runs["ten"][0]],
                        env=env)
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("$ ")]
    r.figures["memory_vs_torch"] = lines
    return r.check(items[1][0], 7, items[1][1], "pass" if rc == 0 else "fail", "; ".join(lines)[:400])


# ---------------------------------------------------------------------------- ring waits
def ringwait(r):
    item = ("ringwait.section", "stats: \"What dlhook cost or lost\" and stats --json dlhook_cost")
    cands = [os.path.join(r.out, p) for p in ("transformer-dlhook", "calib/calib-gpt-gpu", "calib/calib-micro-gpu",
                                              "cnn-dlhook", "train-shared", "calib/calib-train-gpu")]
    traces = []
    for c in cands:
        traces = sorted(glob.glob(os.path.join(c, "*.dlh")))
        if traces:
            break
    if not traces:
        return r.check(item[0], 7, item[1], "skip", "no trace recorded before this check")
    p = subprocess.run([r.dlhook, "stats"] + traces[:1], capture_output=True, text=True)
    q = subprocess.run([r.dlhook, "stats", "--json"] + traces[:1], capture_output=True, text=True)
    try:
        cost = json.loads(q.stdout).get("dlhook_cost")
    except ValueError:
        cost = None
    sec = "What dlhook cost or lost" in p.stdout
    if not sec and cost is None:
        return r.check(item[0], 7, item[1], "skip", "feature missing: no dlhook_cost in stats --json")
    text = p.stdout.split("What dlhook cost or lost", 1)[-1].strip().splitlines()[:3] if sec else []
    r.figures["dlhook_cost"] = {"trace": os.path.relpath(traces[0], r.out), "dlhook_cost": cost}
    return r.check(item[0], 7, item[1], "pass" if sec and cost is not None else "fail",
                   "%s: %s; json %s" % (os.path.relpath(traces[0], r.out), " / ".join(l.strip() for l in text),
                                        json.dumps({k: cost.get(k) for k in ("ring_waits", "ring_wait_ns",
                                                                             "ring_wait_pct", "dropped")}
                                                   if cost else None)))


# ---------------------------------------------------------------------------- the model zoo
def load_judge():
    path = find("scripts/gpu/judge.py", "tests/zoo/judge.py")
    if not path or not os.path.isfile(os.path.join(os.path.dirname(path), "zoo.py")):
        return None
    spec = importlib.util.spec_from_file_location("zoo_judge", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


ZOO_NEEDS = {"gpt2": "transformers", "bert": "transformers", "bert_small": "transformers", "vit": "timm",
             "resnet": "torchvision", "loader": "torchvision", "compile": "torch", "gpt2_ddp": "transformers"}


def zoo_case(r, jg, model, cause, steps, warmup):
    """One (model, cause): bare runs (the step time) and a recorded run (advise's findings), as
    judge.run_case does on the simulator, here on whatever the run is on."""
    name = "zoo-%s-%s" % (model, cause)
    d = os.path.join(r.out, "zoo", "%s-%s" % (model, cause))
    os.makedirs(d, exist_ok=True)
    env = dict(r.env_torch(), PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false")
    if r.a.sim:
        env["SIMCUDA_NUMERICS"] = "off"
    prog = [r.python, jg.ZOO, model, cause, "--steps", str(steps), "--warmup", str(warmup)]
    res = {"model": model, "cause": cause, "cmd": " ".join(prog)}
    runs = []
    for i in range(max(1, r.a.zoo_repeat)):  # the fastest counts (judge: the noise floor needs two)
        rc, text, _ = r.run("%s-bare%d" % (name, i), prog, env=env, timeout=240)
        m = re.findall(r" step_ms=([0-9.]+)", text)
        if rc != 0 or not m:
            res["error"] = "bare run exit %d (logs/%s-bare%d.log)" % (rc, name, i)
            return res
        runs.append(float(m[-1]))
    res["step_ms"], res["bare_runs_ms"] = min(runs), runs
    rc, traces, text = r.record(name, prog, os.path.join(d, "rec"), env=dict(env, DLHOOK_EXIT_MS="10000"),
                                timeout=300)
    m = re.findall(r" step_ms=([0-9.]+)", text)
    if rc != 0 or not traces or not m:
        res["error"] = "recorded run exit %d, %d traces (logs/%s.log)" % (rc, len(traces), name)
        return res
    res["recorded_step_ms"] = float(m[-1])
    found = r.advise_json(name, traces)
    if found is None:
        res["error"] = "advise failed"
        return res
    res["findings"] = [dict({k: f.get(k) for k in ("rank", "class", "place", "cost_ms_per_step", "cost_pct")},
                            steps_from=(f.get("evidence") or {}).get("steps_from")) for f in found]
    return res


def zoo(r):
    items = [("zoo.advise", "dlhook advise on the model zoo: recall, precision, no set-up finding"),
             ("zoo.costs", "zoo: each planted finding's cost against the measured saving")]
    if r.torch_why:
        return r.skip_all(8, items, r.torch_why)
    jg = load_judge()
    if jg is None:
        return r.skip_all(8, items, "tests/zoo/judge.py and zoo.py not in the bundle")
    causes_of, klass, tree = jg.zoo_tables()
    models = []
    for m in [x for x in r.a.zoo_models.split(",") if x]:
        if m not in causes_of:
            continue
        mod = ZOO_NEEDS.get(m, "torch")
        q = subprocess.run([r.python, "-c", "import %s" % mod], capture_output=True, text=True,
                           env=dict(os.environ, **r.env_torch()))
        if q.returncode == 0:
            models.append(m)
        else:
            r.env_info.setdefault("zoo_missing", []).append("%s (needs %s)" % (m, mod))
    if r.a.quick:
        models = models[:1]
    if not models:
        return r.skip_all(8, items, "none of the zoo's models %s can be built here: %s" % (
            r.a.zoo_models, ", ".join(r.env_info.get("zoo_missing", []))))
    want = set(x for x in r.a.zoo_causes.split(",") if x) | {"tuned"}
    cases = [(m, c) for m in models for c in causes_of[m] if c in want]
    # per case 2-3 runs of a few steps: ~20 s on a GPU
    if not r.have(20 * len(cases) if r.deadline else 0, 8, items):
        return
    print("part 8: dlhook advise on the model zoo (%s)" % ", ".join("%s %s" % mc for mc in cases), flush=True)
    src = open(jg.ZOO).read()
    plants, setup = jg.plant_lines(src), jg.setup_lines(tree, src)
    results = {}
    for m, c in cases:
        if r.left() < 30:
            results[(m, c)] = {"model": m, "cause": c, "error": "out of time"}
            continue
        results[(m, c)] = zoo_case(r, jg, m, c, r.a.zoo_steps, r.a.zoo_warmup)
    ns = argparse.Namespace(steps=r.a.zoo_steps, warmup=r.a.zoo_warmup)
    j = jg.judge(ns, cases, results, causes_of, klass, plants, setup)
    with open(os.path.join(r.out, "zoo.json"), "w") as f:
        json.dump(j, f, indent=1)
    t = j["totals"]
    rows = [{k: x.get(k) for k in ("model", "cause", "class", "rank", "place", "cost_ms", "saving_ms", "ratio",
                                   "found", "no_cost", "error")} for x in j["rows"]]
    r.figures["zoo"] = {"totals": t, "rows": rows, "false_positives": j["false_positives"],
                        "setup_findings": j["setup_findings"], "models": models, "steps": r.a.zoo_steps,
                        "tuned_step_ms": {x["model"]: x.get("step_ms") for x in j["runs"] if x["cause"] == "tuned"}}
    pct = lambda v: "-" if v is None else "%.0f %%" % (100 * v)  # noqa: E731
    ok = t["errors"] == 0 and t["setup_findings"] == 0 and t["false_positives"] == 0 and \
        (t["recall"] is None or t["recall"] >= 0.5)
    r.check(items[0][0], 8, items[0][1], "pass" if ok else "fail",
            "%s: %d planted (%d of no measurable cost), recall %s, precision %s, %d false positives, %d set-up "
            "findings, %d failed runs (the zoo's target: 95 %% / 95 %%)%s" % (
                ",".join(models), t["planted"], t["no_cost"], pct(t["recall"]), pct(t["precision"]),
                t["false_positives"], t["setup_findings"], t["errors"],
                "; " + "; ".join("%s %s: %s" % (x["model"], x["cause"], x["error"]) for x in j["rows"]
                                 if x.get("error"))[:200] if t["errors"] else ""))
    costs = ["%s %s cost %s ms / saving %s ms" % (x["model"], x["cause"], fmt(x["cost_ms"]), fmt(x["saving_ms"]))
             for x in j["rows"] if not x.get("no_cost")]
    cw = t["costs_within_2x"]
    return r.check(items[1][0], 8, items[1][1], "skip" if cw is None else "pass" if cw >= 0.8 else "fail",
                   "within 2x: %s (the zoo's target: 80 %%); %s" % (pct(cw), "; ".join(costs)[:300]
                                                                   or "no planted cost"))


def fmt(v):
    return "-" if v is None else "%.2f" % v


def summary_lines(figures):
    L = []
    z = figures.get("zoo")
    if z:
        t = z["totals"]
        L += ["### dlhook advise on the model zoo", "",
              "%s, %d steps; recall %s, precision %s, costs within 2x %s; tuned step %s." % (
                  ", ".join(z["models"]), z["steps"], fmt(t["recall"]), fmt(t["precision"]),
                  fmt(t["costs_within_2x"]),
                  ", ".join("%s %s ms" % (m, fmt(v)) for m, v in z["tuned_step_ms"].items())), "",
              "| model | cause | class | rank | place | cost ms | saving ms | ratio |", "|---|---|---|---|---|---|---|---|"]
        for x in z["rows"]:
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                x["model"], x["cause"], x["class"], x["rank"] or "-", str(x["place"] or "-").replace("|", "/")[-50:],
                fmt(x["cost_ms"]), fmt(x["saving_ms"]), fmt(x["ratio"])))
        L.append("")
    n = figures.get("nccl_plugin")
    if n:
        L += ["### NCCL profiler plugin", "",
              "%d Coll events (%s), %d KernelCh events, %d inside their NCCL kernel; %d rank(s)." % (
                  n["coll"], "; ".join("%(func)s %(count)s %(dtype)s %(algo)s/%(proto)s %(channels)s channels" % e
                                       for e in n["examples"][:2]), n["kernel_ch"], n["kernel_ch_inside_kernel"],
                  n["nranks"]), ""]
    return L


def add_arguments(ap):
    ap.add_argument("--zoo-models", default="gpt2,resnet,bert",
                    help="zoo models to judge, those that can be built here (gpt2,resnet,bert; --quick: the first)")
    ap.add_argument("--zoo-causes", default="item,pageable,fp32,empty_cache",
                    help="planted causes (item,pageable,fp32,empty_cache; --quick: item,empty_cache)")
    ap.add_argument("--zoo-steps", type=int, default=8, help="zoo: steps per program (8)")
    ap.add_argument("--zoo-warmup", type=int, default=3, help="zoo: warm-up steps (3)")
    ap.add_argument("--zoo-repeat", type=int, default=2,
                    help="zoo: bare runs of each program, the fastest counts (2; with 1, no noise floor)")
