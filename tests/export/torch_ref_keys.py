"""torch_ref_keys.py OUT.json — records which keys torch.profiler's own Kineto trace has, per
event category (ph/cat) and at the top level, for t_export_kineto_schema.sh. Run it with a
Python that has torch (CPU is enough): the workload is a small conv + linear training loop under
torch.profiler with record_shapes=True and profile_memory=True, 3 active steps.
The output committed as tests/export/torch-profiler-keys.json came from torch 2.15.0 (PyPI)."""
import collections
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

out = sys.argv[1]
m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x, y = torch.randn(32, 1, 16, 16), torch.randint(0, 10, (32,))
path = os.path.join(tempfile.mkdtemp(), "trace.json")
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
with profile(activities=acts, record_shapes=True, profile_memory=True,
             schedule=schedule(wait=0, warmup=1, active=3),
             on_trace_ready=lambda p: p.export_chrome_trace(path)) as p:
    for _ in range(4):
        with record_function("forward"):
            loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        p.step()
j = json.load(open(path))
keys = collections.defaultdict(set)
for e in j["traceEvents"]:
    c = "%s/%s" % (e.get("ph"), e.get("cat", ""))
    keys[c] |= set(e) | {"args." + a for a in e.get("args", {})}
json.dump({"torch": torch.__version__, "cuda": torch.cuda.is_available(),
           "top": sorted(k for k in j if k != "traceEvents"),
           "events": {c: sorted(v) for c, v in sorted(keys.items())}}, open(out, "w"), indent=1)
print("wrote", out)
