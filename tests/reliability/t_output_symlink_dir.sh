# Hazard: a directory symlink planted by another user in a shared directory, on the way to the
# trace (DLHOOK_OUTPUT=/shared/run/ with /shared/run -> the victim's directory). With
# fs.protected_symlinks=0, or in a world-writable directory without the sticky bit (where that
# sysctl does not apply), open() followed it and the trace was created in the victim's
# directory. dlhook walks the directories itself and follows a symlink only when the user or
# root owns it, whatever the sysctl: the planted one is refused with one warning, the program
# runs as untraced; the user's own symlink is followed as before. One planted at the trace's
# name itself is passed over as before (the next free name), whatever it points to.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
[ "$(id -u)" = 0 ] || skip "planting another user's symlink needs root (chown -h)"
export DLHOOK_STACKS=none
"$V" out 100 >plain.out 2>/dev/null; want=$?
mkdir victim shared sticky mine
chmod 0777 shared; chmod 1777 sticky
for d in shared sticky; do
  ln -s "$T/victim" "$d/run"; chown -h 65534:65534 "$d/run" || skip "cannot chown a symlink here"
  for o in "$T/$d/run/" "$T/$d/run/x.dlh" "$T/$d/run/%p.dlh"; do
    DLHOOK_OUTPUT="$o" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >out.txt 2>err.txt; rc=$?
    [ -z "$(ls victim)" ] || fail "DLHOOK_OUTPUT=$o followed the planted symlink: $(ls victim)"
    [ "$rc" = "$want" ] || fail "DLHOOK_OUTPUT=$o: exit $rc, untraced $want: $(cat err.txt)"
    cmp -s plain.out out.txt || fail "DLHOOK_OUTPUT=$o: output differs"
    n=$(grep -c '^dlhook: warning' err.txt)
    [ "$n" = 1 ] || fail "DLHOOK_OUTPUT=$o: $n warnings, expected 1: $(cat err.txt)"
  done
done
echo "planted: $(cat err.txt)"
# another user's symlink at the trace's name itself, to a device: not followed, next free name
ln -s /dev/null sticky/t.dlh; chown -h 65534:65534 sticky/t.dlh
DLHOOK_QUIET=1 DLHOOK_OUTPUT="$T/sticky/t.dlh" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >/dev/null 2>err.txt
[ -f sticky/t.1.dlh ] || fail "a planted symlink at the name stopped the recording: $(ls sticky) $(cat err.txt)"
# the user's own symlinks (a directory link, and one in the middle of the path) are followed
mkdir -p real/sub; ln -s "$T/real" mine/link
DLHOOK_QUIET=1 DLHOOK_OUTPUT="$T/mine/link/sub/" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >/dev/null 2>err.txt
tr=$(one_trace "$T/real/sub")
"$DLHOOK_BIN" stats "$tr" >/dev/null || fail "the trace through the user's own symlink does not read"
DLHOOK_QUIET=1 DLHOOK_OUTPUT="$T/mine/link/new/" LD_PRELOAD="$DLHOOK_PRELOAD" "$V" out 100 >/dev/null 2>err.txt
one_trace "$T/real/new" >/dev/null
echo "ok: 6 outputs through another user's symlink refused (sysctl fs.protected_symlinks=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null)); the user's own followed"
