# Traces read in parallel (issue 49: command/lib/trace.c's rd_read_ahead, format/ahead.c) give
# the outputs of reading them one after the other: stats, stats --json, report, merge (Perfetto
# and Kineto), stats --memory, byte for byte, with their messages and exit status, between
# DLHOOK_READ_THREADS=1 and 2 or 3 threads. On synthetic traces of four ranks with a truncated
# one and a file that is no trace among them, with an event limit that stops each trace mid-way
# (the reader read ahead goes on without its thread), and on a recorded 4-rank job where the
# simulator is built.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/gentrace"
D=$DLHOOK_BIN
G=$BUILD/tests/bin/gentrace
for r in 0 1 2 3; do
  first=; [ $r = 0 ] && first=--gpu-first
  "$G" r$r.dlh --events 30000 --threads 2 --rank $r --world 4 --pid $((4000 + r)) $first >/dev/null ||
    fail "gentrace r$r"
done
sz=$(wc -c <r2.dlh)
head -c $((sz * 2 / 3)) r2.dlh >r2cut.dlh
echo junk >bad.dlh

n=0
# same NAME ARGS... (the traces are appended): the outputs of 1 thread and of 2 and 3 the same
same() {
  name=$1; shift
  for th in 1 2 3; do
    rm -rf out.html out.pf outk
    DLHOOK_READ_THREADS=$th "$D" "$@" $traces >o.$th 2>e.$th
    echo "exit $?" >>e.$th
    [ -f out.html ] && cat out.html >>o.$th
    [ -f out.pf ] && cat out.pf >>o.$th
    [ -d outk ] && cat outk/* >>o.$th
    [ $th = 1 ] && continue
    cmp -s o.1 o.$th || fail "$name: output of $th threads differs from 1 thread's ($(wc -c <o.1) vs $(wc -c <o.$th) bytes)"
    cmp -s e.1 e.$th || fail "$name: messages of $th threads differ from 1 thread's:
$(diff e.1 e.$th | head -n 8)"
  done
  n=$((n + 1))
}
all() {
  same stats stats
  same "stats --json" stats --json
  same "stats --memory" stats --memory --json
  same report report -o out.html
  same "merge perfetto" merge -q -o out.pf
  same "merge kineto" merge -q -f kineto --no-gzip -o outk
}
traces="r0.dlh r1.dlh r2cut.dlh bad.dlh r3.dlh"
all
grep -q "r2cut.dlh: damaged trace" e.1 || fail "the truncated trace was not said damaged: $(cat e.1)"
same "report --max-events" report --max-events 5000 -o out.html
grep -q "more events than --max-events 5000" e.1 || fail "the event limit was not reached: $(cat e.1)"
same "merge --max-events" merge -q --max-events 3000 -o out.pf
traces="r0.dlh r1.dlh r2.dlh r3.dlh"
same "stats, clean" stats

# a recorded job (not with an ASan build: record preloads libdlhook.so before ASan's runtime)
if [ -z "${ASAN_LIB:-}" ] && [ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$BUILD/examples/train" ]; then
  "$D" record --sim -o rec -- "$BUILD/examples/train" --steps 5 --ranks 4 >rec.out 2>&1 ||
    fail "record train: $(tail -n 3 rec.out)"
  traces=$(ls rec/*.dlh)
  [ "$(echo "$traces" | wc -l)" -ge 5 ] || fail "expected a launcher and 4 ranks: $traces"
  all
else
  echo "recorded job: skipped (no simulator or an ASan build)"
fi
# a wrong setting: said, and read as the default
DLHOOK_READ_THREADS=x "$D" stats r0.dlh >/dev/null 2>e.x || fail "DLHOOK_READ_THREADS=x: exit $?"
grep -q "DLHOOK_READ_THREADS=x" e.x || fail "DLHOOK_READ_THREADS=x not said: $(cat e.x)"
echo "ok: $n outputs the same with 1, 2 and 3 threads"
