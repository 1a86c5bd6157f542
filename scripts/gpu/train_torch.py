#!/usr/bin/env python3
"""train_torch.py — small PyTorch training loops for scripts/gpu-acceptance.

--model transformer (default): a two-layer transformer encoder on synthetic token data, trained
with AdamW. --model cnn: a small convolutional network (conv, batch norm, ReLU, pooling, linear)
on synthetic images, trained with SGD and automatic mixed precision (autocast float16 and a
GradScaler): cuDNN convolutions and batch norm, cuBLAS(Lt) GEMMs. --model gpt: a tiny
GPT-2-like LM (pre-norm blocks with causal scaled_dot_product_attention, a tied head) under
autocast bfloat16, AdamW (the calibration of scripts/gpu/calibrate.py). All are fed by a
DataLoader with one worker process (pinned memory). Every step is an NVTX range and a
torch.profiler record_function range, both named ``ProfilerStep#N`` (with forward, backward and
optimizer ranges inside), so that dlhook (NVTX) and
torch.profiler (user annotations) cut the same steps. Each step ends with ``loss.item()`` (a
synchronisation, as in a loop that logs its loss), so a step's wall time is its real cost.

  --mode bare             no profiler in the script (also the mode used under ``dlhook record``)
  --mode torchprof        torch.profiler with CPU and CUDA activities, around the whole loop
  --mode torchprof-stack  the same with with_stack=True
  --trace FILE            (torchprof*) write the profiler's Chrome trace there
  --json FILE             per-step wall times (ms), and the setup, as JSON

The step times cover every step after --warmup; the profiler's post-processing after the loop
(and the trace export) is not in them.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
# exit_race.py: beside this script in the GPU bundle, ../../tests/torch in the source tree
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../tests/torch'))
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Images(Dataset):
    """Deterministic synthetic images and labels (3 x size x size)."""

    def __init__(self, n, size, classes):
        self.n, self.size, self.classes = n, size, classes

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, self.size, self.size, generator=g), i % self.classes


class Tokens(Dataset):
    """Deterministic synthetic sequences (cheap to make, so that the one loader worker keeps
    ahead of the GPU): the target is the next token of a ramp."""

    def __init__(self, n, seq, vocab):
        self.n, self.seq, self.vocab = n, seq, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = (torch.arange(self.seq + 1) * (i % 7 + 1) + i) % self.vocab
        return x[:-1], x[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["transformer", "cnn", "gpt"], default="transformer")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--mode", choices=["bare", "torchprof", "torchprof-stack"], default="bare")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to try the script out")
    ap.add_argument("--ddp", action="store_true",
                    help="under torchrun: DistributedDataParallel over NCCL, one GPU per rank")
    a = ap.parse_args()

    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("train_torch: no CUDA device", file=sys.stderr)
        return 3
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    rank = 0
    if a.ddp:
        import torch.distributed as dist
        rank = int(os.environ.get("LOCAL_RANK", "0"))
        dev = torch.device(a.device, rank) if cuda else dev
        if cuda:
            torch.cuda.set_device(rank)
        dist.init_process_group("nccl" if cuda else "gloo")

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(a.vocab, a.dim)
            self.pos = nn.Parameter(torch.zeros(1, a.seq, a.dim))
            layer = nn.TransformerEncoderLayer(a.dim, nhead=4, dim_feedforward=4 * a.dim,
                                               dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
            self.head = nn.Linear(a.dim, a.vocab)

        def forward(self, x):
            return self.head(self.enc(self.emb(x) + self.pos))

    class Block(nn.Module):
        """A GPT-2 block: pre-norm causal self-attention and a GELU MLP."""

        def __init__(self, d, heads=4):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.fc_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.attn(self.ln_1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc_proj(nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        """A tiny GPT-2-like LM: token and position embeddings, causal blocks, a tied head."""

        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(a.vocab, a.dim), nn.Embedding(a.seq, a.dim)
            self.h = nn.ModuleList(Block(a.dim) for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.dim)
            self.head = nn.Linear(a.dim, a.vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, x):
            x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
            for blk in self.h:
                x = blk(x)
            return self.head(self.ln_f(x))

    class ConvNet(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            def block(i, o):
                return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
            self.body = nn.Sequential(*block(3, 32), *block(32, 64), nn.MaxPool2d(2),
                                      *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.head = nn.Linear(128, classes)

        def forward(self, x):
            return self.head(self.body(x))

    total = a.steps + 1
    cnn = a.model == "cnn"
    ds = Images(total * a.batch, 32, 10) if cnn else Tokens(total * a.batch, a.seq, a.vocab)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=False, num_workers=1, pin_memory=cuda,
                    drop_last=True, persistent_workers=False)
    gpt = a.model == "gpt"
    model = (ConvNet() if cnn else GPT() if gpt else Model()).to(dev)
    if cnn:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    if a.ddp:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, device_ids=[rank] if cuda else None)
    lossf = nn.CrossEntropyLoss()
    amp = cnn and cuda
    scaler = torch.amp.GradScaler("cuda") if amp else None

    prof = None
    if a.mode.startswith("torchprof"):
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else []),
                       with_stack=(a.mode == "torchprof-stack"), record_shapes=False)
    rf = torch.profiler.record_function
    push = torch.cuda.nvtx.range_push if cuda else (lambda name: None)
    pop = torch.cuda.nvtx.range_pop if cuda else (lambda: None)

    times = []
    losses = []
    t_start = time.perf_counter()
    if prof:
        prof.__enter__()
    it = iter(dl)
    for step in range(a.steps):
        t0 = time.perf_counter()
        name = "ProfilerStep#%d" % step
        push(name)
        with rf(name):
            x, y = next(it)
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            push("forward")
            with rf("forward"):
                if cnn:
                    with torch.autocast(a.device, dtype=torch.float16, enabled=amp):
                        loss = lossf(model(x), y)
                elif gpt:
                    with torch.autocast(a.device, dtype=torch.bfloat16, enabled=cuda):
                        loss = lossf(model(x).reshape(-1, a.vocab).float(), y.reshape(-1))
                else:
                    loss = lossf(model(x).reshape(-1, a.vocab), y.reshape(-1))
            pop()
            push("backward")
            with rf("backward"):
                (scaler.scale(loss) if scaler else loss).backward()
            pop()
            push("optimizer")
            with rf("optimizer"):
                if scaler:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
            pop()
            lv = loss.item()
        pop()
        t1 = time.perf_counter()
        if step >= a.warmup:
            times.append((t1 - t0) * 1e3)
        losses.append(lv)
    loop_s = time.perf_counter() - t_start
    if prof:
        prof.__exit__(None, None, None)
        if a.trace:
            prof.export_chrome_trace(a.trace)
    del it

    times_sorted = sorted(times)
    med = times_sorted[len(times_sorted) // 2] if times_sorted else 0.0
    res = {
        "model": a.model, "mode": a.mode, "steps": a.steps, "warmup": a.warmup, "batch": a.batch, "seq": a.seq,
        "dim": a.dim, "layers": a.layers, "step_ms": times, "median_step_ms": med,
        "loop_s": loop_s, "first_loss": losses[0], "last_loss": losses[-1],
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu", "pid": os.getpid(),
    }
    if a.ddp:
        torch.distributed.destroy_process_group()
        if a.json:
            a.json = "%s.rank%d" % (a.json, rank)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    print("train_torch: %s, mode %s, %d steps, median step %.3f ms, loss %.3f -> %.3f"
          % (a.model, a.mode, a.steps, med, losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
