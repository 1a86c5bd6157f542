"""slow_dataset.py NUM_WORKERS [--steps N] — a training step whose GPU idles while the host
prepares input: a Linear model on the GPU fed by a DataLoader whose Dataset sleeps 50 ms per
item (SLEEP_LINE below). With workers, the main thread waits in the DataLoader for them; with
num_workers=0 it runs __getitem__ itself. Prints one line per step and 'done'."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.05)  # SLEEP_LINE: where the input time goes
        return torch.full((32,), float(i)), torch.zeros(8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workers", type=int)
    ap.add_argument("--steps", type=int, default=6)
    a = ap.parse_args()
    dev = torch.device("cuda")
    m = torch.nn.Linear(32, 8).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    dl = DataLoader(Slow(), batch_size=4, num_workers=a.workers)
    for step, (x, y) in enumerate(dl):
        if step == a.steps:
            break
        x, y = x.to(dev), y.to(dev)
        loss = ((m(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print("step", step, flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
    settle()
