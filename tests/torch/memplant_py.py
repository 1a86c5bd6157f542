"""memplant_py.py MODE — planted memory problems for t_torch_memory_findings.sh (recorded with
--torch-memory). Prints 'done'.
  frag        inference over batches whose sequence length grows every step (PLANT-FRAG): each
              step's activations are larger than any block PyTorch's caching allocator has
              cached, so it reserves new segments while the old ones stay idle; the forward
              call (FRAG-ALLOC) makes most of them
  frag-tuned  the same batches padded to one bucket length: every step reuses the same blocks
  oom         keeps every step's 6 GiB output on the GPU (PLANT-OOM) until an allocation fails
              (OOM-ALLOC; torch.cuda.OutOfMemoryError is caught and said)
  oom-tuned   keeps only the last output"""
import sys

import torch


def frag(tuned):
    dev = torch.device("cuda")
    m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
    lengths = [2048 + 512 * i for i in range(12)]  # PLANT-FRAG: a longer batch every step
    with torch.no_grad():
        for n in lengths:
            if tuned:
                n = max(lengths)  # padded to the longest bucket
            x = torch.randn(n, 1024, device=dev)
            y = m(x)  # FRAG-ALLOC: the activations, larger every step
            del x, y
    torch.cuda.synchronize()


def oom(tuned):
    dev = torch.device("cuda")
    kept = []
    try:
        for step in range(16):
            out = torch.empty(3 << 29, device=dev)  # OOM-ALLOC: 6 GiB per step
            if tuned:
                kept = [out]
            else:
                kept.append(out)  # PLANT-OOM: every step's output stays on the GPU
            del out
    except torch.cuda.OutOfMemoryError:
        print("out of memory after %d steps" % len(kept))
    kept.clear()
    torch.cuda.synchronize()


def main():
    mode = sys.argv[1]
    if mode.startswith("frag"):
        frag(mode.endswith("tuned"))
    else:
        oom(mode.endswith("tuned"))
    print("done")


if __name__ == "__main__":
    main()
