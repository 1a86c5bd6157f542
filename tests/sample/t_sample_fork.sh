# Host sampling must not change the program: a CPU-burning thread forks 12 times; each child burns 10 ms of CPU
# and exits with its own code (exit or _exit), the parent waits: every status as expected.
# Fewer runs: each takes a second or two
# (tests/sample/sigcases.c, mode fork). 12 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
same_as_bare fork 3 12 "$P" fork
echo ok
