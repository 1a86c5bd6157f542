-- straggler: per job, the rank that arrived last at the most collectives (ties: the larger
-- delay), and its delay: the mean, over the collectives it arrived last at, of how long the
-- others waited for it there (its arrival minus the second-latest arrival).
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
last AS (
  SELECT a.job, a.rank, a.n, a.start_ns - b.start_ns AS delay_ns
  FROM o a JOIN o b ON b.job = a.job AND b.n = a.n AND b.pos = 2
  WHERE a.pos = 1 AND a.ranks >= 2
),
per AS (
  SELECT job, rank, COUNT(*) AS arrived_last,
         CAST(FLOOR(CAST(SUM(delay_ns) AS DOUBLE) / COUNT(*)) AS BIGINT) AS delay_ns
  FROM last GROUP BY job, rank
),
tot AS (SELECT job, COUNT(DISTINCT n) AS collectives FROM o WHERE ranks >= 2 GROUP BY job),
ranked AS (
  SELECT per.*, tot.collectives,
         ROW_NUMBER() OVER (PARTITION BY per.job ORDER BY arrived_last DESC, delay_ns DESC, rank) AS r
  FROM per JOIN tot ON tot.job = per.job
)
SELECT job, rank, arrived_last, collectives, delay_ns
FROM ranked WHERE r = 1
ORDER BY job
