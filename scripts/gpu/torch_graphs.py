#!/usr/bin/env python3
"""torch_graphs.py — PyTorch workloads whose kernels are not launched one by one from Python,
for scripts/gpu-acceptance (dlhook record vs torch.profiler on the same steps):

  graphs   a whole training step (a transformer block: layer norm, attention through
           scaled_dot_product_attention, GELU MLP, mean-square loss, backward, SGD with
           momentum) captured once in a CUDA graph (torch.cuda.graph, after three eager
           warm-up iterations on a side stream, as PyTorch's documentation does) and replayed
           --steps times (default 100): each replay's kernels are the graph's nodes, launched
           by one cudaGraphLaunch
  compile  the same block under torch.compile, trained with AdamW: first --steps steps of the
           default mode (Inductor's Triton kernels, cuBLAS for the matmuls), then --steps steps
           of mode="reduce-overhead" (the same kernels replayed from CUDA graphs)

Every measured step is an NVTX range and a record_function range ``ProfilerStep#N`` and ends
with a synchronisation (``.item()``), so that a kernel belongs to the step in whose range it
ran, whatever call (the replay or the capture) it is linked to. graphs numbers its replays
from 0; compile numbers default-mode steps from 0 and reduce-overhead steps from 1000. The
warm-up (eager iterations, the capture, the compilations) comes before the first step and is
outside any step, and so does one more replay (compile: one step of each mode) after the
profiler's start: torch.profiler on the simulator lost all the kernels of the first replay
after its start in one run of three. Every mode does the same, so dlhook's traces hold it too.

  --mode bare        no profiler in the script (also the mode used under ``dlhook record``)
  --mode torchprof   torch.profiler (CPU and CUDA activities), active over the measured steps
                     only; --trace FILE: its Chrome (Kineto) trace
  --json FILE        per-step wall times (ms) and the setup
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
# exit_race.py: beside this script in the GPU bundle, ../../tests/torch in the source tree
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../tests/torch'))
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Block(nn.Module):
    """One pre-norm transformer block."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload", choices=["graphs", "compile"])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3, help="compile: steps per mode before the measured ones")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--mode", choices=["bare", "torchprof"], default="bare")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_graphs: no CUDA device", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    rf = torch.profiler.record_function
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    prof = None
    if a.mode == "torchprof":
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False)
    data = torch.randn(8, a.batch, a.seq, a.dim, device=dev)
    target = torch.randn(8, a.batch, a.seq, a.dim, device=dev)
    res = {"workload": a.workload, "mode": a.mode, "steps": a.steps, "batch": a.batch, "seq": a.seq,
           "dim": a.dim, "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0), "pid": os.getpid(), "phases": {}}

    def steps(first, body):
        """a.steps measured steps numbered from `first`; body(i) -> the loss tensor."""
        times = []
        for i in range(a.steps):
            name = "ProfilerStep#%d" % (first + i)
            t0 = time.perf_counter()
            push(name)
            with rf(name):
                loss = body(i).item()
            pop()
            times.append((time.perf_counter() - t0) * 1e3)
        s = sorted(times)
        return {"first_step": first, "step_ms": times, "median_step_ms": s[len(s) // 2], "last_loss": loss}

    if a.workload == "graphs":
        model = Block(a.dim, 4).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        sx, sy = data[0].clone(), target[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                F.mse_loss(model(sx), sy).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            sloss = F.mse_loss(model(sx), sy)
            sloss.backward()
            opt.step()
        torch.cuda.synchronize()

        def replay(i):
            sx.copy_(data[i % 8])
            sy.copy_(target[i % 8])
            g.replay()
            return sloss
        if prof:
            prof.__enter__()
        replay(0).item()  # outside the steps (see above)
        res["phases"]["graphs"] = steps(0, replay)
    else:
        models = {}
        for mode, first in (("default", 0), ("reduce-overhead", 1000)):
            m = Block(a.dim, 4).to(dev)
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True)
            cm = torch.compile(m, mode=None if mode == "default" else mode)

            def body(i, cm=cm, opt=opt, ro=(mode != "default")):
                if ro:
                    torch.compiler.cudagraph_mark_step_begin()
                opt.zero_grad(set_to_none=True)
                loss = F.mse_loss(cm(data[i % 8]), target[i % 8])
                loss.backward()
                opt.step()
                return loss.detach()
            t0 = time.perf_counter()
            for i in range(a.warmup):  # compiles (and for reduce-overhead records the graphs)
                body(i).item()
            models[mode] = (body, first, time.perf_counter() - t0)
        if prof:
            prof.__enter__()
        for body, _, _ in models.values():  # outside the steps (see above)
            body(0).item()
        for mode, (body, first, warm_s) in models.items():
            res["phases"][mode] = steps(first, body)
            res["phases"][mode]["warmup_s"] = warm_s
    if prof:
        prof.__exit__(None, None, None)
        if a.trace:
            prof.export_chrome_trace(a.trace)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    print("torch_graphs: %s, mode %s: %s" % (a.workload, a.mode, ", ".join(
        "%s %d steps, median %.3f ms" % (k, len(v["step_ms"]), v["median_step_ms"])
        for k, v in res["phases"].items())))
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
