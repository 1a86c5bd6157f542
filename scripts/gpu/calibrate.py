"""calibrate.py — the calibration part of scripts/gpu/acceptance.py: the simulator's timing held
against the GPU's, operation by operation.

The same workloads are recorded twice with `dlhook record --stacks none --sample-hz 0`: on the
GPU and on the simulated CUDA stack (`dlhook record --sim`, the bundle's simcuda/):
  micro        scripts/gpu/calib_torch.py: GEMMs by dtype and size, elementwise, reductions,
               attention, pinned/pageable copies, memsets, isolated launches and synchronizes;
  gpt          train_torch.py --model gpt: a tiny GPT-2-like LM (causal attention, bf16 autocast);
  transformer, cnn
               train_torch.py's two workloads (the cnn: cuDNN convolutions, AMP);
  train        the bundled examples/train (its own kernels, cuDNN, cuBLAS(Lt), a 1-rank NCCL
               all-reduce, memsets).
Each GPU operation is grouped with the others of the call that launched it (a cuBLAS, cuDNN or
NCCL call is one unit whatever kernels it runs: their names differ between a GPU and the
simulator; a kernel launch, copy or memset is one unit named by its kernel, direction and size),
and units are matched by (step, key, occurrence within the step): step from the NVTX range
ProfilerStep#N around the launching call, key the unit's name. For each matched pair the ratio
simulated/measured of the device time is taken, and per class (GEMM by dtype and size, convolution,
attention, reductions, elementwise, other kernels, collectives, copies by direction and pinned or
pageable, memset) its median and p10/p90; also the launch latency (launching call's start to
kernel start, for kernels that found their stream idle), the sync latency (a synchronizing call's
end after the last GPU operation it waited for) and each workload's median step time.

Writes figures["calibration"] (summary.json), the table in summary.md, and OUTDIR/simulator-
calibration.md: a section ready to paste into docs/simulator.md. Standard library only (3.8+)."""
import bisect
import collections
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
LIB_DOMAINS = ("cublas", "cublasLt", "cudnn", "nccl")
LAUNCH_RE = re.compile(r"LaunchKernel|^cuLaunch|LaunchCooperative")
SYNC_CALLS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
              "cuStreamSynchronize", "cuEventSynchronize", "cudaMemcpy", "cuMemcpyDtoH_v2", "cuMemcpy"}
COPY_KIND = {1: "H2D", 2: "D2H", 8: "D2D", 10: "P2P", 9: "H2H"}   # CUpti_ActivityMemcpyKind
MEM_KIND = {1: "pageable", 2: "pinned", 3: "device", 5: "managed"}  # CUpti_ActivityMemoryKind
# cudaDataType_t, and cublasComputeType_t for float32 (TF32 when the compute type says so)
DTYPE = {0: "fp32", 1: "fp64", 2: "fp16", 14: "bf16", 28: "fp8", 29: "fp8", 3: "int8", 10: "int32"}
TF32_COMPUTE = (77,)
ATTN_RE = re.compile(r"flash|fmha|attention|Attention|attn|sdpa", re.I)
GEMM_RE = re.compile(r"gemm|xmma|cutlass|gemv|matmul", re.I)
RED_RE = re.compile(r"reduce|Reduce|softmax|SoftMax|layer_norm|LayerNorm|batch_norm|BatchNorm|welford|"
                    r"nll_loss|cross_entropy|norm_kernel|_norm|Norm|cub::|argmax|topk", re.I)
ELT_RE = re.compile(r"elementwise|foreach|multi_tensor_apply|vectorized|unrolled|fill_kernel|"
                    r"copy_kernel|CatArray|index_|indexing|scatter|gather|where|clamp|embedding", re.I)
OFF = 2.0  # a class off by more than this factor is a fix to the simulator's cost model

# (name, kind, command maker, what it exercises); kind: torch (PyTorch) or c (a bundled program)
WORKLOADS = [
    ("micro", "torch", "GEMMs by dtype and size, elementwise, reductions, attention, copies, memsets, "
     "launch and sync latency (calib_torch.py)"),
    ("gpt", "torch", "a tiny GPT-2-like LM: causal attention, bf16 autocast, AdamW (train_torch.py --model gpt)"),
    ("transformer", "torch", "train_torch.py's transformer encoder LM, AdamW, float32"),
    ("cnn", "torch", "train_torch.py's CNN: cuDNN convolutions and batch norm, AMP float16"),
    ("train", "c", "examples/train: its own kernels, cuDNN, cuBLAS(Lt), 1-rank NCCL all-reduce, memsets"),
]


