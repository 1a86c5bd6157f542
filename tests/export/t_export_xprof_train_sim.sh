# xprof reads the TensorBoard export of the bundled example (4 ranks on the simulated CUDA stack)
# the way it reads its own GPU profiles: per host (named rank0..rank3), the Overview has one step
# per step run, each within 5 % of the NVTX step range's duration (it shows the first and last
# of more than 5 steps only with 5 or fewer: xprof drops them as possibly incomplete);
# Framework Op Stats has device rows named after the NVTX ranges and library calls; Kernel Stats
# gives every kernel an op name; the launcher (no GPU work) is not among the hosts.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
[ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] || skip "the simulated CUDA stack is not built"
[ -x "$BUILD/examples/train" ] || skip "$BUILD/examples/train is not built"
need_venv_module xprof
"$SIMRUN" "$DLHOOK_BIN" record -o tr -- "$BUILD/examples/train" --ranks 4 --steps 5 >out 2>err ||
  fail "record failed: $(tail -n 20 err)"
"$DLHOOK_BIN" export -q -f tensorboard -o logdir tr/*.dlh || fail "export tensorboard"
[ "$(ls logdir/plugins/profile/*/ | tr '\n' ' ')" = "rank0.xplane.pb rank1.xplane.pb rank2.xplane.pb rank3.xplane.pb " ] ||
  fail "hosts: $(ls logdir/plugins/profile/*/)"
for r in 0 1 2 3; do
  "$DLHOOK_BIN" dump "$(ls tr/*-r$r-*.dlh)" | python3 -c '
import json, sys
print(json.dumps([json.loads(l)["dur_ns"] for l in sys.stdin if "\"ProfilerStep#" in l]))' >nvtx$r.json || fail "dump"
done
# one host per run directory: xprof caches its analysis of a run (ALL_HOSTS.op_stats_v2.pb)
for r in 0 1 2 3; do
  mkdir -p host$r/plugins/profile/run && cp logdir/plugins/profile/*/rank$r.xplane.pb host$r/plugins/profile/run/
done
"$VPY" - <<'PY' || fail "xprof's analyses of the export"
import glob, json, sys
from xprof.convert import raw_to_tool_data as r
for rank in "0123":
    path = "host%s/plugins/profile/run/rank%s.xplane.pb" % (rank, rank)
    nvtx = json.load(open("nvtx%s.json" % rank))
    data, _ = r.xspace_to_tool_data([path], "overview_page", {})
    rows = json.loads(data)[1]["rows"]
    steps = [(row["c"][0]["v"], row["c"][-1]["v"]) for row in rows]
    print("rank", rank, "overview steps (ms):", steps, "NVTX (ms):", [n / 1e6 for n in nvtx])
    assert [s for s, _ in steps] == [str(i) for i in range(len(nvtx))] and len(nvtx) == 5, steps
    for (s, ms), ns in zip(steps, nvtx):
        assert abs(ms - ns / 1e6) <= 0.05 * ns / 1e6, (s, ms, ns)
    data, _ = r.xspace_to_tool_data([path], "framework_op_stats", {})
    ops = {(row["c"][2]["v"], row["c"][3]["v"]) for row in json.loads(data)[0]["rows"] if row["c"][1]["v"] == "Device"}
    print("  framework op stats:", len(ops), sorted(ops)[:6])
    names = {o for _, o in ops}
    assert {"forward/cudnnConvolutionForward", "backward/cublasSgemm_v2", "optimizer/sgd_momentum_kernel"} <= names, names
    data, _ = r.xspace_to_tool_data([path], "kernel_stats", {})
    ks = json.loads(data)["rows"]
    print("  kernel stats:", len(ks), "rows; op names:", sorted({row["c"][9]["v"] for row in ks})[:5])
    assert ks and all(row["c"][9]["v"] for row in ks), [row["c"][1]["v"] for row in ks if not row["c"][9]["v"]]
PY
echo ok
