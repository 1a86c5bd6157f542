-- memory_peaks: per process and device, the peak of its live GPU memory (the ledger of its
-- allocations and frees), when it was first reached, and the allocations it made.
WITH m AS (
  SELECT job, rank, pid, device, ts_ns, device_live_bytes, bytes,
         ROW_NUMBER() OVER (PARTITION BY job, pid, device
                            ORDER BY device_live_bytes DESC, ts_ns) AS r
  FROM memory
),
a AS (
  SELECT job, pid, device, SUM(CASE WHEN bytes > 0 THEN 1 ELSE 0 END) AS allocations,
         SUM(CASE WHEN bytes > 0 THEN bytes ELSE 0 END) AS allocated_bytes
  FROM memory GROUP BY job, pid, device
)
SELECT m.job, m.rank, m.pid, m.device, m.device_live_bytes AS peak_bytes, m.ts_ns AS peak_ts_ns,
       a.allocations, a.allocated_bytes
FROM m JOIN a ON a.job = m.job AND a.pid = m.pid AND a.device = m.device
WHERE m.r = 1
ORDER BY m.job, m.rank, m.pid, m.device
