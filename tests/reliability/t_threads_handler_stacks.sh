# Issue 39, calls from signal handlers with native stacks: a 2 kHz timer whose handler calls
# cudaGetDeviceCount while main calls cudaGetDevice in a loop, DLHOOK_STACKS=native. A handler's
# call that interrupts main inside its own store is dropped and counted; every other call is
# recorded: recorded + dropped = made, exactly, three runs.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/reliability/threads_lib.sh"
P=$BUILD/tests/reliability/threadload
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
for i in 1 2 3; do
  DLHOOK_STACKS=native load_case handler$i 1 "$P" handler 1000
done
