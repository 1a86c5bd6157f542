#!/usr/bin/env python3
"""acceptance.py — dlhook's real-GPU acceptance run (scripts/gpu-acceptance OUTDIR [--sim]).

Runs from the gpu-bundle (make gpu-bundle) or from a source tree with build/. Parts:
  1. examples/train (shared and static cudart) and the test programs under dlhook: kernels
     recorded, every GPU op linked to its call and stack, NVTX steps, exports;
  2. scripts/gpu/train_torch.py under `dlhook record`: cuBLASLt matmuls with shapes, kernels per
     step, Python frames in the stacks, memory ledger peak;
  3. the same script under torch.profiler (without and with stacks) and bare: kernels per step
     and per name against torch.profiler, the operator agreement (op_agreement.py), step-time
     overhead ratios (medians of alternating runs: bare, dlhook with stacks none / mixed / mixed
     and host sampling at 200 and 1000 Hz, torch.profiler without and with stacks);
  4. torch_graphs.py: a CUDA graph replayed 100 times and a torch.compile'd block (default and
     reduce-overhead): kernel counts per name against torch.profiler, the share of replayed and
     Triton kernels attributed to an operator, graph node ids and Inductor names when the trace
     has them;
  5. host sampling on a DataLoader-starved workload, `dlhook advise` on the planted-cause
     programs, pageable and pinned host-to-device copy records;
  6. calibration (calibrate.py): the same workloads recorded on the GPU and on the simulator
     (`dlhook record --sim`, in a background thread from the start), every kernel, copy, memset
     and collective matched, simulated / measured per class, step times; the table also goes
     to OUTDIR/simulator-calibration.md, a section for docs/simulator.md;
  7. features.py: NCCL profiler plugin events, memory snapshots against torch's own, the
     "What dlhook cost or lost" section of stats;
  8. features.py: `dlhook advise` on a reduced model zoo (tests/zoo/), judged on this machine's
     timing;
and writes OUTDIR/summary.md and OUTDIR/summary.json: every check (pass / fail / skip with the
reason) and figure, rewritten after each check (--publish DIR: copied there too, with the logs
and the Kineto traces as tarballs at the end of each part), so that a run cut short still
reports. --deadline S (--quick: a preset that fits ~8 minutes on an H200) skips what would not
fit, saying so. With --sim, parts 1 and 5's programs run on the simulated CUDA stack and the
PyTorch parts are skipped (--torch-on-sim runs them with --python). A check that needs a dlhook
feature not built yet reports "skip: feature missing" or "not in this build". Exit status: 0
when no check failed, 1 otherwise, 2 on a usage error. Standard library only (Python 3.8+).
"""
import argparse
import collections
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

import calibrate  # part 6: the simulator's timing against the GPU's (scripts/gpu/calibrate.py)
import features  # parts 7-8: NCCL plugin events, memory snapshots, ring waits, the model zoo

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))  # the bundle, or the source tree
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


