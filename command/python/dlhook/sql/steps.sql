-- steps: every training step of every rank (an NVTX range named like a step: ProfilerStep#N,
-- step N), its duration and the GPU work that started inside it (kernels, their GPU time, the
-- NCCL part).
WITH s AS (
  SELECT job, rank, pid, step, start_ns, end_ns, dur_ns
  FROM nvtx WHERE step IS NOT NULL AND depth = 0
)
SELECT s.job, s.rank, s.pid, s.step, s.start_ns, s.dur_ns,
       COUNT(g.start_ns) AS kernels,
       COALESCE(SUM(g.dur_ns), 0) AS kernel_ns,
       COALESCE(SUM(CASE WHEN g.name LIKE 'nccl%' THEN g.dur_ns ELSE 0 END), 0) AS nccl_ns
FROM s LEFT JOIN gpu g
  ON g.pid = s.pid AND g.job = s.job AND g.kind = 'kernel'
 AND g.start_ns >= s.start_ns AND g.start_ns < s.end_ns
GROUP BY s.job, s.rank, s.pid, s.step, s.start_ns, s.dur_ns
ORDER BY s.job, s.rank, s.pid, s.step, s.start_ns
