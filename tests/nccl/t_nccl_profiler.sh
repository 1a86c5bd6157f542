# dlhook as NCCL's profiler plugin (docs/nccl-profiler.md), on the 4-rank example under the
# simulated NCCL: every ncclAllReduce call has its Coll event on every rank (seq, algorithm,
# protocol, channels), the same seqs on every rank, one KernelCh per channel inside the NCCL
# kernel's GPU time, counts equal to the calls; `dlhook stats` matches them across ranks (and
# names a planted slow rank as the one every collective waited for, late to arrive); the
# Kineto export's NCCL kernels carry seq and NCCL's choices. DLHOOK_NCCL_EVENTS narrows the
# events. A user's own plugin in NCCL_PROFILER_PLUGIN (v5, and v4 through NCCL's fallback) gets
# the same events with and without dlhook, dlhook warns once per process and records none.
. "$ROOT/tests/lib.sh"
[ -e "$BUILD/simcuda/libnccl.so.2" ] || skip "the simulated CUDA stack is not built"
[ -x "$BUILD/examples/train" ] || skip "$BUILD/examples/train is not built"
need "$DLHOOK_BIN"
STEPS=4
unset NCCL_PROFILER_PLUGIN DLHOOK_NCCL_EVENTS
"$DLHOOK_BIN" record --sim -o tr -- "$BUILD/examples/train" --ranks 4 --steps $STEPS >out 2>err ||
  fail "record failed: $(tail -n 20 err)"
