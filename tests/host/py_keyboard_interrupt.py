# An uncaught KeyboardInterrupt (tests/host/t_py_keyboard_interrupt.sh): CPython ends such a run
# by putting SIGINT's default action back and sending SIGINT to itself, so that its parent sees
# it die of the signal. The job makes CALLS CUDA calls (ctypes), one last different call, then
#   raise:  raises KeyboardInterrupt itself;
#   signal: gives SIGINT the handler CPython gives it when SIGINT is not ignored at start-up
#           (a background job of a non-interactive shell starts with it ignored), and sends
#           SIGINT to itself.
#   python3 py_keyboard_interrupt.py LIBCUDART CALLS raise|signal
import ctypes, os, signal, sys

if sys.argv[3] == "signal":
    signal.signal(signal.SIGINT, signal.default_int_handler)
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
n = ctypes.c_int(-1)
for _ in range(int(sys.argv[2])):
    cuda.cudaGetDeviceCount(ctypes.byref(n))
cuda.cudaSetDevice(0)
print("calls made", flush=True)
if sys.argv[3] == "signal":
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()
raise KeyboardInterrupt
