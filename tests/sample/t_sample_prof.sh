# Host sampling must not change the program: the program's own SIGPROF (setitimer ITIMER_PROF) and SIGALRM
# (ITIMER_REAL) handlers: their counts follow the process's CPU time and the wall time, the
# handlers and the timer read back as set. Fewer runs: each takes about 0.6 s of timers
# (tests/sample/sigcases.c, mode prof). 12 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
same_as_bare prof 3 12 "$P" prof
echo ok
