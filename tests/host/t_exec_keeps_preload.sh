# Hazard: a program started under dlhook with its own LD_PRELOAD (jemalloc, tcmalloc, another
# tool, a sanitizer runtime) must still load it: the exec wrappers add dlhook at the end of the
# child's LD_PRELOAD instead of replacing it. Two launchers: env(1) (execvp) and CPython's subprocess with env= (execve from a
# vfork child). The child's output and exit status equal the untraced run's, its own preload
# library is loaded, and the child is traced (its calls are in its trace).
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
FAKE=$BUILD/tests/host/libfakepreload.so
need "$V"; need "$FAKE"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
FAKE="${ASAN_LIB:+$ASAN_LIB:}$FAKE" # an ASan-built libdlhook.so needs the ASan runtime first
env LD_PRELOAD="$FAKE" "$V" out 1000 >plain.out 2>plain.err; want=$?
grep -q "fake preload loaded" plain.err || fail "untraced run did not load the fake preload"
check() { # label
  [ "$rc" = "$want" ] || fail "$1: exit $rc, untraced $want: $(cat $1.err)"
  cmp -s plain.out $1.out || fail "$1: output differs"
  grep -q "fake preload loaded" $1.err || fail "$1: the child's own LD_PRELOAD was dropped: $(cat $1.err)"
  "$DLHOOK_BIN" stats --json "$(one_trace "$T/$1")" >$1.json || fail "$1: trace unreadable"
  expect_calls $1.json cudaSetDevice=1000
  echo "$1: own preload loaded, child traced, same output and exit status"
}
traced "$T/env" env LD_PRELOAD="$FAKE" "$V" out 1000 >env.out 2>env.err; rc=$?
check env
if command -v python3 >/dev/null; then
  traced "$T/py" python3 -c '
import os, subprocess, sys
env = dict(os.environ, LD_PRELOAD=sys.argv[1])
sys.exit(subprocess.run(sys.argv[2:], env=env).returncode)' "$FAKE" "$V" out 1000 >py.out 2>py.err; rc=$?
  check py
fi