# ---------------------------------------------------------------------------- trace reading
def read_trace(dlhook, traces):
    """The events of traces (dlhook dump, streamed), grouped by type."""
    ev = collections.defaultdict(list)
    p = subprocess.Popen([dlhook, "dump", "--type", "process,device,api,kernel,memcpy,memset,nvtx"] + traces,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        try:
            o = json.loads(line)
        except ValueError:
            continue
        o.pop("stack", None)
        ev[o.get("type")].append(o)
    p.wait()
    return ev


def gemm_class(a, kernel=""):
    dt = DTYPE.get(a.get("dtype"), "dtype %s" % a.get("dtype"))
    # PyTorch asks for TF32 with the handle's math mode, not the compute type: the kernel says
    # (Hopper's names have "tf32"; Ampere's TF32 tensor-op kernels "1688")
    if dt == "fp32" and (a.get("compute_type") in TF32_COMPUTE or re.search(r"tf32|1688", kernel, re.I)):
        dt = "tf32"
    fl = a.get("flops")
    if not isinstance(fl, (int, float)) or fl <= 0:
        try:
            fl = 2.0 * a["m"] * a["n"] * a["k"] * max(1, a.get("batch") or 1)
        except (KeyError, TypeError):
            fl = 0
    size = "< 0.1 GFLOP" if fl < 1e8 else "0.1-10 GFLOP" if fl < 1e10 else "> 10 GFLOP"
    return "GEMM %s %s" % (dt, size)


def unit_class(call, op):
    """The class of a unit: its launching call (call, may be None) and its first GPU op."""
    t = op.get("type")
    if t == "memcpy":
        v = op.get("vals") or []
        kind = COPY_KIND.get(v[1], "kind %s" % v[1]) if len(v) > 1 else "?"
        size = "< 1 MiB" if v and v[0] < (1 << 20) else ">= 1 MiB"
        host = ""
        if kind == "H2D" and len(v) > 2:
            host = " " + MEM_KIND.get(v[2], "kind %s" % v[2])
        elif kind == "D2H" and len(v) > 3:
            host = " " + MEM_KIND.get(v[3], "kind %s" % v[3])
        return "copy %s%s %s" % (kind, host, size)
    if t == "memset":
        return "memset"
    name = op.get("name") or ""
    dom = call.get("domain") if call else None
    cname = call.get("name", "") if call else ""
    a = (call.get("args") or {}) if call else {}
    if dom == "nccl" or name.startswith("nccl"):
        return "collective (NCCL)"
    if dom in ("cublas", "cublasLt"):
        return gemm_class(a, name) if re.search(r"[Gg]emm|Matmul", cname) else "other kernels"
    if dom == "cudnn":
        if cname == "cudnnBackendExecute":
            return "attention" if a.get("op") == 4 else "convolution (cuDNN)" if a.get("op") in (1, 2, 3) \
                else "other kernels"
        if "Convolution" in cname:
            return "convolution (cuDNN)"
        if "Normalization" in cname or "Softmax" in cname:
            return "reductions"
        return "other kernels"
    if ATTN_RE.search(name):
        return "attention"
    if GEMM_RE.search(name):
        return "GEMM (other kernels)"
    if RED_RE.search(name):
        return "reductions"
    if ELT_RE.search(name):
        return "elementwise"
    return "other kernels"


def unit_key(call, op):
    """What a unit is called for matching: a library call by its name and shape (its kernels'
    names are the library's choice), else the kernel's name, the copy's or memset's size."""
    if call and call.get("domain") in LIB_DOMAINS:
        a = call.get("args") or {}
        sig = ",".join("%s=%s" % (k, a[k]) for k in ("m", "n", "k", "batch", "dtype", "compute_type", "op", "N",
                                                     "C", "H", "W", "K", "R", "S", "count", "datatype")
                       if isinstance(a.get(k), int) and not isinstance(a.get(k), bool))  # not pointers
        return "%s(%s)" % (call.get("name"), sig)
    t = op.get("type")
    v = op.get("vals") or []
    if t == "memcpy":
        return "memcpy %s" % ",".join(str(x) for x in v[:4])
    if t == "memset":
        return "memset %s" % (v[0] if v else "?")
    return "kernel " + (op.get("name") or "?")


class Side:
    """One recording's units, latencies and step times."""

    def __init__(self, ev, main_pid=None):
        pids = [p.get("pid") for p in ev.get("process", [])]
        self.pid = main_pid if main_pid in pids else (pids[0] if pids else None)
        self.devices = [d.get("name") for d in ev.get("device", []) if d.get("pid") == self.pid]
        mine = lambda e: e.get("pid") == self.pid  # noqa: E731
        api = [c for c in ev.get("api", []) if mine(c)]
        by_corr = {}
        for c in api:
            if c.get("corr"):
                by_corr.setdefault(c["corr"], c)
        # the steps: NVTX ProfilerStep#N ranges of the process
        steps = []
        for n in ev.get("nvtx", []):
            m = STEP_RE.match(str((n.get("args") or {}).get("message") or ""))
            if mine(n) and m and n.get("dur_ns") is not None:
                steps.append((n["start_ns"], n["start_ns"] + n["dur_ns"], int(m.group(1))))
        steps.sort()
        self.has_steps = bool(steps)
        self.step_ns = {num: e - s for s, e, num in steps}
        starts = [s for s, _, _ in steps]

        def step_of(t):
            i = bisect.bisect_right(starts, t) - 1
            if i >= 0 and t <= steps[i][1]:
                return steps[i][2]
            return None if steps else 0
        ops = [g for t in ("kernel", "memcpy", "memset") for g in ev.get(t, []) if mine(g)
               and g.get("start_ns") is not None]
        ops.sort(key=lambda g: g["start_ns"])
        # launch latency: kernels whose launching call found their stream idle
        stream_end = {}
        groups = collections.OrderedDict()
        for g in ops:
            call = by_corr.get(g.get("corr"))
            end = g["start_ns"] + (g.get("dur_ns") or 0)
            sk = (g.get("device"), g.get("stream"))
            prev = stream_end.get(sk, 0)
            stream_end[sk] = max(prev, end)
            t = call["start_ns"] if call else g["start_ns"]
            step = step_of(t)
            if step is None:
                continue
            lib = call is not None and call.get("domain") in LIB_DOMAINS
            gk = ("c", g.get("corr")) if lib else ("o", id(g))
            u = groups.get(gk)
            if u is None:
                u = groups[gk] = {"step": step, "key": unit_key(call, g), "cls": unit_class(call, g),
                                  "t": t, "dur": 0, "ops": 0}
                if call and g.get("type") == "kernel" and LAUNCH_RE.search(call.get("name", "")) and \
                        prev <= call["start_ns"]:
                    u["launch_ns"] = g["start_ns"] - call["start_ns"]
            u["dur"] += g.get("dur_ns") or 0
            u["ops"] += 1
        self.units = list(groups.values())
        # sync latency: a synchronizing call's end after the last GPU op that ended inside it
        ends = sorted(g["start_ns"] + (g.get("dur_ns") or 0) for g in ops)
        for c in api:
            if c.get("name") not in SYNC_CALLS or c.get("depth", 0) or c.get("dur_ns") is None:
                continue
            s, e = c["start_ns"], c["start_ns"] + c["dur_ns"]
            i = bisect.bisect_right(ends, e) - 1
            step = step_of(s)
            if step is not None:  # a unit whether it waited or not (None), so that both sides align
                self.units.append({"step": step, "key": "sync " + c["name"], "cls": "sync latency", "t": s,
                                   "dur": e - ends[i] if i >= 0 and ends[i] >= s else None, "ops": 0})
        self.units.sort(key=lambda u: u["t"])
        occ = collections.Counter()
        self.by_key = {}
        for u in self.units:
            k = (u["step"], u["key"])
            self.by_key[k + (occ[k],)] = u
            occ[k] += 1


def quantile(v, q):
    v = sorted(v)
    if not v:
        return None
    x = q * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)


