-- steps: every training step of every rank (the steps table: an NVTX range named like a step,
-- ProfilerStep#N or step N, else PyTorch's loop from one Optimizer.step, backward or
-- training_step to the next, else the repeating calls of a program without Python; steps_from
-- says which), its duration and the GPU work that started inside it (kernels, their GPU time,
-- the NCCL part).
WITH s AS (
  SELECT job, rank, pid, step, steps_from, start_ns, end_ns, dur_ns FROM steps
)
SELECT s.job, s.rank, s.pid, s.step, s.steps_from, s.start_ns, s.dur_ns,
       COUNT(g.start_ns) AS kernels,
       COALESCE(SUM(g.dur_ns), 0) AS kernel_ns,
       COALESCE(SUM(CASE WHEN g.name LIKE 'nccl%' THEN g.dur_ns ELSE 0 END), 0) AS nccl_ns
FROM s LEFT JOIN gpu g
  ON g.pid = s.pid AND g.job = s.job AND g.kind = 'kernel'
 AND g.start_ns >= s.start_ns AND g.start_ns < s.end_ns
GROUP BY s.job, s.rank, s.pid, s.step, s.steps_from, s.start_ns, s.dur_ns
ORDER BY s.job, s.rank, s.pid, s.step, s.start_ns
