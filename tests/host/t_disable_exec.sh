# Hazard: with DLHOOK_DISABLE=1 (and likewise under secure execution) dlhook stopped before
# looking up the real exec functions, so every exec*/posix_spawn* of the program failed with
# ENOSYS: a shell could not run a command. dlhook disabled is pure pass-through: a shell script,
# env(1) and Python's subprocess and os.posix_spawn give the output and exit status of the
# untraced run.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"
script='echo start; /bin/true && echo exec-ok; env sh -c "exit 7"; echo "child exit $?"'
sh -c "$script" >plain.out 2>&1; want=$?
DLHOOK_DISABLE=1 LD_PRELOAD="$DLHOOK_PRELOAD" sh -c "$script" >traced.out 2>&1; rc=$?
[ "$rc" = "$want" ] || fail "shell: exit $rc, untraced $want: $(cat traced.out)"
cmp -s plain.out traced.out || fail "shell: output differs: $(cat traced.out)"
echo "shell: $(tr '\n' ' ' <traced.out)"
if command -v python3 >/dev/null; then
  py='import os, subprocess, sys
print(subprocess.run(["sh", "-c", "echo sub; exit 3"]).returncode)
pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 5"], os.environ)
print(os.waitpid(pid, 0)[1] >> 8)'
  python3 -c "$py" >plain-py.out 2>&1; want=$?
  DLHOOK_DISABLE=1 LD_PRELOAD="$DLHOOK_PRELOAD" python3 -c "$py" >traced-py.out 2>&1; rc=$?
  [ "$rc" = "$want" ] || fail "python: exit $rc, untraced $want: $(cat traced-py.out)"
  cmp -s plain-py.out traced-py.out || fail "python: output differs: $(cat traced-py.out)"
  echo "python: $(tr '\n' ' ' <traced-py.out)"
fi
