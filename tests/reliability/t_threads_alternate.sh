# Issue 39, one and two threads flat out alternating two functions (nothing folds) for 1.5 s:
# the writer drains at most 256 KiB of a ring per visit and gives words back mid-pass, a thread
# whose ring is full (grown to DLHOOK_RING_KB) waits while the writer drains. At most 0.5%
# dropped (before: 5-8% with one thread, 17-50% with two).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
load_case alt1 0.5 "$P" alt 1 1500
THREADS=2 load_case alt2 0.5 "$P" alt 2 1500
