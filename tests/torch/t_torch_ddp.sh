#!/bin/sh
# run-tests: timeout=900
# torchrun --nproc-per-node 2 with DistributedDataParallel over the NCCL backend (gradient
# all-reduce) on the simulated stack with 2 devices: bare and under dlhook, the same output
# (the ranks' lines sorted: they interleave) and exit status; an all-reduce of host data gives
# the sum on both ranks; dlhook writes one trace per rank (named with its rank), each with the
# NCCL calls and their kernels (the launcher's own trace, when torchrun queried the devices, is
# left alone); every collective call has its Coll event from NCCL's profiler plugin, the same
# (communicator, seq)s on both ranks.
. "$ROOT/tests/torch/common.sh"
TORCHRUN="$BUILD/venv/bin/torchrun"
[ -x "$TORCHRUN" ] || skip "no $TORCHRUN"
export SIMCUDA_DEVICES=2 OMP_NUM_THREADS=1
run() { "$@" --standalone --nproc-per-node 2 "$W" ddp --steps 2; }
run "$SIMRUN" "$TORCHRUN" >bare.raw 2>bare.err || fail "bare: $(tail -n 20 bare.err)"
"$DLHOOK_BIN" record --sim --stacks none -o rec -- "$TORCHRUN" --standalone --nproc-per-node 2 \
  "$W" ddp --steps 2 >rec.raw 2>rec.err || fail "under dlhook: $(tail -n 20 rec.err)"
sort bare.raw >bare.out
sort rec.raw >rec.out
cmp -s bare.out rec.out || fail "output differs: $(diff bare.out rec.out | head)"
[ "$(grep -c '^rank [01]/2 all_reduce \[3.0, 3.0, 3.0, 3.0\]$' bare.out)" -eq 2 ] ||
  fail "all_reduce: $(cat bare.out)"
[ "$(grep -c '^done$' bare.out)" -eq 2 ] || fail "both ranks must finish: $(cat bare.out)"
n=$(ls rec/*-r[01]-*.dlh 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || fail "expected a trace per rank, found $n: $(ls rec)"
for t in rec/*-r[01]-*.dlh; do
  "$DLHOOK_BIN" stats --json "$t" >s.json || fail "stats $t"
  pyassert s.json 'j["dropped"] == 0 and sum(a["calls"] for a in j["api"] if a["domain"] == "nccl" and a["name"].startswith("ncclAllReduce")) >= 3'
  pyassert s.json 'any("AllReduce" in k["name"] for k in j["kernels"])'
done
# dlhook is NCCL's profiler plugin (docs/nccl-profiler.md): every collective call has its Coll
# event (algorithm, protocol, channels), and both ranks have the same (communicator, seq)s
for t in rec/*-r[01]-*.dlh; do "$DLHOOK_BIN" dump --type api,nccl "$t" >"$t.jsonl" || fail "dump $t"; done
python3 - rec <<'PY' || fail "NCCL profiler events of the DDP ranks"
import glob, json, sys
colls = ("ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
         "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter")
seqs = []
for p in sorted(glob.glob(sys.argv[1] + "/*-r[01]-*.dlh.jsonl")):
    calls, ev = 0, []
    for line in open(p):
        d = json.loads(line)
        if d["type"] == "api" and d["name"] in colls and d.get("ret", 0) == 0:
            calls += d.get("count", 1)
        elif d["type"] == "nccl" and d["phase"] == "start" and d.get("event") == "NCCL_COLL":
            assert d["algo"] and d["proto"] and d["channels"] >= 1, d
            ev.append((d["comm"], d["seq"], d["func"], d["count"]))
    print(p, "collective calls", calls, "Coll events", len(ev))
    assert calls >= 3 and calls == len(ev), (calls, len(ev))
    seqs.append(sorted(ev))
assert len(seqs) == 2 and seqs[0] == seqs[1], "the ranks' (comm, seq, func, count) differ"
PY
grep -q 'no trailer\|damaged' rec.err && fail "incomplete trace: $(cat rec.err)"
echo "t_torch_ddp: OK"
