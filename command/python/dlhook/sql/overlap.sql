-- overlap: per rank, the time its NCCL kernels ran, its other kernels ran, and how much of the
-- communication ran while a compute kernel ran (compute kernels of one process taken not to
-- overlap one another: one compute stream). overlap_permille = 1000 * overlap / comm.
WITH g AS (
  SELECT job, rank, pid, start_ns, end_ns,
         CASE WHEN name LIKE 'nccl%' THEN 1 ELSE 0 END AS comm
  FROM gpu WHERE kind = 'kernel'
),
tot AS (
  SELECT job, rank, pid,
         SUM(CASE WHEN comm = 1 THEN end_ns - start_ns ELSE 0 END) AS comm_ns,
         SUM(CASE WHEN comm = 0 THEN end_ns - start_ns ELSE 0 END) AS compute_ns
  FROM g GROUP BY job, rank, pid
),
ov AS (
  SELECT a.job, a.rank, a.pid,
         SUM(LEAST(a.end_ns, b.end_ns) - GREATEST(a.start_ns, b.start_ns)) AS overlap_ns
  FROM g a JOIN g b
    ON b.job = a.job AND b.pid = a.pid AND b.comm = 0
   AND b.start_ns < a.end_ns AND b.end_ns > a.start_ns
  WHERE a.comm = 1
  GROUP BY a.job, a.rank, a.pid
)
SELECT t.job, t.rank, t.pid, t.comm_ns, t.compute_ns, COALESCE(ov.overlap_ns, 0) AS overlap_ns,
       CASE WHEN t.comm_ns > 0
            THEN CAST(FLOOR(CAST(COALESCE(ov.overlap_ns, 0) AS DOUBLE) * 1000 / t.comm_ns) AS BIGINT)
       END AS overlap_permille
FROM tot t LEFT JOIN ov ON ov.job = t.job AND ov.pid = t.pid
ORDER BY t.job, t.rank, t.pid
