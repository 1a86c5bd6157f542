-- ranks: per rank, its collectives (the n-th NCCL kernel of each rank is the same collective:
-- NCCL has every rank issue them in one order), how often it arrived last, and its mean delay:
-- its arrival (the kernel's start) minus the latest arrival of the other ranks (> 0: it held
-- them up; < 0: it waited). Times on the job's clock (the traces' clock anchors).
WITH c AS (
  SELECT job, rank, start_ns,
         ROW_NUMBER() OVER (PARTITION BY job, rank ORDER BY start_ns, end_ns) AS n
  FROM gpu
  WHERE kind = 'kernel' AND rank >= 0 AND (name LIKE 'ncclDevKernel%' OR name LIKE 'ncclKernel%')
),
o AS (
  SELECT job, rank, n, start_ns,
         ROW_NUMBER() OVER (PARTITION BY job, n ORDER BY start_ns DESC, rank DESC) AS pos,
         COUNT(*) OVER (PARTITION BY job, n) AS ranks
  FROM c
),
top2 AS (
  SELECT job, n,
         MAX(CASE WHEN pos = 1 THEN start_ns END) AS first_ns,
         MAX(CASE WHEN pos = 2 THEN start_ns END) AS second_ns,
         MAX(ranks) AS ranks
  FROM o GROUP BY job, n
),
d AS (
  SELECT o.job, o.rank, o.n, o.pos,
         o.start_ns - CASE WHEN o.pos = 1 THEN t.second_ns ELSE t.first_ns END AS delay_ns
  FROM o JOIN top2 t ON t.job = o.job AND t.n = o.n
  WHERE t.ranks >= 2
)
SELECT job, rank, COUNT(*) AS collectives,
       SUM(CASE WHEN pos = 1 THEN 1 ELSE 0 END) AS arrived_last,
       CAST(FLOOR(CAST(SUM(delay_ns) AS DOUBLE) / COUNT(*)) AS BIGINT) AS mean_delay_ns,
       MAX(delay_ns) AS max_delay_ns
FROM d
GROUP BY job, rank
ORDER BY job, rank
