"""advise_py.py MODE [--steps N] — planted host-side causes for tests/advise/ in a PyTorch loop
(a small MLP trained on the GPU). MODE is one of
  item       a GPU-bound step (large matmuls) whose loss is read with .item() every step: the
             host waits for the GPU each step (sync-in-loop, at PLANT-ITEM)
  loader     a DataLoader (num_workers=0) whose Dataset does ~20 ms of Python per batch
             (input-starved, at PLANT-LOADER; the Dataset's line at PLANT-DATASET)
  pycpu      a pure-Python feature function run every step (cpu-bound-python, PLANT-PYCPU)
  tuned      the item loop done well: input prepared on the GPU once, the loss kept on the GPU
             and read once at the end, TF32 allowed for the matmuls (in item they are float32
             GEMMs without tensor cores: no-tensor-cores, at PLANT-FP32)
Prints 'done' and the final loss."""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Slow(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        acc = 0.0
        for k in range(40000):
            acc += (i * k) % 7  # PLANT-DATASET: Python work per item
        return torch.full((64,), acc / 1e4), torch.zeros(8)


def features(n):
    out = []
    for i in range(n):
        out.append(sum((i * j) % 13 for j in range(200)))  # PLANT-PYCPU
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x0 = torch.randn(16, 64, device=dev)
    y0 = torch.zeros(16, 8, device=dev)
    it = iter(DataLoader(Slow(), batch_size=4, num_workers=0)) if a.mode == "loader" else None
    total = torch.zeros((), device=dev)
    heavy = a.mode in ("item", "tuned")
    if a.mode == "tuned":
        torch.backends.cuda.matmul.allow_tf32 = True  # tensor cores for the float32 matmuls
    if heavy:
        big = torch.randn(4096, 4096, device=dev)
        wbig = torch.randn(4096, 4096, device=dev) * 1e-3
    for step in range(a.steps):
        if it is not None:
            x, y = next(it)  # PLANT-LOADER
            x, y = x.to(dev), y.to(dev)
        else:
            x, y = x0, y0
        if a.mode == "pycpu":
            f = features(2000)
            x = x + float(f[0]) * 0.0
        loss = ((m(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if heavy:
            # after the small MLP's ~25 short kernels: a step that waits for the GPU at its end
            # (item) starts with the GPU idle while the host launches them (the bubble .item()
            # costs), which a step that does not wait overlaps with these GEMMs
            h = big
            for _ in range(24):  # GPU-bound when tuned (TF32: ~10 ms of GEMMs a step)
                h = h @ wbig  # PLANT-FP32
            loss = loss + h[0, 0] * 0.0
        if a.mode == "item":
            total += loss.item()  # PLANT-ITEM
        else:
            total += loss.detach()
    print("done", round(float(total) / a.steps, 3))


if __name__ == "__main__":
    main()
    settle()
