# Calls cudaGetDeviceCount through ctypes from three nested functions (tests/stacks).
# Lines marked PY-* are where the tests expect each Python frame.
import ctypes
import sys

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
g = ctypes.CDLL(None)  # the global scope: an LD_PRELOAD'ed wrapper comes first


def inner(i):
    n = ctypes.c_int(-1)
    return g.cudaGetDeviceCount(ctypes.byref(n))  # PY-INNER


def middle(i):
    return inner(i)  # PY-MIDDLE


def outer(k):
    out = []
    for i in range(k):
        out.append(middle(i))  # PY-OUTER
    return out


print(len(outer(3)))  # PY-MODULE
