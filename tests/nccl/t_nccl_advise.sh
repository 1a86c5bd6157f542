# NCCL's profiler events in `dlhook advise` and the Perfetto export (docs/nccl-profiler.md), on
# the 4-rank example under the simulated NCCL. A rank with slow links (SIMNCCL_SLOW_NET: its
# collective kernels run 30 ms longer once every rank has started them) is slow-network-rank,
# at its collective call, and not a straggler-rank (its host was not the cause); a rank slow to
# arrive (--slow-rank: 150 ms of host work before each all-reduce) is straggler-rank with NCCL's
# "slow to arrive" evidence and no slow-network-rank; the balanced twin has neither network
# finding. Perfetto: a track per kernel channel under each rank's GPU and per channel and
# direction for the proxy under its process, slices that nest on every track, the slow rank's
# channels ending 30 ms after the others'.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_BIN"
unset NCCL_PROFILER_PLUGIN DLHOOK_NCCL_EVENTS SIMNCCL_SLOW_NET
rec() {
  d=$1; shift
  "$DLHOOK_BIN" record --sim -o "$d" -- "$BUILD/examples/train" --ranks 4 "$@" >"$d.out" 2>"$d.err" ||
    fail "record $d failed: $(tail -n 20 "$d.err")"
  [ "$(ls "$d"/*-r*-*.dlh | wc -l)" = 4 ] || fail "expected 4 rank traces in $d: $(ls "$d")"
}
classes() { python3 -c "import json, sys; print(' '.join(f['class'] for f in json.load(open(sys.argv[1]))['findings']))" "$1"; }
SIMNCCL_SLOW_NET=2:30000 rec net --steps 6
"$DLHOOK_BIN" advise --json net/*-r*-*.dlh >net.json || fail "advise (slow network)"
echo "slow network: $(classes net.json)"
pyassert net.json "[f for f in j['findings'] if f['class'] == 'slow-network-rank'][0]['evidence']['detail'].startswith(\"rank 2's transfers ran longest at 6 of the 6\")"
pyassert net.json "[f for f in j['findings'] if f['class'] == 'slow-network-rank'][0]['place'].startswith('train.cu:')"
pyassert net.json "abs([f for f in j['findings'] if f['class'] == 'slow-network-rank'][0]['evidence']['ns'] - 6 * 30e6) < 1e6"
pyassert net.json "not [f for f in j['findings'] if f['class'] == 'straggler-rank' and f['evidence']['detail'].startswith('rank 2 ')]"
rec arr --steps 6 --slow-rank 2 --slow-ms 150
"$DLHOOK_BIN" advise --json arr/*-r*-*.dlh >arr.json || fail "advise (slow to arrive)"
echo "slow to arrive: $(classes arr.json)"
pyassert arr.json "'slow-network-rank' not in [f['class'] for f in j['findings']]"
pyassert arr.json "'(slow to arrive: its host was late)' in [f for f in j['findings'] if f['class'] == 'straggler-rank'][0]['evidence']['detail']"
pyassert arr.json "[f for f in j['findings'] if f['class'] == 'straggler-rank'][0]['evidence']['detail'].startswith('rank 2 ')"
rec bal --steps 6
"$DLHOOK_BIN" advise --json bal/*-r*-*.dlh >bal.json || fail "advise (balanced)"
echo "balanced: $(classes bal.json)"
pyassert bal.json "'slow-network-rank' not in [f['class'] for f in j['findings']]"
# Perfetto: the NCCL tracks of the slow-network run
"$DLHOOK_BIN" export -q -f perfetto -o net.pftrace net/*-r*-*.dlh || fail "export perfetto"
need_venv_module perfetto
"$VPY" - net.pftrace <<'PY' || fail "the NCCL tracks of the Perfetto export"
import collections, sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
names, parent, ev = {}, {}, collections.defaultdict(list)
for i, p in enumerate(t.packet):
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        names[d.uuid] = d.name or d.process.process_name or d.thread.thread_name
        parent[d.uuid] = d.parent_uuid
    if p.HasField("track_event"):
        ev[p.track_event.track_uuid].append((p.timestamp, i, p.track_event.type))
nccl = {u: n for u, n in names.items() if n.startswith("NCCL")}
tracks = sorted((names.get(parent[u]), n) for u, n in nccl.items())
print(tracks)
want = [("GPU 0 (rank %d)" % r, "NCCL channel %d" % c) for r in range(4) for c in (0, 1)]
want += [("rank %d" % r, "NCCL proxy channel %d %s" % (c, d)) for r in range(4) for c in (0, 1)
         for d in ("recv", "send")]
assert tracks == sorted(want), tracks
span = collections.defaultdict(list)
for u in nccl:
    depth, opened = 0, []
    for ts, i, ty in sorted(ev[u], key=lambda x: (x[0], x[1])):  # begin 1, end 2: they nest
        if ty == 1:
            depth += 1
            opened.append(ts)
        else:
            depth -= 1
            assert depth >= 0, (nccl[u], ts)
            span[(names[parent[u]], nccl[u])].append((opened.pop(), ts))
    assert depth == 0 and len(ev[u]) == 2 * 6, (nccl[u], len(ev[u]))  # one slice per step's kernel
# the same kernel ends 30 ms later on rank 2 than on rank 0 (the ranks share the host's clock)
slow = sorted(span[("GPU 0 (rank 2)", "NCCL channel 0")])
fast = sorted(span[("GPU 0 (rank 0)", "NCCL channel 0")])
late = [(s[1] - f[1]) / 1e6 for s, f in zip(slow, fast)]
print("rank 2's channel 0 ends after rank 0's by (ms):", late)
assert all(29 < d < 31 for d in late), late
PY
echo ok
