#!/usr/bin/env python3
"""calib_torch.py [--steps N] [--small] [--json FILE] — the calibration workload of
scripts/gpu-acceptance (scripts/gpu/calibrate.py): one operation of each kind the simulator's
cost model prices, at a few sizes, every step the same, so that a trace of it on a GPU and one
on the simulator can be matched operation by operation.

Each step is an NVTX range ``ProfilerStep#N`` holding, in this order:
  GEMMs        torch.mm of n x n x n, n in (256, 1024, 4096), in float32 (TF32 off), TF32,
               float16 and bfloat16;
  elementwise  add, mul and GELU over 1 M and 16 M floats;
  reductions   sum, softmax over rows, layer norm over 1 M and 16 M floats;
  attention    scaled_dot_product_attention (causal) in bfloat16 and float32, batch 8, 8 heads,
               512 tokens, head dim 64;
  copies       host to device and device to host of 1 MiB and 16 MiB from pinned and from
               pageable memory, and device to device of 16 MiB;
  memsets      cudaMemsetAsync of 1 MiB and 64 MiB (the runtime PyTorch loaded, through ctypes;
               skipped if it cannot be found);
  launches     ten elementwise kernels over 16 M floats, each after a torch.cuda.synchronize(), so
               each starts on an idle stream (launch latency), and each synchronize waits for
               one (sync latency: the kernel is long enough to be waited for on both sides).
--small divides the sizes by 4 (GEMMs) and 16 (the rest but the launches), for tests on a
loaded machine.
Prints the median step time; --json writes the step times."""
import argparse
import ctypes
import ctypes.util
import json
import os
import sys
import time

import torch
import torch.nn.functional as F


def cudart():
    """cudaMemsetAsync of the CUDA runtime this process has loaded (PyTorch's), or None."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError:
            continue
        f = getattr(lib, "cudaMemsetAsync", None)
        if f is not None:
            f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
            f.restype = ctypes.c_int
            return f
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2, help="steps not timed (2)")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("calib_torch: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    torch.manual_seed(0)
    g, e = (4, 16) if a.small else (1, 1)
    sizes = [n // g for n in (256, 1024, 4096)]
    gemm = {}
    for dt in ("fp32", "tf32", "fp16", "bf16"):
        t = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dt, torch.float32)
        gemm[dt] = [(torch.randn(n, n, device=dev, dtype=t), torch.randn(n, n, device=dev, dtype=t))
                    for n in sizes]
    vec = [torch.randn(n // e, device=dev) for n in (1 << 20, 16 << 20)]
    rows = [v.view(-1, 1024 // min(e, 16)) for v in vec]
    heads = 8 if not a.small else 2
    att = {dt: [torch.randn(8, heads, 512 // (2 if a.small else 1), 64, device=dev, dtype=dt)
                for _ in range(3)] for dt in (torch.bfloat16, torch.float32)}
    nbytes = [(1 << 20) // e, (16 << 20) // e]
    pinned = [torch.empty(n, dtype=torch.uint8).pin_memory() for n in nbytes]
    pageable = [torch.empty(n, dtype=torch.uint8) for n in nbytes]
    dbuf = [torch.empty(n, dtype=torch.uint8, device=dev) for n in nbytes]
    d2 = torch.empty(nbytes[1], dtype=torch.uint8, device=dev)
    mset = [torch.empty(n, dtype=torch.uint8, device=dev) for n in ((1 << 20) // e, (64 << 20) // e)]
    memset = cudart()
    spin = torch.ones(16 << 20, device=dev)  # ~50 us on an H100: long enough to be waited for
    stream = torch.cuda.current_stream().cuda_stream
    times = []
    for step in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("ProfilerStep#%d" % step)
        for dt, pairs in gemm.items():
            torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
            for x, y in pairs:
                torch.mm(x, y)
        torch.backends.cuda.matmul.allow_tf32 = False
        for v in vec:
            torch.add(v, v)
            torch.mul(v, v)
            F.gelu(v)
        for v, r in zip(vec, rows):
            v.sum()
            torch.softmax(r, dim=-1)
            F.layer_norm(r, r.shape[-1:])
        for q, k, v in att.values():
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
        for h, d in zip(pinned, dbuf):
            d.copy_(h, non_blocking=True)
            h.copy_(d, non_blocking=True)
        for h, d in zip(pageable, dbuf):
            d.copy_(h)
            h.copy_(d)
        d2.copy_(dbuf[1])
        if memset is not None:
            for m in mset:
                memset(m.data_ptr(), 0, m.numel(), stream)
        for _ in range(10):
            torch.cuda.synchronize()
            spin.mul_(1.0001)  # on an idle stream; the next synchronize waits for it
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    med = sorted(times)[len(times) // 2] if times else 0.0
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"step_ms": times, "median_step_ms": med, "memset": memset is not None,
                       "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "pid": os.getpid()}, f)
    print("calib_torch: %d steps, median step %.3f ms, memsets %s"
          % (a.steps, med, "yes" if memset is not None else "no (no cudart found)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
