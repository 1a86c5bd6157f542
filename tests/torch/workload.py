"""Reference PyTorch workloads for the test suite (tests/torch/t_torch_*.sh), run on the
simulated CUDA stack bare and under dlhook; each prints only what must be identical in both runs.

  workload.py cnn [--steps N] [--profile TRACE.json]   conv/batch norm/relu/linear, SGD, AMP
  workload.py transformer [--steps N]                  attention (scaled_dot_product_attention),
                                                       layer norm, GELU, AdamW, bf16 autocast
  workload.py dataloader [--steps N]                   the CNN fed by DataLoader(num_workers=2)
  workload.py ddp [--steps N]                          the CNN under DistributedDataParallel
                                                       (NCCL); one rank of torchrun

The simulator runs cuBLAS, cuDNN and NCCL (results computed for small sizes) but not PyTorch's
own kernels, so the printed losses are not a model's losses; they are deterministic, which is
what the comparison needs. --profile wraps every GPU operation of the run in torch.profiler
(CPU and CUDA activities; --with-stack adds Python stacks) and exports its Kineto trace.
--time FILE (cnn, for bench/torch-sim-bench) writes the median wall time of a step (synchronized),
after 3 warm-up steps, in seconds.
"""
import argparse
import contextlib
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


def say(line):
    """One line in one write(2): ranks of a DDP run share stdout, and under PYTHONUNBUFFERED a
    print() is two writes (text, newline) that another rank's line can come between."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Flatten(), nn.Linear(8 * 8 * 8, 10))


class Block(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class Images(torch.utils.data.Dataset):
    """Deterministic CPU data: sample i is a function of i only."""
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 8, 8, generator=g), i % 10


def cpu_snapshot():
    """CPU time in ms of the process (every thread) and of dlhook's threads (schedstat),
    CLOCK_MONOTONIC in ns (the trace's clock) and memory in KiB (VmHWM, RssAnon, RssFile):
    --cpu's window is the steps after the 3rd"""
    per = {"process": time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID) * 1e3,
           "mono_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC)}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if comm.startswith("dlhook-"):
            per[comm] = per.get(comm, 0) + ns / 1e6
    try:  # memory in KiB: the peak so far (VmHWM) and what is resident now, anonymous and files
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "RssAnon", "RssFile"):
                    per[k] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return per


def train_cnn(args, dev, model=None, batches=None, quiet=False, times=None, cpu=None):
    torch.manual_seed(0)
    net = cnn()
    net = net.to(dev)
    if model is not None:
        net = model(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    if batches is None:
        g = torch.Generator().manual_seed(1)
        x, y = torch.randn(4, 3, 8, 8, generator=g), torch.randint(0, 10, (4,), generator=g)
        batches = [(x, y)] * args.steps
    for step, (x, y) in enumerate(batches):
        if step >= args.steps:
            break
        t0 = time.perf_counter()
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        line = f"step {step} loss {loss.item():.4f} {tuple(x.shape)}"  # .item() synchronizes
        if times is not None:
            times.append(time.perf_counter() - t0)
        if cpu is not None and step in (2, args.steps - 1):
            cpu.append(cpu_snapshot())
        if not quiet:
            print(line, flush=True)


def train_transformer(args, dev):
    torch.manual_seed(0)
    net = Block().to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1)).to(dev)
    for step in range(args.steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["cnn", "transformer", "dataloader", "ddp"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", metavar="TRACE.json")
    ap.add_argument("--with-stack", action="store_true")
    ap.add_argument("--time", metavar="FILE")
    ap.add_argument("--cpu", metavar="FILE", help="cnn: CPU time of the process and of dlhook's "
                    "threads over the steps after the 3rd (JSON; bench/sample-bench)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("workload: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    print(f"{args.workload}: {torch.cuda.get_device_name(dev)}", flush=True)
    prof = contextlib.nullcontext()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       with_stack=args.with_stack)
    with prof as p:
        if args.workload == "cnn":
            times = [] if args.time else None
            cpu = [] if args.cpu else None
            train_cnn(args, dev, times=times, quiet=bool(args.time), cpu=cpu)
            if cpu and len(cpu) == 2:
                with open(args.cpu, "w") as f:
                    json.dump({"start": cpu[0], "end": cpu[1], "steps": args.steps - 3}, f)
            if times:
                t = sorted(times[3:] or times)
                with open(args.time, "w") as f:
                    f.write(f"{t[len(t) // 2]:.9f}\n")
        elif args.workload == "transformer":
            train_transformer(args, dev)
        elif args.workload == "dataloader":
            loader = torch.utils.data.DataLoader(Images(), batch_size=4, num_workers=2,
                                                 pin_memory=True)
            train_cnn(args, dev, batches=loader)
        else:
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl", device_id=dev)
            rank = dist.get_rank()
            train_cnn(args, dev, model=lambda m: DDP(m, device_ids=[dev.index]), quiet=rank != 0)
            t = torch.tensor([rank + 1.0] * 4).to(dev)  # a host copy: real data on the simulator
            dist.all_reduce(t)
            say(f"rank {rank}/{dist.get_world_size()} all_reduce {t.tolist()}")
            dist.destroy_process_group()
        torch.cuda.synchronize()
    if args.profile:
        p.export_chrome_trace(args.profile)
    say("done")
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
