"""A data-parallel job that hangs (tests/flight/t_flight_hang_torch.sh): every rank all-reduces
a tensor each step and reads the result back (.item()); rank HANG_RANK (default 2) stops at
step HANG_STEP (default 30) in host code that never returns, so the other ranks wait in their
next all-reduce for ever. Run under torchrun on the simulator."""
import os
import time

import torch
import torch.distributed as dist


def wait_for_a_file_that_never_comes(path):
    """Host code that does not return: half computing, half sleeping."""
    n = 0
    while not os.path.exists(path):
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.002:
            n += 1
        time.sleep(0.002)
    return n


def main():
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    hang_rank, hang_step = int(os.environ.get("HANG_RANK", "2")), int(os.environ.get("HANG_STEP", "30"))
    t = torch.ones(256).to(dev)  # a host copy: the simulator runs no fill kernel
    for step in range(1000000):
        if rank == hang_rank and step == hang_step:
            print(f"rank {rank}: stuck at step {step}", flush=True)
            wait_for_a_file_that_never_comes("/nonexistent/dlhook-flight-test")
        dist.all_reduce(t)
        t[0].item()  # waits for the all-reduce
        if rank == 0 and step % 10 == 0:
            print(f"step {step}", flush=True)


if __name__ == "__main__":
    main()
