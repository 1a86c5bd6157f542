# Host sampling must not change the program: a thread blocks every signal, burns CPU, then waits in
# sigsuspend or ppoll with an empty mask (everything unblocked while it waits): it wakes only
# for the SIGUSR1s the program sends (a signal of dlhook's pending from the blocked stretch
# would wake it early); ppoll with nothing sent times out. The hazard: while the thread waits
# in sigsuspend/ppoll its mask is the empty one it passed, and /proc/self/task/TID/status
# SigBlk says so; a timer armed on that reading fires while the thread burns with everything
# blocked, and its signal, pending, ends the next wait early
# (tests/sample/sigcases.c, mode suspend). 20 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
same_as_bare suspend 3 20 "$P" suspend
echo ok
