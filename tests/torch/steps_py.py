"""steps_py.py MODE [--steps N] — a small training loop without NVTX ranges, for the steps that
dlhook finds from PyTorch itself (tests/torch/t_torch_steps.sh). Set-up first: the model moved to
the GPU, a pageable host-to-device copy and a synchronize (SETUP lines); then N iterations.
  optimizer  forward, backward and SGD.step each iteration (steps from Optimizer.step)
  backward   forward and backward only (steps from backward())
With --item the loss is read with .item() after each step (PLANT-ITEM: sync-in-loop, one call a
step).
Prints 'done' and the final loss."""
import argparse

import torch
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("optimizer", "backward"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--item", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    m = m.to("cuda")  # SETUP
    x = torch.randn(8, 32).to("cuda")  # SETUP: a pageable copy
    y = torch.zeros(8, 4).to("cuda")  # SETUP
    torch.cuda.synchronize()  # SETUP
    opt = torch.optim.SGD(m.parameters(), lr=0.01) if a.mode == "optimizer" else None
    total = torch.zeros((), device="cuda")
    for _ in range(a.steps):
        loss = ((m(x) - y) ** 2).mean()
        if opt is not None:
            opt.zero_grad()
        loss.backward()
        if opt is not None:
            opt.step()
        if a.item:
            total += loss.item()  # PLANT-ITEM
        else:
            total += loss.detach()
    print("done", round(float(total) / a.steps, 3))


if __name__ == "__main__":
    main()
    settle()
