-- kernels: the GPU kernels of the whole job by name, the costliest first (50).
SELECT name, COUNT(*) AS count, COUNT(DISTINCT rank) AS ranks, SUM(dur_ns) AS total_ns,
       CAST(FLOOR(CAST(SUM(dur_ns) AS DOUBLE) / COUNT(*)) AS BIGINT) AS mean_ns,
       MIN(dur_ns) AS min_ns, MAX(dur_ns) AS max_ns
FROM gpu
WHERE kind = 'kernel'
GROUP BY name
ORDER BY total_ns DESC, name
LIMIT 50
