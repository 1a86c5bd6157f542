# Issue 39, 32 Python threads calling the runtime flat out through ctypes for 2 s (GIL: one runs
# at a time, each for 5 ms, at ~1 M calls/s). Each thread's ring grows within its share of the
# 64 MiB budget: at most 0.5% dropped (before: 10% with the default budget, as the first
# threads took 8 MiB rings and the rest got 64 KiB).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
python3 -c "import ctypes; ctypes.CDLL('libcudart.so.13')" 2>/dev/null || skip "no libcudart.so.13 for ctypes"
THREADS=32 load_case py32 0.5 python3 "$ROOT/tests/reliability/py_threads.py" 32 2
