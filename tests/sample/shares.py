"""shares.py — the Python form of shares.c: three Python functions take 60 %, 30 % and 10 %
of the main thread's CPU time, measured with time.thread_time_ns() (CLOCK_THREAD_CPUTIME_ID),
in chunks of pseudo-random length (0.1 to 0.9 ms), each to the function furthest behind its
share. tests/sample/t_sample_shares.sh checks that the on-CPU samples give the same shares.
  python3 shares.py [SECS]     SECS seconds of CPU time in all (default 3)
Prints the measured shares in whole percent, one line per function (deterministic); then on
stderr "shares: loop_cpu_ns N wall_ns N thread_cpu_ns N" (the loop's CPU and wall time, the
thread's CPU time at the end), as shares.c."""
import sys
import time

cpu = time.thread_time_ns


def py_sixty(ns):
    t0 = cpu()
    x = 1
    while True:
        for _ in range(20):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        t = cpu()
        if t - t0 >= ns:
            return t - t0


def py_thirty(ns):
    t0 = cpu()
    x = 1
    while True:
        for _ in range(20):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        t = cpu()
        if t - t0 >= ns:
            return t - t0


def py_ten(ns):
    t0 = cpu()
    x = 1
    while True:
        for _ in range(20):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        t = cpu()
        if t - t0 >= ns:
            return t - t0


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    funcs = (py_sixty, py_thirty, py_ten)
    want = (0.6, 0.3, 0.1)
    spent = [0, 0, 0]
    total = 0
    goal = int(secs * 1e9)
    rnd = 12345
    w0 = time.monotonic_ns()
    while total < goal:
        k = min(range(3), key=lambda i: spent[i] - want[i] * total)
        rnd = (rnd * 1664525 + 1013904223) & 0xFFFFFFFF
        t = funcs[k](100000 + (rnd >> 8) % 800000)
        spent[k] += t
        total += t
    w1 = time.monotonic_ns()
    for f, s in zip(funcs, spent):
        print(f"{f.__name__} {100 * s / total:.0f}")
    sys.stdout.flush()
    print(f"shares: loop_cpu_ns {total} wall_ns {w1 - w0} thread_cpu_ns {cpu()}", file=sys.stderr)


main()
