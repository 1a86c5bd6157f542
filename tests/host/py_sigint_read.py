# Ctrl-C in a Python job (tests/host/t_py_sigint_read.sh): the job calls CUDA (ctypes), has run a
# subprocess (vfork), and blocks in os.read(). SIGINT must interrupt the read (EINTR: CPython's
# handler is installed without SA_RESTART) and raise KeyboardInterrupt. A helper sends SIGINT,
# then, 3 s later, a byte: a read that was restarted instead returns that byte.
#   python3 py_sigint_read.py LIBCUDART CALLS
import ctypes, os, subprocess, sys

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
n = ctypes.c_int(-1)
for _ in range(int(sys.argv[2])):
    cuda.cudaGetDeviceCount(ctypes.byref(n))
subprocess.run(["true"])
r, w = os.pipe()
helper = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -INT {os.getpid()}; sleep 3; echo x >&{w}"],
                          pass_fds=(w,))
try:
    data = os.read(r, 1)
    print(f"read returned {data!r}: SIGINT did not interrupt it", flush=True)
    status = 3
except KeyboardInterrupt:
    print("KeyboardInterrupt raised in os.read", flush=True)
    status = 0
helper.kill()
helper.wait()
sys.exit(status)
