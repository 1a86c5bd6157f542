# Hostile file systems: a symlink planted at the output path of export -f svg/pprof/folded/
# speedscope/perfetto and report -o is replaced, never followed (its target stays untouched);
# outputs are written under a random temporary name (nothing predictable such as
# .dlhook-export-N.tmp is ever opened) and keep the umask's mode; a directory writable by
# others and not sticky is refused; TensorBoard's run directory is always a new one; devices
# and pipes given as outputs (/dev/null, /dev/stdout, a FIFO) are written into, not replaced.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
D=$DLHOOK_BIN
"$HOSTILE" plain a.dlh || fail "hostile plain"
mkdir out
echo precious >precious
for f in svg pprof folded speedscope perfetto; do
  ln -s "$T/precious" out/$f.out
  "$D" export -q -f $f -o out/$f.out a.dlh 2>err || fail "$f: $(cat err)"
  [ "$(cat precious)" = precious ] || fail "$f: wrote through the planted symlink"
  [ -f out/$f.out ] && [ ! -L out/$f.out ] || fail "$f: the output is not a new file"
  [ -s out/$f.out ] || fail "$f: empty output"
done
ln -s "$T/precious" out/report.html
"$D" report -o out/report.html a.dlh >/dev/null 2>err || fail "report: $(cat err)"
[ "$(cat precious)" = precious ] || fail "report: wrote through the planted symlink"
[ ! -L out/report.html ] && grep -q '<html' out/report.html || fail "report: no new file"
# devices and pipes named as outputs are written into, never replaced by a file
"$D" export -q -f folded -o /dev/null a.dlh || fail "-o /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
mkfifo pipe
cat pipe >from-pipe & cp=$!
"$D" export -q -f folded -o pipe a.dlh || fail "-o FIFO"
wait $cp
[ -p pipe ] && [ -s from-pipe ] || fail "FIFO replaced or nothing written through it"
"$D" export -q -f folded -o /dev/stdout a.dlh >from-stdout || fail "-o /dev/stdout"
cmp -s from-stdout from-pipe || fail "/dev/stdout: $(head -c 200 from-stdout)"
# a dangling symlink (to a file an attacker wants created) is replaced too
ln -s "$T/created" out/dangling.svg
"$D" export -q -f svg -o out/dangling.svg a.dlh 2>err || fail "dangling: $(cat err)"
[ ! -e created ] || fail "created the symlink's target"
# mode from the umask, like a plain creat()
(umask 027; "$D" export -q -f folded -o out/mode.folded a.dlh) || fail "umask export"
[ "$(stat -c %a out/mode.folded)" = 640 ] || fail "mode $(stat -c %a out/mode.folded), expected 640"
# no temporary file is left behind, none with a predictable name was used
ls -A out | grep -q '^\.' && fail "left behind: $(ls -A out)"
# kineto: a predictable temporary name planted as a symlink is never opened
mkdir k
for i in 0 1 2; do ln -s "$T/precious" k/.dlhook-export-$i.tmp; done
"$D" export -q -f kineto -o k a.dlh 2>err || fail "kineto: $(cat err)"
[ "$(cat precious)" = precious ] || fail "kineto: wrote through a planted name"
[ "$(ls k | grep -c '\.pt\.trace\.json\.gz$')" = 1 ] || fail "kineto: $(ls -A k)"
# a directory others may write to, not sticky: refused with a clear error
mkdir open; chmod 0777 open
if [ "$(id -u)" = 0 ]; then chown 12345 open 2>/dev/null || true; fi
if [ "$(stat -c %u open)" != "$(id -u)" ]; then
  "$D" export -q -f svg -o open/x.svg a.dlh 2>err && fail "wrote into a directory others may write"
  grep -q 'writable by others and not sticky' err || fail "refusal: $(cat err)"
  [ ! -e open/x.svg ] || fail "refused, but the file exists"
  chmod +t open
  "$D" export -q -f svg -o open/x.svg a.dlh 2>err || fail "sticky directory refused: $(cat err)"
else
  echo "(not root and no other owner possible: the foreign-directory case is not exercised)"
fi
# TensorBoard: the run directory is created by the export itself; one planted at the name the
# export would take (same second) is left alone and another name is used
mkdir -p tb/plugins/profile
now=$(date -u +%Y_%m_%d_%H_%M_%S); next=$(date -u -d '+1 second' +%Y_%m_%d_%H_%M_%S)
for r in "$now" "$next"; do mkdir -p "tb/plugins/profile/$r"; ln -s "$T/precious" "tb/plugins/profile/$r/goodhost.xplane.pb"; done
"$D" export -q -f tensorboard -o tb a.dlh 2>err || fail "tensorboard: $(cat err)"
[ "$(cat precious)" = precious ] || fail "tensorboard: wrote through a planted file"
n=$(find tb/plugins/profile -name '*.xplane.pb' -type f | wc -l)
[ "$n" = 1 ] || fail "tensorboard: $(find tb)"
echo ok