def find_file(bundle_rel, source_rel):
    """A file the bundle has at bundle_rel (under TOP) and the source tree at source_rel."""
    for rel in (bundle_rel, source_rel):
        if rel and os.path.isfile(os.path.join(TOP, rel)):
            return os.path.join(TOP, rel)
    return None


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
        self.deadline = args.deadline
        self.publish_dir = os.path.abspath(args.publish) if args.publish else None
        self.parts = set(args.parts.split(","))
        self.workloads = []

    # ------------------------------------------------------------------ bookkeeping
    def check(self, cid, part, title, status, detail="", **figs):
        assert status in ("pass", "fail", "skip")
        c = {"id": cid, "part": part, "title": title, "status": status, "detail": detail}
        if figs:
            c["figures"] = figs
        self.checks.append(c)
        print("  %-4s %-32s %s" % (status.upper(), cid, detail), flush=True)
        self.write_summary()
        self.publish()
        return status == "pass"

    def skip_all(self, part, items, reason):
        for cid, title in items:
            self.check(cid, part, title, "skip", reason)

    def elapsed(self):
        return time.time() - self.t0

    def left(self):
        """Seconds left before --deadline (a large number without one)."""
        return self.deadline - self.elapsed() if self.deadline else 1e9

    def have(self, need, part, items):
        """True when need seconds are left before --deadline; else every check of items skips,
        saying so."""
        if self.left() >= need:
            return True
        self.skip_all(part, items, "out of time: %.0f s left of --deadline %d s, ~%d s needed"
                      % (max(self.left(), 0), self.deadline, need))
        return False

    def tmo(self, t):
        """A command's timeout: t, cut to what is left before --deadline (at least 20 s)."""
        return int(max(20, min(t, self.left() - 5))) if self.deadline else t

    def mark(self, part):
        """The time since the start at which part ended (summary: the timeline, to fit
        --deadline on the next run)."""
        self.figures.setdefault("timeline_s", {})[part] = round(self.elapsed(), 1)

    def publish(self, final=False):
        """Copies the summary to --publish DIR, and (at the end of a part) the logs, dlhook's Kineto
        exports and torch.profiler's traces as three tarballs: 5 files, each under 15 MiB (what
        the device tool brings back: 8 files of 16 MiB)."""
        if not self.publish_dir:
            return
        os.makedirs(self.publish_dir, exist_ok=True)
        for f in ("summary.md", "summary.json", "simulator-calibration.md"):
            src = os.path.join(self.out, f)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(self.publish_dir, f + ".tmp"))
                os.replace(os.path.join(self.publish_dir, f + ".tmp"), os.path.join(self.publish_dir, f))
        if not final:
            return
        small, kineto, torchprof = [], [], []
        for r, ds, fs in os.walk(self.out):
            ds[:] = [d for d in ds if not d.endswith(("-overhead", "overhead-traces"))]
            for f in fs:
                path = os.path.join(r, f)
                rel = os.path.relpath(path, self.out)
                if rel.startswith("logs" + os.sep) or f.endswith((".stats.json", ".advise.json")) or \
                        (r == self.out and f.endswith((".json", ".md", ".txt"))):
                    small.append(rel)
                elif f.endswith((".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json")):
                    (torchprof if "torchprof" in f else kineto).append(rel)
        self.tar("logs.tar.gz", small)
        self.tar("kineto.tar.gz", kineto)
        self.tar("torchprof.tar.gz", torchprof)

    def tar(self, name, rels, limit=15 << 20):
        """publish DIR/name: the files rels (relative to OUTDIR), the largest left out (and listed
        in LEFT-OUT.txt inside) until the whole is under limit bytes."""
        rels = sorted(rels, key=lambda r: os.path.getsize(os.path.join(self.out, r)))
        dest = os.path.join(self.publish_dir, name)
        while True:
            with tarfile.open(dest + ".tmp", "w:gz") as t:
                for r in rels:
                    t.add(os.path.join(self.out, r), arcname=r)
            if os.path.getsize(dest + ".tmp") <= limit or not rels:
                break
            rels = rels[:-1]
        os.replace(dest + ".tmp", dest)

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
            timeout = self.tmo(timeout)
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

    def record(self, name, cmd, outdir, extra_env=None, timeout=300, env=None, opts=()):
        """dlhook record -o outdir [opts] [--sim] -- cmd; returns (rc, traces, output)."""
        shutil.rmtree(outdir, ignore_errors=True)
        full = [self.dlhook, "record", "-o", outdir] + list(opts) + \
            (["--sim"] if self.a.sim else []) + ["--"] + cmd
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
                    ("compare.op_agreement", "operator agreement with torch.profiler (>= 98 %)"),
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
        """Parts 2-3 of each workload; the overhead runs come last (overhead_all)."""
        why = self.torch_why
        for wl in self.workloads:
            if why:
                self.skip_all(2, self.items(wl, self.TORCH_ITEMS2), why)
                self.skip_all(3, self.items(wl, self.TORCH_ITEMS3), why)
                continue
            # ~2 traced runs and their analyses; what is left is kept for the other parts
            if not self.have(60 if self.deadline else 0, 2, self.items(wl, self.TORCH_ITEMS2)):
                self.skip_all(3, self.items(wl, self.TORCH_ITEMS3), "no dlhook run (out of time)")
                continue
            if self.part2(wl):
                self.torch_done.append(wl)
                self.part3(wl)

    def ddp_part(self):
        why = self.torch_why
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
            "stacks_mode": s["stacks_mode"], "dropped": s["dropped"],
            "h2d_src_kinds": dict(collections.Counter(
                MEMORY_KIND.get(m["vals"][2], str(m["vals"][2])) for m in ev.get("memcpy", [])
                if len(m.get("vals") or []) >= 3 and m["vals"][1] == 1))}
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
                   "%d of %d GPU ops linked%s" % (s["linked"], s["gpu"], "; %d records dropped (the ring "
                                                  "was full: calls lost)" % s["dropped"] if s["dropped"] else ""))
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
        # the exports of the main process alone (host sampling leaves the DataLoader worker a
        # trace of its own: HTA would read two files as two ranks)
        main = main_trace(traces, js)
        kin = self.torch_exports(wl, I[7], I[8], main, stats if main == traces else
                                 self.stats_json("%s-dlhook-main" % wl, main), len(s["steps"]))
        # kernel names as a Kineto reader sees them: dlhook's Kineto export, read by the same
        # function as torch.profiler's trace (names demangled alike, steps from user annotations)
        self.dl_names = None
        self.dl_kineto = f = pick_kineto(glob.glob(os.path.join(kin or "/nonexistent", "*.json*")), js)
        if f:
            try:
                self.dl_names = torchprof_per_step(f)[1]
            except (OSError, ValueError, KeyError) as ex:
                print("  cannot read %s: %s" % (f, ex), flush=True)
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
        if tp is not None:
            self.op_agreement(wl, I[3], tr, self.dl_kineto)
        else:
            self.check(I[3][0], 3, I[3][1], "skip", "no torch.profiler trace")
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

    def op_agreement(self, wl, item, ref, ours):
        """op_agreement.py's measure: for each kernel name, the share of its launches attributed
        to each aten op (kernel -> correlation -> launch -> External id -> cpu_op), torch.profiler's
        trace against dlhook's Kineto export, read by the same code."""
        oa = load_op_agreement()
        if oa is None:
            return self.check(item[0], 3, item[1], "skip", "op_agreement.py not in the bundle")
        if not ours:
            return self.check(item[0], 3, item[1], "fail", "no Kineto export of the dlhook trace")
        try:
            fig, total, bad = oa.agreement(oa.attribution(oa.load(ref)), oa.attribution(oa.load(ours)))
        except (OSError, ValueError, KeyError) as ex:
            return self.check(item[0], 3, item[1], "fail", "cannot read the traces: %s" % ex)
        if fig is None:
            return self.check(item[0], 3, item[1], "fail", "no kernel in torch.profiler's trace")
        self.figures.setdefault("op_agreement", {})[wl] = {
            "agreement": fig, "kernels": total,
            "differ": [{"kernel": n[:120], "torch_profiler": r, "dlhook": o} for n, r, o in bad[:10]]}
        return self.check(item[0], 3, item[1], "pass" if fig >= 0.98 else "fail",
                          "%.2f %% of %d kernels' attribution agrees; %d kernel names differ%s"
                          % (100 * fig, total, len(bad), (": " + "; ".join(
                              "%s torch.profiler %s dlhook %s" % (n[:50], short(r), short(o))
                              for n, r, o in bad[:3])) if bad else ""))

    # the overhead runs: (id, dlhook record options or None, label)
    OVERHEAD_MODES = [
        ("bare", None, "bare"),
        ("dlhook-none", ["--stacks", "none", "--sample-hz", "0"], "dlhook, --stacks none --sample-hz 0"),
        ("dlhook-mixed", ["--stacks", "mixed", "--sample-hz", "0"], "dlhook, --stacks mixed --sample-hz 0"),
        ("dlhook", ["--stacks", "mixed", "--sample-hz", "200"],
         "dlhook, --stacks mixed --sample-hz 200 (the default for Python)"),
        ("dlhook-hz1000", ["--stacks", "mixed", "--sample-hz", "1000"], "dlhook, --stacks mixed --sample-hz 1000"),
        ("torchprof", None, "torch.profiler (CPU+CUDA)"),
        ("torchprof-stack", None, "torch.profiler, with_stack=True")]

    def overhead_all(self):
        """Alternating runs of every mode of OVERHEAD_MODES, round after round over the
        workloads (so that a run cut by --deadline has whole rounds of each), medians per mode;
        the sampled modes' first run is kept long enough for `dlhook stats --json` (samples:
        written, handler_ns)."""
        wls = [wl for wl in self.workloads if wl in self.torch_done]
        if not wls:
            return
        print("part 3: step-time overhead (%s)" % ", ".join(wls), flush=True)
        st, wu, rounds = self.a.overhead_steps, self.a.warmup, self.a.rounds
        modes = [m for m, _, _ in self.OVERHEAD_MODES]
        opts = {m: o for m, o, _ in self.OVERHEAD_MODES}
        med = {wl: {m: [] for m in modes} for wl in wls}
        sampling = {wl: {} for wl in wls}
        cut = None
        per_run = None  # seconds one run took (the longest so far), to stop before --deadline
        for r in range(rounds):
            for wl in wls:
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for m in order:
                    if cut is None and (self.left() < 10 + 1.5 * (per_run or 30) or
                                        (self.a.budget and self.elapsed() > self.a.budget - 30)):
                        cut = "out of time (--deadline/--budget): stopped in round %d of %d" % (r + 1, rounds)
                    if cut:
                        break
                    t0 = time.time()
                    js = os.path.join(self.out, "overhead-%s-%s-%d.json" % (wl, m, r))
                    name = "overhead-%s-%s-%d" % (wl, m, r)
                    if opts[m] is not None:
                        tdir = os.path.join(self.out, "overhead-traces", "%s-%s-%d" % (wl, m, r))
                        rc, traces, _ = self.record(name, self.torch_cmd(wl, "bare", st, wu, js), tdir,
                                                    timeout=300, env=self.env_torch(), opts=opts[m])
                        if r == 0 and m in ("dlhook", "dlhook-hz1000") and traces:
                            sampling[wl][m] = self.samples_of(name, traces, js)
                        shutil.rmtree(tdir, ignore_errors=True)
                    else:
                        rc, _, _ = self.run(name, self.torch_cmd(wl, m, st, wu, js), env=self.env_torch(),
                                            timeout=300)
                    per_run = max(per_run or 0, time.time() - t0)
                    try:
                        with open(js) as f:
                            med[wl][m].append(json.load(f)["median_step_ms"])
                    except (OSError, ValueError, KeyError):
                        pass
        shutil.rmtree(os.path.join(self.out, "overhead-traces"), ignore_errors=True)
        for wl in wls:
            items = self.items(wl, self.TORCH_ITEMS3)[4:6]
            got = {m: statistics.median(v) for m, v in med[wl].items() if v}
            runs = {m: len(v) for m, v in med[wl].items()}
            if "bare" not in got or len(got) < len(modes):
                self.check(items[0][0], 3, items[0][1], "skip" if cut else "fail",
                           "%sruns that gave step times: %s (see logs/overhead-%s-*)"
                           % (cut + "; " if cut else "", runs, wl))
                self.check(items[1][0], 3, items[1][1], "skip", "no ratios")
                continue
            b = got["bare"]
            ratio = {m: got[m] / b for m in modes}
            self.figures.setdefault("overhead", {})[wl] = {
                "median_step_ms": got, "ratio_to_bare": ratio, "runs": runs, "steps_per_run": st,
                "warmup": wu, "sampling": sampling[wl], "cut": cut, "dlhook_stacks_mode":
                self.figures.get("torch_dlhook", {}).get(wl, {}).get("stacks_mode")}
            smp = "; ".join("%s: %d samples, handler %.1f ms (%.2f %% of the steps' time)"
                            % (m, v["samples"], v["handler_ns"] / 1e6, 100 * v["handler_share"])
                            for m, v in sampling[wl].items() if v)
            self.check(items[0][0], 3, items[0][1], "pass",
                       "median step %.3f ms bare; x%.3f stacks none, x%.3f mixed, x%.3f mixed+200 Hz, "
                       "x%.3f mixed+1000 Hz, x%.3f torch.profiler, x%.3f torch.profiler+stack "
                       "(%d rounds)%s%s"
                       % (b, ratio["dlhook-none"], ratio["dlhook-mixed"], ratio["dlhook"],
                          ratio["dlhook-hz1000"], ratio["torchprof"], ratio["torchprof-stack"],
                          min(runs.values()), "; " + smp if smp else "", "; " + cut if cut else ""))
            self.check(items[1][0], 3, items[1][1],
                       "pass" if got["dlhook"] < got["torchprof"] else "fail",
                       "dlhook (mixed, 200 Hz) %.3f ms vs torch.profiler %.3f ms per step"
                       % (got["dlhook"], got["torchprof"]))

    def samples_of(self, name, traces, js):
        """Host samples of a sampled overhead run (dlhook stats --json: samples), with the time
        the sampling handlers took against the run's step time."""
        st = self.stats_json(name, traces)
        smp = (st or {}).get("samples") or {}
        try:
            with open(js) as f:
                steps_ms = sum(json.load(f)["step_ms"])
        except (OSError, ValueError, KeyError):
            steps_ms = 0
        if not smp:
            return {}
        h = smp.get("handler_ns", 0)
        n = smp.get("cpu", 0) + smp.get("wait", 0)
        return {"hz": smp.get("hz"), "samples": n, "cpu_samples": smp.get("cpu", 0),
                "wait_samples": smp.get("wait", 0), "lost": smp.get("lost", 0),
                "handler_ns": h, "handler_ns_per_sample": h / n if n else 0,
                "handler_share": (h / 1e6) / steps_ms if steps_ms else 0}

    # ------------------------------------------------------------------ part 4
    GRAPH_ITEMS = {
        "graphs": [("graphs.runs", "CUDA graph replays (torch_graphs.py graphs) under dlhook and torch.profiler"),
                   ("graphs.kernel_names", "replayed kernels: counts per name, dlhook = torch.profiler"),
                   ("graphs.linked", "every replayed kernel linked to its call"),
                   ("graphs.attributed", "replayed kernels attributed to an operator (graph node ids)")],
        "compile": [("compile.runs", "torch.compile'd block (default, reduce-overhead) under dlhook and "
                     "torch.profiler"),
                    ("compile.kernel_names", "default mode: kernel counts per name, dlhook = torch.profiler"),
                    ("compile.triton", "Triton kernels attributed to an operator (Inductor names)"),
                    ("compile-ro.kernel_names", "reduce-overhead: kernel counts per name, dlhook = torch.profiler"),
                    ("compile-ro.attributed", "reduce-overhead: replayed kernels attributed to an operator")]}

    def part4(self, wl):
        """torch_graphs.py WL under dlhook record and under torch.profiler; both traces read as
        Kineto (dlhook's export) by the same code, a kernel counted in the step in whose range it
        ran (each step ends with a synchronisation)."""
        I = self.GRAPH_ITEMS[wl]
        if self.torch_why:
            return self.skip_all(4, I, self.torch_why)
        # on a GPU: a compile is ~1 minute per mode, cold
        if not self.have((60 if wl == "graphs" else 150) if self.deadline else 0, 4, I):
            return
        print("part 4: %s under dlhook and torch.profiler" % wl, flush=True)
        script = os.path.join(HERE, "torch_graphs.py")
        n = self.a.graph_steps if wl == "graphs" else self.a.compile_steps
        cmd = [self.python, script, wl, "--steps", str(n)]
        tdir = os.path.join(self.out, "%s-dlhook" % wl)
        js = os.path.join(self.out, "%s-dlhook.json" % wl)
        long_ = 300 if wl == "graphs" else (240 if self.deadline else 900)
        rc, traces, _ = self.record("%s-dlhook" % wl, cmd + ["--json", js], tdir, timeout=long_,
                                    env=self.env_torch())
        tr = os.path.join(self.out, "%s-torchprof.trace.json" % wl)
        js2 = os.path.join(self.out, "%s-torchprof.json" % wl)
        rc2 = None
        if rc == 0 and traces:
            rc2, _, _ = self.run("%s-torchprof" % wl, cmd + ["--mode", "torchprof", "--trace", tr, "--json", js2],
                                 env=self.env_torch(), timeout=long_)
        phases = {}
        for j, who in ((js, "dlhook"), (js2, "torch.profiler")):
            try:
                with open(j) as f:
                    phases[who] = {k: v["median_step_ms"] for k, v in json.load(f)["phases"].items()}
            except (OSError, ValueError, KeyError):
                pass
        ok = rc == 0 and traces and rc2 == 0 and os.path.isfile(tr)
        self.figures.setdefault("graphs", {})[wl] = fig = {"median_step_ms": phases}
        self.check(I[0][0], 4, I[0][1], "pass" if ok else "fail",
                   "dlhook: exit %d, %d trace(s); torch.profiler: exit %s; median step (ms) %s; "
                   "see logs/%s-*.log" % (rc, len(traces), rc2, json.dumps(phases, sort_keys=True), wl))
        if not ok:
            return self.skip_all(4, I[1:], "no trace")
        oa = load_op_agreement()
        kin = self.kineto_export("%s-export" % wl, traces, js)
        if oa is None or not kin:
            return self.skip_all(4, I[1:], "op_agreement.py not in the bundle" if oa is None
                                 else "no Kineto export of the dlhook trace")
        _, ev = self.dump("%s-dlhook" % wl, traces)
        try:
            ref, ours = oa.load(tr), oa.load(kin)
        except (OSError, ValueError, KeyError) as ex:
            return self.skip_all(4, I[1:], "cannot read the Kineto traces: %s" % ex)
        gfields = graph_fields(ev)
        fig["trace_fields"] = gfields
        if wl == "graphs":
            rng = range(0, n)
            self.names_check(I[1], 4, "graphs", ref, ours, rng)
            self.linked_check(I[2], ev, rng)
            self.attributed_check(I[3], "graphs", oa, ref, ours, rng, gfields, replayed_only=True)
        else:
            self.names_check(I[1], 4, "compile", ref, ours, range(0, n))
            self.triton_check(I[2], oa, ref, ours, range(0, n), ev)
            self.names_check(I[3], 4, "compile-ro", ref, ours, range(1000, 1000 + n))
            self.attributed_check(I[4], "compile-ro", oa, ref, ours, range(1000, 1000 + n), gfields,
                                  replayed_only=True)
        if not self.a.keep_dumps:
            subprocess.run(["gzip", "-f", tr])

    def kineto_export(self, name, traces, js):
        """dlhook export --format kineto of traces into OUTDIR/name/kineto; the file of the
        process that wrote js (pick_kineto)."""
        o = os.path.join(self.out, name, "kineto")
        rc, _, _ = self.run(name + "-kineto", [self.dlhook, "export", "-q", "--format", "kineto", "-o", o] + traces)
        return pick_kineto(glob.glob(os.path.join(o, "*.json*")), js) if rc == 0 else None

    def names_check(self, item, part, key, ref, ours, rng):
        """Kernel counts per name over the steps numbered in rng (step_of), over the steps both
        traces hold kernels in: a step whose kernels one trace lacks entirely while the other
        has them is listed as lost by that trace (its cause: torch.profiler on the simulator
        drops the first replays' kernels after its start, their launches present), and so is
        torch.profiler's first such step when it holds only part of dlhook's kernels; dlhook
        losing a step fails."""
        a = kernels_by_step(ours, rng)
        b = kernels_by_step(ref, rng)
        both = [n for n in rng if a[n] and b[n]]
        lost_tp = [n for n in rng if a[n] and not b[n]]
        # the first step torch.profiler holds kernels of may hold only the later ones (the same
        # cause, on a loaded machine: kernels of that replay dropped after its start): a strict
        # part of dlhook's is listed as lost, not compared
        if both and b[both[0]] != a[both[0]] and all(v <= a[both[0]].get(k, 0) for k, v in b[both[0]].items()):
            lost_tp.append(both.pop(0))
        lost_dl = [n for n in rng if b[n] and not a[n]]
        x, y = collections.Counter(), collections.Counter()
        for n in both:
            x.update(a[n])
            y.update(b[n])
        names = sorted(set(x) | set(y))
        differ = [(k, x.get(k, 0), y.get(k, 0)) for k in names if x.get(k, 0) != y.get(k, 0)]
        self.figures.setdefault("kernel_names", {})[key] = {
            "names": len(names), "kernels_dlhook": sum(x.values()), "kernels_torch_profiler": sum(y.values()),
            "steps": len(rng), "steps_compared": len(both), "steps_lost_by_torch_profiler": lost_tp,
            "steps_lost_by_dlhook": lost_dl,
            "differ": [{"name": k, "dlhook": u, "torch_profiler": v} for k, u, v in differ]}
        lost = ""
        if lost_tp:
            lost += "; torch.profiler's trace lacks kernels of step(s) %s (dlhook: %d kernels)" % (
                ",".join(map(str, lost_tp[:8])), sum(sum(a[n].values()) for n in lost_tp))
        if lost_dl:
            lost += "; dlhook's trace has no kernel of step(s) %s" % ",".join(map(str, lost_dl[:8]))
        ok = names and not differ and not lost_dl and len(both) >= max(1, len(rng) // 2)
        self.check(item[0], part, item[1], "pass" if ok else "fail",
                   "%d kernel names, %d kernels in %d of %d steps, %s%s" % (
                       len(names), sum(x.values()), len(both), len(rng),
                       ("%d names differ (dlhook/torch.profiler): " % len(differ) + "; ".join(
                           "%s %d/%d" % (k[:60], u, v) for k, u, v in differ[:4])) if differ else
                       "equal per name", lost))

    def linked_check(self, item, ev, rng):
        """Every kernel that ran inside the steps (dlhook dump) is linked to a recorded call; how
        many through the replay (cudaGraphLaunch) and how many carry graph node ids."""
        by_corr = {(c.get("pid"), c["corr"]): c for c in ev.get("api", []) if c.get("corr")}
        ks = kernels_in_dump_steps(ev, rng)
        linked = [k for k in ks if (k.get("pid"), k.get("corr")) in by_corr]
        via = collections.Counter(by_corr[(k.get("pid"), k.get("corr"))]["name"] for k in linked)
        nodes = sum(1 for k in ks if k.get("graph_node") or k.get("graph"))
        self.figures.setdefault("graphs", {}).setdefault("graphs", {})["linked"] = {
            "kernels": len(ks), "linked": len(linked), "by_call": dict(via), "with_graph_node": nodes}
        self.check(item[0], 4, item[1], "pass" if ks and len(linked) == len(ks) else "fail",
                   "%d of %d kernels in the %d replays linked (%s); %d carry a graph node id"
                   % (len(linked), len(ks), len(rng), ", ".join("%s %d" % kv for kv in via.most_common(3)),
                      nodes))

    def attributed_check(self, item, key, oa, ref, ours, rng, gfields, replayed_only):
        """The share of the replayed kernels of the steps rng attributed to an (aten) operator, in
        dlhook's export and in torch.profiler's trace. Meaningful when the trace carries graph
        node ids (then dlhook can hand a replayed kernel to the call that made its node at
        capture): without them this reports the shares and skips."""
        r = replay_attribution(oa, ref, rng)
        o = replay_attribution(oa, ours, rng)
        self.figures.setdefault("attribution", {})[key] = {"dlhook": o, "torch_profiler": r,
                                                           "trace_fields": gfields}
        detail = ("replayed kernels: %d (dlhook) / %d (torch.profiler); attributed to an operator (an aten "
                  "op, or a Triton kernel's fused aten ops): %.1f %% / %.1f %%; to an aten op: %.1f %% / "
                  "%.1f %%, to any cpu_op: %.1f %% / %.1f %%"
                  % (o["kernels"], r["kernels"], 100 * o["operator"], 100 * r["operator"], 100 * o["aten"],
                     100 * r["aten"], 100 * o["any"], 100 * r["any"]))
        if o["top_ops"]:
            detail += "; dlhook's ops: " + ", ".join("%s %d" % kv for kv in o["top_ops"][:3])
        have = gfields["graph_node_kernels"] or gfields["graphnode_records"]
        if not o["kernels"]:
            return self.check(item[0], 4, item[1], "fail", "no replayed kernel found; " + detail)
        if not have:
            return self.check(item[0], 4, item[1], "skip",
                              "graph node ids: not in this build (no graph_node in the kernel records, "
                              "no graphnode records); " + detail)
        detail += "; graph node ids: %d kernels, %d graph nodes (%d with their making call)" % (
            gfields["graph_node_kernels"], gfields["graphnode_records"], gfields["graphnode_with_call"])
        return self.check(item[0], 4, item[1], "pass" if o["operator"] >= 0.9 else "fail", detail)

    def triton_check(self, item, oa, ref, ours, rng, ev):
        """Triton (Inductor) kernels of the default-mode steps: the share attributed to an
        operator in each trace; with Inductor records in the trace (kernel -> fused aten ops),
        the share of Triton launches that have one."""
        def share(events):
            keep = in_steps(events, rng)
            kk = [(k, op) for k, op in oa.kernel_ops(events, keep, aten_only=False)
                  if k["name"].startswith("triton")]
            aten = [(k, op) for k, op in oa.kernel_ops(events, keep, aten_only=True)
                    if k["name"].startswith("triton")]
            n = len(kk) or 1
            return {"kernels": len(kk), "names": len({k["name"] for k, _ in kk}),
                    "any": sum(1 for _, op in kk if op) / n, "aten": sum(1 for _, op in aten if op) / n,
                    # dlhook's export names a Triton kernel's op "KERNEL ← aten::a, aten::b"
                    "fused_ops": sum(1 for _, op in kk if op and "← aten::" in op) / n,
                    "top_ops": collections.Counter(op for _, op in kk if op).most_common(5)}
        r, o = share(ref), share(ours)
        keep_r, keep_o = in_steps(ref, rng), in_steps(ours, rng)
        agree, _, _ = oa.agreement(oa.attribution(ref, keep_r), oa.attribution(ours, keep_o))
        ind = {}
        for x in ev.get("inductor", []):
            ind[x.get("kernel")] = x
        tk = [k for k in kernels_in_dump_steps(ev, rng) if str(k.get("name", "")).startswith("triton")]
        named = [k for k in tk if k.get("name") in ind]
        self.figures.setdefault("attribution", {})["compile.triton"] = {
            "dlhook": o, "torch_profiler": r, "op_agreement": agree, "inductor_records": len(ind),
            "triton_launches_with_inductor_record": len(named), "triton_launches": len(tk),
            "examples": [{"kernel": k, "aten_ops": v.get("aten_ops"), "source_nodes": v.get("source_nodes")}
                         for k, v in list(ind.items())[:5]]}
        detail = ("Triton kernels: %d launches of %d names (dlhook) / %d (torch.profiler); attributed to "
                  "a cpu_op: %.1f %% / %.1f %%, to an aten op: %.1f %% / %.1f %%; operator agreement over "
                  "the steps %s" % (o["kernels"], o["names"], r["kernels"], 100 * o["any"], 100 * r["any"],
                                    100 * o["aten"], 100 * r["aten"],
                                    "%.1f %%" % (100 * agree) if agree is not None else "-"))
        if r["top_ops"]:
            detail += "; torch.profiler's ops: " + ", ".join("%s %d" % (k[:40], v) for k, v in r["top_ops"][:2])
        if not o["kernels"]:
            return self.check(item[0], 4, item[1], "fail", "no Triton kernel in dlhook's trace; " + detail)
        if not ind:
            return self.check(item[0], 4, item[1], "skip",
                              "Inductor fused-op names: not in this build (no inductor records); " + detail)
        detail += "; %d of %d Triton launches have their Inductor record (%d records); under an op " \
            "naming their fused aten ops: %.1f %% / %.1f %%" % (len(named), len(tk), len(ind),
                                                              100 * o["fused_ops"], 100 * r["fused_ops"])
        return self.check(item[0], 4, item[1], "pass" if tk and len(named) >= 0.9 * len(tk) else "fail",
                          detail)

    # ------------------------------------------------------------------ part 5
    def sampling(self):
        """Host sampling on a DataLoader-starved workload (slow_dataset.py: a Dataset that sleeps
        50 ms an item, 2 workers), as tests/torch/t_torch_sample_wait.sh checks it on the
        simulator: during the GPU's idle gaps the main thread's wait samples are in the
        DataLoader, and the workers' samples are at the Dataset's sleep line."""
        items = [("sampling.dataloader", "GPU idle: the main thread's wait samples are in the DataLoader"),
                 ("sampling.dataset_line", "the DataLoader workers' wait samples are at the Dataset's line")]
        if self.torch_why:
            return self.skip_all(5, items, self.torch_why)
        src = find_file("scripts/gpu/slow_dataset.py", "tests/torch/slow_dataset.py")
        if not src:
            return self.skip_all(5, items, "slow_dataset.py not in the bundle")
        if not self.have(30 if self.deadline else 0, 5, items):
            return
        print("part 5: host sampling on a DataLoader-starved workload", flush=True)
        line = marker_line(src, "# SLEEP_LINE")
        tdir = os.path.join(self.out, "sampling")
        rc, traces, _ = self.record("sampling", [self.python, src, "2", "--steps", "8"], tdir, timeout=180,
                                    env=self.env_torch())
        if rc != 0 or not traces:
            self.check(items[0][0], 5, items[0][1], "fail", "exit %d, %d traces; see logs/sampling.log"
                       % (rc, len(traces)))
            return self.skip_all(5, items[1:], "no trace")
        ev = []
        for t in traces:
            p = subprocess.run([self.dlhook, "dump", "--type", "process,sample,kernel", t],
                               capture_output=True, text=True)
            ev += [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        res = sample_wait_analysis(ev, line)
        self.figures["sampling"] = res
        self.check(items[0][0], 5, items[0][1], "pass" if res["ok_main"] else "fail", res["detail"])
        self.check(items[1][0], 5, items[1][1], "pass" if res["ok_workers"] else "fail", res["detail_workers"])

    # (program, mode, planted class, marker); the sources give the planted lines
    ADVISE_PLANTS = [
        ("advise_loop", "sync", "sync-in-loop", "PLANT-SYNC"),
        ("advise_loop", "malloc", "malloc-in-loop", "PLANT-MALLOC"),
        ("advise_loop", "pageable", "pageable-h2d", "PLANT-PAGEABLE"),
        ("advise_gpu", "launch", "launch-bound", "PLANT-LAUNCH"),
        ("advise_gpu", "occupancy", "low-occupancy", "PLANT-OCCUPANCY"),
        ("advise_gpu", "sgemm", "no-tensor-cores", "PLANT-SGEMM"),
        ("advise_gpu", "memory", "memory-near-capacity", "PLANT-MEMORY"),
        ("advise_gpu", "comm", "comm-not-overlapped", "PLANT-COMM"),
        ("advise_py", "item", "sync-in-loop", "PLANT-ITEM"),
        ("advise_py", "loader", "input-starved", "PLANT-LOADER"),
        ("advise_py", "pycpu", "cpu-bound-python", "PLANT-PYCPU")]
    # (program, tuned mode, classes it must not have)
    ADVISE_TUNED = [
        ("advise_loop", "tuned", ("sync-in-loop", "malloc-in-loop", "pageable-h2d")),
        ("advise_gpu", "fused", ("launch-bound",)), ("advise_gpu", "occupied", ("low-occupancy",)),
        ("advise_gpu", "tf32", ("no-tensor-cores",)), ("advise_gpu", "headroom", ("memory-near-capacity",)),
        ("advise_gpu", "overlap", ("comm-not-overlapped",)),
        ("advise_py", "tuned", ("sync-in-loop", "input-starved", "cpu-bound-python", "no-tensor-cores"))]
    ADVISE_SRC = {"advise_loop": ("tests/progs/advise_loop.c", "tests/progs/advise_loop.c"),
                  "advise_gpu": ("tests/progs/advise_gpu.cu", "tests/progs/advise_gpu.cu"),
                  "advise_py": ("scripts/gpu/advise_py.py", "tests/torch/advise_py.py")}
    TWO_GPUS = ("comm", "overlap")  # advise_gpu's modes that drive two devices (one clique)

    def advise_prog(self, prog, mode):
        """Records PROG MODE; returns (command exit, traces, advise --json findings or None)."""
        key = (prog, mode)
        if key in self.advise_runs:
            return self.advise_runs[key]
        # the planted places are file:line: names at exit may take longer than the default
        # 200 ms on a loaded machine (tests/advise/ do the same)
        if prog == "advise_py":
            src = find_file(*self.ADVISE_SRC[prog])
            cmd, env = [self.python, src, mode], dict(self.env_torch(), DLHOOK_EXIT_MS="10000")
        else:
            cmd = [os.path.join(self.root, "tests", "progs", prog), mode]
            env = self.env_cuda({"DLHOOK_EXIT_MS": "10000"})
            if mode in self.TWO_GPUS and self.a.sim:
                env["SIMCUDA_DEVICES"] = "2"
        name = "advise-%s-%s" % (prog, mode)
        rc, traces, _ = self.record(name, cmd, os.path.join(self.out, name), timeout=240, env=env)
        found = self.advise_json(name, traces) if traces else None
        self.advise_runs[key] = (rc, traces, found)
        return self.advise_runs[key]

    def advise_json(self, name, traces):
        path = os.path.join(self.out, name + ".advise.json")
        with open(path, "w") as f:
            p = subprocess.run([self.dlhook, "advise", "--json"] + traces, stdout=f,
                               stderr=subprocess.DEVNULL, timeout=self.tmo(300))
        try:
            with open(path) as f:
                return json.load(f).get("findings") if p.returncode == 0 else None
        except ValueError:
            return None

    def advise(self, progs):
        """dlhook advise on the planted-cause programs PROGS: each planted class ranked first or
        second at its planted line; each finding's class, place and cost (on a GPU the costs
        are real); the tuned versions without the planted classes."""
        self.advise_runs = getattr(self, "advise_runs", {})
        for prog in progs:
            plants = [p for p in self.ADVISE_PLANTS if p[0] == prog]
            tuned = [t for t in self.ADVISE_TUNED if t[0] == prog]
            items = [("advise.%s.%s" % (prog, m), "advise: %s %s finds %s at its line" % (prog, m, c))
                     for _, m, c, _ in plants] + \
                    [("advise.%s.%s" % (prog, m), "advise: %s %s has none of %s" % (prog, m, "/".join(cl)))
                     for _, m, cl in tuned]
            if prog == "advise_py" and self.torch_why:
                self.skip_all(5, items, self.torch_why)
                continue
            b, s = self.ADVISE_SRC[prog]
            src = find_file(b, s)
            exe = os.path.join(self.root, "tests", "progs", prog)
            if not src or (prog != "advise_py" and not os.path.isfile(exe)):
                self.skip_all(5, items, "%s not in the bundle" % (prog if src else os.path.basename(b)))
                continue
            if not self.have((15 if prog != "advise_py" else 60) if self.deadline else 0, 5, items):
                continue
            print("part 5: dlhook advise on %s" % prog, flush=True)
            two = "one GPU: the all-reduce needs two devices (tests/advise/t_advise_gpu.sh covers it " \
                "on the simulator)" if not self.a.sim and self.gpu_count() < 2 else None
            for (_, mode, cls, mark), it in zip(plants, items):
                if mode in self.TWO_GPUS and two:
                    self.check(it[0], 5, it[1], "skip", two)
                    continue
                line = marker_line(src, "# " + mark) if prog == "advise_py" else code_marker_line(src, mark)
                rc, traces, found = self.advise_prog(prog, mode)
                self.advise_report(it, prog, mode, rc, traces, found, [(cls, src, line)])
                if prog == "advise_py" and mode == "item":  # also a float32 GEMM without TF32
                    fp = marker_line(src, "# PLANT-FP32")
                    self.advise_report(("advise.advise_py.item_fp32", "advise: advise_py item finds "
                                        "no-tensor-cores at its line"), prog, mode, rc, traces, found,
                                       [("no-tensor-cores", src, fp)], record=False)
            for (_, mode, classes), it in zip(tuned, items[len(plants):]):
                if mode in self.TWO_GPUS and two:
                    self.check(it[0], 5, it[1], "skip", two)
                    continue
                rc, traces, found = self.advise_prog(prog, mode)
                if found is None:
                    self.check(it[0], 5, it[1], "fail", "exit %d, %d traces; no advise output" % (rc, len(traces)))
                    continue
                bad = [f for f in found if f.get("class") in classes]
                self.figures.setdefault("advise", {})["%s.%s" % (prog, mode)] = \
                    [finding_fig(f) for f in found]
                self.check(it[0], 5, it[1], "fail" if bad else "pass",
                           "%d findings%s" % (len(found), ": " + "; ".join(finding_text(f) for f in found[:3])
                                              if found else ""))

    def advise_report(self, item, prog, mode, rc, traces, found, plants, record=True):
        if found is None:
            return self.check(item[0], 5, item[1], "fail",
                              "exit %d, %d traces; no advise output (see logs/advise-%s-%s.log)"
                              % (rc, len(traces), prog, mode))
        cls, src, line = plants[0]
        rank = None
        for i, f in enumerate(found):
            if f.get("class") == cls and place_is(f.get("place"), src, line):
                rank = i + 1
                break
        if record:
            self.figures.setdefault("advise", {})["%s.%s" % (prog, mode)] = {
                "planted": cls, "planted_at": "%s:%s" % (os.path.basename(src), line), "rank": rank,
                "findings": [finding_fig(f) for f in found]}
        return self.check(item[0], 5, item[1], "pass" if rank in (1, 2) else "fail",
                          "planted %s at %s:%s ranked %s; %s" % (
                              cls, os.path.basename(src), line, rank or "nowhere",
                              "; ".join(finding_text(f) for f in found[:3]) or "no findings"))

    def straggler(self):
        """examples/train --ranks 2 --slow-rank 1 --slow-ms 30: the straggler-rank finding names
        the slow rank and its host work (NCCL needs one GPU per rank: skipped with one GPU). Two
        ranks, 30 ms: on a loaded 2-core machine four simulated ranks' own jitter hid 10 ms."""
        item = ("advise.train.slow_rank", "advise: examples/train --slow-rank finds straggler-rank")
        exe = os.path.join(self.root, "examples", "train")
        ranks = 2 if self.a.sim or self.gpu_count() >= 2 else 1
        if not os.path.isfile(exe):
            return self.check(item[0], 5, item[1], "skip", "examples/train not in the bundle")
        if ranks < 2:
            return self.check(item[0], 5, item[1], "skip",
                              "one GPU: NCCL needs a device per rank (tests/advise/t_advise_gpu.sh "
                              "covers it on the simulator)")
        if not self.have(30 if self.deadline else 0, 5, [item]):
            return
        slow = 1
        tdir = os.path.join(self.out, "straggler")
        rc, traces, _ = self.record("straggler", [exe, "--ranks", str(ranks), "--steps", "12", "--slow-rank",
                                                  str(slow), "--slow-ms", "30"], tdir, timeout=180)
        found = self.advise_json("straggler", traces) if traces else None
        if found is None:
            return self.check(item[0], 5, item[1], "fail", "exit %d, %d traces" % (rc, len(traces)))
        st = [i for i, f in enumerate(found) if f.get("class") == "straggler-rank"]
        f = found[st[0]] if st else {}
        ok = st and st[0] <= 1 and "slow_host_work" in str(f.get("place")) and \
            ("rank %d arrived last" % slow) in str((f.get("evidence") or {}).get("detail"))
        self.figures.setdefault("advise", {})["train.slow_rank"] = {
            "ranks": ranks, "slow_rank": slow, "rank": st[0] + 1 if st else None,
            "findings": [finding_fig(x) for x in found]}
        self.check(item[0], 5, item[1], "pass" if ok else "fail",
                   "%d ranks, rank %d slow; straggler-rank ranked %s; %s" % (
                       ranks, slow, st[0] + 1 if st else "nowhere",
                       "; ".join(finding_text(x) for x in found[:3]) or "no findings"))

    def gpu_count(self):
        if "cuda_devices" in self.env_info:
            return self.env_info["cuda_devices"]
        try:
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
            return sum(1 for l in p.stdout.splitlines() if l.startswith("GPU "))
        except (OSError, subprocess.TimeoutExpired):
            return 0

    def copies(self):
        """What dlhook records of pageable and pinned host-to-device copies (advise_loop pageable:
        1 MiB from malloc'd memory; tuned: from cudaMallocHost memory, 20 each): the CUPTI memcpy
        record's srcKind (1 pageable, 2 pinned), kept as the second value of `vals`."""
        items = [("copies.pageable", "pageable H2D copies recorded with srcKind PAGEABLE"),
                 ("copies.pinned", "pinned H2D copies recorded with srcKind PINNED")]
        exe = os.path.join(self.root, "tests", "progs", "advise_loop")
        if not os.path.isfile(exe):
            return self.skip_all(5, items, "advise_loop not in the bundle")
        if not self.have(10 if self.deadline else 0, 5, items):
            return
        self.advise_runs = getattr(self, "advise_runs", {})
        for (mode, want), it in zip((("pageable", 1), ("tuned", 2)), items):
            rc, traces, _ = self.advise_prog("advise_loop", mode)
            if not traces:
                self.check(it[0], 5, it[1], "fail", "exit %d, no trace" % rc)
                continue
            _, ev = self.dump("copies-" + mode, traces)
            h2d = [m for m in ev.get("memcpy", []) if len(m.get("vals") or []) >= 4 and m["vals"][1] == 1
                   and m["vals"][0] == 1 << 20]
            kinds = collections.Counter(m["vals"][2] for m in h2d)
            d = sorted(m.get("dur_ns", 0) for m in h2d)
            med = d[len(d) // 2] if d else 0
            asyn = sum(1 for m in h2d if len(m["vals"]) > 4 and m["vals"][4])
            self.figures.setdefault("copies", {})[mode] = {
                "h2d_1MiB": len(h2d), "src_kinds": {MEMORY_KIND.get(k, str(k)): v for k, v in kinds.items()},
                "median_ns": med, "GB_per_s": (1 << 20) / med if med else None, "async_flag": asyn}
            self.check(it[0], 5, it[1], "pass" if len(h2d) == 20 and set(kinds) == {want} else "fail",
                       "%d H2D copies of 1 MiB: srcKind %s; median %.1f us (%.1f GB/s), %d flagged async"
                       % (len(h2d), dict((MEMORY_KIND.get(k, str(k)), v) for k, v in kinds.items()),
                          med / 1e3, (1 << 20) / med if med else 0, asyn))

    # ------------------------------------------------------------------ summary
    def summary_more(self, L):
        """summary.md's figures of parts 4 and 5."""
        F = self.figures
        gr, at, kn = F.get("graphs") or {}, F.get("attribution") or {}, F.get("kernel_names") or {}
        if gr or at:
            L.append("### CUDA graphs and torch.compile")
            L.append("")
            L.append("| steps | compared | kernel names | kernels dlhook / torch.profiler | names that differ "
                     "| steps without kernels in torch.profiler's / dlhook's trace |")
            L.append("|---|---|---|---|---|---|")
            for key in ("graphs", "compile", "compile-ro"):
                k = kn.get(key)
                if k:
                    L.append("| %s | %d of %d | %d | %d / %d | %d | %s / %s |" % (
                        key, k["steps_compared"], k["steps"], k["names"], k["kernels_dlhook"],
                        k["kernels_torch_profiler"], len(k["differ"]),
                        ",".join(map(str, k["steps_lost_by_torch_profiler"])) or "-",
                        ",".join(map(str, k["steps_lost_by_dlhook"])) or "-"))
            L.append("")
            L.append("| kernels | count dlhook / torch.profiler | to an operator | to an aten op | to any cpu_op |")
            L.append("|---|---|---|---|---|")
            for key, label in (("graphs", "replayed (graphs)"), ("compile-ro", "replayed (reduce-overhead)"),
                               ("compile.triton", "Triton (default mode)")):
                x = at.get(key)
                if x:
                    o, r = x["dlhook"], x["torch_profiler"]
                    op = ("%.1f %% / %.1f %%" % (100 * o["operator"], 100 * r["operator"])) if "operator" in o \
                        else ("%.1f %% / %.1f %% (fused ops)" % (100 * o["fused_ops"], 100 * r["fused_ops"]))
                    L.append("| %s | %d / %d | %s | %.1f %% / %.1f %% | %.1f %% / %.1f %% |" % (
                        label, o["kernels"], r["kernels"], op, 100 * o["aten"], 100 * r["aten"],
                        100 * o["any"], 100 * r["any"]))
            L.append("")
            tf = (gr.get("graphs") or gr.get("compile") or {}).get("trace_fields")
            if tf:
                L.append("dlhook's trace fields: %s." % ", ".join("%s %s" % kv for kv in sorted(tf.items())))
                L.append("")
        sm = F.get("sampling")
        if sm:
            L.append("### Host sampling (DataLoader-starved workload)")
            L.append("")
            L.append(sm["detail"] + ".")
            L.append("")
            L.append(sm["detail_workers"] + ".")
            L.append("")
        ad = F.get("advise") or {}
        if ad:
            L.append("### dlhook advise on the planted causes")
            L.append("")
            L.append("| program | planted | rank | findings (class, place, ms/step, share) |")
            L.append("|---|---|---|---|")
            for k, v in ad.items():
                fs = v["findings"] if isinstance(v, dict) else v
                L.append("| %s | %s | %s | %s |" % (
                    k, ("%s at %s" % (v["planted"], v["planted_at"])) if isinstance(v, dict) and "planted" in v
                    else "(tuned)" if not isinstance(v, dict) else "straggler rank %s" % v.get("slow_rank"),
                    (v.get("rank") or "-") if isinstance(v, dict) else "-",
                    "<br>".join("%s. %s at %s: %.3f ms (%.0f %%)" % (
                        f["rank"], f["class"], str(f["place"]).replace("|", "/"), f["cost_ms_per_step"] or 0,
                        f["cost_pct"] or 0) for f in fs[:4]) or "none"))
            L.append("")
        cp = F.get("copies") or {}
        if cp:
            L.append("### Host-to-device copies of 1 MiB")
            L.append("")
            L.append("| source | copies | srcKind recorded | median | GB/s |")
            L.append("|---|---|---|---|---|")
            for mode, label in (("pageable", "malloc (pageable)"), ("tuned", "cudaMallocHost (pinned)")):
                x = cp.get(mode)
                if x:
                    L.append("| %s | %d | %s | %.1f us | %s |" % (
                        label, x["h2d_1MiB"], ", ".join("%s %d" % kv for kv in x["src_kinds"].items()),
                        x["median_ns"] / 1e3, "%.1f" % x["GB_per_s"] if x["GB_per_s"] else "-"))
            td = F.get("torch_dlhook") or {}
            for wl, x in td.items():
                if x.get("h2d_src_kinds"):
                    L.append("")
                    L.append("%s (DataLoader with pin_memory=True): host-to-device copies by srcKind: %s."
                             % (wl, ", ".join("%s %d" % kv for kv in x["h2d_src_kinds"].items())))
            L.append("")

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
                L.append("| run | median step (ms) | ratio to bare | host samples | sampling handlers |")
                L.append("|---|---|---|---|---|")
                smp = ov.get("sampling") or {}
                for m, _, label in self.OVERHEAD_MODES:
                    if m in ov["median_step_ms"]:
                        sm = smp.get(m) or {}
                        L.append("| %s | %.3f | %.3f | %s | %s |" % (
                            label, ov["median_step_ms"][m], ov["ratio_to_bare"][m],
                            sm.get("samples", ""), "%.1f ms, %.0f ns a sample, %.2f %% of the steps" % (
                                sm["handler_ns"] / 1e6, sm["handler_ns_per_sample"], 100 * sm["handler_share"])
                            if sm else ""))
                L.append("")
                L.append("Medians of %s alternating runs of %d steps (first %d not timed)%s."
                         % (min(ov["runs"].values()), ov["steps_per_run"], ov["warmup"],
                            "; " + ov["cut"] if ov.get("cut") else ""))
                L.append("")
            oa = (self.figures.get("op_agreement") or {}).get(wl)
            if oa:
                L.append("Operator agreement with torch.profiler: %.2f %% of %d kernels."
                         % (100 * oa["agreement"], oa["kernels"]))
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
        L += calibrate.summary_lines(self.figures)
        self.summary_more(L)
        L += features.summary_lines(self.figures)
        tl = self.figures.get("timeline_s")
        if tl:
            L.append("Timeline (s since the start, at the end of each part): %s%s." % (
                ", ".join("%s %s" % kv for kv in tl.items()),
                "; --deadline %d" % self.deadline if self.deadline else ""))
            L.append("")
        L.append("Logs of every command: `logs/`; traces and stats: `*/`, `*.stats.json`"
                 "%s." % (" (--publish: logs.tar.gz, kineto.tar.gz, torchprof.tar.gz)"
                                        if self.publish_dir else ""))
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write("\n".join(L) + "\n")
        return n


MEMORY_KIND = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
               6: "device_static", 7: "managed_static"}  # CUpti_ActivityMemoryKind


def short(d, n=2):
    """The n largest entries of a {name: count} as text."""
    return ", ".join("%s %s" % (k[:30], v) for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:n])


def main_trace(traces, js):
    """[the trace of the process whose result JSON js names its pid] if there is one, else
    traces."""
    try:
        with open(js) as f:
            pid = int(json.load(f)["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return traces
    own = [t for t in traces if os.path.basename(t).endswith("-%d.dlh" % pid)]
    return own[:1] or traces


def pick_kineto(files, js):
    """Of the Kineto files of one recording (one per traced process: DataLoader workers and
    compile workers that host sampling followed leave traces too), that of the process whose
    result JSON js names its pid ("pid"), else the largest."""
    files = sorted(files)
    try:
        with open(js) as f:
            pid = int(json.load(f)["pid"])
        own = [x for x in files if re.search(r"_%d\.[^/]*$" % pid, os.path.basename(x))]
        if own:
            return own[0]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return max(files, key=os.path.getsize) if files else None


def load_op_agreement():
    """op_agreement.py (tests/torch/ in the source tree, scripts/gpu/ in the bundle) as a module."""
    path = find_file("scripts/gpu/op_agreement.py", "tests/torch/op_agreement.py")
    if not path:
        return None
    import importlib.util
    spec = importlib.util.spec_from_file_location("op_agreement", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def step_windows(events, rng):
    """[(ts0, ts1, N)] of the ProfilerStep#N user annotations of a Kineto trace, N in rng (any N
    when rng is None)."""
    w = []
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == "user_annotation":
            m = STEP_RE.match(e.get("name", ""))
            if m and (rng is None or int(m.group(1)) in rng):
                w.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(m.group(1))))
    return sorted(w)


def step_of(events):
    """A function: kernel event -> the number N of the ProfilerStep#N it belongs to, or None: the
    step in whose range its launching call (correlation id) was made, else the one in whose
    range it started (a graph's kernel that a trace links to the call that made its node at
    capture, before the steps: each step ends with a synchronisation, so its kernels run inside
    its range). The launch comes first because torch.profiler's kernel times on the simulator
    are not in the CPU timebase."""
    import bisect
    w = step_windows(events, None)  # every step: [(ts0, ts1, N)]
    starts = [x[0] for x in w]
    launch = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launch[c] = float(e["ts"])

    def step(t):
        i = bisect.bisect_right(starts, t) - 1
        return w[i][2] if i >= 0 and t <= w[i][1] else None

    def of(e):
        t = launch.get((e.get("args") or {}).get("correlation"))
        n = step(t) if t is not None else None
        return n if n is not None else step(float(e.get("ts", -1)))
    return of


def in_steps(events, rng):
    """A predicate: the event (a kernel) belongs to a step numbered in rng (step_of)."""
    of = step_of(events)

    def keep(e):
        n = of(e)
        return n is not None and n in rng
    return keep


def kernels_by_step(events, rng):
    """{N: Counter(kernel name)} for the steps N in rng (step_of), every N of rng present."""
    of = step_of(events)
    out = {n: collections.Counter() for n in rng}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == "kernel":
            n = of(e)
            if n is not None and n in out:
                out[n][e.get("name")] += 1
    return out


def kernels_in_dump_steps(ev, rng):
    """The kernels of a dlhook dump that started inside an NVTX ProfilerStep#N range, N in rng."""
    w = []
    for n in ev.get("nvtx", []):
        m = STEP_RE.match(str((n.get("args") or {}).get("message") or ""))
        if m and int(m.group(1)) in rng and n.get("dur_ns") is not None:
            w.append((n.get("pid"), n["start_ns"], n["start_ns"] + n["dur_ns"]))
    return [k for k in ev.get("kernel", [])
            if any(p == k.get("pid") and a <= k.get("start_ns", -1) <= b for p, a, b in w)]


def graph_fields(ev):
    """What a dlhook dump carries about CUDA graphs and Inductor (the `graphs` branch's fields;
    absent in builds without them)."""
    ks = ev.get("kernel", [])
    gn = ev.get("graphnode", [])
    return {"graph_node_kernels": sum(1 for k in ks if k.get("graph_node")),
            "graph_kernels": sum(1 for k in ks if k.get("graph")),
            "graphnode_records": len(gn), "graphnode_with_call": sum(1 for g in gn if g.get("corr")),
            "inductor_records": len(ev.get("inductor", []))}


def replay_attribution(oa, events, rng):
    """Replayed kernels of the steps rng in a Kineto trace (launched by a cu(da)GraphLaunch, or
    carrying a graph id, or linked to a call made before their step began: at capture), and the
    share of them attributed to an aten op and to any cpu_op (op_agreement.kernel_ops)."""
    keep = in_steps(events, rng)
    w = step_windows(events, rng)
    launches = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launches[c] = e

    def replayed(k):
        a = k.get("args") or {}
        la = launches.get(a.get("correlation"))
        if a.get("graph id") or a.get("graph node id"):
            return True
        if la is None:
            return False
        if "GraphLaunch" in la.get("name", ""):
            return True
        step0 = max((x[0] for x in w if x[0] <= float(k["ts"])), default=None)
        return step0 is not None and float(la["ts"]) < step0

    any_op = [(k, op) for k, op in oa.kernel_ops(events, keep, aten_only=False) if replayed(k)]
    aten = [(k, op) for k, op in oa.kernel_ops(events, keep, aten_only=True) if replayed(k)]
    n = len(any_op) or 1
    # an operator: an aten op, or (a Triton kernel in dlhook's export) "KERNEL ← aten ops"
    named = sum(1 for (_, a), (_, o) in zip(aten, any_op) if a or (o and "← aten::" in o))
    return {"kernels": len(any_op), "aten": sum(1 for _, op in aten if op) / n,
            "any": sum(1 for _, op in any_op if op) / n, "operator": named / n,
            "top_ops": collections.Counter(op for _, op in aten if op).most_common(5)}


def sample_wait_analysis(ev, line):
    """tests/torch/t_torch_sample_wait.sh's reading of slow_dataset.py 2: the GPU's idle gaps
    (> 20 ms without a kernel), the main thread's samples in them, its waits in the DataLoader,
    each worker's wait at the Dataset's sleep line."""
    kern = sorted((e["start_ns"], e["start_ns"] + e["dur_ns"], e["pid"]) for e in ev if e["type"] == "kernel")
    if not kern:
        return {"ok": False, "detail": "no kernel recorded"}
    main_pid = kern[0][2]
    gaps = [(a[1], b[0]) for a, b in zip(kern, kern[1:]) if b[0] - a[1] > 20e6]
    idle = sum(g[1] - g[0] for g in gaps)

    def in_gap(t):
        return any(lo <= t < hi for lo, hi in gaps)

    def frames(e):
        return [(f.get("function", ""), f.get("file", ""), f.get("line", 0)) for f in e.get("stack", [])]

    def at_sleep(e):
        return any(fn.endswith("__getitem__") and fi.endswith("slow_dataset.py") and ln == line
                   for fn, fi, ln in frames(e))
    smp = [e for e in ev if e["type"] == "sample"]
    main = [e for e in smp if e["pid"] == main_pid and e["tid"] == main_pid and in_gap(e["time_ns"])]
    w_main = sum(e["weight_ns"] for e in main)
    dl = sum(e["weight_ns"] for e in main if e["kind"] == "wait"
             and any("dataloader.py" in fi for _, fi, _ in frames(e)))
    workers = {}
    for pid in sorted({e["pid"] for e in smp if e["pid"] != main_pid}):
        ws = [e for e in smp if e["pid"] == pid and e["tid"] == pid]
        workers[pid] = {"wait_ms": sum(e["weight_ns"] for e in ws if e["kind"] == "wait") / 1e6,
                        "at_line_ms": sum(e["weight_ns"] for e in ws if e["kind"] == "wait" and at_sleep(e)) / 1e6}
    # where else the main thread was in the gaps (its own work, on a loaded machine)
    other = collections.Counter()
    for e in main:
        py = [f for f in e.get("stack", []) if f.get("python")]
        if not (e["kind"] == "wait" and any("dataloader.py" in fi for _, fi, _ in frames(e))):
            other["%s %s" % (e["kind"], py[0].get("function") if py else "(native)")] += e["weight_ns"]
    ok_main = bool(gaps) and idle >= 100e6 and w_main >= 0.5 * idle and dl >= 0.7 * w_main
    ok_workers = len(workers) == 2 and all(w["at_line_ms"] >= 60 for w in workers.values())
    detail = ("%d GPU idle gaps, %.1f ms; main thread's samples in them %.1f ms, waiting in the "
              "DataLoader %.1f ms (%.0f %%; want >= 70 %%)%s"
              % (len(gaps), idle / 1e6, w_main / 1e6, dl / 1e6, 100.0 * dl / w_main if w_main else 0,
                 ("; else: " + ", ".join("%s %.1f ms" % (k, v / 1e6) for k, v in other.most_common(3)))
                 if other else ""))
    detail_w = ("%d workers; at slow_dataset.py:%d (want >= 60 ms each): %s" % (
        len(workers), line, ", ".join("%.1f of %.1f ms waiting" % (w["at_line_ms"], w["wait_ms"])
                                      for w in workers.values()) or "no worker samples"))
    return {"ok_main": ok_main, "ok_workers": ok_workers, "detail": detail, "detail_workers": detail_w,
            "gaps": len(gaps), "idle_ms": idle / 1e6, "main_samples_ms": w_main / 1e6,
            "dataloader_wait_ms": dl / 1e6, "main_elsewhere_ms": {k: v / 1e6 for k, v in other.most_common(5)},
            "workers": list(workers.values()), "samples": len(smp)}


def marker_line(path, marker):
    """The number of the first line of path holding marker, or None."""
    with open(path) as f:
        for i, l in enumerate(f, 1):
            if marker in l:
                return i
    return None


def code_marker_line(path, marker):
    """The line of a C/CUDA source where marker is planted: the first holding it, followed by a
    space, ':' or '*', that is not a // comment line (the header names every marker)."""
    with open(path) as f:
        for i, l in enumerate(f, 1):
            if re.search(re.escape(marker) + r"[ :*]", l) and not l.lstrip().startswith("//"):
                return i
    return None


def place_is(place, src, line):
    """A finding's place ('file:line (function)' or 'path:line') is src's line."""
    m = re.match(r"(.*?):(\d+)", str(place or ""))
    return bool(m) and os.path.basename(m.group(1)) == os.path.basename(src) and int(m.group(2)) == line


def finding_fig(f):
    ev = f.get("evidence") or {}
    return {"rank": f.get("rank"), "class": f.get("class"), "place": f.get("place"),
            "cost_ms_per_step": f.get("cost_ms_per_step"), "cost_pct": f.get("cost_pct"),
            "evidence": ev.get("detail") or ev.get("functions")}


def finding_text(f):
    place = str(f.get("place") or "")
    return "%s. %s at %s: %.3f ms/step (%.0f %%)" % (
        f.get("rank"), f.get("class"), os.path.basename(place.split(" ")[0]) + place[len(place.split(" ")[0]):],
        f.get("cost_ms_per_step") or 0, f.get("cost_pct") or 0)


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


PARTS = ["programs", "calibrate", "advise", "torch", "features", "graphs", "compile", "sampling", "zoo", "ddp",
         "overhead"]


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
    ap.add_argument("--budget", type=int, default=0,
                    help="seconds since the start after which no overhead run starts (0: none)")
    ap.add_argument("--keep-dumps", action="store_true", help="keep the JSON dumps of the traces")
    ap.add_argument("--torch-on-sim", action="store_true",
                    help="tests only: with --sim, run the PyTorch parts too (--python: the venv's "
                    "wheel on the simulator, or a stand-in)")
    ap.add_argument("--workloads", default="transformer,cnn",
                    help="PyTorch workloads of train_torch.py, comma-separated (transformer,cnn)")
    ap.add_argument("--torch-batch", type=int, default=None, help="batch size of the workloads")
    ap.add_argument("--graph-steps", type=int, default=100, help="CUDA graph replays traced (100)")
    ap.add_argument("--compile-steps", type=int, default=30,
                    help="steps of the torch.compile'd block per mode (30)")
    ap.add_argument("--deadline", type=int, default=0,
                    help="seconds: parts that would not fit skip, saying so (0: none; --quick 450)")
    ap.add_argument("--quick", action="store_true",
                    help="a budget that fits ~8 minutes on an H200: --torch-steps 100 --torchprof-steps 60 "
                    "--overhead-steps 100 --warmup 10 --rounds 2 --deadline 450 --budget DEADLINE-90 --calib-steps 10 "
                    "--zoo-causes item,empty_cache --zoo-steps 6 --zoo-warmup 2 --zoo-repeat 1 (each unless given)")
    ap.add_argument("--publish", default=None, metavar="DIR",
                    help="copy summary.md/json to DIR after each check, and logs.tar.gz, "
                    "kineto.tar.gz (dlhook's exports) and torchprof.tar.gz (torch.profiler's traces) "
                    "after each part (e.g. $OUT of the device tool)")
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="comma-separated, of %s (all)" % ",".join(PARTS))
    calibrate.add_arguments(ap)
    features.add_arguments(ap)
    if "--quick" in argv:  # the preset, under what is given explicitly
        given = {x.split("=")[0] for x in argv if x.startswith("--")}
        for k, v in (("--torch-steps", 100), ("--torchprof-steps", 60), ("--overhead-steps", 100),
                     ("--warmup", 10), ("--rounds", 2), ("--deadline", 450),
                     ("--calib-steps", 10), ("--zoo-causes", "item,empty_cache"), ("--zoo-steps", 6),
                     ("--zoo-warmup", 2), ("--zoo-repeat", 1)):
            if k not in given:
                ap.set_defaults(**{k[2:].replace("-", "_"): v})
    a = ap.parse_args(argv)
    if a.quick and not any(x.split("=")[0] == "--budget" for x in argv) and a.deadline > 180:
        a.budget = a.deadline - 90  # the overhead rounds leave the parts after them 90 s
    bad = set(a.parts.split(",")) - set(PARTS)
    if bad:
        ap.error("--parts: unknown %s (of %s)" % (",".join(sorted(bad)), ",".join(PARTS)))
    wls = [w for w in a.workloads.split(",") if w]
    if not wls or any(w not in ("transformer", "cnn") for w in wls):
        ap.error("--workloads: transformer and/or cnn")
    if a.train_steps is None:
        a.train_steps = 4 if a.sim else 10
    if os.sep in a.python:  # the commands run in OUTDIR
        a.python = os.path.abspath(a.python)
    r = Run(a)
    r.workloads = wls
    if not r.setup():
        return 2
    print("gpu-acceptance: %s, dlhook from %s, output in %s" % (r.env_info["mode"], r.root, r.out),
          flush=True)
    for k in ("gpu", "torch", "cuda_libs"):
        if k in r.env_info:
            print("  %s: %s" % (k, r.env_info[k]))
    P = r.parts
    r.torch_why = r.torch_ok() if P & {"torch", "graphs", "compile", "sampling", "advise", "ddp", "calibrate",
                                       "features", "zoo"} else "not asked for"
    r.torch_done = []
    # the simulator's side of the calibration runs in the background from now on (no GPU)
    calib = calibrate.start(r) if "calibrate" in P else None
    if "programs" in P:
        r.part1()
        r.mark("programs")
        r.publish(final=True)
    if calib:  # what the GPU run must settle first: its timing against the simulator's
        calib.run()
        r.mark("calibration")
        r.publish(final=True)
    # what the acceptance asks for first (the calibration, kernel counts and operator agreement,
    # the zoo, overhead ratios), then the rest; --deadline drops from the end. With --quick the
    # overhead rounds stop at --budget (deadline - 90 s), leaving the CUDA graph and sampling time
    if "torch" in P:
        r.torch_parts()
        r.mark("PyTorch vs torch.profiler")
        r.publish(final=True)
    if "features" in P:
        features.nccl(r)
        features.ringwait(r)
        features.memory(r)
        r.mark("NCCL events, ring waits, memory snapshots")
        r.publish(final=True)
    if "advise" in P:
        r.advise(["advise_loop", "advise_gpu"])
        r.copies()
        r.straggler()
        r.mark("advise (C), copies")
        r.publish(final=True)
    if "zoo" in P:
        features.zoo(r)
        r.mark("model zoo")
        r.publish(final=True)
    if "overhead" in P and "torch" in P:
        r.overhead_all()
        r.mark("overhead")
        r.publish(final=True)
    if "graphs" in P:
        r.part4("graphs")
        r.mark("CUDA graph")
        r.publish(final=True)
    if "sampling" in P:
        r.sampling()
        r.mark("sampling")
    if "advise" in P:
        r.advise(["advise_py"])
        r.mark("advise (PyTorch)")
    r.publish(final=True)
    # the compilations last: their time is the least predictable
    if "compile" in P:
        r.part4("compile")
        r.mark("torch.compile")
        r.publish(final=True)
    if "ddp" in P:
        r.ddp_part()
        r.mark("DDP")
    n = r.write_summary()
    r.publish(final=True)
    print("gpu-acceptance: %d passed, %d failed, %d skipped in %.0f s; %s"
          % (n["pass"], n["fail"], n["skip"], r.elapsed(), os.path.join(r.out, "summary.md")))
    return 1 if n["fail"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
