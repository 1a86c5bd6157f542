# Issue 39, a thread's first call: 1,000 threads started at once, 200 calls each. Every thread
# gets a ring (16 KiB, recycled from exited threads when one waits) and an alternate signal
# stack (kept with the thread struct for the next thread). Nothing dropped; the time against
# the bare run is printed (the old 8 MiB rings made it 26x).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
THREADS=1000 load_case many1000 0 "$P" many 1000 200
