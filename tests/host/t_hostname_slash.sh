# Hazard: the host name goes into the trace's file name; anyone can set the UTS name in a
# namespace of their own. A host name with '/' (and '..', or '%h') must not put the trace outside
# DLHOOK_OUTPUT: the '/' becomes '_', and the trace is in the directory asked for, whether
# DLHOOK_OUTPUT is a directory or a pattern with %h.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"
command -v unshare >/dev/null 2>&1 || skip "no unshare"
unshare -u true 2>/dev/null || skip "cannot create a UTS namespace here"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
mkdir -p out/a pat
unshare -u sh -c 'printf %s "../../esc/%h" >/proc/sys/kernel/hostname && exec "$@"' sh \
  env LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/out/a/" "$V" out 100 >dir.out 2>dir.err; rc=$?
[ "$rc" = 3 ] || fail "directory case: exit $rc: $(cat dir.err)"
unshare -u sh -c 'printf %s "../../esc/%h" >/proc/sys/kernel/hostname && exec "$@"' sh \
  env LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/pat/%h-%p.dlh" "$V" out 100 >pat.out 2>pat.err; rc=$?
[ "$rc" = 3 ] || fail "pattern case: exit $rc: $(cat pat.err)"
found=$(find "$T" -name '*.dlh' | sort)
echo "traces: $found"
[ "$(find "$T/out/a" -maxdepth 1 -name '*.dlh' | wc -l)" = 1 ] || fail "no trace directly in DLHOOK_OUTPUT (directory case)"
[ "$(find "$T/pat" -maxdepth 1 -name '*.dlh' | wc -l)" = 1 ] || fail "no trace directly in the pattern's directory"
[ "$(echo "$found" | wc -l)" = 2 ] || fail "traces elsewhere: $found"
