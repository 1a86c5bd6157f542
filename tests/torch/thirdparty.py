"""thirdparty.py MODEL [--steps N] — a third-party model from PyPI trained on "cuda" for the
first-screen test (t_torch_first_screen.sh): gpt2 (Hugging Face transformers' GPT2LMHeadModel
from a small GPT2Config) or vit (timm's vit_tiny_patch16_224 at 64 px). Built from their
configs: no weights, nothing downloaded. Exits 77 (skip) when the package is missing."""
import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
import torch  # noqa: E402
from exit_race import settle  # noqa: E402  (PyTorch's exit race)


def gpt2():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        print("no transformers", file=sys.stderr)
        sys.exit(77)
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=128, n_positions=128, vocab_size=1000)
    model = GPT2LMHeadModel(cfg).cuda()
    ids = torch.randint(0, 1000, (4, 64), device="cuda")
    return model, lambda: model(input_ids=ids, labels=ids).loss


def vit():
    try:
        import timm
    except ImportError:
        print("no timm", file=sys.stderr)
        sys.exit(77)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64,
                              num_classes=10).cuda()
    x = torch.randn(4, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (4,), device="cuda")
    return model, lambda: torch.nn.functional.cross_entropy(model(x), y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["gpt2", "vit"])
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    model, loss_of = {"gpt2": gpt2, "vit": vit}[a.model]()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(a.steps):
        loss = loss_of()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print("done")


if __name__ == "__main__":
    main()
    settle()
