"""zoo.py MODEL CAUSE [--steps N] [--warmup W] — the model zoo of dlhook advise (tests/zoo/):
third-party models (Hugging Face transformers, timm, torchvision) built from their configs (no
weights: nothing is downloaded) and trained on "cuda" the way their users train them: set-up
(model.to, the optimizer), then N steps of forward, loss, backward, optimizer.step, zero_grad.

MODEL: gpt2 (GPT2LMHeadModel, causal LM), bert (BertForSequenceClassification), vit (timm
vit_small_patch16_224 at 128 px, with a timm ModelEmaV3 of its weights), resnet (torchvision
resnet18), loader (resnet18 fed by a DataLoader that decodes and augments JPEG images),
compile (an MLP classifier under torch.compile), gpt2_ddp (gpt2 under DistributedDataParallel:
run it with torchrun, 2 ranks).

CAUSE: tuned, or one planted cause. Each is marked "# PLANT-<CAUSE>" on the line(s) where
dlhook advise should point (tests/zoo/judge.py reads the marks):
  item         .item() of the loss every step                         (sync-in-loop)
  pageable     the batch, made on the CPU, copied from pageable memory (pageable-h2d)
  loader       a DataLoader without workers whose Dataset decodes JPEGs (input-starved)
  fp32         float32 GEMMs without TF32                              (no-tensor-cores)
  empty_cache  torch.cuda.empty_cache() every step                     (malloc-in-loop)
  tiny_ops     many tiny kernels per step from a Python loop           (launch-bound)
  straggler    rank 0 waits for a blocking call the other rank does not make (straggler-rank)
The tuned program is the same one without the cause: batches copied from pinned memory with
non_blocking=True (the loader: pin_memory=True and 2 workers), TF32 matmuls, the loss kept on
the GPU, foreach gradient clipping (gpt2) and a foreach EMA (vit), no empty_cache.

Set-up runs once before the loop: the __init__ methods and the lines of main() between
"# ZOO-SETUP-BEGIN" and "# ZOO-SETUP-END"; no finding may point there. Prints "step_ms=..." (the
mean time of a step after W warm-up steps, between two torch.cuda.synchronize()),
"host_step_median_ms=..." (the median of the same steps, each from the end of the one before:
what tests/zoo/judge.py compares) and "done"."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
# exit_race.py: beside this script in the GPU bundle, ../torch in the source tree
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../torch'))
from exit_race import settle  # noqa: E402  (PyTorch's exit race)

# the (model, cause) pairs of the zoo: the causes that apply to each model
CAUSES = {
    "gpt2": ["tuned", "item", "pageable", "fp32", "empty_cache"],
    "bert": ["tuned", "item", "pageable", "fp32", "empty_cache"],
    "vit": ["tuned", "item", "pageable", "fp32", "empty_cache"],
    "resnet": ["tuned", "item", "pageable", "empty_cache"],
    "bert_small": ["tuned", "tiny_ops"],
    "loader": ["tuned", "loader"],
    "compile": ["tuned", "item", "pageable", "fp32"],
    "gpt2_ddp": ["tuned", "straggler"],
}
# what each planted cause is, in advise's terms
CLASS = {
    "item": "sync-in-loop",
    # .to(device) without non_blocking also synchronizes (PyTorch copies, then waits): named
    # either by the pageable source or by that synchronization, at the same line
    "pageable": ["pageable-h2d", "sync-in-loop"],
    "loader": "input-starved",
    "fp32": "no-tensor-cores",
    "empty_cache": "malloc-in-loop",
    # a per-parameter Python loop of tiny kernels in a host-bound step: named either by the
    # idle gaps before the kernels or by the Python line that holds the host (both fixes: foreach)
    "tiny_ops": ["launch-bound", "cpu-bound-python"],
    "straggler": "straggler-rank",
}


def say(s):
    """One line in one write(2): the ranks of a DDP run share stdout."""
    os.write(1, (s + "\n").encode())


class Zoo:
    """One model of the zoo: set-up in __init__, then batch() and loss() per step."""

    def __init__(self, a, dev):
        self.a, self.dev, self.cause = a, dev, a.cause
        self.gen = torch.Generator().manual_seed(0)  # the host-side data source
        self.ema, self.pool, self.n = None, [], 0

    def fill(self, make, k=4):
        """The host's input: k batches prepared once and cycled (a dataset cached in host memory),
        in pinned memory unless the cause is pageable."""
        for _ in range(k):
            b = make()
            self.pool.append(b if self.cause == "pageable" else tuple(t.pin_memory() for t in b))

    def batch(self):
        b = self.pool[self.n % len(self.pool)]
        self.n += 1
        return tuple(self.to_dev(t) for t in b)

    def to_dev(self, t):
        """A batch of the host, to the GPU."""
        if self.cause == "pageable":
            return t.to(self.dev)  # PLANT-PAGEABLE: a synchronous copy from pageable memory
        return t.to(self.dev, non_blocking=True)

    def clip(self):
        if self.cause == "tiny_ops":
            # gradient clipping written by hand: a few tiny kernels per parameter
            params = [p for p in self.model.parameters() if p.grad is not None]
            norms = [p.grad.norm() for p in params]  # PLANT-TINY_OPS
            total = torch.stack(norms).norm()
            scale = (1.0 / (total + 1e-6)).clamp(max=1.0)
            for p in params:
                p.grad.mul_(scale)  # PLANT-TINY_OPS
        else:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # foreach: a few kernels

    def optimizer(self, lr):
        return torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.01)


class GPT2(Zoo):
    seqs = 64  # sequences of 1024 tokens: a batch that fills the GPU, as its users size it

    def __init__(self, a, dev):
        super().__init__(a, dev)
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=8192, n_positions=1024, n_embd=768, n_layer=6, n_head=12,
                         bos_token_id=0, eos_token_id=0)
        self.model = GPT2LMHeadModel(cfg).to(dev)
        self.model.train()
        self.opt = self.optimizer(3e-4)
        self.fill(lambda: (torch.randint(0, cfg.vocab_size, (GPT2.seqs, 1024), generator=self.gen),))  # tokens

    def loss(self, b):
        ids, = b
        return self.model(input_ids=ids, labels=ids).loss  # PLANT-FP32: the model's GEMMs


class BERT(Zoo):
    size = dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072)
    shape = (128, 512)

    def __init__(self, a, dev):
        super().__init__(a, dev)
        from transformers import BertConfig, BertForSequenceClassification
        cfg = BertConfig(vocab_size=8192, max_position_embeddings=512, num_labels=2, **self.size)
        self.model = BertForSequenceClassification(cfg).to(dev)
        self.model.train()
        self.opt = self.optimizer(2e-5)
        shape = self.shape
        self.fill(lambda: (torch.randint(0, cfg.vocab_size, shape, generator=self.gen),
                           torch.ones(shape, dtype=torch.long),
                           torch.randint(0, 2, (shape[0],), generator=self.gen)))

    def loss(self, b):
        ids, mask, labels = b
        return self.model(input_ids=ids, attention_mask=mask, labels=labels).loss  # PLANT-FP32


class BERTSmall(BERT):
    """A small BERT fine-tuned on short sequences: its step is the host's (Python and launches),
    where per-parameter kernels cost what they take to launch."""
    size = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    shape = (16, 128)


class Images(Zoo):
    """Image classification on batches of normalized images made on the host."""
    shape = (256, 3, 224, 224)

    def images(self):
        self.fill(k=2, make=lambda: (torch.randn(self.shape, generator=self.gen),  # decoded, augmented images
                           torch.randint(0, 1000, (self.shape[0],), generator=self.gen)))

    def loss(self, b):
        x, y = b
        return F.cross_entropy(self.model(x), y)  # PLANT-FP32: the model's GEMMs


class ViT(Images):
    shape = (512, 3, 224, 224)

    def __init__(self, a, dev):
        super().__init__(a, dev)
        import timm
        from timm.utils import ModelEmaV3
        self.model = timm.create_model("vit_small_patch16_224", pretrained=False,
                                       num_classes=1000).to(dev)
        self.model.train()
        self.opt = self.optimizer(1e-3)
        # DeiT-style EMA of the weights; foreach=False updates them one tensor at a time
        self.ema = ModelEmaV3(self.model, decay=0.9998, foreach=self.cause != "tiny_ops")
        self.images()


class ResNet(Images):
    def __init__(self, a, dev):
        super().__init__(a, dev)
        import torchvision
        self.model = torchvision.models.resnet18(weights=None, num_classes=1000).to(dev)
        self.model.train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        if type(self) is ResNet:
            self.images()

    def clip(self):
        pass


class JPEGs(torch.utils.data.Dataset):
    """An image folder in memory: JPEG files decoded and augmented per item, as torchvision's
    ImageNet recipe does (RandomResizedCrop, RandomHorizontalFlip, ToTensor, Normalize)."""

    def __init__(self, n=64, size=160):
        from PIL import Image
        from torchvision import transforms
        g = torch.Generator().manual_seed(1)
        self.files = []
        for _ in range(n):
            px = (torch.rand(size, size, 3, generator=g) * 255).to(torch.uint8).numpy()
            buf = io.BytesIO()
            Image.fromarray(px).save(buf, format="JPEG", quality=90)
            self.files.append(buf.getvalue())
        self.tf = transforms.Compose([
            transforms.RandomResizedCrop(128), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
            transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        from PIL import Image
        img = Image.open(io.BytesIO(self.files[i % len(self.files)])).convert("RGB")
        return self.tf(img), i % 1000  # the Dataset's CPU work: decode and augment


class Loader(ResNet):
    shape = (32, 3, 128, 128)  # what the JPEG decoding of 2 workers keeps up with on 2 cores

    def __init__(self, a, dev):
        super().__init__(a, dev)
        # one worker: on the 2 cores of the test machine it decodes while the main thread trains
        workers = 0 if self.cause == "loader" else 1
        self.dl = torch.utils.data.DataLoader(
            JPEGs(), batch_size=self.shape[0], num_workers=workers, pin_memory=self.cause != "pageable",
            persistent_workers=workers > 0, prefetch_factor=2 if workers else None)
        self.it = iter(self.dl)

    def batch(self):
        x, y = next(self.it)  # PLANT-LOADER: the main thread decodes the images itself
        if self.cause == "pageable":
            return x.to(self.dev), y.to(self.dev)  # PLANT-PAGEABLE: pin_memory=False
        return x.to(self.dev, non_blocking=True), y.to(self.dev, non_blocking=True)


class MLP(nn.Module):
    def __init__(self, d_in=256, d=4096, classes=16):
        super().__init__()
        self.fc1, self.fc2, self.head = nn.Linear(d_in, d), nn.Linear(d, d), nn.Linear(d, classes)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):  # PLANT-FP32: compiled, its GEMMs are called from Inductor's code
        h = F.gelu(self.fc1(x))
        h = self.norm(h + F.gelu(self.fc2(h)))
        return self.head(h)


class Compiled(Zoo):
    def __init__(self, a, dev):
        super().__init__(a, dev)
        self.model = MLP().to(dev)
        self.opt = self.optimizer(1e-3)
        self.fn = torch.compile(self.model)
        self.fill(lambda: (torch.randn(32768, 256, generator=self.gen),  # features made on the host
                           torch.randint(0, 16, (32768,), generator=self.gen)))

    def loss(self, b):
        x, y = b
        return F.cross_entropy(self.fn(x), y)  # PLANT-FP32: the compiled model's GEMMs


class GPT2DDP(GPT2):
    def __init__(self, a, dev):
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl", device_id=dev)
        self.rank = dist.get_rank()
        super().__init__(a, dev)
        self.model = DDP(self.model, device_ids=[dev.index])
        self.opt = self.optimizer(3e-4)
        # a run resumed from step 2000: its throughput history, kept for the log
        self.hist = [0.05 + (i % 7) * 1e-3 for i in range(4000)]
        self.log = open(os.devnull, "w")

    def after_step(self, dt):
        self.hist.append(dt)
        if self.cause == "straggler" and self.rank == 0:
            self.write_log()

    def write_log(self):
        # rank 0 reports its throughput to an experiment tracker synchronously every step: a
        # blocking call that waits ~0.3 s for the service's answer (here, the wait alone: a
        # stand-in that takes no CPU from the other rank on a small machine)
        rec = {"step": len(self.hist), "s_per_step": self.hist[-1]}
        self.log.write(json.dumps(rec) + "\n")
        time.sleep(0.3)  # PLANT-STRAGGLER: waiting for the tracker's answer


MODELS = {"gpt2": GPT2, "bert": BERT, "bert_small": BERTSmall, "vit": ViT, "resnet": ResNet, "loader": Loader,
          "compile": Compiled, "gpt2_ddp": GPT2DDP}


def train(a, z):
    """The training loop: every line in it runs every step."""
    dev, cause = z.dev, z.cause
    total = torch.zeros((), device=dev)
    stamps = []
    last = time.perf_counter()
    for step in range(a.steps):
        if step == a.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        b = z.batch()
        loss = z.loss(b)
        loss.backward()
        z.clip()
        z.opt.step()
        z.opt.zero_grad(set_to_none=True)
        if z.ema is not None:
            z.ema.update(z.model)  # PLANT-TINY_OPS: the EMA's update
        if cause == "item":
            total += loss.item()  # PLANT-ITEM: the host waits for the GPU every step
        else:
            total += loss.detach()
        if cause == "empty_cache":
            torch.cuda.empty_cache()  # PLANT-EMPTY_CACHE: the caching allocator emptied every step
        now = time.perf_counter()
        if hasattr(z, "after_step"):
            z.after_step(now - last)
        stamps.append(now - last)
        last = now
    torch.cuda.synchronize()
    n = a.steps - a.warmup
    step_ms = (time.perf_counter() - t0) * 1e3 / n
    med = statistics.median(stamps[a.warmup:]) * 1e3
    return step_ms, med, float(total) / a.steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("cause", choices=["tuned"] + sorted(CLASS))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3, help="steps before the timed ones")
    a = ap.parse_args()
    if a.cause not in CAUSES[a.model]:
        ap.error(f"cause {a.cause} does not apply to {a.model} (it has: {' '.join(CAUSES[a.model])})")
    a.warmup = min(a.warmup, a.steps - 1)
    if not torch.cuda.is_available():
        print("zoo: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    # ZOO-SETUP-BEGIN
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    torch.manual_seed(0)
    if a.cause != "fp32":
        torch.backends.cuda.matmul.allow_tf32 = True  # TF32 tensor cores for float32 matmuls
    z = MODELS[a.model](a, dev)
    # ZOO-SETUP-END
    step_ms, med, loss = train(a, z)
    rank = getattr(z, "rank", 0)
    say(f"zoo {a.model} {a.cause} rank={rank} steps={a.steps} step_ms={step_ms:.3f} "
        f"host_step_median_ms={med:.3f} loss={loss:.4f}")
    if a.model == "gpt2_ddp":
        import torch.distributed as dist
        dist.destroy_process_group()
    say("done")
    return 0


if __name__ == "__main__":
    rc = main()
    settle()
    sys.exit(rc)
