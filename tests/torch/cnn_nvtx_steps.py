# The CNN + AMP step of the reference workload with the NVTX ranges a training script marks its
# steps and phases with (ProfilerStep#N > forward / backward / optimizer): the workload of
# tests/torch/t_torch_hta.sh.
import torch, torch.nn as nn
torch.manual_seed(0)
dev = "cuda"
m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                  nn.Linear(8 * 16 * 16, 10)).to(dev)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(4, 3, 16, 16, device=dev); y = torch.randint(0, 10, (4,), device=dev)
scaler = torch.amp.GradScaler("cuda")
for step in range(5):
    torch.cuda.nvtx.range_push(f"ProfilerStep#{step}")
    opt.zero_grad()
    torch.cuda.nvtx.range_push("forward")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(m(x), y)
    torch.cuda.nvtx.range_pop(); torch.cuda.nvtx.range_push("backward")
    scaler.scale(loss).backward()
    torch.cuda.nvtx.range_pop(); torch.cuda.nvtx.range_push("optimizer")
    scaler.step(opt); scaler.update()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print("done")
from exit_race import settle  # noqa: E402  (PyTorch's exit race)
settle()
