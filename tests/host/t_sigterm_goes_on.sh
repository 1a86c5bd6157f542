# Hazard: the default action of a signal does not always end the process: pid 1 of a PID
# namespace (a container's first process) goes on after a SIGTERM it has no handler for. dlhook's
# front handler took the default for death, finished the trace and re-raised: the program went
# on unrecorded (200 of 400 calls kept). Where the default means going on, dlhook installs no
# handler (the program gets no EINTR either), also once a one-shot handler (SA_RESETHAND) of
# the program has run, and every call is in the trace.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/silentprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
unshare -Urpf true 2>/dev/null || skip "no user and PID namespaces (unshare -Urpf)"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
for mode in goes-on goes-on-once; do
  n=400; [ $mode = goes-on-once ] && n=600
  unshare -Urpf "$P" $mode 200 >plain.out 2>plain.err; want=$?
  grep -q 'pid 1 went on' plain.out || fail "$mode: untraced run: $(cat plain.out plain.err)"
  rm -rf "$T/tr"
  DLHOOK_OUTPUT="$T/tr/" unshare -Urpf env LD_PRELOAD="$DLHOOK_PRELOAD" "$P" $mode 200 \
    >traced.out 2>traced.err; rc=$?
  [ "$rc" = "$want" ] || fail "$mode: exit $rc, untraced $want: $(cat traced.out traced.err)"
  cmp -s plain.out traced.out || fail "$mode: output differs: $(cat traced.out)"
  "$DLHOOK_BIN" stats --json "$(one_trace "$T/tr")" >stats.json || fail "$mode: trace unreadable"
  expect_calls stats.json cudaGetDeviceCount=$n
done
echo "ok: pid 1 went on after SIGTERM (no handler: 400 calls; a one-shot handler, then the default: 600)"
