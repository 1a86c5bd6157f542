# Host sampling must not change the program: it takes every real-time signal (SA_SIGINFO
# handlers on SIGRTMIN..SIGRTMAX) and sigqueues each to itself 30 times while burning CPU:
# each handler runs exactly once per round with its value, never for a signal the program did
# not send, and reads back as installed (tests/sample/sigcases.c, mode rt). dlhook's sampling
# signal is one of them: the recorder must step aside (its sampling ends when the program
# installs a handler on it), so samples are counted here, not required. 20 traced runs at
# 1 kHz against 3 bare ones: same stdout, same exit status.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
SAMPLES=none same_as_bare rt 3 20 "$P" rt
echo ok
