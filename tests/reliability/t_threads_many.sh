# Issue 39, many threads: 600 threads started at once, 2,000 calls each (consecutive calls
# differing, nothing folds): 1.2 M records that do not all fit in the 64 MiB budget, so the
# rings must be shared out (each starts at 16 KiB and grows within its share) and drained as
# fast as they fill (threads whose ring is full wait while the writer drains). Every call is
# recorded or counted; at most 1% dropped (the old fixed rings dropped 16-25%).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
THREADS=600 load_case many600 1 "$P" many 600 2000
