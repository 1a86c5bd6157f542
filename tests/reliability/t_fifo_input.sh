# Hazard: a FIFO given to the dlhook command as a trace (x.dlh planted in a shared directory, or
# named by mistake) must not hang it: opening a FIFO for reading waits for a writer. Every
# subcommand that reads traces refuses it at once (exit 1, a message saying it is not a regular
# file), and `dlhook record` passes over one planted in its output directory. The same holds for
# a directory and a character device given as a trace.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
command -v mkfifo >/dev/null 2>&1 || skip "no mkfifo"
command -v timeout >/dev/null 2>&1 || skip "no timeout"
export DLHOOK_STACKS=none DLHOOK_QUIET=1
mkdir shared; chmod 1777 shared
mkfifo shared/x.dlh || skip "cannot make a FIFO here"
traced "$T/good" "$V" out 100 >/dev/null 2>&1
good=$(one_trace "$T/good")
mkdir adir.dlh
for input in shared/x.dlh adir.dlh /dev/null; do
  for cmd in "dump" "stats" "stats --json" "export -f perfetto -o out.json" "report -o out.html" \
             "symbolize -o out.dlh" "merge -o merged.json" "diff -o d.svg $good"; do
    timeout 20 "$DLHOOK_BIN" $cmd "$input" >cmd.out 2>cmd.err </dev/null; rc=$?
    [ "$rc" != 124 ] || fail "dlhook $cmd $input hangs"
    [ "$rc" = 1 ] || fail "dlhook $cmd $input: exit $rc, expected 1: $(cat cmd.err)"
    grep -q "not a regular file" cmd.err || fail "dlhook $cmd $input: no clear message: $(cat cmd.err)"
  done
done
# dlhook record looks at the files that appeared in its output directory: a FIFO among them
# (not with an ASan build: record preloads libdlhook.so before the ASan runtime)
if [ -n "${ASAN_LIB:-}" ]; then
  echo "ok: 24 refusals without blocking ($(head -n 1 cmd.err)); record not exercised under ASan"
  exit 0
fi
mkdir rec
timeout 60 "$DLHOOK_BIN" record -o "$T/rec" -- sh -c 'mkfifo "$1/planted.dlh"; exec "$2" out 100' sh "$T/rec" "$V" \
  >rec.out 2>rec.err; rc=$?
[ "$rc" != 124 ] || fail "dlhook record hangs on a FIFO in its output directory"
[ "$rc" = 3 ] || fail "dlhook record: exit $rc, expected the program's 3: $(cat rec.err)"
echo "ok: 24 refusals without blocking ($(head -n 1 cmd.err)); record passed over a planted FIFO"
