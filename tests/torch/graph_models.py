"""Work made once and run many times (tests/torch/t_torch_graphs.sh, t_torch_compile.sh), on the
simulated CUDA stack:

  graph_models.py eager  [--steps N] [--profile TRACE.json]   a transformer block's forward
      (layer norm, attention through scaled_dot_product_attention, a GELU-gated MLP), N times
  graph_models.py graph  [--steps N] [--profile TRACE.json]   the same forward captured once
      with torch.cuda.graph (after warm-up on a side stream) and replayed N times
  graph_models.py graphed [--steps N]   a training step of a small MLP through
      torch.cuda.make_graphed_callables (forward and backward graphs), N times
  graph_models.py compile [--steps N] [--compile-mode MODE]   the block through torch.compile
      (Inductor's Triton kernels; MODE "reduce-overhead" replays them as CUDA graphs)

The block's MLP computes gelu(fc1(x)) * fc2(x) + x, which Inductor fuses into one Triton kernel
(triton_poi_fused_add_gelu_mul_*). Prints only what must be identical bare and under dlhook.
"""
import argparse
import contextlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Block(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1 = nn.Linear(d, d)
        self.fc2 = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        h = self.ln2(x)
        return F.gelu(self.fc1(h)) * self.fc2(h) + x


def run_eager(steps, dev):
    torch.manual_seed(0)
    m = Block().to(dev).eval()
    x = torch.randn(4, 16, 64, device=dev)
    with torch.no_grad():
        for _ in range(steps):
            y = m(x)  # eager forward
    torch.cuda.synchronize()
    print("eager", steps, tuple(y.shape), flush=True)


def run_graph(steps, dev):
    torch.manual_seed(0)
    m = Block().to(dev).eval()
    x = torch.randn(4, 16, 64, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        with torch.cuda.stream(s):
            for _ in range(3):  # warm-up before capture, as torch.cuda.graph asks
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)  # captured forward
        for _ in range(steps):
            g.replay()  # replay
    torch.cuda.synchronize()
    print("graph", steps, tuple(y.shape), flush=True)


def run_graphed_callables(steps, dev):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)).to(dev)
    opt = torch.optim.SGD(mlp.parameters(), lr=0.1)
    x = torch.randn(8, 32, device=dev, requires_grad=True)
    gm = torch.cuda.make_graphed_callables(mlp, (x,))
    for _ in range(steps):
        opt.zero_grad(set_to_none=False)
        out = gm(x)  # graphed forward
        out.sum().backward()  # graphed backward
        opt.step()
    torch.cuda.synchronize()
    print("graphed", steps, tuple(out.shape), flush=True)


def run_compile(steps, dev, mode):
    torch.manual_seed(0)
    m = Block().to(dev).eval()
    cm = torch.compile(m, mode=mode)
    x = torch.randn(4, 16, 64, device=dev)
    with torch.no_grad():
        for _ in range(steps):
            y = cm(x)  # compiled forward
    torch.cuda.synchronize()
    print("compile", mode, steps, tuple(y.shape), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["eager", "graph", "graphed", "compile"])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--profile", metavar="TRACE.json")
    ap.add_argument("--compile-mode", default="default")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("graph_models: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dev = torch.device("cuda", 0)
    prof = contextlib.nullcontext()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with prof as p:
        if args.workload == "eager":
            run_eager(args.steps, dev)
        elif args.workload == "graph":
            run_graph(args.steps, dev)
        elif args.workload == "graphed":
            run_graphed_callables(args.steps, dev)
        else:
            run_compile(args.steps, dev, args.compile_mode)
        torch.cuda.synchronize()
    if args.profile:
        p.export_chrome_trace(args.profile)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