grep -q "NCCL_PROFILER_PLUGIN" err && fail "a warning without another plugin: $(cat err)"
[ "$(ls tr/*-r*-*.dlh | wc -l)" = 4 ] || fail "expected 4 rank traces: $(ls tr)"
for f in tr/*-r*-*.dlh; do
  "$DLHOOK_BIN" dump --type api,kernel,nccl "$f" >"$f.jsonl" || fail "dump $f"
done
python3 - tr $STEPS <<'PY' || fail "NCCL events of the ranks"
import glob, json, sys
seqs = {}
for path in sorted(glob.glob(sys.argv[1] + "/*-r*-*.dlh.jsonl")):
    calls, kernels, colls, kch, stops, states = 0, [], {}, {}, {}, {}
    for line in open(path):
        d = json.loads(line)
        if d["type"] == "api" and d["name"] == "ncclAllReduce":
            calls += d.get("count", 1)
        elif d["type"] == "kernel" and d["name"].startswith("ncclDevKernel"):
            kernels.append((d["start_ns"], d["start_ns"] + d["dur_ns"]))
        elif d["type"] == "nccl":
            ev = d.get("event")
            if d["phase"] == "start" and ev == "NCCL_COLL":
                colls[d["id"]] = d
            elif d["phase"] == "start" and ev == "NCCL_KERNEL_CH":
                kch[d["id"]] = d
            elif d["phase"] == "state" and d.get("state") == 22:
                states[d["id"]] = d
            elif d["phase"] == "stop":
                stops[d["id"]] = d
    rank = next(iter(colls.values()))["rank"] if colls else None
    print(path, "rank", rank, "calls", calls, "colls", len(colls), "kernelch", len(kch),
          "nccl kernels", len(kernels))
    assert calls == 9 * int(sys.argv[2]) == len(colls), (calls, len(colls))
    for c in colls.values():
        assert c["func"] == "AllReduce" and c["algo"] == "RING" and c["proto"] in ("LL", "LL128", "SIMPLE"), c
        assert c["channels"] >= 1 and c["warps"] >= 1 and c["nranks"] == 4 and c["dtype"] == "ncclFloat32", c
        assert c["id"] in stops, ("Coll never stopped", c)
    assert sorted(c["seq"] for c in colls.values()) == list(range(calls)), "seqs not 0..n-1"
    seqs[rank] = sorted((c["comm"], c["seq"], c["count"]) for c in colls.values())
    # one KernelCh per channel of each collective, its GPU times inside an NCCL kernel's
    per = {}
    for k in kch.values():
        per[k["parent"]] = per.get(k["parent"], 0) + 1
        end = states[k["id"]]["gpu_ns"]
        assert k["gpu_ns"] <= end, k
        assert any(s - 1000 <= k["gpu_ns"] and end <= e + 1000 for s, e in kernels), \
            ("KernelCh outside every NCCL kernel", k["gpu_ns"], end)
        assert k["id"] in stops, ("KernelCh never stopped", k)
    for cid, c in colls.items():
        assert per.get(cid, 0) == c["channels"], (c, per.get(cid))
assert sorted(seqs) == [0, 1, 2, 3], sorted(seqs)
assert all(seqs[r] == seqs[0] for r in seqs), "ranks disagree on (comm, seq, count)"
PY
# stats: the table and the cross-rank view
"$DLHOOK_BIN" stats --json tr/*-r*-*.dlh >stats.json || fail "stats --json"
pyassert stats.json "sum(r['calls'] for r in j['nccl_ops']) == 4 * 9 * $STEPS"
pyassert stats.json "all(r['algo'] == 'RING' and r['channels'] >= 1 and r['gpu_calls'] == r['calls'] and r['gpu_busbw_gb_per_s'] > 0 for r in j['nccl_ops'])"
pyassert stats.json "j['nccl_ranks']['matched'] == 9 * $STEPS and j['nccl_ranks']['ranks'] == 4"
"$DLHOOK_BIN" stats tr/*-r*-*.dlh >stats.txt || fail "stats"
grep -q "NCCL as it ran" stats.txt || fail "no NCCL table: $(cat stats.txt)"
grep -q "collectives matched by seq" stats.txt || fail "no cross-rank line: $(cat stats.txt)"
pyassert stats.json "len(j['nccl_collectives']) == 9 * $STEPS and all(len(c['ranks']) == 4 and c['cause'] in ('arrival', 'compute', 'network') for c in j['nccl_collectives'])"
# a planted straggler (rank 2 does 150 ms of host work each step, far above the start-up jitter of
# a loaded machine): every collective waited for
# rank 2, which arrived late
"$DLHOOK_BIN" record --sim -o trs -- "$BUILD/examples/train" --ranks 4 --steps 2 --slow-rank 2 \
  --slow-ms 150 >/dev/null 2>err || fail "record (slow rank) failed: $(tail -n 20 err)"
"$DLHOOK_BIN" stats --json trs/*-r*-*.dlh >slow.json || fail "stats (slow rank)"
pyassert slow.json "len(j['nccl_collectives']) == 18 and all(c['last_rank'] == 2 and c['cause'] == 'arrival' for c in j['nccl_collectives'])"
# Kineto: every NCCL kernel carries seq and NCCL's choices, the same seqs on every rank
"$DLHOOK_BIN" export -q -f kineto -o kin tr/*-r*-*.dlh || fail "export kineto"
python3 - kin <<'PY' || fail "Kineto NCCL kernels"
import glob, gzip, json, sys
per = {}
for p in glob.glob(sys.argv[1] + "/*.pt.trace.json.gz"):
    d = json.load(gzip.open(p))
    ks = [e for e in d["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel")]
    assert ks, p
    for k in ks:
        a = k["args"]
        for key in ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "seq",
                    "Process Group Name", "NCCL algorithm", "NCCL protocol", "NCCL channels"):
            assert key in a, (key, a)
    per[d["distributedInfo"]["rank"]] = sorted(k["args"]["seq"] for k in ks)
print(per)
assert len(per) == 4 and all(v == per[0] for v in per.values()), per
PY
# the mask: Coll only
DLHOOK_NCCL_EVENTS=Coll "$DLHOOK_BIN" record --sim -o trc -- "$BUILD/examples/train" --ranks 2 --steps 2 >/dev/null 2>err ||
  fail "record (Coll) failed: $(tail -n 20 err)"
"$DLHOOK_BIN" dump --type nccl trc/*-r0-*.dlh >c.jsonl || fail "dump"
python3 - c.jsonl <<'PY' || fail "DLHOOK_NCCL_EVENTS=Coll"
import json, sys
ev = {json.loads(l).get("event") for l in open(sys.argv[1]) if '"start"' in l}
print(ev)
assert ev == {"NCCL_COLL", "NCCL_COMM"}, ev
PY
# a user's own plugin: the same events with and without dlhook; dlhook warns, records none
cc -shared -fPIC -O1 -Wall -I"$ROOT/common" -o up5.so "$ROOT/tests/nccl/userplugin.c" || fail "cc v5"
cc -DV4 -shared -fPIC -O1 -Wall -I"$ROOT/common" -o up4.so "$ROOT/tests/nccl/userplugin.c" || fail "cc v4"
strip_pid() { sed 's/^pid=[0-9]* //' "$1" | sort; }
USERPLUGIN_OUT=$PWD/ref.out NCCL_PROFILER_PLUGIN=$PWD/up5.so "$SIMRUN" "$BUILD/examples/train" \
  --ranks 2 --steps 2 >ref.stdout 2>ref.err || fail "plain run: $(tail ref.err)"
[ "$(wc -l <ref.out)" = 2 ] || fail "the plugin without dlhook: $(cat ref.out)"
grep -q "coll=18 .*kernelch=36 badch=0 seqmax=17" ref.out || fail "plugin counts: $(cat ref.out)"
USERPLUGIN_OUT=$PWD/up.out NCCL_PROFILER_PLUGIN=$PWD/up5.so "$DLHOOK_BIN" record --sim -o tru -- \
  "$BUILD/examples/train" --ranks 2 --steps 2 >up.stdout 2>up.err || fail "record with the user's plugin: $(tail up.err)"
[ "$(strip_pid ref.out)" = "$(strip_pid up.out)" ] || fail "the user's plugin saw other events: $(cat ref.out up.out)"
grep "^step" ref.stdout >a.txt; grep "^step" up.stdout >b.txt
cmp -s a.txt b.txt || fail "the program's output changed: $(diff a.txt b.txt)"
n=$(grep -c "NCCL_PROFILER_PLUGIN names another profiler plugin" up.err)
procs=$(ls tru/*.dlh | wc -l)
[ "$n" -ge 1 ] && [ "$n" -le "$procs" ] || fail "expected one warning per recording process ($procs): $n: $(cat up.err)"
for f in tru/*-r*-*.dlh; do
  [ "$("$DLHOOK_BIN" dump --type nccl "$f" | wc -l)" = 0 ] || fail "NCCL events recorded beside the user's plugin"
done
# NCCL's fallback to ncclProfiler_v4
USERPLUGIN_OUT=$PWD/v4.out NCCL_PROFILER_PLUGIN=$PWD/up4.so "$SIMRUN" "$BUILD/examples/train" \
  --ranks 2 --steps 2 >/dev/null 2>v4.err || fail "v4 run: $(tail v4.err)"
[ "$(strip_pid ref.out)" = "$(strip_pid v4.out)" ] || fail "the v4 plugin saw other events: $(cat v4.out)"
echo "ok"
