# Progress of long work (issue 47): on a terminal, `dlhook merge`, `export`, `report`, the Parquet
# dataset of several traces and `dlhook analyze` draw one line on stderr (which trace of how many,
# events read and per second, the time left) and erase it at the end; with stderr a file, not a
# byte of it. The terminal is a pty made by `script` (util-linux); DLHOOK_PROGRESS_AFTER=0 shows
# it from the start. Three generated traces of 300,000 events each. The Parquet and analyze part
# runs when build/venv has pyarrow and duckdb (make venv).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need_cmd script "Debian package bsdutils"
for r in 0 1 2; do
  $GEN "t$r.dlh" --events 300000 --threads 4 --rank $r --world 3 --pid $((4000 + r)) || fail gentrace
done
export DLHOOK_PROGRESS_AFTER=0
# pty NAME CMD: CMD run on a terminal (script's pty), everything it wrote to it in NAME.tty
pty() { n=$1; shift; script -qfec "$*" /dev/null >"$n.tty" 2>&1 </dev/null || fail "$n: $(tail -c 300 "$n.tty")"; }
# lines NAME: the progress lines of NAME.tty, one per redraw (the terminal's \r and erase
# sequences turned into line ends)
lines() { tr '\r' '\n' <"$1.tty" | sed 's/\x1b\[K//g' | grep '^dlhook: ' || true; }
# on a terminal
pty merge "'$DLHOOK_BIN' merge -f perfetto -o m.pftrace t0.dlh t1.dlh t2.dlh"
lines merge >merge.lines
head -n 3 merge.lines; tail -n 1 merge.lines
grep -q '^dlhook: exporting: trace 1/3 t0.dlh, .* events, .* events/s' merge.lines || fail "merge: no progress of trace 1/3"
grep -q '^dlhook: exporting: trace 3/3 t2.dlh, ' merge.lines || fail "merge: no progress of trace 3/3"
grep -q ', [0-9]* \(s\|min\) left$' merge.lines || fail "merge: no time left on the line"
[ "$(tail -c 4 merge.tty | od -An -tx1 | tr -d ' \n')" = 0d1b5b4b ] || fail "merge: the line is not erased at the end"
pty report "'$DLHOOK_BIN' report -o r.html t0.dlh t1.dlh t2.dlh"
lines report | grep -q '^dlhook: report: trace 2/3 t1.dlh, .* events/s' || fail "report: no progress: $(lines report | head -3)"
pty export "'$DLHOOK_BIN' export -f folded -o e.folded t1.dlh"
lines export | grep -q '^dlhook: [a-z ]*: trace 1/1 t1.dlh, .* events/s' || fail "export: no progress: $(lines export | head -3)"
# not on a terminal: nothing
"$DLHOOK_BIN" merge -f perfetto -o m2.pftrace t0.dlh t1.dlh t2.dlh 2>merge.err || fail "merge: $(cat merge.err)"
"$DLHOOK_BIN" report -o r2.html t0.dlh t1.dlh t2.dlh 2>report.err || fail "report: $(cat report.err)"
[ ! -s merge.err ] && [ ! -s report.err ] || fail "progress without a terminal: $(cat merge.err report.err | head -c 300)"
cmp -s m.pftrace m2.pftrace || fail "the merged trace differs with progress on"
echo "C side: $(wc -l <merge.lines) redraws of merge on a terminal, none in a file"
# the Parquet dataset and analyze (Python: command/python/dlhook/_progress.py)
if [ -x "$VPY" ] && "$VPY" -c 'import pyarrow, duckdb' 2>/dev/null; then
  export DLHOOK_PYTHON=$VPY PYTHONPATH=$ROOT/command/python DLHOOK_JOBS=1
  pty parquet "'$DLHOOK_BIN' export -f parquet -o pq t0.dlh t1.dlh t2.dlh"
  lines parquet >parquet.lines
  tail -n 1 parquet.lines
  grep -q '^dlhook: parquet: [12]/3 traces, .* events, .* events/s, [0-9]* \(s\|min\) left$' parquet.lines ||
    fail "parquet: no progress with events/s and time left: $(head -3 parquet.lines)"
  pty analyze "'$DLHOOK_BIN' analyze pq"
  lines analyze | grep -q '^dlhook: analyze: [0-9]*/[0-9]* analyses' || fail "analyze: no progress"
  "$DLHOOK_BIN" export -f parquet -o pq2 t0.dlh t1.dlh t2.dlh 2>pq.err || fail "parquet: $(cat pq.err)"
  "$DLHOOK_BIN" analyze pq2 >an.out 2>an.err || fail "analyze: $(cat an.err)"
  [ ! -s pq.err ] && [ ! -s an.err ] || fail "Python progress without a terminal: $(cat pq.err an.err | head -c 300)"
  echo "Python side: $(wc -l <parquet.lines) redraws of parquet on a terminal, none in a file"
else
  echo "Parquet and analyze: skipped (no pyarrow and duckdb in $VPY)"
fi
echo ok
