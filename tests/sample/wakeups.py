"""A CPU-bound Python loop that, at its end, reads how often dlhook's own threads woke up
(voluntary context switches of `dlhook-sampler` and `dlhook-writer` in /proc/self/task) and how
much of the wall time it had the CPU, and the CPU time of dlhook's threads (schedstat). Prints one
JSON line. usage: wakeups.py SECONDS"""
import json
import os
import sys
import time


def per_thread(comm, read):
    """read(tid) summed over the threads named comm, or None when there is none"""
    n = None
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() != comm:
                    continue
            n = (n or 0) + read(tid)
        except (OSError, ValueError, IndexError):
            pass
    return n


def cpu_ns(comm):
    """CPU time of the threads named comm (schedstat: ns on the CPU)"""
    def read(tid):
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    return per_thread(comm, read)


def woke(comm):
    """their voluntary context switches: how often they went to sleep"""
    def read(tid):
        with open(f"/proc/self/task/{tid}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
        return 0
    return per_thread(comm, read)


secs = float(sys.argv[1])
w0, c0 = time.monotonic(), time.thread_time()
x, d = 0, {}
while time.monotonic() - w0 < secs:
    for i in range(20000):
        x = (x * 31 + i) & 0xFFFF
        d[i & 255] = x
wall, cpu = time.monotonic() - w0, time.thread_time() - c0
print(json.dumps({"wall": wall, "cpu": cpu, "sampler": woke("dlhook-sampler"),
                  "writer": woke("dlhook-writer"),
                  "cpu_ns": {k: cpu_ns("dlhook-" + k) for k in ("sampler", "writer", "symbols")}}))
