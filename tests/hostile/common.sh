# tests/hostile/common.sh — helpers for the hostile-input tests (sourced after tests/lib.sh).
# Traces come from $BUILD/tests/bin/hostile (command/tests/hostile.c says what each holds).
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/hostile"
HOSTILE=$BUILD/tests/bin/hostile
command -v prlimit >/dev/null 2>&1 || skip "prlimit missing (util-linux)"
[ -x /usr/bin/time ] || skip "/usr/bin/time missing (Debian package time)"
# The bounds: generous against the 2 s / 256 MiB of the acceptance (the machine may be loaded:
# CPU seconds, not wall time), far below what the attacks cost before (155 s, 4.5 GB, 557 s).
CPU_S=${HOSTILE_CPU_S:-10}
AS_BYTES=$((1024 * 1024 * 1024)) # address space: a hard stop well before the machine suffers
RSS_KB=$((256 * 1024))
# Every subcommand that reads a trace, as "name|arguments before the trace".
SUBCOMMANDS="dump|dump
stats|stats
stats-json|stats --json
memory|stats --memory
folded|export -q -f folded -o out.folded
svg|export -q -f svg -o out.svg
speedscope|export -q -f speedscope -o out.speedscope.json
pprof|export -q -f pprof -o out.pb.gz
perfetto|export -q -f perfetto -o out.pftrace
kineto|export -q -f kineto -o kineto
tensorboard|export -q -f tensorboard -o tb
report|report -o report.html"

# bounded NAME ARGS...: runs dlhook ARGS under the bounds; output in NAME.out / NAME.err, exit
# status in $rc. Fails when a bound is hit (killed, or peak RSS over RSS_KB).
bounded() {
  n=$1; shift
  prlimit --cpu="$CPU_S" --as="$AS_BYTES" /usr/bin/time -f '%M %U' -o "$n.time" \
    "$DLHOOK_BIN" "$@" >"$n.out" 2>"$n.err"
  rc=$?
  [ "$rc" -lt 128 ] || fail "$n: dlhook $* killed (status $rc): $(tail -n 3 "$n.err")"
  grep -q 'Command terminated by signal' "$n.time" && fail "$n: dlhook $* killed by a signal"
  set -- $(tail -n 1 "$n.time")
  [ "$1" -le "$RSS_KB" ] || fail "$n: peak RSS $1 KiB (bound $RSS_KB KiB)"
  echo "$n: exit $rc, peak RSS $1 KiB, $2 s CPU"
}

# every_subcommand TRACE EXPECTED_RC: runs each subcommand (and diff TRACE TRACE) under the
# bounds, checks the exit status; with EXPECTED_RC 1, one "damaged trace" line naming an offset.
every_subcommand() {
  tr=$1; want=$2
  echo "$SUBCOMMANDS" | while IFS='|' read -r name args; do
    case $name in kineto) rm -rf kineto ;; tensorboard) rm -rf tb ;; esac
    # shellcheck disable=SC2086
    bounded "$name" $args "$tr"
    [ "$rc" = "$want" ] || fail "$name on $tr: exit $rc, expected $want: $(cat "$name.err")"
    if [ "$want" = 1 ]; then
      grep -q "$tr: damaged trace: .*offset" "$name.err" || fail "$name on $tr: $(cat "$name.err")"
    fi
  done || exit 1
  bounded diff diff -o diff.svg "$tr" "$tr"
  [ "$rc" = "$want" ] || fail "diff on $tr: exit $rc, expected $want: $(cat diff.err)"
}

# api_events TRACE: the number of API calls dump prints (exit status ignored).
api_events() { "$DLHOOK_BIN" dump --type api "$1" 2>/dev/null | grep -c '"type":"api"'; }
