"""Two training programs written for the operator view (tests/torch/t_torch_ops.sh), run on the
simulated CUDA stack bare, under dlhook (default stacks) and under torch.profiler:

  ops_models.py lm [--steps N] [--profile TRACE.json]      a small GPT: token embedding, two
      transformer blocks in an nn.Sequential (layer norm, causal self-attention through
      scaled_dot_product_attention, GELU MLP), LM head; float16 autocast with GradScaler, AdamW
  ops_models.py resnet [--steps N] [--profile TRACE.json]  a small ResNet: conv-BatchNorm-ReLU
      stem, two residual blocks (one downsampling), global average pooling, linear head; SGD
      with Nesterov momentum and weight decay; float16 autocast

Prints only what must be identical bare and under dlhook (deterministic on the simulator).
"""
import argparse
import contextlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(a.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class LM(nn.Module):
    def __init__(self, vocab=128, d=64, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.Sequential(*[Block(d) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        return self.head(self.ln(self.blocks(x)))


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.layers = nn.Sequential(Residual(8, 8, 1), Residual(8, 16, 2))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def train_lm(steps, dev):
    torch.manual_seed(0)
    net = LM().to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, foreach=True)
    scaler = torch.amp.GradScaler("cuda")
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, 128, (2, 16), generator=g).to(dev)
    for step in range(steps):
        with torch.autocast("cuda", dtype=torch.float16):
            logits = net(idx[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), idx[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def train_resnet(steps, dev):
    torch.manual_seed(0)
    net = ResNet().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(4, 3, 8, 8, generator=g).to(dev), torch.randint(0, 10, (4,), generator=g).to(dev)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["lm", "resnet"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--profile", metavar="TRACE.json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("ops_models: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dev = torch.device("cuda", 0)
    prof = contextlib.nullcontext()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with prof as p:
        (train_lm if args.workload == "lm" else train_resnet)(args.steps, dev)
        torch.cuda.synchronize()
    if args.profile:
        p.export_chrome_trace(args.profile)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
