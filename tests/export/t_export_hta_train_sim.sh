# Holistic Trace Analysis runs every analysis of 0.5 on the Kineto export of the bundled example
# (4 ranks on the simulated CUDA stack, 20 steps), and its numbers agree with `dlhook stats`:
# kernels per rank, every kernel reached from a launch in its kernel launch statistics, a queue
# length for every stream with kernels, 20 profiler steps, a critical path with a CPU-bound
# share, frequent kernel sequences, temporal breakdown, comm/comp overlap, idle time. The
# launcher (no GPU work) is left out and no rank is invented.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "the simulated CUDA stack is not built"
[ -x "$BUILD/examples/train" ] || skip "$BUILD/examples/train is not built"
need_venv_module hta
"$SIMRUN" "$DLHOOK_BIN" record -o tr -- "$BUILD/examples/train" --ranks 4 --steps 20 >out 2>err ||
  fail "record failed: $(tail -n 20 err)"
[ "$(ls tr/*.dlh | wc -l)" = 5 ] || fail "expected 4 ranks and the launcher: $(ls tr)"
"$DLHOOK_BIN" export -f kineto -o kin tr/*.dlh 2>exp.err || fail "export kineto: $(cat exp.err)"
grep -q "no GPU work.*left out" exp.err || fail "the launcher was not left out: $(cat exp.err)"
[ "$(ls kin/*.pt.trace.json.gz | wc -l)" = 4 ] || fail "expected 4 files: $(ls kin)"
for r in 0 1 2 3; do ls kin/*_rank${r}_*.pt.trace.json.gz >/dev/null || fail "no file for rank $r: $(ls kin)"; done
# --keep-gpuless keeps the launcher, without a rank (no distributedInfo)
"$DLHOOK_BIN" export -q --keep-gpuless -f kineto -o kin5 tr/*.dlh || fail "export --keep-gpuless"
[ "$(ls kin5/*.pt.trace.json.gz | wc -l)" = 5 ] || fail "--keep-gpuless: $(ls kin5)"
python3 - kin5 <<'PY' || fail "ranks of the files with the launcher"
import glob, gzip, json, sys
ranks = sorted(json.load(gzip.open(p)).get("distributedInfo", {}).get("rank", -1) for p in glob.glob(sys.argv[1] + "/*.gz"))
print("ranks", ranks)
assert ranks == [-1, 0, 1, 2, 3], ranks
PY
python3 - tr >stats.json <<PY || fail "dlhook stats"
import json, subprocess, sys, glob
out = {}
for p in sorted(glob.glob(sys.argv[1] + "/*-r*-*.dlh")):
    r = p.split("-r")[-1].split("-")[0]
    out[r] = json.loads(subprocess.check_output(["$DLHOOK_BIN", "stats", "--json", p]))
print(json.dumps(out))
PY
"$VPY" "$ROOT/tests/export/hta_analyses.py" kin stats.json 20 >hta.out 2>&1 || fail "HTA: $(tail -n 30 hta.out)"
cat hta.out
share=$(awk '/critical path CPU-bound share/ {print $NF}' hta.out)
awk -v s="$share" 'BEGIN { exit !(s > 0) }' || fail "no CPU-bound share on the critical path: $share"
# the same job merged into one Perfetto trace, read with Perfetto's own protos: a process per
# rank, every flow end has its start, counter tracks
need_venv_module perfetto
"$DLHOOK_BIN" merge -q -o job.pftrace tr/*.dlh || fail "merge"
"$VPY" - job.pftrace <<'PY' || fail "Perfetto's protos on the merged job"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
starts, ends, counters, procs = set(), set(), set(), []
for p in t.packet:
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        if d.HasField("counter"): counters.add(d.name)
        if d.HasField("process"): procs.append(d.process.process_name)
    if p.HasField("track_event"):
        starts.update(p.track_event.flow_ids)
        ends.update(p.track_event.terminating_flow_ids)
print("flows", len(starts), "ends", len(ends), "counters", sorted(counters), "processes", procs)
assert ends and ends <= starts and len(starts) == len(ends), (len(starts), len(ends))
assert sorted(procs) == ["rank 0", "rank 1", "rank 2", "rank 3"], procs
assert {"GPU memory (live bytes)", "Stream 13 busy"} <= counters, counters
PY
echo ok
