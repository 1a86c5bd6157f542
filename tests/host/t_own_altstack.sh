# Hazard: dlhook's per-thread alternate signal stacks must never replace one of the program's
# (Go runtimes, JITs and CPython's faulthandler install their own). A program that installs its
# own alternate stack and then calls CUDA still has its own stack afterwards; output and exit
# status are those of the untraced run.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"
export DLHOOK_QUIET=1
"$P" ownstack 100 >plain.out 2>&1; want=$?
grep -q "its own: yes" plain.out || fail "untraced run: $(cat plain.out)"
traced "$T/tr" "$P" ownstack 100 >traced.out 2>&1; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
echo "ok: $(cat traced.out)"