def compare(gpu, sim, first_step=0):
    """Pairs of (measured, simulated) per class, and the matching's counts, over the steps both
    sides have from first_step on."""
    if gpu.has_steps and sim.has_steps:
        steps = {s for s in gpu.step_ns if s >= first_step} & {s for s in sim.step_ns if s >= first_step}
    else:
        steps = {0}
    pairs = collections.defaultdict(list)
    lat = []
    unmatched = collections.Counter()
    n_gpu = n_sim = n_match = 0
    for k, u in gpu.by_key.items():
        if k[0] not in steps:
            continue
        n_gpu += 1
        s = sim.by_key.get(k)
        if s is None:
            unmatched[("gpu", u["cls"], u["key"][:120])] += 1
            continue
        n_match += 1
        if u["dur"] is not None and s["dur"] is not None:  # a sync call that waited on both sides
            pairs[u["cls"]].append((u["dur"], s["dur"], u["key"]))
        if "launch_ns" in u and "launch_ns" in s:
            lat.append((u["launch_ns"], s["launch_ns"], u["key"]))
    for k, s in sim.by_key.items():
        if k[0] in steps:
            n_sim += 1
            if k not in gpu.by_key:
                unmatched[("sim", s["cls"], s["key"][:120])] += 1
    if lat:
        pairs["launch latency"] = lat
    st = sorted(steps)
    step_ms = None
    if gpu.has_steps and sim.has_steps and st:
        step_ms = (statistics.median(gpu.step_ns[s] for s in st) / 1e6,
                   statistics.median(sim.step_ns[s] for s in st) / 1e6)
    return {"pairs": pairs, "steps": st, "n_gpu": n_gpu, "n_sim": n_sim, "n_match": n_match,
            "unmatched": unmatched, "step_ms": step_ms}


