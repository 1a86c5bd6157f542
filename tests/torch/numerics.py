"""Library results through PyTorch on the simulator (tests/torch/t_torch_numerics.sh): the
simulated cuDNN (backend API convolutions: fprop, dgrad, wgrad; batch norm) and cuBLAS compute
real results for small sizes, so PyTorch's CUDA ops that are single library calls match the CPU.
(PyTorch's own kernels are not executed on the simulator: only library calls are compared, fed
through host copies.) Prints one line per check: NAME ok|BAD max-abs-error."""
import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
g = torch.Generator().manual_seed(0)
x, w = torch.randn(2, 3, 8, 8, generator=g), torch.randn(4, 3, 3, 3, generator=g)
dy = torch.randn(2, 4, 8, 8, generator=g)


def report(name, got, want, tol=1e-4):
    err = (got.cpu() - want).abs().max().item()
    print(f"{name} {'ok' if err <= tol * (1 + want.abs().max().item()) else 'BAD'} {err:.3g}")


xc, wc = x.cuda().requires_grad_(), w.cuda().requires_grad_()
y = F.conv2d(xc, wc, padding=1)
y.backward(dy.cuda())
xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
yr = F.conv2d(xr, wr, padding=1)
yr.backward(dy)
report("conv2d.fprop", y.detach(), yr.detach())
report("conv2d.dgrad", xc.grad, xr.grad)
report("conv2d.wgrad", wc.grad, wr.grad)
a, b = torch.randn(5, 7, generator=g), torch.randn(7, 3, generator=g)
report("mm", torch.mm(a.cuda(), b.cuda()), a @ b)
bn = torch.nn.BatchNorm2d(3)
bnc = torch.nn.BatchNorm2d(3).cuda()
report("batch_norm", bnc(x.cuda()).detach(), bn(x).detach())
