# Hazard: the trace's directory is removed while the program runs (a cleanup of /tmp, a job
# script's rm -rf). The open trace file was written on, unlinked: every later call was lost with
# it, without a word (no trace at all was left). dlhook notices that its file has no name left
# (st_nlink 0), warns once, makes it again at its path (the directory too) with everything
# written so far, and goes on there: the trace holds every call, before and after. 20 runs.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/silentprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_STACKS=none DLHOOK_FLUSH_MS=100
"$P" rmdir "$T/plain" 1000 >plain.out 2>plain.err; want=$?
i=0
while [ $i -lt 20 ]; do
  mkdir -p "$T/tr"
  traced "$T/tr" "$P" rmdir "$T/tr" 1000 >traced.out 2>traced.err; rc=$?
  [ "$rc" = "$want" ] || fail "run $i: exit $rc, untraced $want: $(cat traced.out traced.err)"
  sed "s|$T/plain|$T/tr|" plain.out | cmp -s - traced.out || fail "run $i: output differs: $(cat traced.out)"
  grep -q 'dlhook: warning:.*removed' traced.err || fail "run $i: no warning: $(cat traced.err)"
  [ "$(grep -c 'dlhook: warning' traced.err)" = 1 ] || fail "run $i: more than one warning: $(cat traced.err)"
  "$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "run $i: trace unreadable"
  expect_calls stats.json cudaGetDeviceCount=2000
  rm -rf "$T/tr"
  i=$((i + 1))
done
echo "ok: 20 runs, directory removed mid-run: one warning, all 2000 calls in the trace at its path"
