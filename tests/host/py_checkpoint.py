# A training job as the scheduler sees it (tests/host/t_py_subprocess_sigterm.sh): it calls CUDA
# (the real runtime through ctypes), starts a helper with subprocess (CPython >= 3.10 uses vfork,
# and the child resets its signal handlers with sigaction() before exec), then is preempted with
# SIGTERM: its own handler must run and save the checkpoint, and the job must exit 0.
#   python3 py_checkpoint.py LIBCUDART CALLS
import ctypes, os, signal, subprocess, sys, time

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)  # the global scope: an LD_PRELOAD'ed wrapper comes first
calls = int(sys.argv[2])

def on_term(signum, frame):
    print("SIGTERM: checkpoint saved", flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, on_term)
n = ctypes.c_int(-1)
for _ in range(calls):
    cuda.cudaGetDeviceCount(ctypes.byref(n))
out = subprocess.run(["sh", "-c", "echo helper ran"], capture_output=True, text=True).stdout
print(out.strip(), flush=True)
for _ in range(calls):
    cuda.cudaGetDeviceCount(ctypes.byref(n))
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("SIGTERM handler did not run", flush=True)
sys.exit(3)
