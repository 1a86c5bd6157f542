# Issue 39, 32 Python threads calling the runtime flat out through ctypes for 2 s (GIL: one runs
# at a time, each for 5 ms, at ~1 M calls/s). Each thread's ring grows within its share of the
# 64 MiB budget, and a full one waits for the writer: at most 2% dropped (before: 10-58% with
# the default budget, as the first threads took 8 MiB rings and the rest got 64 KiB). Not 0:
# a thread stops waiting when the writer has been blocked for DLHOOK_RING_WAIT_MS (100 ms: a
# write on a loaded disk); 0 in 30 of 30 runs here since a runnable writer is waited for.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
python3 -c "import ctypes; ctypes.CDLL('libcudart.so.13')" 2>/dev/null || skip "no libcudart.so.13 for ctypes"
THREADS=32 load_case py32 2 python3 "$ROOT/tests/reliability/py_threads.py" 32 2
