"""bench/cpu_loop.py — a CPU-bound Python loop for bench/sample-bench: a fixed amount of work
(function calls, arithmetic, a dict and a list) in three functions of different depth; prints
the wall time it took and the main thread's CPU time, in seconds (the signal handler of an
on-CPU sample runs in that thread: its CPU time is what sampling costs it, whatever else the
machine runs)."""
import sys
import time


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
