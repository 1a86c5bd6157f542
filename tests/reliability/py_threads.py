"""32 Python threads calling the CUDA runtime flat out through ctypes (issue 39): each thread
alternates cudaGetDevice and cudaGetDeviceCount for the given seconds. Prints the calls made,
wall and CPU time and peak RSS (the format of threadload.c). usage: py_threads.py THREADS SECONDS"""
import ctypes, resource, sys, threading, time

nthreads, secs = int(sys.argv[1]), float(sys.argv[2])
rt = ctypes.CDLL("libcudart.so.13")
get_dev, get_count = rt.cudaGetDevice, rt.cudaGetDeviceCount
made = [0] * nthreads
start = threading.Event()


def work(i):
    d, c = ctypes.c_int(), ctypes.c_int()
    pd, pc = ctypes.byref(d), ctypes.byref(c)
    start.wait()
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        for _ in range(64):
            get_dev(pd)
            get_count(pc)
        n += 128
    made[i] = n


get_dev(ctypes.byref(ctypes.c_int()))  # the runtime's start-up, outside the measured part
t0 = time.monotonic()
ts = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
for t in ts:
    t.start()
start.set()
for t in ts:
    t.join()
wall = (time.monotonic() - t0) * 1e3
ru = resource.getrusage(resource.RUSAGE_SELF)
print(f"calls {sum(made) + 1}\nwall_ms {wall:.1f}\ncpu_ms {(ru.ru_utime + ru.ru_stime) * 1e3:.1f}\n"
      f"maxrss_kb {ru.ru_maxrss}")
