-- collective_skew: per job, the collectives matched across its ranks and the spread of their
-- arrivals (latest minus earliest kernel start): mean and largest.
WITH c AS (
  SELECT job, rank, start_ns,
         ROW_NUMBER() OVER (PARTITION BY job, rank ORDER BY start_ns, end_ns) AS n
  FROM gpu
  WHERE kind = 'kernel' AND rank >= 0 AND (name LIKE 'ncclDevKernel%' OR name LIKE 'ncclKernel%')
),
k AS (
  SELECT job, n, COUNT(*) AS ranks, MAX(start_ns) - MIN(start_ns) AS skew_ns
  FROM c GROUP BY job, n
)
SELECT job, COUNT(*) AS matched, MAX(ranks) AS ranks,
       CAST(FLOOR(CAST(SUM(skew_ns) AS DOUBLE) / COUNT(*)) AS BIGINT) AS mean_skew_ns,
       MAX(skew_ns) AS max_skew_ns
FROM k WHERE ranks >= 2
GROUP BY job
ORDER BY job
