"""tiny_gpt2.py [--steps N] [--json FILE] — a tiny GPT-2 (2 blocks, d=128, 4 heads, 64 tokens,
batch 8, GPT-2's vocabulary of 50257) trained with AdamW, written out in plain PyTorch as
GPT-2's reference implementation does it (tests/torch/t_sim_timing.sh, bench/torch-sim-bench).
After 3 warm-up steps it times each step (synchronized) and prints the median as
'step_ms=X'; --json FILE writes every step time."""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=50257, ctx=64, d=128, layers=2, heads=4):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, 50257, (8, 64), device="cuda")
    times = []
    for step in range(3 + a.steps):
        t0 = time.perf_counter()
        loss = model(idx, idx)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"step_ms={statistics.median(times):.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"step_ms": times}, f)
    print("done")


if __name__ == "__main__":
    main()
    settle()
