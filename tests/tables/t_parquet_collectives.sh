# The Parquet table `collectives` (docs/tables.md): one row per NCCL collective per rank, from
# NCCL's profiler plugin events, on the 4-rank example under the simulated NCCL and queried with
# DuckDB. Every ncclAllReduce call has its row (counts equal the calls of the `calls` table),
# each (comm, seq) is on every rank once, NCCL's Coll event lies inside the call that enqueued
# it (the group's ncclGroupEnd, paired by order), the GPU times lie inside an NCCL kernel of the `gpu` table,
# busbw comes from the GPU time; and a rank planted with slow links (SIMNCCL_SLOW_NET) has the
# longest GPU and proxy times in the table.
# run-tests: serial
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/tables/common.sh"
need_tables
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
STEPS=3
unset NCCL_PROFILER_PLUGIN DLHOOK_NCCL_EVENTS
SIMNCCL_SLOW_NET=1:5000 DLHOOK_QUIET=1 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" \
  --ranks 4 --steps $STEPS >train.out 2>train.err || { cat train.err; fail "train failed"; }
"$DLHOOK_BIN" export --format parquet -q -o "$T/pq" "$T"/tr/*-r[0-9]-*.dlh || fail "export failed"
"$VPY" - "$T/pq" $STEPS <<'PY' || fail "the collectives table is wrong"
import sys, duckdb
pq, steps = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
for t in ("collectives", "calls", "gpu"):
    con.sql("CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s/**/*.parquet', hive_partitioning=true)"
            % (t, pq, t))
def one(q):
    r = con.sql(q).fetchall()
    print(q.split("FROM")[0][:70], "->", r[:6])
    return r
bad = []
per = dict(one("SELECT rank, count(*) FROM collectives GROUP BY rank"))
calls = dict(one("SELECT rank, sum(count) FROM calls WHERE function = 'ncclAllReduce' AND ret = 0 GROUP BY rank"))
if sorted(per) != [0, 1, 2, 3] or any(per[r] != calls.get(r) or per[r] != 9 * steps for r in per):
    bad.append("rows per rank %r, calls %r" % (per, calls))
if one("SELECT count(*) FROM (SELECT comm, seq FROM collectives GROUP BY comm, seq "
       "HAVING count(DISTINCT rank) != 4 OR count(*) != 4)")[0][0]:
    bad.append("a (comm, seq) not once on every rank")
if one("SELECT count(*) FROM collectives WHERE kind != 'coll' OR name != 'AllReduce' OR algo != 'RING' "
       "OR channels < 1 OR kernel_channels != channels OR comm_size != 4 OR comm_rank != rank "
       "OR dtype != 'ncclFloat32' OR bytes != count * 4 OR proxy_ops < 1 OR kernel_ops != 9")[0][0]:
    bad.append("a row with unexpected values")
# (the call's end and the Coll event's stop were seen up to ~65 us apart on a loaded machine:
# the order on the thread pairs them, docs/nccl-profiler.md, and the times are what each says)
if one("SELECT count(*) FROM collectives WHERE NOT (call_start_ns <= enqueue_start_ns AND "
       "enqueue_start_ns <= enqueue_end_ns AND enqueue_end_ns <= call_end_ns + 500000)")[0][0]:
    bad.append("a Coll event outside its call")
if one("SELECT count(*) FROM collectives c WHERE gpu_start_ns IS NULL OR gpu_dur_ns <= 0 OR NOT EXISTS "
       "(SELECT 1 FROM gpu g WHERE g.pid = c.pid AND g.kind = 'kernel' AND g.name LIKE 'ncclDevKernel%' "
       "AND g.start_ns <= c.gpu_start_ns + 1000 AND c.gpu_end_ns <= g.end_ns + 1000)")[0][0]:
    bad.append("GPU times outside every NCCL kernel")
if one("SELECT count(*) FROM collectives WHERE NOT busbw_gb_per_s > 0 OR "
       "abs(busbw_gb_per_s - algbw_gb_per_s * 1.5) > 1e-6 * busbw_gb_per_s")[0][0]:
    bad.append("busbw is not algbw x 2(n-1)/n")
# rank 1's links are slow: its kernels end 5 ms after the other ranks' once all have started
slow = one("SELECT rank, avg(gpu_end_ns - m.last_start) FROM collectives c JOIN (SELECT comm, seq, "
           "max(gpu_start_ns) AS last_start FROM collectives GROUP BY comm, seq) m USING (comm, seq) "
           "GROUP BY rank ORDER BY 2 DESC")
if slow[0][0] != 1 or slow[0][1] < 4.5e6 or slow[1][1] > 1e6:
    bad.append("the slow rank's transfers: %r" % slow)
prox = one("SELECT rank FROM collectives GROUP BY rank ORDER BY avg(proxy_dur_ns) DESC")
if prox[0][0] != 1:
    bad.append("the slow rank's proxy time is not the longest: %r" % prox)
if bad:
    sys.exit("; ".join(bad))
PY
echo ok
