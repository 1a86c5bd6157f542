# dlhook export --format parquet of 4 rank traces and their launcher (examples/train --ranks 4
# on the simulator): the hive layout TABLE/job=/host=/rank=/PID.parquet, and every event count
# of the tables equals `dlhook stats --json` on the same traces (calls per function, folded
# calls, API events, kernels per process, GPU records, threads, processes, host samples, GEMM
# FLOPs, collective bytes); timestamps on the job's clock; a missing trace fails clearly, a
# damaged one converts what can be read and exits 1.
# run-tests: serial
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
record_ranks 8
"$DLHOOK_BIN" export --format parquet -o "$T/pq" "$T"/tr/*.dlh || fail "export failed"
"$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "stats failed"
for t in calls gpu nvtx memory stacks samples operators threads processes anchors; do
  n=$(find "$T/pq/$t" -path "*/job=tr/host=*/rank=*/*.parquet" | wc -l)
  [ "$n" = 5 ] || fail "$t: expected 5 files (one per trace), found $n"
done
[ -n "$(find "$T/pq/calls" -path '*/rank=-1/*.parquet')" ] || fail "no rank=-1 partition for the launcher"
"$VPY" - "$T/pq" stats.json "$T"/tr/*.dlh <<'PY' || fail "tables and stats differ"
import json, sys, collections
import dlhook
t = dlhook.tables(sys.argv[1])
j = json.load(open(sys.argv[2]))
bad = []
def eq(what, a, b):
    if a != b: bad.append("%s: tables %r, stats %r" % (what, a, b))
calls, nvtx, gpu = t.calls.to_pandas(), t.nvtx.to_pandas(), t.gpu.to_pandas()
per = collections.Counter()
for df in (calls, nvtx):
    for fn, c in df.groupby("function", observed=True)["count"].sum().items(): per[str(fn)] += int(c)
eq("calls per function", dict(per), {a["name"]: a["calls"] for a in j["api"]})
eq("calls", int(calls["count"].sum() + nvtx["count"].sum()), j["calls"])
eq("api events", len(calls) + len(nvtx), j["api_events"])
eq("folded", int((calls["count"] - 1).sum() + (nvtx["count"] - 1).sum()), j["folded"])
k = gpu[gpu.kind == "kernel"]
eq("kernels", len(k), sum(x["count"] for x in j["kernels"]))
eq("kernels per process", {int(p): int(n) for p, n in k.groupby("pid").size().items()},
   {d["pid"]: d["kernels"] for d in j["gpu"]["devices"]})
eq("kernel ns", int(k.dur_ns.sum()), j["gpu"]["kernel_ns"])
p = t.processes.to_pandas()
eq("processes", len(p), j["processes"])
eq("records", int(p.records.sum()), j["records"])
eq("dropped", int(p.dropped.sum()), j["dropped"])
eq("threads", len(t.threads.to_pandas().drop_duplicates(["pid", "tid"])), j["threads"])
s = t.samples.to_pandas()
eq("cpu samples", int((s.kind == "cpu").sum()), j["samples"]["cpu"])
eq("wait samples", int((s.kind == "wait").sum()), j["samples"]["wait"])
eq("cpu sample ns", int(s[s.kind == "cpu"].weight_ns.sum()), j["samples"]["cpu_ns"])
gm = calls[calls.m.notna() & (calls.depth == 0)]
eq("gemm calls", int(gm["count"].sum()), sum(g["calls"] for g in j["gemms"]))
eq("gemm flops", int((gm.flops * gm["count"]).sum()), int(sum(g["flops"] for g in j["gemms"])))
co = calls[calls.function.astype(str).isin(["ncclAllReduce", "ncclBroadcast", "ncclAllGather",
           "ncclReduceScatter", "ncclReduce", "ncclSend", "ncclRecv"]) & (calls.depth == 0)]
eq("collective calls", int(co["count"].sum()), sum(c["calls"] for c in j["collectives"]))
eq("collective bytes", int((co["bytes"] * co["count"]).sum()),
   sum(c["bytes"] * c["calls"] for c in j["collectives"]))
# ranks and the job's clock: each rank's anchor offset is the one stats starts from (stats then
# refines it by the collectives, by well under 10 us on one host)
r = {int(x.rank): int(x.clock_offset_ns) for x in p.itertuples() if x.rank >= 0}
sr = {x["rank"]: x["clock_offset_ns"] for x in j["ranks"]}
eq("ranks", sorted(r), sorted(sr))
eq("rank offsets within 10 us", [k for k in r if abs(r[k] - sr.get(k, 0)) > 10000], [])
lo = min(x.start_ns for x in p.itertuples())
eq("calls start after the first process", bool(calls.start_ns.min() >= lo - 10**9), True)
eq("stack ids have frames", set(calls.stack_id.dropna().astype(int)) <= set(t.stacks.to_pandas().stack_id), True)
eq("links: kernels with a call", int(k["corr"].isin(calls["corr"].dropna()).sum()), int(k["corr"].notna().sum()))
for b in bad: print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
# bad input: a missing trace fails with its name and exit status 1
"$DLHOOK_BIN" export --format parquet -o "$T/pq2" "$T/nope.dlh" 2>err.txt; rc=$?
[ "$rc" = 1 ] || fail "missing trace: exit $rc, expected 1"
grep -q "nope.dlh" err.txt || fail "missing trace: no message naming it: $(cat err.txt)"
# a damaged trace (cut short): what could be read is converted, exit status 1
tr0=$(ls "$T"/tr/*-r0-*.dlh)
head -c $(( $(wc -c <"$tr0") / 2 )) "$tr0" >"$T/cut.dlh"
"$DLHOOK_BIN" export --format parquet -q -o "$T/pq3" "$T/cut.dlh" 2>err.txt; rc=$?
[ "$rc" = 1 ] || fail "damaged trace: exit $rc, expected 1"
grep -q "cut.dlh" err.txt || fail "damaged trace: no message naming it"
[ -n "$(find "$T/pq3/calls" -name '*.parquet')" ] || fail "damaged trace: nothing converted"
echo ok
