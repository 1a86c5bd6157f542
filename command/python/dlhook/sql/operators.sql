-- operators: PyTorch operators (aten::..., autograd nodes) by name: the calls made inside them
-- (innermost operator), the kernels those calls launched and the GPU time of their kernels,
-- copies and memsets (linked by correlation id), as dlhook stats counts them; empty for traces
-- without PyTorch.
WITH k AS (
  SELECT job, pid, corr, SUM(dur_ns) AS gpu_ns,
         SUM(CASE WHEN kind = 'kernel' THEN 1 ELSE 0 END) AS kernels
  FROM gpu WHERE kind IN ('kernel', 'memcpy', 'memset') AND corr IS NOT NULL
  GROUP BY job, pid, corr
)
SELECT c.op AS operator, SUM(c.count) AS calls, COUNT(DISTINCT c.rank) AS ranks,
       COALESCE(SUM(k.kernels), 0) AS kernels, COALESCE(SUM(k.gpu_ns), 0) AS gpu_ns,
       SUM(c.dur_ns) AS call_ns
FROM calls c LEFT JOIN k ON k.job = c.job AND k.pid = c.pid AND k.corr = c.corr
WHERE c.op IS NOT NULL
GROUP BY c.op
ORDER BY gpu_ns DESC, call_ns DESC, operator
LIMIT 50
