"""bench/cpu_loop.py — a CPU-bound Python loop for bench/sample-bench: a fixed amount of work
(function calls, arithmetic, a dict and a list) in three functions of different depth; prints
the wall time it took and the main thread's CPU time, in seconds (the signal handler of an
on-CPU sample runs in that thread: its CPU time is what sampling costs it, whatever else the
machine runs). With CPU_LOOP_THREADS=1 it prints a second line: the CPU time in ms of each of
dlhook's threads (dlhook-sampler, -writer, -symbols; /proc/self/task/*/schedstat) and of the whole
process (user + system), what sampling costs measured in the run itself."""
import json
import os
import resource
import sys
import time


def thread_cpu_ms():
    per = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if comm.startswith("dlhook"):
            per[comm] = per.get(comm, 0) + ns / 1e6
    ru = resource.getrusage(resource.RUSAGE_SELF)
    per["process"] = (ru.ru_utime + ru.ru_stime) * 1e3
    return per


def leaf(i):
    return (i * 7) % 13


def middle(n):
    s = 0
    d = {}
    for i in range(n):
        s += leaf(i)
        d[i & 255] = s
    return s


def outer(reps, n):
    acc = []
    for _ in range(reps):
        acc.append(middle(n))
    return len(acc)


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    t0, c0 = time.perf_counter(), time.thread_time()
    outer(reps, 100000)
    print("%.6f %.6f" % (time.perf_counter() - t0, time.thread_time() - c0))
    if os.environ.get("CPU_LOOP_THREADS") == "1":
        print(json.dumps(thread_cpu_ms()))
