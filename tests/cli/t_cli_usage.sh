# dlhook: --help, --version, usage errors (exit 2) and bad input (exit 1), one-line messages.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
D=$DLHOOK_BIN

# expect RC CMD...: runs CMD, checks its exit status; stdout in out, stderr in err
expect() {
  want=$1; shift
  "$@" >out 2>err
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want; stderr: $(cat err)"
}
one_line_err() {
  [ "$(wc -l <err)" -eq 1 ] || fail "$1: expected one error line, got: $(cat err)"
  grep -q "^dlhook" err || fail "$1: error does not start with 'dlhook': $(cat err)"
}

expect 0 "$D" --help
grep -q "usage: dlhook COMMAND" out || fail "--help: no usage"
for c in record dump stats; do grep -q "^  $c " out || fail "--help does not list $c"; done
expect 0 "$D" -h
expect 0 "$D" --version
grep -q "^dlhook [0-9]" out || fail "--version: $(cat out)"
for c in record dump stats; do
  expect 0 "$D" "$c" --help
  grep -q "usage: dlhook $c" out || fail "$c --help: $(cat out)"
  expect 0 "$D" help "$c"
  grep -q "usage: dlhook $c" out || fail "help $c: $(cat out)"
done

expect 2 "$D"
expect 2 "$D" frobnicate
one_line_err "unknown command"
grep -q "unknown command 'frobnicate'" err || fail "unknown command message: $(cat err)"
expect 2 "$D" --frobnicate
one_line_err "unknown option"
expect 2 "$D" dump
one_line_err "dump without files"
expect 2 "$D" dump --nope x.dlh
one_line_err "dump unknown flag"
expect 2 "$D" dump --type nope x.dlh
one_line_err "dump bad type"
expect 2 "$D" dump --type
expect 2 "$D" stats
expect 2 "$D" stats --bogus x.dlh
one_line_err "stats unknown flag"
expect 2 "$D" record
expect 2 "$D" record --bogus -- true
expect 2 "$D" record -o

expect 1 "$D" dump "$T/missing.dlh"
one_line_err "missing file"
grep -q "missing.dlh" err || fail "missing file not named: $(cat err)"
expect 1 "$D" stats "$T/missing.dlh"
one_line_err "stats missing file"
[ -s out ] && fail "stats printed a table with no readable trace"
if [ "$(id -u)" != 0 ]; then
  echo x >unreadable.dlh; chmod 000 unreadable.dlh
  expect 1 "$D" dump unreadable.dlh
  one_line_err "unreadable"
fi
expect 1 "$D" dump /
one_line_err "directory"
echo ok
