"""bench/cpu_loop.py — a CPU-bound Python loop for bench/sample-bench: a fixed amount of work
(function calls, arithmetic, a dict and a list) in three functions of different depth; prints
the wall time it took, in seconds."""
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
    t0 = time.perf_counter()
    outer(reps, 100000)
    print("%.6f" % (time.perf_counter() - t0))
