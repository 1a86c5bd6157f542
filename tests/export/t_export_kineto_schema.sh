# Schema against torch.profiler: for each event category (ph/cat) that both torch.profiler's own
# trace (tests/export/torch-profiler-keys.json, recorded from torch 2.15.0 by torch_ref_keys.py)
# and dlhook's Kineto export of the bundled example have, every key torch writes is present in
# ours, but for the listed exceptions (each with the reason); the same for the top-level keys.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "the simulated CUDA stack is not built"
[ -x "$BUILD/examples/train" ] || skip "$BUILD/examples/train is not built"
"$SIMRUN" "$DLHOOK_BIN" record -o tr -- "$BUILD/examples/train" --steps 3 >out 2>err ||
  fail "record failed: $(tail -n 20 err)"
"$DLHOOK_BIN" export -q -f kineto -o kin tr/*.dlh || fail "export kineto"
python3 - kin "$ROOT/tests/export/torch-profiler-keys.json" <<'PY' || fail "keys torch.profiler writes are missing"
import collections, glob, gzip, json, sys
ref = json.load(open(sys.argv[2]))
j = json.load(gzip.open(glob.glob(sys.argv[1] + "/*.pt.trace.json.gz")[0]))
ours = collections.defaultdict(set)
for e in j["traceEvents"]:
    c = "%s/%s" % (e.get("ph"), e.get("cat", ""))
    ours[c] |= set(e) | {"args." + a for a in e.get("args", {})}
# keys we cannot write, and why
EXCEPT = {
    "X/cpu_op": {
        "args.Concrete Inputs": "values of scalar arguments of an ATen op; a library call has none",
        "args.Input Strides": "tensor strides: cuBLAS/cuDNN calls give leading dimensions, not tensors",
        "args.Sequence number": "autograd's sequence number of an ATen op",
        "args.Fwd thread id": "autograd's forward thread of an ATen op",
    },
    "i/cpu_instant_event": {
        "args.finished": "whether the profiler had stopped: a dlhook trace records to the end",
    },
}
both = sorted(set(ours) & set(ref["events"]))
print("categories in both:", both)
assert {"X/cpu_op", "X/user_annotation", "i/cpu_instant_event", "M/"} <= set(both), both
bad = []
for c in both:
    missing = set(ref["events"][c]) - ours[c] - set(EXCEPT.get(c, {}))
    print(c, "missing" if missing else "ok", sorted(missing))
    bad += ["%s %s" % (c, m) for m in sorted(missing)]
top = set(ref["top"]) - set(j)
print("top level missing:", sorted(top))
assert not bad and not top, bad + sorted(top)
for c, ex in EXCEPT.items():
    for k, why in ex.items():
        print("exception: %s %s: %s" % (c, k, why))
PY
echo ok
