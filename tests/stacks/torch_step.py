# A small PyTorch training step on the CPU (conv + linear, SGD), plus CUDA queries that fail on
# a machine without a GPU: the reference workload of tests/stacks/t_torch_default.sh.
import torch
import torch.nn as nn

torch.manual_seed(0)
print("cuda available:", torch.cuda.is_available(), "devices:", torch.cuda.device_count())
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 3, 16, 16)
y = torch.randint(0, 10, (4,))
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print("step", step, "loss", round(loss.item(), 4))
