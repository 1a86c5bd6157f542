# Hazard: a program that closes every fd >= 3 after its first CUDA calls and dup2()s its own file
# over 3..20 (a daemon, a test harness) must find nothing of dlhook's in its file and at its
# numbers: dlhook's trace fd and libunwind's validation pipe live above the program's range, the
# trace fd is checked (fstat dev/ino) before each write and reopened by name when the program
# closed it, so the trace stays complete. The program's file, output (including the fd numbers it
# got) and exit status equal the untraced run's.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_FLUSH_MS=20
"$P" fds "$T/plain.txt" 5000 >plain.out 2>plain.err; want=$?
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.err)"
sed 's/plain.txt/own.txt/' plain.out >want.out
for stacks in native none; do
  rm -rf "$T/tr" own.txt
  DLHOOK_STACKS=$stacks traced "$T/tr" "$P" fds "$T/own.txt" 5000 >traced.out 2>traced.err; rc=$?
  [ "$rc" = "$want" ] || fail "stacks $stacks: exit $rc, untraced $want: $(cat traced.err)"
  cmp -s plain.txt own.txt || fail "stacks $stacks: the program's file differs: $(od -c own.txt | head)"
  cmp -s want.out traced.out || fail "stacks $stacks: output differs: $(cat traced.out)"
  [ ! -s traced.err ] || fail "stacks $stacks: stderr: $(cat traced.err)"
  "$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "stacks $stacks: trace unreadable"
  expect_calls stats.json cudaGetDeviceCount=10000
  echo "stacks $stacks: same file, output and exit status; 10000 calls in the trace"
done
