# Host sampling must not change the program: vfork + exec (/bin/true, /bin/false) and vfork + _exit(code)
# while two threads burn CPU: every child's status as expected (the exec'd children are
# traced too: the samples are summed over all traces of a run)
# (tests/sample/sigcases.c, mode vfork). 20 traced runs at 1 kHz against 3 bare ones: same stdout,
# same exit status; every traced run has on-CPU samples once the recorder samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/sigcases
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
same_as_bare vfork 3 20 "$P" vfork
echo ok
