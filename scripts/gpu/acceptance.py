#!/usr/bin/env python3
"""acceptance.py — dlhook's real-GPU acceptance run (scripts/gpu-acceptance OUTDIR [--sim]).

Runs from the gpu-bundle (make gpu-bundle) or from a source tree with build/. Parts:
  1. examples/train (shared and static cudart) and the test programs under dlhook: kernels
     recorded, every GPU op linked to its call and stack, NVTX steps, exports;
  2. scripts/gpu/train_torch.py under `dlhook record`: cuBLASLt matmuls with shapes, kernels per
     step, Python frames in the stacks, memory ledger peak;
  3. the same script under torch.profiler (without and with stacks) and bare: kernels per step
     against torch.profiler, step-time overhead ratios (medians of alternating runs);
  4. OUTDIR/summary.md and OUTDIR/summary.json: every check (pass / fail / skip with the reason)
     and figure.
With --sim, part 1 runs on the simulated CUDA stack and parts 2-3 are skipped. A check that needs
a dlhook feature not built yet reports "skip: feature missing". Exit status: 0 when no check
failed, 1 otherwise, 2 on a usage error. Standard library only (Python 3.8+).
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
EXPORT_FORMATS = [  # (format, output name, is a directory)
    ("kineto", "kineto", True), ("perfetto", "trace.perfetto-trace", False),
    ("tensorboard", "tensorboard", True), ("folded", "flame.folded", False),
    ("svg", "flame.svg", False), ("speedscope", "speedscope.json", False),
    ("pprof", "profile.pb.gz", False)]


def cuda_sonames():
    """The libraries to look for: those dlhook wraps (common/dlh_cuda_libs.def, the one table of
    them; `make gpu-bundle` copies it into the bundle) but the driver's libcuda (the system's
    own), and CUPTI after cudart."""
    path = os.path.join(os.path.dirname(os.path.dirname(HERE)), "common", "dlh_cuda_libs.def")
    with open(path) as f:
        libs = re.findall(r'^DLH_CUDA_LIB\(\w+, (\w+), "([^"]+)"\)', f.read(), re.M)
    sonames = [so for lib, so in libs if lib != "DRIVER"]
    return sonames[:1] + ["libcupti.so.13"] + sonames[1:]


CUDA_SONAMES = cuda_sonames()


def find_root():
    """The folder holding dlhook, libdlhook.so, simcuda/, examples/ (bundle or build dir)."""
    top = os.path.dirname(os.path.dirname(HERE))
    if os.path.isfile(os.path.join(top, "dlhook")) and os.path.isfile(os.path.join(top, "libdlhook.so")):
        return top
    b = os.environ.get("BUILD", "build")
    b = b if os.path.isabs(b) else os.path.join(top, b)
    return b


class Run:
    def __init__(self, args):
        self.a = args
        self.root = find_root()
        self.out = os.path.abspath(args.outdir)
        self.logs = os.path.join(self.out, "logs")
        self.checks = []
        self.figures = {}
        self.env_info = {}
        self.t0 = time.time()
        self.dlhook = os.path.join(self.root, "dlhook")
        self.lib = os.path.join(self.root, "libdlhook.so")
        self.ldpath = ""
        self.torch_ldpath = ""
        self.python = args.python

    # ------------------------------------------------------------------ bookkeeping
    def check(self, cid, part, title, status, detail="", **figs):
        assert status in ("pass", "fail", "skip")
        c = {"id": cid, "part": part, "title": title, "status": status, "detail": detail}
        if figs:
            c["figures"] = figs
        self.checks.append(c)
        print("  %-4s %-32s %s" % (status.upper(), cid, detail), flush=True)
        return status == "pass"

    def skip_all(self, part, items, reason):
        for cid, title in items:
            self.check(cid, part, title, "skip", reason)

    def elapsed(self):
        return time.time() - self.t0

    def log_path(self, name):
        return os.path.join(self.logs, name + ".log")

    def run(self, name, cmd, env=None, timeout=300, cwd=None):
        """Runs cmd with stdout+stderr to logs/name.log; returns (rc, output text, seconds)."""
        e = dict(os.environ)
        if env:
            e.update(env)
        t = time.time()
        with open(self.log_path(name), "w") as lf:
            lf.write("$ %s\n" % " ".join(cmd))
            lf.flush()
            try:
                p = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, env=e,
                                   timeout=timeout, cwd=cwd or self.out)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc = 124
                lf.write("\n[timed out after %ds]\n" % timeout)
            except OSError as ex:
                rc = 127
                lf.write("\n[cannot run: %s]\n" % ex)
        with open(self.log_path(name)) as lf:
            text = lf.read()
        return rc, text, time.time() - t

    def env_cuda(self, extra=None):
        """Environment for a program on the real (or simulated) CUDA stack."""
        e = {}
        if self.a.sim:
            sim = os.path.join(self.root, "simcuda")
            e["LD_LIBRARY_PATH"] = sim + (":" + os.environ["LD_LIBRARY_PATH"]
                                          if os.environ.get("LD_LIBRARY_PATH") else "")
        elif self.ldpath:
            old = os.environ.get("LD_LIBRARY_PATH")
            e["LD_LIBRARY_PATH"] = self.ldpath + (":" + old if old else "")
        e["DLHOOK_QUIET"] = "1"
        if extra:
            e.update(extra)
        return e

    def env_torch(self):
        """Environment for the PyTorch runs: the caller's, plus the CUPTI directory."""
        if self.a.sim:
            # as tests/simcuda/run: the audit module loads the simulated libraries in place of
            # the wheel's own (DT_RPATH, opened by full path)
            e = self.env_cuda()
            audit = os.path.join(self.root, "simcuda", "simcuda-audit.so")
            if os.path.isfile(audit):
                e["LD_AUDIT"] = audit
            return e
        e = {"DLHOOK_QUIET": "1"}
        if self.torch_ldpath:
            old = os.environ.get("LD_LIBRARY_PATH")
            e["LD_LIBRARY_PATH"] = self.torch_ldpath + (":" + old if old else "")
        return e

    def record(self, name, cmd, outdir, extra_env=None, timeout=300, env=None):
        """dlhook record -o outdir [--sim] -- cmd; returns (rc, traces, output)."""
        shutil.rmtree(outdir, ignore_errors=True)
        full = [self.dlhook, "record", "-o", outdir] + (["--sim"] if self.a.sim else []) + ["--"] + cmd
        env = dict(env) if env is not None else self.env_cuda(extra_env)
        if self.a.sim:
            env.pop("LD_LIBRARY_PATH", None)  # record --sim sets it
        rc, text, secs = self.run(name, full, env=env, timeout=timeout)
        traces = sorted(glob.glob(os.path.join(outdir, "*.dlh")))
        return rc, traces, text

    def dump(self, name, traces):
        """All events of traces (dlhook dump), grouped by type."""
        path = os.path.join(self.out, name + ".jsonl")
        with open(path, "w") as f:
            p = subprocess.run([self.dlhook, "dump"] + traces, stdout=f, stderr=subprocess.PIPE)
        ev = {}
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                ev.setdefault(o.get("type"), []).append(o)
        if not self.a.keep_dumps:
            os.unlink(path)
        return p.returncode, ev

    def stats_json(self, name, traces):
        path = os.path.join(self.out, name + ".stats.json")
        with open(path, "w") as f:
            p = subprocess.run([self.dlhook, "stats", "--json"] + traces, stdout=f,
                               stderr=subprocess.DEVNULL)
        try:
            with open(path) as f:
                return json.load(f) if p.returncode == 0 else None
        except ValueError:
            return None

    def memory_peak(self, name, traces):
        """peak_bytes of the GPU memory ledger (dlhook stats --memory --json); None if absent."""
        p = subprocess.run([self.dlhook, "stats", "--memory", "--json"] + traces,
                           capture_output=True, text=True)
        try:
            v = json.loads(p.stdout).get("peak_bytes") if p.returncode == 0 else None
        except ValueError:
            return None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    # ------------------------------------------------------------------ environment
    def setup(self):
        os.makedirs(self.logs, exist_ok=True)
        inf = self.env_info
        inf["mode"] = "sim" if self.a.sim else "gpu"
        inf["root"] = self.root
        inf["host"] = platform.node()
        inf["glibc"] = platform.libc_ver()[1] or "?"
        inf["python"] = platform.python_version()
        bt = os.path.join(self.root, "BUNDLE.txt")
        if os.path.isfile(bt):
            with open(bt) as f:
                for line in f:
                    if line.startswith(("built:", "source:")):
                        inf["bundle_" + line.split(":")[0]] = line.split(":", 1)[1].strip()
        ok = os.path.isfile(self.dlhook) and os.path.isfile(self.lib)
        if not ok:
            print("gpu-acceptance: no dlhook/libdlhook.so in %s (run make gpu-bundle)" % self.root,
                  file=sys.stderr)
            return False
        if self.a.sim:
            inf["gpu"] = "simulated CUDA stack (%s)" % os.path.join(self.root, "simcuda")
            return True
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
            inf["gpu"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() \
                else "nvidia-smi failed"
        except (OSError, subprocess.TimeoutExpired):
            inf["gpu"] = "nvidia-smi not found"
        # where the CUDA libraries are: the toolkit, and the PyTorch wheels' nvidia-* packages
        cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        toolkit = [os.path.join(cuda_home, d) for d in ("lib64", "extras/CUPTI/lib64",
                                                        "targets/x86_64-linux/lib")]
        wheels = []
        try:
            q = subprocess.run([self.python, "-c",
                                "import site,sys; print('\\n'.join(site.getsitepackages()))"],
                               capture_output=True, text=True, timeout=60)
            for sp in q.stdout.split():
                wheels += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
                wheels += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib64")))
        except (OSError, subprocess.TimeoutExpired):
            pass

        def where(so, dirs):
            for d in dirs:
                if os.path.exists(os.path.join(d, so)):
                    return d
            return None
        # examples/ and tests/progs were linked against the toolkit: toolkit first
        found, path = {}, []
        for so in CUDA_SONAMES:
            d = where(so, toolkit + wheels)
            if d:
                found[so] = d
                if d not in path:
                    path.append(d)
        inf["cuda_libs"] = found
        self.ldpath = ":".join(path)
        # PyTorch runs keep PyTorch's own libraries; dlhook gets the CUPTI of PyTorch's wheels
        # (the one torch.profiler uses), else the toolkit's
        d = where("libcupti.so.13", wheels + toolkit)
        self.torch_ldpath = d or ""
        inf["cupti_for_pytorch"] = d or "not found (dlhook looks in its default places)"
        return True

    # ------------------------------------------------------------------ trace analysis
    @staticmethod
    def analyse(ev):
        """Counts and links of one dump: GPU ops to calls, stacks, NVTX steps, kernels per step."""
        api = ev.get("api", [])
        by_corr = {}
        for c in api:
            if c.get("corr"):
                by_corr.setdefault((c.get("pid"), c["corr"]), c)
        gpu = [g for t in ("kernel", "memcpy", "memset") for g in ev.get(t, [])]
        linked = [g for g in gpu if (g.get("pid"), g.get("corr")) in by_corr]
        calls = [by_corr[(g.get("pid"), g.get("corr"))] for g in linked]
        with_stack = [c for c in calls if c.get("stack")]
        steps = {}
        for n in ev.get("nvtx", []):
            m = STEP_RE.match(str((n.get("args") or {}).get("message") or ""))
            if m and n.get("dur_ns") is not None:
                steps[(n.get("pid"), int(m.group(1)))] = n
        per_step, per_step_names, latency = {}, {}, []
        step_list = sorted(steps.items(), key=lambda kv: kv[1]["start_ns"])
        for k in ev.get("kernel", []):
            # a kernel belongs to the step its launching call was made in (else: where it ran)
            c = by_corr.get((k.get("pid"), k.get("corr")))
            t = c["start_ns"] if c else k.get("start_ns", -1)
            if c and k.get("start_ns") is not None:
                latency.append(k["start_ns"] - c["start_ns"])
            for (pid, num), n in step_list:
                # any thread of the process: PyTorch launches backward kernels from its
                # autograd thread; steps do not overlap (each ends with a synchronisation)
                if pid == k.get("pid") and n["start_ns"] <= t <= n["start_ns"] + n["dur_ns"]:
                    per_step[num] = per_step.get(num, 0) + 1
                    nm = per_step_names.setdefault(num, {})
                    nm[k.get("name")] = nm.get(k.get("name"), 0) + 1
                    break
        procs = ev.get("process", [])
        return {
            "api": sum(c.get("count", 1) for c in api),  # calls: folded events count N
            "gpu": len(gpu), "kernels": len(ev.get("kernel", [])),
            "linked": len(linked), "calls": calls, "with_stack": len(with_stack),
            "steps": sorted(n for (_, n) in steps), "per_step": per_step,
            "per_step_names": per_step_names, "launch_latency_ns": latency,
            "stacks_mode": procs[0].get("stacks_mode", "none") if procs else "none",
            "dropped": sum(s.get("dropped", 0) for s in ev.get("summary", [])),
        }

    def has_export(self):
        p = subprocess.run([self.dlhook, "export", "--help"], capture_output=True, text=True)
        return p.returncode == 0 and "--format" in (p.stdout + p.stderr)

    def exports(self, cid, part, traces, dest):
        if not self.has_export():
            return self.check(cid, part, "exports produced", "skip",
                              "feature missing: dlhook export")
        os.makedirs(dest, exist_ok=True)
        made, bad = [], []
        for fmt, name, is_dir in EXPORT_FORMATS:
            o = os.path.join(dest, name)
            rc, text, _ = self.run("%s-%s" % (cid, fmt),
                                   [self.dlhook, "export", "-q", "--format", fmt, "-o", o] + traces,
                                   timeout=300)
            size = 0
            if is_dir:
                for r, _, fs in os.walk(o):
                    size += sum(os.path.getsize(os.path.join(r, f)) for f in fs)
            elif os.path.isfile(o):
                size = os.path.getsize(o)
            if rc == 0 and size > 0:
                made.append("%s %dK" % (fmt, (size + 1023) // 1024))
            else:
                bad.append("%s (exit %d, %d bytes)" % (fmt, rc, size))
        if bad:
            return self.check(cid, part, "exports produced", "fail", "failed: " + ", ".join(bad))
        return self.check(cid, part, "exports produced", "pass", ", ".join(made))

    # ------------------------------------------------------------------ part 1
    def part1(self):
        print("part 1: examples/train and test programs under dlhook", flush=True)
        steps = self.a.train_steps
        for variant, exe in (("shared", "train"), ("static", "train-static")):
            p = "train-" + variant
            items = [(p + ".runs", "runs under dlhook, trace written"),
                     (p + ".kernels", "kernels recorded"),
                     (p + ".linked", "every GPU op linked to its call"),
                     (p + ".stacks", "every linked call has a stack"),
                     (p + ".nvtx_steps", "NVTX ProfilerStep ranges present"),
                     (p + ".exports", "exports produced")]
            if self.a.sim and variant == "static":
                self.skip_all(1, items, "static cudart cannot run on the simulator (needs the "
                              "driver's private interfaces); traced through CUPTI on a GPU")
                continue
            path = os.path.join(self.root, "examples", exe)
            if not os.path.isfile(path):
                self.skip_all(1, items, "%s not in the bundle" % path)
                continue
            tdir = os.path.join(self.out, p)
            rc, traces, text = self.record(p, [path, "--steps", str(steps)], tdir, timeout=300)
            if rc != 0 or not traces:
                self.check(items[0][0], 1, items[0][1], "fail",
                           "exit %d, %d trace(s); see logs/%s.log" % (rc, len(traces), p))
                self.skip_all(1, items[1:], "no trace")
                continue
            self.check(items[0][0], 1, items[0][1], "pass", "%d trace(s)" % len(traces))
            drc, ev = self.dump(p, traces)
            s = self.analyse(ev)
            self.stats_json(p, traces)
            per = [s["per_step"].get(i, 0) for i in s["steps"]]
            self.figures[p] = {"api_calls": s["api"], "gpu_ops": s["gpu"], "kernels": s["kernels"],
                               "steps": len(s["steps"]), "kernels_per_step": per,
                               "stacks_mode": s["stacks_mode"], "dropped": s["dropped"]}
            self.check(items[1][0], 1, items[1][1], "pass" if s["kernels"] > 0 else "fail",
                       "%d kernels, %d GPU ops, %d calls; kernels per step %s"
                       % (s["kernels"], s["gpu"], s["api"], summarise(per)))
            self.check(items[2][0], 1, items[2][1],
                       "pass" if s["gpu"] and s["linked"] == s["gpu"] else "fail",
                       "%d of %d GPU ops linked" % (s["linked"], s["gpu"]))
            if s["stacks_mode"] in ("none", "") and s["with_stack"] == 0:
                self.check(items[3][0], 1, items[3][1], "skip", "feature missing: stacks")
            else:
                self.check(items[3][0], 1, items[3][1],
                           "pass" if s["linked"] and s["with_stack"] == s["linked"] else "fail",
                           "%d of %d linked calls have a stack (mode %s)"
                           % (s["with_stack"], s["linked"], s["stacks_mode"]))
            self.check(items[4][0], 1, items[4][1],
                       "pass" if s["steps"] == list(range(steps)) else "fail",
                       "%d of %d steps" % (len(s["steps"]), steps))
            self.exports(items[5][0], 1, traces, os.path.join(self.out, p + "-export"))
        self.progs()

    def progs(self):
        """The end-to-end test programs: output and exit code unchanged, calls recorded."""
        base = os.path.join(self.root, "tests", "progs")
        cc = os.path.join(base, "cudart_calls")
        if os.path.isfile(cc):
            rc0, bare, _ = self.run("cudart_calls-bare", [cc], env=self.env_cuda())
            tdir = os.path.join(self.out, "cudart_calls")
            rc1, traces, _ = self.record("cudart_calls", [cc], tdir)
            prog = re.compile(r"^\w+ -> ")  # the program's own lines, not dlhook's
            out0 = [l for l in bare.splitlines() if prog.match(l)]
            with open(self.log_path("cudart_calls")) as f:
                out1 = [l for l in f.read().splitlines() if prog.match(l)]
            names = {}
            if traces:
                _, ev = self.dump("cudart_calls", traces)
                for c in ev.get("api", []):  # a folded event stands for `count` calls
                    names[c["name"]] = names.get(c["name"], 0) + c.get("count", 1)
            want = {"cudaGetDeviceCount": 3, "cudaMalloc": 2, "cudaGetLastError": 5}
            got = {k: names.get(k, 0) for k in want}
            ok = rc0 == rc1 == 7 and out0 == out1 and len(out0) > 10 and got == want
            self.check("progs.cudart_calls", 1, "test program: output, exit code, calls",
                       "pass" if ok else "fail",
                       "exit %d/%d (want 7), output %s, counts %s" %
                       (rc0, rc1, "same" if out0 == out1 else "DIFFERENT", got))
        else:
            self.check("progs.cudart_calls", 1, "test program: output, exit code, calls", "skip",
                       "not in the bundle")
        nv = os.path.join(base, "nvcc_shared")
        if os.path.isfile(nv):
            tdir = os.path.join(self.out, "nvcc_shared")
            rc, traces, _ = self.record("nvcc_shared", [nv], tdir)
            s = self.analyse(self.dump("nvcc_shared", traces)[1]) if traces else None
            ok = rc == 0 and s and s["kernels"] == 4 and s["linked"] == s["gpu"]
            self.check("progs.nvcc_shared", 1, "test program: <<<>>> launches linked",
                       "pass" if ok else "fail",
                       "exit %d, %s kernels (want 4), %s of %s GPU ops linked"
                       % (rc, s and s["kernels"], s and s["linked"], s and s["gpu"]))

    # ------------------------------------------------------------------ parts 2 and 3
    # The checks of the first workload (the transformer) keep their plain ids (torch.*,
    # compare.*, overhead.*); the other workloads' ids start with the workload's name (cnn.*).
    TORCH_ITEMS2 = [("torch.runs", "train_torch.py runs under dlhook record"),
                    ("torch.cublaslt_shapes", "cuBLASLt matmuls recorded with m, n, k"),
                    ("torch.kernels_per_step", "kernels per step recorded"),
                    ("torch.linked", "every GPU op linked to its call"),
                    ("torch.timestamps", "GPU timestamps in the CPU timebase (kernel after its launch)"),
                    ("torch.python_frames", "Python frames in the stacks"),
                    ("torch.memory_peak", "memory ledger peak"),
                    ("torch.exports", "Kineto and TensorBoard exports of the PyTorch trace"),
                    ("torch.hta", "HTA runs every analysis on the Kineto export")]
    TORCH_ITEMS3 = [("torchprof.trace", "train_torch.py under torch.profiler"),
                    ("compare.kernels_per_step", "kernels per step: dlhook = torch.profiler"),
                    ("compare.kernel_names", "kernel counts per name: dlhook = torch.profiler"),
                    ("overhead.ratios", "step time: dlhook vs torch.profiler vs bare"),
                    ("overhead.target", "dlhook costs less step time than torch.profiler")]

    def cid(self, wl, cid):
        return cid if wl == self.workloads[0] else "%s.%s" % (wl, cid)

    def items(self, wl, items):
        return [(self.cid(wl, c), ("%s: %s" % (wl, t)) if wl != self.workloads[0] else t)
                for c, t in items]

    def torch_ok(self):
        if self.a.sim and not self.a.torch_on_sim:
            return "--sim: needs PyTorch and a GPU"
        q = subprocess.run([self.python, "-c",
                            "import torch; print(torch.__version__, torch.version.cuda, "
                            "torch.cuda.is_available(), torch.cuda.device_count())"],
                           capture_output=True, text=True, env=dict(os.environ, **self.env_torch()))
        if q.returncode != 0:
            return "PyTorch not importable with %s" % self.python
        v = q.stdout.split()
        self.env_info["torch"] = "%s (CUDA %s)" % (v[0], v[1]) if len(v) >= 2 else q.stdout.strip()
        if len(v) < 3 or v[2] != "True":
            return "PyTorch sees no CUDA device"
        self.env_info["cuda_devices"] = int(v[3]) if len(v) > 3 and v[3].isdigit() else 1
        return None

    def torch_cmd(self, wl, mode, steps, warmup, js, trace=None):
        c = [self.python, os.path.join(HERE, "train_torch.py"), "--model", wl, "--mode", mode,
             "--steps", str(steps), "--warmup", str(warmup), "--json", js]
        if self.a.torch_batch:
            c += ["--batch", str(self.a.torch_batch)]
        if trace:
            c += ["--trace", trace]
        return c

    def torch_parts(self):
        why = self.torch_ok()
        for wl in self.workloads:
            if why:
                self.skip_all(2, self.items(wl, self.TORCH_ITEMS2), why)
                self.skip_all(3, self.items(wl, self.TORCH_ITEMS3), why)
                continue
            if self.part2(wl):
                self.part3(wl)
        if not why and self.env_info.get("cuda_devices", 1) < 2:
            self.check("ddp.two_ranks", 3, "2-process DDP (NCCL) under dlhook", "skip",
                       "one GPU: NCCL needs a device per rank (tests/torch/t_torch_ddp.sh covers "
                       "it on the simulator)")
        elif not why:
            self.ddp()

    def ddp(self):
        """torchrun with 2 ranks (one GPU each), DistributedDataParallel over NCCL."""
        tdir = os.path.join(self.out, "ddp-dlhook")
        torchrun = os.path.join(os.path.dirname(self.python), "torchrun")
        cmd = ([torchrun] if os.path.isfile(torchrun) else [self.python, "-m", "torch.distributed.run"]) + \
            ["--standalone", "--nproc-per-node", "2", os.path.join(HERE, "train_torch.py"),
             "--ddp", "--steps", "30", "--warmup", "5", "--json", os.path.join(self.out, "ddp.json")]
        rc, traces, _ = self.record("ddp-dlhook", cmd, tdir, timeout=420, env=self.env_torch())
        names = {}
        for t in traces:
            _, ev = self.dump("ddp-" + os.path.basename(t), [t])
            for c in ev.get("api", []):
                if c.get("name", "").startswith("nccl"):
                    names[c["name"]] = names.get(c["name"], 0) + c.get("count", 1)
        ok = rc == 0 and len(traces) >= 2 and names.get("ncclAllReduce", 0) > 0
        self.check("ddp.two_ranks", 3, "2-process DDP (NCCL) under dlhook", "pass" if ok else "fail",
                   "exit %d, %d traces, NCCL calls %s" % (rc, len(traces), names))

    def part2(self, wl):
        print("part 2: PyTorch (%s) under dlhook record" % wl, flush=True)
        I = self.items(wl, self.TORCH_ITEMS2)
        st, wu = self.a.torch_steps, self.a.warmup
        tdir = os.path.join(self.out, "%s-dlhook" % wl)
        js = os.path.join(self.out, "%s-dlhook.json" % wl)
        rc, traces, text = self.record("%s-dlhook" % wl, self.torch_cmd(wl, "bare", st, wu, js), tdir,
                                       timeout=420, env=self.env_torch())
        self.dl_per_step, self.dl_names = None, None
        if rc != 0 or not traces:
            self.check(I[0][0], 2, I[0][1], "fail",
                       "exit %d, %d trace(s); see logs/%s-dlhook.log" % (rc, len(traces), wl))
            self.skip_all(2, I[1:], "no trace")
            return True
        self.check(I[0][0], 2, I[0][1], "pass",
                   "%d trace(s) (main process and any CUDA-using child)" % len(traces))
        _, ev = self.dump("%s-dlhook" % wl, traces)
        s = self.analyse(ev)
        stats = self.stats_json("%s-dlhook" % wl, traces)
        # cuBLASLt matmuls and their shapes
        lt = [c for c in ev.get("api", []) if c.get("name") == "cublasLtMatmul"]
        shaped = [c for c in lt if all(k in (c.get("args") or {}) for k in ("m", "n", "k"))]
        shapes = {}
        for c in shaped:
            a = c["args"]
            key = "%sx%sx%s" % (a["m"], a["n"], a["k"])
            shapes[key] = shapes.get(key, 0) + c.get("count", 1)
        top = sorted(shapes.items(), key=lambda kv: -kv[1])[:6]
        gemm = sum(c.get("count", 1) for c in ev.get("api", [])
                   if re.match(r"cublas.*[Gg]emm", c.get("name", "")))
        fig = self.figures.setdefault("torch_dlhook", {})[wl] = {
            "api_calls": s["api"], "kernels": s["kernels"],
            "cublasLtMatmul": sum(c.get("count", 1) for c in lt),
            "with_mnk": sum(c.get("count", 1) for c in shaped), "cublas_gemm_calls": gemm, "shapes": dict(top),
            "stacks_mode": s["stacks_mode"], "dropped": s["dropped"]}
        if not lt:
            self.check(I[1][0], 2, I[1][1], "fail" if wl == "transformer" else "skip",
                       "no cublasLtMatmul call recorded (%d cuBLAS GEMM calls)" % gemm)
        elif not shaped:
            self.check(I[1][0], 2, I[1][1], "skip",
                       "feature missing: library arguments (%d cublasLtMatmul calls, no m/n/k)" % len(lt))
        else:
            self.check(I[1][0], 2, I[1][1], "pass" if len(shaped) == len(lt) else "fail",
                       "%d of %d cublasLtMatmul with m,n,k; top shapes %s"
                       % (len(shaped), len(lt), ", ".join("%s x%d" % kv for kv in top)))
        per = {n: s["per_step"].get(n, 0) for n in s["steps"] if n >= wu}
        self.dl_per_step = per
        self.check(I[2][0], 2, I[2][1], "pass" if per and min(per.values()) > 0 else "fail",
                   "%d steps; kernels per step %s" % (len(per), summarise(list(per.values()))))
        self.check(I[3][0], 2, I[3][1], "pass" if s["gpu"] and s["linked"] == s["gpu"] else "fail",
                   "%d of %d GPU ops linked" % (s["linked"], s["gpu"]))
        lat = s["launch_latency_ns"]
        if not lat:
            self.check(I[4][0], 2, I[4][1], "fail", "no linked kernel")
        else:
            neg = sum(1 for d in lat if d < 0)
            q = sorted(lat)
            fig["launch_to_start_ns"] = {"median": q[len(q) // 2], "p99": q[int(len(q) * 0.99)],
                                         "max": q[-1], "min": q[0], "before_launch": neg}
            self.check(I[4][0], 2, I[4][1], "pass" if neg == 0 else "fail",
                       "%d kernels; launch call start -> kernel start: median %.1f us, p99 %.1f us, "
                       "min %.1f us; %d kernels start before their launch"
                       % (len(q), q[len(q) // 2] / 1e3, q[int(len(q) * 0.99)] / 1e3, q[0] / 1e3, neg))
        # Python frames of train_torch.py in the stacks of the calls that launched GPU work
        pyc = [c for c in s["calls"] if any(f.get("python") for f in c.get("stack") or [])]
        ours = [c for c in pyc if any(f.get("python") and "train_torch.py" in str(f.get("file"))
                                      for f in c.get("stack") or [])]
        if s["stacks_mode"] not in ("python", "mixed") and not pyc:
            self.check(I[5][0], 2, I[5][1], "skip",
                       "feature missing: Python stacks (stacks mode %s)" % s["stacks_mode"])
        else:
            ncalls = len(s["calls"]) or 1
            self.check(I[5][0], 2, I[5][1], "pass" if ours else "fail",
                       "%d of %d GPU-linked calls have train_torch.py frames (%.0f%%), mode %s"
                       % (len(ours), len(s["calls"]), 100.0 * len(ours) / ncalls, s["stacks_mode"]))
        peak = self.memory_peak("%s-dlhook" % wl, traces)
        if peak is None:
            peak = find_peak(stats)
        if peak is None:
            self.check(I[6][0], 2, I[6][1], "skip",
                       "feature missing: memory ledger (no peak in dlhook stats --json)")
        else:
            fig["memory_peak_bytes"] = peak
            self.check(I[6][0], 2, I[6][1], "pass" if peak > 0 else "fail",
                       "peak %.1f MiB" % (peak / 2**20))
        kin = self.torch_exports(wl, I[7], I[8], traces, stats, len(s["steps"]))
        # kernel names as a Kineto reader sees them: dlhook's Kineto export, read by the same
        # function as torch.profiler's trace (names demangled alike, steps from user annotations)
        self.dl_names = None
        for f in sorted(glob.glob(os.path.join(kin or "/nonexistent", "*.json*"))):
            try:
                self.dl_names = torchprof_per_step(f)[1]
            except (OSError, ValueError, KeyError) as ex:
                print("  cannot read %s: %s" % (f, ex), flush=True)
            break
        return True

    def torch_exports(self, wl, item_exp, item_hta, traces, stats, nsteps):
        """Kineto JSON and TensorBoard exports of the PyTorch trace (kept under OUT for the
        offline checks: scripts/gpu/offline-checks runs HTA and xprof on them where those are
        installed); HTA here too if this Python has it."""
        dest = os.path.join(self.out, "%s-export" % wl)
        os.makedirs(dest, exist_ok=True)
        made, bad = [], []
        for fmt, name in (("kineto", "kineto"), ("tensorboard", "tensorboard")):
            o = os.path.join(dest, name)
            rc, _, _ = self.run("%s-export-%s" % (wl, fmt),
                                [self.dlhook, "export", "-q", "--format", fmt, "-o", o] + traces)
            size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(o) for f in fs)
            (made if rc == 0 and size else bad).append("%s %dK" % (fmt, (size + 1023) // 1024))
        with open(os.path.join(dest, "stats.json"), "w") as f:
            json.dump({"0": stats} if len(traces) == 1 else {}, f)
        self.check(item_exp[0], 2, item_exp[1], "fail" if bad else "pass",
                   ("failed: " + ", ".join(bad)) if bad else ", ".join(made) + "; in %s" % dest)
        kin = os.path.join(dest, "kineto")
        hta = os.path.join(HERE, "hta_analyses.py")  # the bundle's copy
        if not os.path.isfile(hta):
            hta = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "export",
                               "hta_analyses.py")
        q = subprocess.run([self.python, "-c", "import hta, pandas; print('hta-ok')"],
                           capture_output=True, text=True)
        have = q.returncode == 0 and "hta-ok" in q.stdout
        if bad or not have or not os.path.isfile(hta) or len(traces) != 1:
            self.check(item_hta[0], 2, item_hta[1], "skip",
                       "HTA not installed for %s: run scripts/gpu/offline-checks on this folder "
                       "where it is" % self.python if not have else
                       "no export or more than one process")
            return kin
        rc, text, _ = self.run("%s-hta" % wl, [self.python, hta, os.path.join(dest, "kineto"),
                                               os.path.join(dest, "stats.json"), str(nsteps)],
                               timeout=600)
        self.check(item_hta[0], 2, item_hta[1], "pass" if rc == 0 and "HTA OK" in text else "fail",
                   "; ".join(l.strip() for l in text.splitlines()
                             if "kernels covered" in l or "critical path" in l)[:300]
                   or "exit %d; see logs/%s-hta.log" % (rc, wl))
        return kin

    def part3(self, wl):
        print("part 3: torch.profiler (%s) and bare, overhead" % wl, flush=True)
        I = self.items(wl, self.TORCH_ITEMS3)
        st, wu = min(self.a.torchprof_steps, self.a.torch_steps), self.a.warmup
        js = os.path.join(self.out, "%s-torchprof.json" % wl)
        tr = os.path.join(self.out, "%s-torchprof.trace.json" % wl)
        rc, _, _ = self.run("%s-torchprof" % wl, self.torch_cmd(wl, "torchprof", st, wu, js, tr),
                            env=self.env_torch(), timeout=420)
        tp = tpn = None
        if rc == 0 and os.path.isfile(tr):
            tp, tpn = torchprof_per_step(tr)
            self.check(I[0][0], 3, I[0][1], "pass",
                       "%d kernels in %d steps" % (sum(tp.values()), len(tp)))
        else:
            self.check(I[0][0], 3, I[0][1], "fail", "exit %d; see logs/%s-torchprof.log" % (rc, wl))
        if not self.a.keep_dumps and os.path.isfile(tr):
            subprocess.run(["gzip", "-f", tr])
        dl, dln = self.dl_per_step, self.dl_names
        if tp is None or not dl:
            why = "no %s per-step kernel counts" % ("torch.profiler" if tp is None else "dlhook")
            self.skip_all(3, I[1:3], why)
        else:
            tpw = {n: v for n, v in tp.items() if n >= wu}
            common = sorted(set(tpw) & set(dl))
            same = [n for n in common if tpw[n] == dl[n]]
            diff = ["#%d %d/%d" % (n, dl[n], tpw[n]) for n in common if tpw[n] != dl[n]][:5]
            mdl = statistics.median([dl[n] for n in common]) if common else 0
            mtp = statistics.median([tpw[n] for n in common]) if common else 0
            self.figures.setdefault("kernels_per_step", {})[wl] = {
                "dlhook_median": mdl, "torch_profiler_median": mtp,
                "steps_compared": len(common), "steps_equal": len(same)}
            ok = common and len(same) == len(common)
            self.check(I[1][0], 3, I[1][1], "pass" if ok else "fail",
                       "median %s (dlhook) vs %s (torch.profiler); %d of %d steps equal%s"
                       % (fmtn(mdl), fmtn(mtp), len(same), len(common),
                          "; differ (dlhook/torch): " + ", ".join(diff) if diff else ""))
            # kernel counts per name over the same steps
            a, b = {}, {}
            dln = dln or {}
            for n in common:
                for k, v in dln.get(n, {}).items():
                    a[k] = a.get(k, 0) + v
                for k, v in tpn.get(n, {}).items():
                    b[k] = b.get(k, 0) + v
            names = sorted(set(a) | set(b))
            differ = [(k, a.get(k, 0), b.get(k, 0)) for k in names if a.get(k, 0) != b.get(k, 0)]
            self.figures.setdefault("kernel_names", {})[wl] = {
                "names": len(names), "differ": [{"name": k, "dlhook": x, "torch_profiler": y}
                                                for k, x, y in differ]}
            self.check(I[2][0], 3, I[2][1], "pass" if names and not differ else "fail",
                       "%d kernel names, %d kernels over %d steps; %d names differ%s"
                       % (len(names), sum(a.values()), len(common), len(differ),
                          (": " + "; ".join("%s %d/%d" % (k[:60], x, y) for k, x, y in differ[:4]))
                          if differ else ""))
        self.overhead(wl, I[3:5])

    def overhead(self, wl, items):
        """Alternating runs of bare, dlhook (default stacks and none), torch.profiler without
        and with stacks."""
        st, wu, rounds = self.a.overhead_steps, self.a.warmup, self.a.rounds
        modes = ["bare", "dlhook", "dlhook-none", "torchprof", "torchprof-stack"]
        med = {m: [] for m in modes}
        budget = self.a.budget * (self.workloads.index(wl) + 1) / len(self.workloads)
        for r in range(rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                if self.elapsed() > budget - 30:
                    break
                js = os.path.join(self.out, "overhead-%s-%s-%d.json" % (wl, m, r))
                name = "overhead-%s-%s-%d" % (wl, m, r)
                if m.startswith("dlhook"):
                    tdir = os.path.join(self.out, "overhead-traces", "r%d" % r)
                    env = dict(self.env_torch())
                    if m == "dlhook-none":
                        env["DLHOOK_STACKS"] = "none"
                    rc, _, _ = self.record(name, self.torch_cmd(wl, "bare", st, wu, js), tdir,
                                           timeout=300, env=env)
                    shutil.rmtree(tdir, ignore_errors=True)
                else:
                    rc, _, _ = self.run(name, self.torch_cmd(wl, m, st, wu, js), env=self.env_torch(),
                                        timeout=300)
                try:
                    with open(js) as f:
                        med[m].append(json.load(f)["median_step_ms"])
                except (OSError, ValueError, KeyError):
                    pass
        shutil.rmtree(os.path.join(self.out, "overhead-traces"), ignore_errors=True)
        got = {m: statistics.median(v) for m, v in med.items() if v}
        runs = {m: len(v) for m, v in med.items()}
        if "bare" not in got or len(got) < len(modes):
            self.check(items[0][0], 3, items[0][1], "fail",
                       "runs that gave step times: %s (see logs/overhead-%s-*)" % (runs, wl))
            self.check(items[1][0], 3, items[1][1], "skip", "no ratios")
            return
        b = got["bare"]
        ratio = {m: got[m] / b for m in modes}
        self.figures.setdefault("overhead", {})[wl] = {
            "median_step_ms": got, "ratio_to_bare": ratio, "runs": runs, "steps_per_run": st,
            "warmup": wu, "dlhook_stacks_mode":
            self.figures.get("torch_dlhook", {}).get(wl, {}).get("stacks_mode")}
        self.check(items[0][0], 3, items[0][1], "pass",
                   "median step %.3f ms bare; x%.3f dlhook, x%.3f dlhook stacks none, x%.3f "
                   "torch.profiler, x%.3f torch.profiler+stack (%d rounds)"
                   % (b, ratio["dlhook"], ratio["dlhook-none"], ratio["torchprof"],
                      ratio["torchprof-stack"], min(runs.values())))
        self.check(items[1][0], 3, items[1][1],
                   "pass" if got["dlhook"] < got["torchprof"] else "fail",
                   "dlhook %.3f ms vs torch.profiler %.3f ms per step"
                   % (got["dlhook"], got["torchprof"]))

    # ------------------------------------------------------------------ summary
    def write_summary(self):
        n = {s: sum(1 for c in self.checks if c["status"] == s) for s in ("pass", "fail", "skip")}
        doc = {"dlhook_acceptance": 1, "mode": self.env_info.get("mode"),
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.t0)),
               "elapsed_s": round(self.elapsed(), 1), "environment": self.env_info,
               "counts": n, "checks": self.checks, "figures": self.figures}
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
        L = []
        L.append("# dlhook acceptance (%s)" % ("simulator" if self.a.sim else "GPU"))
        L.append("")
        L.append("%s; %.0f s; **%d passed, %d failed, %d skipped**"
                 % (doc["date"], doc["elapsed_s"], n["pass"], n["fail"], n["skip"]))
        L.append("")
        inf = self.env_info
        env = ["GPU: %s" % inf.get("gpu", "?"), "glibc %s" % inf.get("glibc", "?"),
               "Python %s" % inf.get("python", "?")]
        if inf.get("torch"):
            env.append("PyTorch %s" % inf["torch"])
        if inf.get("bundle_built"):
            env.append("bundle built %s" % inf["bundle_built"])
        if inf.get("bundle_source"):
            env.append("source %s" % inf["bundle_source"])
        L.append("; ".join(env))
        L.append("")
        L.append("| part | check | result | detail |")
        L.append("|---|---|---|---|")
        rows = []  # consecutive skips for the same reason share a row
        for c in self.checks:
            if rows and c["status"] == "skip" and rows[-1][2] == "skip" and \
                    rows[-1][3] == c["detail"] and rows[-1][0] == c["part"]:
                rows[-1][1].append(c["id"])
            else:
                rows.append([c["part"], [c["id"]], c["status"], c["detail"]])
        for part, ids, st, detail in rows:
            L.append("| %d | %s | %s | %s |" % (part, ", ".join(ids),
                     {"pass": "pass", "fail": "**FAIL**", "skip": "skip"}[st],
                     detail.replace("|", "/")))
        L.append("")
        kps = self.figures.get("kernels_per_step") or {}
        ovs = self.figures.get("overhead") or {}
        tds = self.figures.get("torch_dlhook") or {}
        kns = self.figures.get("kernel_names") or {}
        if kps or ovs or tds:
            L.append("## Figures")
            L.append("")
        for wl in self.workloads:
            kp, ov, td, kn = kps.get(wl), ovs.get(wl), tds.get(wl), kns.get(wl)
            if not (kp or ov or td):
                continue
            L.append("### %s" % wl)
            L.append("")
            if kp:
                L.append("Kernels per step (median over %d steps): dlhook %s, torch.profiler %s; "
                         "%d steps equal." % (kp["steps_compared"], fmtn(kp["dlhook_median"]),
                                              fmtn(kp["torch_profiler_median"]), kp["steps_equal"]))
                L.append("")
            if kn:
                L.append("Kernel names: %d; counts per name that differ between dlhook and "
                         "torch.profiler: %d." % (kn["names"], len(kn["differ"])))
                if kn["differ"]:
                    L.append("")
                    L.append("| kernel | dlhook | torch.profiler |")
                    L.append("|---|---|---|")
                    for d in kn["differ"][:20]:
                        L.append("| %s | %d | %d |" % (d["name"].replace("|", "/")[:100], d["dlhook"],
                                                     d["torch_profiler"]))
                L.append("")
            if ov:
                L.append("| run | median step (ms) | ratio to bare |")
                L.append("|---|---|---|")
                names = {"bare": "bare",
                         "dlhook": "dlhook record (stacks: %s)" % ov.get("dlhook_stacks_mode"),
                         "dlhook-none": "dlhook record, --stacks none",
                         "torchprof": "torch.profiler (CPU+CUDA)",
                         "torchprof-stack": "torch.profiler, with_stack=True"}
                for m in ("bare", "dlhook", "dlhook-none", "torchprof", "torchprof-stack"):
                    if m in ov["median_step_ms"]:
                        L.append("| %s | %.3f | %.3f |" % (names[m], ov["median_step_ms"][m],
                                                           ov["ratio_to_bare"][m]))
                L.append("")
                L.append("Medians of %s alternating runs of %d steps (first %d not timed)."
                         % (min(ov["runs"].values()), ov["steps_per_run"], ov["warmup"]))
                L.append("")
            if td:
                lat = td.get("launch_to_start_ns")
                L.append("Under dlhook: %d calls, %d kernels, %d cublasLtMatmul (%d with m,n,k), "
                         "stacks %s, %d dropped%s." % (
                             td["api_calls"], td["kernels"], td["cublasLtMatmul"], td["with_mnk"],
                             td["stacks_mode"], td["dropped"],
                             "; launch to kernel start median %.1f us, p99 %.1f us"
                             % (lat["median"] / 1e3, lat["p99"] / 1e3) if lat else ""))
                L.append("")
        L.append("Logs of every command: `logs/`; traces and stats: `*/`, `*.stats.json`.")
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write("\n".join(L) + "\n")
        return n


def summarise(vals):
    if not vals:
        return "-"
    if min(vals) == max(vals):
        return "%d (all %d steps)" % (vals[0], len(vals))
    return "median %s, min %d, max %d" % (fmtn(statistics.median(vals)), min(vals), max(vals))


def fmtn(x):
    return ("%d" % x) if float(x) == int(x) else ("%.1f" % x)


def find_peak(stats):
    """The memory ledger's peak (bytes) in dlhook stats --json: the largest number under a key
    with 'peak' in its name somewhere below a key with 'mem' in its name; None if there is none."""
    found = []

    def walk(o, in_mem):
        if isinstance(o, dict):
            for k, v in o.items():
                k = str(k).lower()
                if in_mem and "peak" in k and isinstance(v, (int, float)) and not isinstance(v, bool):
                    found.append(v)
                walk(v, in_mem or "mem" in k)
        elif isinstance(o, list):
            for v in o:
                walk(v, in_mem)
    walk(stats, False)
    return max(found) if found else None


def torchprof_per_step(path):
    """Kernels per ProfilerStep#N of a torch.profiler Chrome trace, by the launching call's time:
    ({step: count}, {step: {kernel name: count}})."""
    import gzip
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    evs = doc.get("traceEvents", doc) if isinstance(doc, dict) else doc
    steps, launch, kernels = [], {}, []
    for e in evs:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat", "")
        if cat == "user_annotation":
            m = STEP_RE.match(e.get("name", ""))
            if m:
                steps.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)),
                              int(m.group(1)), e.get("tid")))
        elif cat in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launch[c] = (float(e["ts"]), e.get("tid"))
        elif cat == "kernel":
            kernels.append(((e.get("args") or {}).get("correlation"), float(e["ts"]), e.get("name")))
    steps.sort()
    per = {n: 0 for _, _, n, _ in steps}
    names = {n: {} for _, _, n, _ in steps}
    for c, kts, name in kernels:  # by the launching call's time, else where the kernel ran
        ts = launch[c][0] if c in launch else kts
        for s0, s1, n, _ in steps:  # any thread (autograd launches from its own)
            if s0 <= ts <= s1:
                per[n] += 1
                names[n][name] = names[n].get(name, 0) + 1
                break
    return per, names


def main(argv):
    ap = argparse.ArgumentParser(prog="gpu-acceptance",
                                 description="dlhook's acceptance run on a GPU (or --sim)")
    ap.add_argument("outdir")
    ap.add_argument("--sim", action="store_true", help="run part 1 on the simulated CUDA stack")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "python3"),
                    help="the Python with PyTorch (default: python3)")
    ap.add_argument("--train-steps", type=int, default=None, help="examples/train steps (10; sim 4)")
    ap.add_argument("--torch-steps", type=int, default=300, help="train_torch.py steps traced (300)")
    ap.add_argument("--torchprof-steps", type=int, default=100,
                    help="steps of the torch.profiler run whose kernels are compared (100)")
    ap.add_argument("--overhead-steps", type=int, default=200, help="steps per overhead run (200)")
    ap.add_argument("--warmup", type=int, default=20, help="steps not timed or compared (20)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating overhead rounds (3)")
    ap.add_argument("--budget", type=int, default=450, help="seconds; overhead rounds stop early (450)")
    ap.add_argument("--keep-dumps", action="store_true", help="keep the JSON dumps of the traces")
    ap.add_argument("--torch-on-sim", action="store_true",
                    help="tests only: with --sim, run parts 2-3 too, --python being a stand-in")
    ap.add_argument("--workloads", default="transformer,cnn",
                    help="PyTorch workloads of train_torch.py, comma-separated (transformer,cnn)")
    ap.add_argument("--torch-batch", type=int, default=None, help="batch size of the workloads")
    a = ap.parse_args(argv)
    wls = [w for w in a.workloads.split(",") if w]
    if not wls or any(w not in ("transformer", "cnn") for w in wls):
        ap.error("--workloads: transformer and/or cnn")
    if a.train_steps is None:
        a.train_steps = 4 if a.sim else 10
    r = Run(a)
    r.workloads = wls
    if not r.setup():
        return 2
    print("gpu-acceptance: %s, dlhook from %s, output in %s" % (r.env_info["mode"], r.root, r.out),
          flush=True)
    for k in ("gpu", "torch", "cuda_libs"):
        if k in r.env_info:
            print("  %s: %s" % (k, r.env_info[k]))
    r.part1()
    r.torch_parts()
    n = r.write_summary()
    print("gpu-acceptance: %d passed, %d failed, %d skipped in %.0f s; %s"
          % (n["pass"], n["fail"], n["skip"], r.elapsed(), os.path.join(r.out, "summary.md")))
    return 1 if n["fail"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
