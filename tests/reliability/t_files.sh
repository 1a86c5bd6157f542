# Files: traces are created 0600 with O_CREAT|O_EXCL|O_NOFOLLOW, so a symlink planted in a shared
# directory at the trace's name (explicit, or the predicted <host>-<pid>.dlh) is never followed:
# the writer takes the next free name (NAME.1.dlh). setuid/setgid programs are never traced: dlhook
# loaded into a process whose real and effective ids differ stays inert, and a setuid/setgid copy
# of a program run by another user leaves no trace (and behaves as without dlhook).
. "$ROOT/tests/lib.sh"
R=$BUILD/tests/reliability
need "$R/victim"; need "$R/setid"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_STACKS=none DLHOOK_QUIET=1
mkdir shared; chmod 1777 shared
# ---- an explicit trace name planted as a symlink (to a file that exists, and to none)
echo "precious" >precious
ln -s "$T/precious" shared/a.dlh
ln -s "$T/created-by-dlhook" shared/b.dlh
for n in a b; do
  DLHOOK_OUTPUT="$T/shared/$n.dlh" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" out 1000 >/dev/null 2>err-$n; rc=$?
  [ $rc = 3 ] || fail "symlink $n: exit $rc"
  [ -L "shared/$n.dlh" ] || fail "symlink $n was replaced"
  tr=$(find shared -type f -name "$n.*dlh*")
  [ -n "$tr" ] && [ -f "$tr" ] || fail "no trace under another name: $(ls shared) $(cat err-$n)"
  "$DLHOOK_BIN" dump "$tr" >/dev/null || fail "trace $tr unreadable"
done
[ "$(cat precious)" = precious ] || fail "the symlink's target was written"
[ ! -e created-by-dlhook ] || fail "the dangling symlink's target was created"
# ---- the predicted per-process name in a shared directory
mkdir pred; chmod 1777 pred
DLHOOK_OUTPUT="$T/pred/" LD_PRELOAD="$DLHOOK_PRELOAD" sh -c \
  'ln -s "$0/pwned" "$0/pred/$(hostname)-$$.dlh" && exec "$1" out 1000' "$T" "$R/victim" >/dev/null 2>err-p
[ ! -e pwned ] || fail "the planted symlink at the predicted name was followed"
[ -n "$(find pred -type f)" ] || fail "no trace under another name: $(ls pred) $(cat err-p)"
# ---- mode 0600 for every trace written above
for f in $(find shared pred -type f); do
  m=$(stat -c %a "$f"); [ "$m" = 600 ] || fail "$f has mode $m, expected 600"
done
echo "symlinks: 3 planted, none followed; traces 0600 under the next free name"

# ---- setuid/setgid process: dlhook loaded (dlopen) after the ids differ stays inert
# (the library is copied where the changed ids can read it: the checkout may be private)
L=$(mktemp -d /tmp/dlhook-setid-lib.XXXXXX); chmod 755 "$L"; cp "$DLHOOK_LIB" "$L/"; chmod 644 "$L/libdlhook.so"
for mode in none gid uid; do
  mkdir "id-$mode"; chmod 777 "id-$mode"
  DLHOOK_OUTPUT="$T/id-$mode/" LD_PRELOAD="${ASAN_LIB:-}" "$R/setid" "$mode" "$L/libdlhook.so" >"id-$mode.out" 2>&1 || { rm -rf "$L"; fail "setid $mode: $(cat id-$mode.out)"; }
  n=$(ls "id-$mode" | wc -l)
  if [ $mode = none ]; then [ "$n" = 1 ] || fail "control run (ids unchanged) wrote $n traces, expected 1"
  else [ "$n" = 0 ] || { rm -rf "$L"; fail "setid $mode: dlhook wrote a trace in a setuid/setgid process"; }; fi
done
rm -rf "$L"
# ---- setuid and setgid copies run by an unprivileged user
if command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
  S=$(mktemp -d /tmp/dlhook-setid.XXXXXX) # $T's parents are private: nobody needs a way in
  trap 'rm -rf "$S"' EXIT
  chmod 755 "$S"
  cp "$R/victim" "$S/suid-victim"; chmod 4755 "$S/suid-victim"
  cp "$R/victim" "$S/sgid-victim"; chgrp root "$S/sgid-victim"; chmod 2755 "$S/sgid-victim"
  mkdir "$S/out"; chmod 777 "$S/out"
  for p in suid-victim sgid-victim; do
    setpriv --reuid=65534 --regid=65534 --clear-groups "$S/$p" out 1000 >"$p.plain" 2>"$p.plain-err"; want=$?
    [ "$want" = 3 ] || fail "$p without dlhook: exit $want: $(cat "$p.plain-err")"
    setpriv --reuid=65534 --regid=65534 --clear-groups env DLHOOK_OUTPUT="$S/out/" LD_PRELOAD="$DLHOOK_PRELOAD" \
      "$S/$p" out 1000 >"$p.out" 2>"$p.err"; rc=$?
    [ "$rc" = "$want" ] || fail "$p: exit $rc, without dlhook $want"
    cmp -s "$p.plain" "$p.out" || fail "$p: output differs"
  done
  [ -z "$(ls "$S/out")" ] || fail "a setuid/setgid program was traced: $(ls "$S/out")"
  echo "setuid/setgid copies run as nobody: not traced, same output"
else
  echo "no setpriv or no user nobody: setuid copies not run"
fi
echo ok
