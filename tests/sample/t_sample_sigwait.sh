# Host sampling must not change the program: main blocks every signal before it starts its
# threads; a signal-handling thread burns CPU and takes signals with sigtimedwait and
# sigwaitinfo on the full set; it must get exactly the 150 SIGUSR1s the program sends, never
# dlhook's signal (tests/sample/sigcases.c, mode sigwait; the thread spends most of its time
# waiting). 20 traced runs at 1 kHz against 3 bare ones: same stdout, same exit status.
# The hazard: while a thread waits in sigtimedwait/sigwaitinfo the kernel takes the waited set
# out of its blocked mask (real_blocked keeps the real one), so /proc/self/task/TID/status
# SigBlk shows the signal unblocked then; a timer armed on that reading fires later while the
# thread runs with the signal blocked, and the next sigwaitinfo returns dlhook's signal.
# No on-CPU samples are required: every thread blocks the signal, so none has a timer.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
SAMPLES=none same_as_bare sigwait 3 20 "$P" sigwait 150
echo ok
