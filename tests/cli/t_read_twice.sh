# Every command reads each trace file at most twice: a first pass for the definitions (or for
# what an output must know before it is written), a second that streams the events to every
# consumer at once (command/lib/rd_scan.h). Counted with strace: the open calls of each trace
# path, for every command and export format, on synthetic traces of two ranks (GPU records
# before their calls) and, where the simulator is built, a recorded one.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/gentrace"
command -v strace >/dev/null 2>&1 || skip "strace not installed (Debian strace)"
strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace refused)"
D=$DLHOOK_BIN
G=$BUILD/tests/bin/gentrace
"$G" r0.dlh --events 20000 --threads 2 --rank 0 --world 2 --gpu-first >/dev/null || fail "gentrace r0"
"$G" r1.dlh --events 20000 --threads 2 --rank 1 --world 2 --pid 4343 >/dev/null || fail "gentrace r1"
traces="r0.dlh r1.dlh"
# a recorded trace too (not with an ASan build: record preloads libdlhook.so before ASan's runtime)
if [ -z "${ASAN_LIB:-}" ] && [ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ] && [ -x "$BUILD/examples/train" ]; then
  "$SIMRUN" "$D" record -o rec -- "$BUILD/examples/train" --steps 3 >/dev/null 2>&1 || fail "record train"
  cp "$(ls rec/*.dlh | head -n 1)" sim.dlh || fail "no recorded trace"
  traces="$traces sim.dlh"
fi

n=0
check() { # check NAME ARGS... (the traces are appended)
  name=$1; shift
  rm -rf out.*
  strace -f -qq -e trace=open,openat,openat2 -o st.txt "$D" "$@" $traces >cmd.out 2>cmd.err ||
    fail "$name: exit $?: $(tail -n 3 cmd.err)"
  for t in $traces; do
    c=$(grep -c "\"$t\"" st.txt)
    [ "$c" -ge 1 ] || fail "$name: $t never opened (strace saw: $(grep -c open st.txt) opens)"
    [ "$c" -le 2 ] || fail "$name: $t opened $c times:
$(grep "\"$t\"" st.txt)"
  done
  n=$((n + 1))
}
check stats stats
check "stats --json" stats --json
check "stats --memory" stats --memory
check "stats --memory --json" stats --memory --json
check dump dump
check report report -o out.html
for f in kineto perfetto tensorboard folded svg speedscope pprof; do
  check "export $f" export -q -f "$f" -o out.$f
done
for f in kineto perfetto tensorboard; do
  check "merge $f" merge -q -f "$f" -o out.m$f
done
check "export --window" export -q -f kineto --window 0:5ms -o out.kw
# diff takes two traces: each is read at most twice
cp r0.dlh a.dlh && cp r1.dlh b.dlh
traces="a.dlh b.dlh"
check diff diff -o out.svg
echo "ok: $n commands, each trace opened at most twice"
