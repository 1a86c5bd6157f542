# DataLoader-style workers (tests/host/t_py_multiprocessing_exit.sh): multiprocessing with the
# fork start method; each worker calls CUDA (the real runtime through ctypes) a known number of
# times, sends its result through a queue and ends the way multiprocessing ends it: os._exit.
#   python3 py_workers.py LIBCUDART CALLS...
import ctypes, multiprocessing as mp, sys

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)

def worker(k, calls, q):
    n = ctypes.c_int(-1)
    for _ in range(calls):
        cuda.cudaGetDeviceCount(ctypes.byref(n))
    q.put((k, calls))

if __name__ == "__main__":
    n = ctypes.c_int(-1)
    cuda.cudaGetDeviceCount(ctypes.byref(n))  # the parent uses CUDA too
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    counts = [int(c) for c in sys.argv[2:]]
    ps = [ctx.Process(target=worker, args=(k, c, q)) for k, c in enumerate(counts)]
    for p in ps:
        p.start()
    done = sorted(q.get() for _ in ps)
    for p in ps:
        p.join()
    print("workers:", done, "exit codes:", [p.exitcode for p in ps], flush=True)
