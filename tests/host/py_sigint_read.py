# Ctrl-C in a Python job (tests/host/t_py_sigint_read.sh): the job calls CUDA (ctypes), has run a
# subprocess (vfork), and blocks in os.read(). SIGINT must interrupt the read (EINTR: CPython's
# handler is installed without SA_RESTART) and raise KeyboardInterrupt. A helper sends SIGINT
# (once the read blocks), then, 3 s later, a byte: a read that was restarted returns that byte.
#   python3 py_sigint_read.py LIBCUDART CALLS
import ctypes, os, signal, subprocess, sys

# CPython installs its SIGINT handler only when SIGINT is not ignored at start-up, and a
# non-interactive shell's background job starts with it ignored: install it as CPython would
# (sigaction without SA_RESTART), so that the test does not depend on how it was started.
signal.signal(signal.SIGINT, signal.default_int_handler)

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
n = ctypes.c_int(-1)
for _ in range(int(sys.argv[2])):
    cuda.cudaGetDeviceCount(ctypes.byref(n))
subprocess.run(["true"])
r, w = os.pipe()
# The helper sends SIGINT once this process is blocked in read() of the pipe (/proc/PID/syscall
# starts with 0, the number of read on x86-64, and the pipe's fd; not Popen's own read of its
# exec-status pipe, which a loaded machine may still show; at most 10 s), then, 3 s later, a byte.
wait_read = (f"i=0; while [ $i -lt 1000 ]; do case $(cat /proc/{os.getpid()}/syscall 2>/dev/null) in "
             f"'0 {hex(r)} '*) break;; esac; sleep 0.01; i=$((i+1)); done; sleep 0.02")
helper = subprocess.Popen(["sh", "-c", f"{wait_read}; kill -INT {os.getpid()}; sleep 3; echo x >&{w}"],
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
