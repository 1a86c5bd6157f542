# export/diff command line: usage errors exit 2, unreadable or damaged traces exit 1 after
# exporting what could be read; help texts.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
"$BUILD/tests/bin/mktrace" m.dlh || fail mktrace
"$DLHOOK_BIN" export --help | grep -q 'usage: dlhook export' || fail "export --help"
"$DLHOOK_BIN" diff --help | grep -q 'usage: dlhook diff' || fail "diff --help"
"$DLHOOK_BIN" --help | grep -q 'export' || fail "export not in the command list"
st() { "$@" >/dev/null 2>err; echo $?; }
[ "$(st "$DLHOOK_BIN" export -f nope -o x m.dlh)" = 2 ] || fail "unknown format"
grep -q "unknown format 'nope'" err || fail "message: $(cat err)"
[ "$(st "$DLHOOK_BIN" export -f folded m.dlh)" = 2 ] || fail "no -o"
[ "$(st "$DLHOOK_BIN" export -o x m.dlh)" = 2 ] || fail "no format"
[ "$(st "$DLHOOK_BIN" export -f folded -o x)" = 2 ] || fail "no trace"
[ "$(st "$DLHOOK_BIN" export -f folded --weight heat -o x m.dlh)" = 2 ] || fail "bad weight"
[ "$(st "$DLHOOK_BIN" export -f folded -o x missing.dlh)" = 1 ] || fail "missing trace"
[ "$(st "$DLHOOK_BIN" export -f folded -o /nonexistent/dir/x m.dlh)" = 1 ] || fail "unwritable output"
# a truncated trace: what was readable is exported, exit 1
head -c $(( $(wc -c <m.dlh) - 20 )) m.dlh >cut.dlh
for f in folded svg speedscope pprof kineto perfetto tensorboard; do
  rm -rf out.$f
  [ "$(st "$DLHOOK_BIN" export -q -f $f -o out.$f cut.dlh)" = 1 ] || fail "$f: damaged trace must exit 1"
  [ -e out.$f ] || fail "$f: nothing written for a damaged trace"
done
echo ok
