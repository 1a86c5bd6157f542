# Small traces that expand (issue 39): 26 Mi alike API calls in ~22 KB (manycalls), 6.5 Mi calls
# with their kernels in ~18 KB (manykernels), the calls of manycalls folded a million times each
# (folded), 100,000 modules and 20,000 stacks of 256 frames in ~800 KB (modules). Before: report
# 2.6 GiB / 14 s, export -f perfetto 10 s, tensorboard 1.6 GB of output, merge 9 s, advise
# 1.4 GiB; modules: report 911 MiB, speedscope 847 MiB, dump and perfetto 385 MiB.
#
# Every subcommand stays within the bounds of common.sh (CPU s, 256 MiB). The outputs that hold
# every event (dump, perfetto, kineto, tensorboard, columns, merge, report, advise) stop at the
# event limit (rd_scan.h, rd_event_limit: 2 Mi events for these files, 1 Mi for report and
# advise), write what they read, say which limit in one line and exit 1; --max-events sets
# another. stats reads every event and keeps at most the limit's events for its step breakdown,
# its findings, its GPU busy time (intervals merged) and the kernels of its library-call join:
# past it, that part of a trace is left out and said (manykernels: the busy time is null).
# Flame graphs and diff aggregate by stack: they read every event and exit 0; the modules trace's flame graphs stop adding nodes at
# FLAME_MAX_NODES and say so.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
LIMITED="dump perfetto kineto tensorboard report"
for k in manycalls manykernels folded modules; do
  "$HOSTILE" $k $k.dlh || fail "hostile $k"
  size=$(wc -c <$k.dlh)
  echo "== $k: $size bytes"
  echo "$SUBCOMMANDS" | while IFS='|' read -r name args; do
    case $name in kineto) rm -rf kineto ;; tensorboard) rm -rf tb ;; esac
    # shellcheck disable=SC2086
    bounded "$name" $args $k.dlh
    want=0 limited=0
    case " $LIMITED " in *" $name "*) [ $k = modules ] || want=1 limited=1 ;; esac
    # folded is also over the reader's decompressed-bytes budget: damaged for every command
    [ $k = folded ] && want=1
    [ "$rc" = "$want" ] || fail "$name on $k: exit $rc, expected $want: $(cat "$name.err")"
    if [ "$limited" = 1 ]; then
      grep -q "^dlhook: $k.dlh: more than [0-9]* events .*in a file of .*limit (\(2\|1\) Mi events, or [24] per byte of the file when more).*--max-events N" "$name.err" ||
        fail "$name on $k: no limit message: $(cat "$name.err")"
    elif grep -q "more than [0-9]* events" "$name.err"; then
      fail "$name on $k: limited: $(cat "$name.err")"
    fi
  done || exit 1
  for s in "merge -o merge.pftrace" "advise" "export -q -f columns -o columns.out"; do
    set -- $s
    # shellcheck disable=SC2086
    bounded "$1" $s $k.dlh
    want=1
    [ $k = modules ] && want=0
    [ "$rc" = "$want" ] || fail "$s on $k: exit $rc, expected $want: $(cat "$1.err")"
  done
  bounded diff diff -o diff.svg $k.dlh $k.dlh
  want=0
  [ $k = folded ] && want=1
  [ "$rc" = "$want" ] || fail "diff on $k: exit $rc: $(cat diff.err)"
  if [ $k = manykernels ]; then
    grep -q "manykernels.dlh: stats: more than 2097152 disjoint GPU intervals on device 0 .*busy time is not computed" stats.err ||
      fail "manykernels: stats does not say the busy time is left out: $(cat stats.err)"
    pyassert stats-json.out 'j["gpu"]["devices"][0]["busy_ns"] is None and j["gpu"]["devices"][0]["kernels"] > 6000000'
  fi
  if [ $k = modules ]; then
    grep -q 'flame graph: over [0-9]* nodes' svg.err || fail "modules: the svg does not say it was cut short: $(cat svg.err)"
  else
    # the events before the limit were written: 2 Mi of them
    n=$(grep -c '"type":"\(api\|kernel\)"' dump.out)
    [ "$n" = 2097152 ] || fail "$k: dump printed $n events, expected the first 2097152"
  fi
done

# the limit is the option's: a smaller one, none at all
"$HOSTILE" manycalls m.dlh
"$DLHOOK_BIN" export -q -f perfetto --max-events 1000 -o small.pftrace m.dlh 2>small.err
[ $? = 1 ] || fail "--max-events 1000: exit status"
grep -q "more events than --max-events 1000: the output holds the first 1000" small.err || fail "$(cat small.err)"
"$DLHOOK_BIN" dump --max-events 10 m.dlh 2>d10.err | grep -c '"type":"\(api\|kernel\)"' >d10.n
[ "$(cat d10.n)" = 10 ] || fail "dump --max-events 10 printed $(cat d10.n) events"
"$DLHOOK_BIN" export -q -f perfetto --max-events x -o bad.pftrace m.dlh 2>bad.err
[ $? = 2 ] || fail "--max-events x: not a usage error"
grep -q "bad --max-events 'x'" bad.err || fail "$(cat bad.err)"
# a trace the recorder writes (the bundled example) is far from the limit: read in full
if [ -x "$BUILD/examples/train" ]; then
  "$DLHOOK_BIN" record --sim -o rec -- "$BUILD/examples/train" --steps 3 >/dev/null 2>&1 || fail "record"
  "$DLHOOK_BIN" export -q -f perfetto -o rec.pftrace rec/*.dlh 2>rec.err || fail "export of a recorded trace: $(cat rec.err)"
  "$DLHOOK_BIN" export -q -f perfetto --max-events 0 -o rec0.pftrace rec/*.dlh || fail "--max-events 0"
  cmp -s rec.pftrace rec0.pftrace || fail "the default limit changed a recorded trace's export"
fi
echo ok
