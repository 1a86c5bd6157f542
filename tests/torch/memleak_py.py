"""memleak_py.py MODE [--steps N] — planted memory leak for t_torch_memory_advise.sh: an MLP
trained on the GPU with an optimizer (steps found from Optimizer.step).
  leak   keeps each step's activation in a list (PLANT-LEAK): 2 MiB more live memory per step,
         allocated at LEAK-ALLOC (the line dlhook advise names: where the kept memory was made)
  tuned  keeps loss.detach() only (a scalar) instead
Prints 'done'."""
import argparse

import torch
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["leak", "tuned"])
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 16)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(512, 1024, device=dev)
    y = torch.zeros(512, 16, device=dev)
    kept = []
    for _ in range(a.steps):
        opt.zero_grad(set_to_none=True)
        h = m[1](m[0](x))  # LEAK-ALLOC: the activation (2 MiB) the leak keeps
        loss = torch.nn.functional.mse_loss(m[2](h), y)
        loss.backward()
        opt.step()
        if a.mode == "leak":
            kept.append(h)  # PLANT-LEAK: one activation kept per step
        else:
            kept.append(loss.detach())
    torch.cuda.synchronize()
    print("done")


if __name__ == "__main__":
    main()
    settle()
