# Issue 39, thread churn: 5,000 threads one after the other, one call each. Each new thread
# takes the struct, ring and alternate signal stack an exited thread gave back: nothing is
# dropped and the rings stay a few KiB. Threads created per second against the bare run are
# printed (the goal: a few us more per thread than bare; timing is never asserted here).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
THREADS=64 load_case churn 0 "$P" churn 5000
# the rings of 5,000 threads that never overlap: a few recycled 16 KiB rings, not one each
python3 -c "
import json, sys
j = json.load(open('churn.json'))
r = j['dlhook_memory']['traces'][0]['parts']['rings']['peak_bytes']
sys.exit(0 if r <= (4 << 20) else f'rings peaked at {r >> 10} KiB for threads that never overlap')" ||
  fail "churn: rings not recycled"
