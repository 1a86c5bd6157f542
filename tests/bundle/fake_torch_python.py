#!/usr/bin/env python3
"""A stand-in for `python3 with PyTorch` that lets tests run gpu-acceptance's PyTorch parts on
the simulator (gpu-acceptance --sim --torch-on-sim --python THIS). FAKE_TORCH_ROOT is the bundle.

  -c CODE                  'import torch' queries: version 2.11.0, CUDA 13.0, a device
  train_torch.py ARGS      runs examples/train --steps N (ProfilerStep#N NVTX ranges, cuBLASLt,
                           kernels) instead of the model, and writes --json with fixed step times
                           (bare 10 ms, under dlhook 10.5, torch.profiler 12, with stacks 15);
                           --mode torchprof*: the Chrome trace (--trace) is made from a dlhook
                           trace of the same program: kernels, launches, ProfilerStep# ranges.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.environ["FAKE_TORCH_ROOT"]
if sys.argv[1:2] == ["-c"]:
    if "import torch" in sys.argv[2]:
        print("2.11.0 13.0 True 1")
    sys.exit(0)
ap = argparse.ArgumentParser()
ap.add_argument("script")
ap.add_argument("--mode", default="bare")
ap.add_argument("--model", default="transformer")
ap.add_argument("--batch", type=int)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--warmup", type=int, default=2)
ap.add_argument("--json")
ap.add_argument("--trace")
a = ap.parse_args()
train = [os.path.join(ROOT, "examples", "train"), "--steps", str(a.steps)]
env = dict(os.environ)
env["LD_LIBRARY_PATH"] = os.path.join(ROOT, "simcuda")
traced = "libdlhook" in env.get("LD_PRELOAD", "")
if a.mode == "bare":
    rc = subprocess.run(train, env=env).returncode
else:
    d = tempfile.mkdtemp()
    rc = subprocess.run([os.path.join(ROOT, "dlhook"), "record", "--sim", "-o", d, "--"] + train,
                        env=env).returncode
    dump = subprocess.run([os.path.join(ROOT, "dlhook"), "dump"] +
                          [os.path.join(d, f) for f in os.listdir(d)],
                          capture_output=True, text=True).stdout
    ev = []
    for line in dump.splitlines():
        o = json.loads(line)
        us = lambda ns: ns / 1000.0
        if o["type"] == "nvtx" and str(o["args"].get("message", "")).startswith("ProfilerStep#"):
            ev.append({"ph": "X", "cat": "user_annotation", "name": o["args"]["message"],
                       "ts": us(o["start_ns"]), "dur": us(o["dur_ns"]), "tid": o["tid"], "pid": o["pid"]})
        elif o["type"] == "api" and o.get("corr"):
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": o["name"], "ts": us(o["start_ns"]),
                       "dur": us(o["dur_ns"]), "tid": o["tid"], "pid": o["pid"],
                       "args": {"correlation": o["corr"]}})
        elif o["type"] == "kernel":
            ev.append({"ph": "X", "cat": "kernel", "name": o["name"], "ts": us(o["start_ns"]),
                       "dur": us(o["dur_ns"]), "tid": o["stream"], "pid": 0,
                       "args": {"correlation": o["corr"]}})
    # torch.profiler shows kernel names demangled (c++filt: binutils, with the compiler)
    raw = sorted({e["name"] for e in ev if e["cat"] == "kernel"})
    try:
        dem = subprocess.run(["c++filt"], input="\n".join(raw) + "\n", capture_output=True,
                             text=True).stdout.splitlines()
    except OSError:
        dem = raw
    if len(dem) == len(raw):
        m = dict(zip(raw, dem))
        for e in ev:
            if e["cat"] == "kernel":
                e["name"] = m[e["name"]]
    if a.trace:
        with open(a.trace, "w") as f:
            json.dump({"traceEvents": ev}, f)
ms = {"bare": 10.5 if traced else 10.0, "torchprof": 12.0, "torchprof-stack": 15.0}[a.mode]
n = max(a.steps - a.warmup, 1)
with open(a.json, "w") as f:
    json.dump({"mode": a.mode, "steps": a.steps, "step_ms": [ms] * n, "median_step_ms": ms}, f)
sys.exit(rc)
