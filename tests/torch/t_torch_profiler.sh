#!/bin/sh
# run-tests: timeout=900
# torch.profiler side by side with dlhook, on the CNN (AMP, 5 steps), on the simulated stack.
# 1. `workload.py cnn --profile` (torch.profiler with CPU and CUDA activities around all GPU
#    work, Kineto trace exported) gives identical output and exit status bare and under dlhook.
# 2. The kernels dlhook records for the workload (its own run, without torch.profiler: CUPTI's
#    activity API has one client per process, the profiler takes it over while it runs) equal
#    the kernels Kineto records for it: the same names (demangled) in the same order, so the same
#    counts per name; both read the simulator's CUPTI.
# 3. Every cuBLAS/cuBLASLt/cuDNN call dlhook records (outermost, with kernels) maps through its
#    kernels to the aten op Kineto shows around the same kernels, and the pairs make sense
#    (GEMMs under aten::addmm/mm/linear..., convolutions under aten::cudnn_convolution or
#    convolution_backward, batch norm under aten::cudnn_batch_norm*). The table is printed.
. "$ROOT/tests/torch/common.sh"
command -v c++filt >/dev/null || skip "no c++filt (binutils)"
run_both prof "$PY" "$W" cnn --steps 5 --profile "$T/kineto.json"
[ -s kineto.json ] || fail "no Kineto trace exported"
"$DLHOOK_BIN" record --sim --stacks none -o cnn.rec -- "$PY" "$W" cnn --steps 5 >cnn.rec.out 2>cnn.rec.err ||
  fail "cnn under dlhook: $(tail -n 5 cnn.rec.err)"
cmp -s prof.bare.out cnn.rec.out || fail "the profiler changed the workload's output"
trace_stats cnn.rec s.json
"$DLHOOK_BIN" dump cnn.rec/*.dlh >d.jsonl || fail "dlhook dump"
python3 - d.jsonl kineto.json <<'PY' || fail "dlhook and Kineto disagree"
import collections, json, subprocess, sys
dl = [json.loads(l) for l in open(sys.argv[1])]
kin = json.load(open(sys.argv[2]))["traceEvents"]
kk = sorted((e for e in kin if e.get("cat") == "kernel"), key=lambda e: e["ts"])
dk = sorted((o for o in dl if o["type"] == "kernel"), key=lambda o: o["start_ns"])
names = [o["name"] for o in dk]
dem = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True,
                     check=True).stdout.split("\n")[:len(names)]
kn = [e["name"] for e in kk]
cd, ck = collections.Counter(dem), collections.Counter(kn)
print(f"kernels: dlhook {len(dem)} ({len(cd)} names), Kineto {len(kn)} ({len(ck)} names)")
for name in sorted(set(cd) | set(ck), key=lambda x: (-ck[x], x)):
    print(f"  {cd[name]:4d} {ck[name]:4d}  {name[:110]}")
assert cd == ck, "kernel names/counts differ"
assert dem == kn, "kernel order differs"
# library calls -> kernels -> the aten op around them in Kineto
ops = {e["args"]["External id"]: e["name"] for e in kin
       if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
pos = {id(o): i for i, o in enumerate(dk)}
by_corr = collections.defaultdict(list)
for o in dk:
    by_corr[o.get("corr")].append(o)
pairs, unmapped = collections.Counter(), []
for a in dl:
    if a["type"] != "api" or a["domain"] not in ("cublas", "cublasLt", "cudnn", "nccl") or a.get("depth", 0):
        continue
    for k in by_corr.get(a.get("corr"), []) if a.get("corr") else []:
        op = ops.get(kk[pos[id(k)]]["args"].get("External id"))
        if op is None:
            unmapped.append(a["name"])
        else:
            pairs[(a["name"], op)] += 1
print("library call -> aten op (kernels):")
for (f, op), c in sorted(pairs.items()):
    print(f"  {f:45s} {op:40s} {c}")
assert pairs and not unmapped, ("calls without an aten op", collections.Counter(unmapped))
fits = {"cudnnBackendExecute": ("convolution", "cudnn_convolution"),
        "cudnnBatchNormalizationForwardTrainingEx": ("batch_norm",),
        "cudnnBatchNormalizationBackwardEx": ("batch_norm",),
        "cublas": ("mm", "addmm", "linear", "matmul", "baddbmm", "bmm"),
        "cublasLt": ("mm", "addmm", "linear", "matmul", "baddbmm", "bmm")}
for (f, op), c in pairs.items():
    want = fits.get(f) or fits.get("cublasLt" if f.startswith("cublasLt") else
                                   "cublas" if f.startswith("cublas") else "", ())
    assert op.startswith("aten::") and (not want or any(w in op for w in want)), (f, op)
PY
echo "t_torch_profiler: OK"
