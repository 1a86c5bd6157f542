# Issue 39, calls next to a 10 kHz timer signal: the main thread alternates two functions flat
# out for 1.5 s while SIGALRM arrives every 100 us (SA_RESTART; the handler counts). At most
# 0.5% dropped (before: 4.2 M of 37.7 M).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
load_case timer 0.5 "$P" timer 1500
