"""exit_race.py — settle(): the test workloads' last step before the interpreter exits.

PyTorch (2.x) stashes a contextvars.Context in the thread-local state of every backward()
(torch/autograd/graph.py, _stash_obj_in_tls), and the autograd engine hands a copy of that state
to its CUDA device thread. When that thread finishes a backward after the calling thread has
returned from it, the device thread drops the GraphTask, and with it the Python object, which
needs the GIL. A program that exits within a few milliseconds of its last backward (a short
optimizer step, a synchronize, a print) can reach Py_FinalizeEx first: the device thread then
ends in PyThread_exit_thread inside a noexcept destructor, and the process aborts with
"terminate called without an active exception" (pytorch/pytorch#38228). On the simulated CUDA
stack, without dlhook, `thirdparty.py gpt2 --steps 4` aborted so in 8 of 162 runs. That is
PyTorch's race, not the profiler's, and not what the tests are about: releasing the GIL for a
moment at the end lets the device thread finish first.
"""
import time


def settle(seconds=0.1):
    """Sleeps (the GIL released) so that autograd's device threads drop their last GraphTask."""
    time.sleep(seconds)
