# Host sampling must not change the program: the program takes every real-time signal (SA_SIGINFO handlers on
# SIGRTMIN..SIGRTMAX) and sigqueues each to itself 30 times while burning CPU: each handler
# runs exactly once per round with its value, never for a signal the program did not send, and
# reads back as installed. dlhook's sampling signal is one of them: it must step aside (stop
# sampling, or take another signal), so samples are only counted here, not required
# (tests/sample/sigcases.c, mode rt). 20 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
SAMPLES_OPTIONAL=1 same_as_bare rt 3 20 "$P" rt
echo ok
