# Host sampling must not change the program: 200 short CPU-burning threads (1 to 3 ms each,
# 4 at a time) created, sampled and exiting (return or pthread_exit), joined with their
# results (tests/sample/sigcases.c, mode threads). 20 traced runs at 1 kHz against 3 bare ones:
# same stdout, same exit status. On-CPU samples: at least one run must have some, not each
# (a new thread gets its timer when the sampler next looks, and its timer fires at the
# kernel's tick: a thread that lives for 1 to 3 ms may have no sample).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
SAMPLES=some same_as_bare threads 3 20 "$P" threads
echo ok
