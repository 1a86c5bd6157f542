# Host sampling must not change the program: a signal-handling thread (every signal blocked, sigtimedwait and
# sigwaitinfo on the full set, burning CPU between them) gets exactly the SIGUSR1s the program
# sends, never dlhook's signal; other threads burn CPU with every signal blocked
# (tests/sample/sigcases.c, mode sigwait). 20 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
same_as_bare sigwait 3 20 "$P" sigwait
echo ok