def class_table(pairs):
    """Per class: n, ratio median/p10/p90 (simulated / measured), medians and totals."""
    out = {}
    for cls, pp in pairs.items():
        pp = [p for p in pp if p[0] > 0 and p[1] >= 0]
        if not pp:
            continue
        r = [b / a for a, b, _ in pp]
        out[cls] = {"n": len(pp), "ratio_median": statistics.median(r), "ratio_p10": quantile(r, 0.1),
                    "ratio_p90": quantile(r, 0.9), "gpu_median_us": statistics.median(a for a, _, _ in pp) / 1e3,
                    "sim_median_us": statistics.median(b for _, b, _ in pp) / 1e3,
                    "gpu_total_ms": sum(a for a, _, _ in pp) / 1e6, "sim_total_ms": sum(b for _, b, _ in pp) / 1e6}
    return out


def off_items(table):
    return [c for c, x in sorted(table.items()) if x["ratio_median"] > OFF or x["ratio_median"] < 1 / OFF]


def class_order(c):
    order = ["GEMM", "convolution", "attention", "reductions", "elementwise", "other kernels", "collective",
             "copy", "memset", "launch latency", "sync latency"]
    for i, p in enumerate(order):
        if c.startswith(p):
            return (i, c)
    return (len(order), c)


# ---------------------------------------------------------------------------- the part
class Calibration:
    def __init__(self, r):
        self.r = r
        a = r.a
        self.steps = a.calib_steps
        self.warmup = min(a.calib_warmup, max(0, self.steps - 1))
        self.small = a.calib_small
        self.out = os.path.join(r.out, "calib")
        self.pairs = collections.defaultdict(list)
        self.per_wl = {}
        self.unmatched = collections.Counter()

    def cmd(self, wl, js):
        r = self.r
        if wl == "micro":
            c = [r.python, os.path.join(HERE, "calib_torch.py"), "--steps", str(self.steps),
                 "--warmup", str(self.warmup), "--json", js]
            return c + (["--small"] if self.small else [])
        if wl == "train":
            return [os.path.join(r.root, "examples", "train"), "--steps", str(self.steps)]
        c = [r.python, os.path.join(HERE, "train_torch.py"), "--model", wl, "--mode", "bare", "--steps",
             str(self.steps), "--warmup", str(self.warmup), "--json", js]
        if self.small:
            c += ["--batch", "8"]
        elif r.a.torch_batch:
            c += ["--batch", str(r.a.torch_batch)]
        return c

    def record(self, wl, side, kind):
        """Records wl on side ("gpu": as the run is, GPU or --sim; "sim": always --sim); returns
        (rc, traces, result JSON path)."""
        r = self.r
        name = "calib-%s-%s" % (wl, side)
        tdir = os.path.join(self.out, name)
        js = os.path.join(self.out, name + ".json")
        shutil.rmtree(tdir, ignore_errors=True)
        sim = side == "sim" or r.a.sim
        env = dict(r.env_torch() if kind == "torch" else r.env_cuda())
        if sim:
            env.pop("LD_LIBRARY_PATH", None)  # record --sim sets it (and LD_AUDIT)
            env.pop("LD_AUDIT", None)
            env["SIMCUDA_NUMERICS"] = "off"  # timing only: nothing reads the results
            env["LD_LIBRARY_PATH"] = ""  # no CUDA of the machine's before the simulator's
        full = [r.dlhook, "record", "-o", tdir, "--stacks", "none", "--sample-hz", "0"] + \
            (["--sim"] if sim else []) + ["--"] + self.cmd(wl, js)
        rc, _, _ = r.run(name, full, env=env, timeout=240)
        return rc, sorted(glob.glob(os.path.join(tdir, "*.dlh"))), js

    def side(self, traces, js):
        pid = None
        try:
            with open(js) as f:
                pid = int(json.load(f)["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return Side(read_trace(self.r.dlhook, traces), pid)

    def why_not(self, wl, kind):
        """Why wl cannot run here, or None."""
        r = self.r
        if kind == "torch" and r.torch_why:
            return r.torch_why
        cuda = str(r.env_info.get("torch", "")).split("(CUDA ")[-1]
        if kind == "torch" and not r.a.sim and not cuda.startswith("13"):
            return "PyTorch %s: the simulator stands in for CUDA 13's libraries only" % r.env_info.get("torch")
        if kind == "c" and not os.path.isfile(os.path.join(r.root, "examples", "train")):
            return "examples/train not in the bundle"
        return None

    def start(self):
        """Starts the simulator's recordings in a thread of their own: they need no GPU, so they
        run while the GPU runs the parts before this one (a few of the machine's 16 cores)."""
        os.makedirs(self.out, exist_ok=True)
        want = [w for w in self.r.a.calib_workloads.split(",") if w]
        self.todo = [(wl, kind, what) for wl, kind, what in WORKLOADS if wl in want]
        self.sim_done = {wl: threading.Event() for wl, _, _ in self.todo}
        self.sim_res = {}

        def work():
            for wl, kind, _ in self.todo:
                try:
                    if not self.why_not(wl, kind) and self.r.left() > 60:
                        self.sim_res[wl] = self.record(wl, "sim", kind)
                finally:
                    self.sim_done[wl].set()
        self.thread = threading.Thread(target=work, name="calibration-sim", daemon=True)
        self.thread.start()

    def workload(self, wl, kind, what):
        r = self.r
        item = ("calib.%s" % wl, "calibration: %s on the GPU and on the simulator, matched" % wl)
        why = self.why_not(wl, kind)
        if why:
            return r.check(item[0], 6, item[1], "skip", why)
        if not r.have(30 if r.deadline else 0, 6, [item]):
            return
        print("part 6: calibration, %s" % wl, flush=True)
        t0 = time.time()
        rc1, tr1, js1 = self.record(wl, "gpu", kind)
        self.sim_done[wl].wait(max(1, r.left() - 10) if r.deadline else None)
        if wl not in self.sim_res:
            return r.check(item[0], 6, item[1], "skip", "the simulator's run did not happen or end in time "
                           "(logs/calib-%s-sim.log)" % wl)
        rc2, tr2, js2 = self.sim_res[wl]
        if rc1 != 0 or not tr1 or rc2 != 0 or not tr2:
            return r.check(item[0], 6, item[1], "fail", "GPU run: exit %d, %d traces; simulator run: exit %d, %d "
                           "traces (logs/calib-%s-*.log)" % (rc1, len(tr1), rc2, len(tr2), wl))
        g, s = self.side(tr1, js1), self.side(tr2, js2)
        simulated = [d for d in s.devices if "simulated" in str(d)]
        if not simulated or (not r.a.sim and any("simulated" in str(d) for d in g.devices)):
            return r.check(item[0], 6, item[1], "fail", "devices: GPU run %s, simulator run %s: not one of each"
                           % (g.devices, s.devices))
        c = compare(g, s, self.warmup)
        for cls, pp in c["pairs"].items():
            self.pairs[cls].extend(pp)
        self.unmatched.update(c["unmatched"])
        share = c["n_match"] / c["n_gpu"] if c["n_gpu"] else 0
        tab = class_table(c["pairs"])
        self.per_wl[wl] = {
            "what": what, "steps_compared": c["steps"], "gpu_units": c["n_gpu"], "sim_units": c["n_sim"],
            "matched": c["n_match"], "step_ms_gpu": c["step_ms"][0] if c["step_ms"] else None,
            "step_ms_sim": c["step_ms"][1] if c["step_ms"] else None, "device_gpu": g.devices[:1],
            "classes": {k: {"n": v["n"], "ratio_median": v["ratio_median"]} for k, v in tab.items()},
            "unmatched_top": [{"side": sd, "class": cl, "key": k, "n": n}
                              for (sd, cl, k), n in c["unmatched"].most_common(8)],
            "seconds": round(time.time() - t0, 1)}
        self.publish()
        st = (", step %.2f ms measured / %.2f ms simulated" % c["step_ms"]) if c["step_ms"] else ""
        ok = c["n_gpu"] > 0 and share >= 0.8
        miss = "; unmatched: " + "; ".join("%s %s x%d" % (sd, k[:60], n) for (sd, _, k), n in
                                          c["unmatched"].most_common(3)) if c["unmatched"] else ""
        return r.check(item[0], 6, item[1], "pass" if ok else "fail",
                       "%d of %d GPU units matched (%.0f %%) over %d steps, %d classes%s%s"
                       % (c["n_match"], c["n_gpu"], 100 * share, len(c["steps"]), len(tab), st, miss))

    def publish(self):
        """figures["calibration"] and OUTDIR/simulator-calibration.md from what is matched so far."""
        r = self.r
        tab = class_table(self.pairs)
        top = collections.defaultdict(list)
        for cls, pp in self.pairs.items():
            if "latency" in cls:
                continue  # device time only
            for a, b, k in pp:
                top[(cls, k)].append((a, b))
        tops = sorted(top.items(), key=lambda kv: -sum(a for a, _ in kv[1]))[:15]
        r.figures["calibration"] = {
            "ratio": "simulated / measured", "off_factor": OFF, "classes": tab, "workloads": self.per_wl,
            "fix_the_cost_model": off_items(tab),
            "top_units": [{"class": c, "key": k[:160], "n": len(v),
                           "gpu_median_us": statistics.median(a for a, _ in v) / 1e3,
                           "sim_median_us": statistics.median(b for _, b in v) / 1e3,
                           "ratio_median": statistics.median(b / a for a, b in v if a > 0) if any(a > 0 for a, _ in v)
                           else None} for (c, k), v in tops]}
        with open(os.path.join(r.out, "simulator-calibration.md"), "w") as f:
            f.write("\n".join(self.doc_section()) + "\n")

    def doc_section(self):
        """The section of docs/simulator.md, filled with this run's figures."""
        r = self.r
        F = r.figures.get("calibration") or {}
        inf = r.env_info
        L = ["### Held against a GPU", "",
             "Measured by `scripts/gpu-acceptance --parts calibrate` (%s; GPU: %s; PyTorch %s; %s): "
             "each workload recorded on the GPU and on the simulator, every GPU operation matched by "
             "step, call and occurrence; the ratio is simulated / measured device time (median, p10-p90)."
             % (time.strftime("%Y-%m-%d", time.gmtime(r.t0)), inf.get("gpu", "?"), inf.get("torch", "-"),
                "simulator against itself" if r.a.sim else "real GPU"), ""]
        L += table_lines(F.get("classes") or {}, F.get("workloads") or {})
        fix = F.get("fix_the_cost_model") or []
        L += ["", "Off by more than %gx (fix the simulator's cost model): %s." % (
            OFF, ", ".join(fix) if fix else "none")]
        return L

    def run(self):
        for wl, kind, what in self.todo:
            self.workload(wl, kind, what)
        if not self.pairs:
            return
        self.publish()
        F = self.r.figures["calibration"]
        tab = F["classes"]
        fix = F["fix_the_cost_model"]
        item = ("calib.table", "calibration: simulated / measured per class")
        detail = "%d classes, %d matched units; %s" % (
            len(tab), sum(x["n"] for x in tab.values()),
            ("off by more than 2x (fix the simulator's cost model): " + ", ".join(
                "%s x%.2f" % (c, tab[c]["ratio_median"]) for c in fix)) if fix else "every class within 2x")
        if self.r.a.sim:
            # the simulator against itself: the device times must agree (the latencies follow the
            # machine's load)
            bad = [c for c, x in tab.items() if "latency" not in c and not 0.9 <= x["ratio_median"] <= 1.1]
            return self.r.check(item[0], 6, item[1], "fail" if bad else "pass",
                                ("simulator against itself, classes not ~1: %s; " % bad if bad else
                                 "simulator against itself: device-time classes within 10 %; ") + detail)
        return self.r.check(item[0], 6, item[1], "pass", detail)


def table_lines(tab, wls):
    L = ["| class | matched | simulated / measured: median (p10-p90) | measured median | simulated median |",
         "|---|---|---|---|---|"]
    for c in sorted(tab, key=class_order):
        x = tab[c]
        flag = " **(> 2x off)**" if x["ratio_median"] > OFF or x["ratio_median"] < 1 / OFF else ""
        L.append("| %s | %d | %.2f (%.2f-%.2f)%s | %s | %s |" % (
            c, x["n"], x["ratio_median"], x["ratio_p10"], x["ratio_p90"], flag, fmt_us(x["gpu_median_us"]),
            fmt_us(x["sim_median_us"])))
    steps = [(w, v) for w, v in wls.items() if v.get("step_ms_gpu")]
    if steps:
        L += ["", "| workload | steps compared | units matched | median step measured | simulated | ratio |",
              "|---|---|---|---|---|---|"]
        for w, v in steps:
            L.append("| %s | %d | %d of %d | %.2f ms | %.2f ms | %.2f |" % (
                w, len(v["steps_compared"]), v["matched"], v["gpu_units"], v["step_ms_gpu"], v["step_ms_sim"],
                v["step_ms_sim"] / v["step_ms_gpu"] if v["step_ms_gpu"] else 0))
    return L


def fmt_us(us):
    return "%.1f us" % us if us < 1000 else "%.2f ms" % (us / 1e3)


def summary_lines(figures):
    """summary.md's calibration section."""
    F = figures.get("calibration")
    if not F or not F.get("classes"):
        return []
    L = ["### Calibration: the simulator against the GPU", ""]
    L += table_lines(F["classes"], F.get("workloads") or {})
    L += ["", "Off by more than %gx (fix the simulator's cost model): %s." % (
        OFF, ", ".join(F["fix_the_cost_model"]) or "none")]
    if F.get("top_units"):
        L += ["", "| unit (most measured device time first) | class | n | measured | simulated | ratio |",
              "|---|---|---|---|---|---|"]
        for u in F["top_units"][:10]:
            L.append("| %s | %s | %d | %s | %s | %s |" % (
                u["key"][:90].replace("|", "/"), u["class"], u["n"], fmt_us(u["gpu_median_us"]),
                fmt_us(u["sim_median_us"]), "%.2f" % u["ratio_median"] if u["ratio_median"] else "-"))
    L += ["", "The same as a section for docs/simulator.md: `simulator-calibration.md`.", ""]
    return L


def add_arguments(ap):
    ap.add_argument("--calib-steps", type=int, default=12, help="calibration: steps of each workload (12)")
    ap.add_argument("--calib-warmup", type=int, default=3, help="calibration: steps not compared (3)")
    ap.add_argument("--calib-small", action="store_true",
                    help="calibration: smaller sizes (tests on a loaded machine)")
    ap.add_argument("--calib-workloads", default=",".join(w for w, _, _ in WORKLOADS),
                    help="calibration workloads (%s)" % ",".join(w for w, _, _ in WORKLOADS))


def start(r):
    """The part's object, its simulator runs started (run() later does the GPU's and compares)."""
    c = Calibration(r)
    c.start()
    return c
