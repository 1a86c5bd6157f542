# Hazard: under secure execution (AT_SECURE: file capabilities, setuid, setgid) the environment
# belongs to a less privileged user. A file-capability program and a setuid-root program, run by
# an unprivileged user, load libdlhook.so the way a CUDA injection library is loaded (dlopen)
# with DLHOOK_OUTPUT pointing at a directory to be created: dlhook does nothing at all there (no
# setting read, no directory, no file, no thread), and the calls still work. A control run of the
# same program without privileges is traced.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"
command -v setpriv >/dev/null 2>&1 || skip "no setpriv"
command -v setcap >/dev/null 2>&1 || skip "no setcap"
id nobody >/dev/null 2>&1 || skip "no user nobody"
[ -z "${ASAN_LIB:-}" ] || skip "an ASan-built libdlhook.so cannot be dlopened by a program without ASan"
[ "$(id -u)" = 0 ] || skip "needs root (to give a copy file capabilities and the setuid bit)"
S=$(mktemp -d /tmp/dlhook-secure.XXXXXX) # $T's parents may be private: nobody needs a way in
trap 'rm -rf "$S"' EXIT
chmod 755 "$S"
cp "$DLHOOK_LIB" "$S/libdlhook.so"; chmod 644 "$S/libdlhook.so"
cp "$P" "$S/plain"; cp "$P" "$S/caps"; cp "$P" "$S/suid"
setcap cap_net_bind_service+ep "$S/caps" 2>/dev/null || skip "file capabilities not supported here"
chmod 4755 "$S/suid"
mkdir "$S/out"; chmod 777 "$S/out"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env DLHOOK_OUTPUT="$S/out/$1/" "$S/$1" dlopen "$S/libdlhook.so" 10; }
as_nobody plain >plain.out 2>plain.err || fail "control run: $(cat plain.out plain.err)"
grep -q "secure execution: no" plain.out || fail "control run: $(cat plain.out)"
[ -n "$(ls "$S/out/plain" 2>/dev/null)" ] || fail "control run: no trace: $(cat plain.err)"
for p in caps suid; do
  as_nobody $p >$p.out 2>$p.err; rc=$?
  [ "$rc" = 0 ] || fail "$p: exit $rc: $(cat $p.out $p.err)"
  grep -q "secure execution: yes" $p.out || skip "$p: the kernel did not set AT_SECURE: $(cat $p.out)"
  grep -q "^10 calls through" $p.out || fail "$p: calls failed: $(cat $p.out)"
  [ ! -e "$S/out/$p" ] || fail "$p: dlhook created DLHOOK_OUTPUT under secure execution: $(ls -la "$S/out/$p")"
  [ ! -s $p.err ] || fail "$p: stderr: $(cat $p.err)"
  echo "$p: secure execution, nothing created, calls work"
done
