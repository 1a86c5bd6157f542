# run-tests: timeout=1200
# The on-CPU samples see where the CPU time goes: tests/sample/shares.c spends 60 %, 30 % and
# 10 % of its CPU time in share_sixty, share_thirty and share_ten (measured by the program with
# CLOCK_THREAD_CPUTIME_ID, chunks of pseudo-random length), tests/sample/shares.py the same in
# the Python functions py_sixty, py_thirty, py_ten (Python frames in the mixed stacks). The
# shares in `dlhook export --format folded --weight samples` must be within 3 points of those
# (a starved run's: see below); `dlhook stats --json` must count the on-CPU samples, and their
# weights must add up to the CPU time the program measured. Skipped (with the reason) while the
# recorder or the exporter has no host samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/shares
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
sampling_built || skip "the recorder has no host sampling yet (no DLHOOK_SAMPLE_HZ setting)"
"$DLHOOK_BIN" export --help 2>&1 | grep -q -e '^ *samples\b' -e '[^a-z]samples[^a-z_]' ||
  skip "dlhook export has no --weight samples yet"
# 8 s of CPU time: the timers fire at the kernel's tick (250 Hz here, whatever the rate asked
# for: a sample then stands for 4 ms), about 2000 samples, one point of standard deviation.
# A starved program (less than 80 % of a CPU, measured by the program: its loop's CPU time over
# its wall time) gets its timer signals late and in lumps: the kernel notices the expiries at
# its ticks only while the thread runs, and one sample may then stand for 25 to 110 ms of the
# thread's CPU time (the timer's overruns): a few hundred samples, some of them a tenth of the
# shares' error each. The weights stay true (the sampled CPU time is the program's, checked
# below), their shares only vary more. Such a run's shares by count (each sample once: where the
# thread was at a tick, whatever the lump it carries) must be within 3 points too; the count of
# a starved run is lower (70 a CPU second at load 20 on 2 cores), so the program is recorded
# again (twice at most) and the counts of its starved runs are taken together.
S=${SHARES_SECS:-8}
check() { # NAME CMD...: run, export, compare with what the program measured itself
  name=$1; shift
  try=1 pool=
  while :; do
    r=$name.$try
    sampled "$T/$r" "$@" >"$r.out" 2>"$r.err" || { cat "$r.err"; fail "$r: traced run failed"; }
    tr=$(one_trace "$T/$r")
    [ "$(wc -l <"$r.out")" -eq 3 ] || fail "$r: program output: $(cat "$r.out")"
    shares=$(awk '{printf "%s=%s ", $1, $2}' "$r.out")
    m=$(sed -n 's/^shares: loop_cpu_ns \([0-9]*\) wall_ns \([0-9]*\) thread_cpu_ns \([0-9]*\)$/\1 \2 \3/p' "$r.err")
    [ -n "$m" ] || fail "$r: no 'shares:' line on the program's stderr: $(tail -n 5 "$r.err")"
    loop=${m%% *} tcpu=${m##* } wall=${m#* }; wall=${wall%% *}
    "$DLHOOK_BIN" stats --json "$tr" >"$r.json" || fail "$r: stats"
    # at least 30 on-CPU samples a second of CPU time: a 1 kHz timer fires at the kernel's tick
    # (CONFIG_HZ, 100 to 1000), every CPU second is one of the thread's
    pyassert "$r.json" "j.get('samples', {}).get('cpu', 0) >= 30 * $S"
    # the weights are the thread's CPU time: what its samples carry is at least the loop's CPU
    # time (less 3 % for the last period and samples lost) and at most the thread's (its exit
    # work and the last samples' periods: 5 % and 100 ms)
    pyassert "$r.json" "$loop * 0.97 <= sum(t['cpu_ns'] for t in j['samples']['by_thread'] if t['tid'] == t['pid']) <= $tcpu * 1.05 + 1e8"
    "$DLHOOK_BIN" export -q --format folded --weight samples -o "$r.folded" "$tr" 2>"$r.xerr" ||
      fail "$r: export --weight samples: $(cat "$r.xerr")"
    # shellcheck disable=SC2086
    python3 "$ROOT/tests/sample/shares_check.py" "$r.folded" $shares >"$r.shares" 2>&1 && ok=0 || ok=1
    starved=$(awk -v c="$loop" -v w="$wall" 'BEGIN { printf "%.2f", c / w }')
    sed "s/^/$r (CPU $starved of the wall time): /" "$r.shares"
    [ $ok -eq 0 ] && break
    awk -v s="$starved" 'BEGIN { exit !(s < 0.8) }' || {
      sort -t' ' -k2 -n -r "$r.folded" | head -n 15 >&2
      fail "$r: sampled shares off by more than 3 points"
    }
    "$DLHOOK_BIN" export -q --format pprof --weight samples -o "$r.pb.gz" "$tr" 2>"$r.xerr" ||
      fail "$r: export --format pprof --weight samples: $(cat "$r.xerr")"
    pool="$pool $r.pb.gz"
    # shellcheck disable=SC2086
    python3 "$ROOT/tests/sample/shares_check.py" --by count $pool $shares >"$r.count" 2>&1 && ok=0 || ok=1
    sed "s/^/$r, starved, by count over runs 1-$try: /" "$r.count"
    [ $ok -eq 0 ] && break
    [ $try -lt 3 ] || fail "$name: sampled shares off by more than 3 points, by weight and by count, in 3 starved runs"
    try=$((try + 1))
  done
}
check c "$P" "$S"
# the interpreter itself, not a launcher script (pyenv's shims are bash scripts: sampled from
# the start they would leave traces of their own)
PY=$(python3 -c 'import sys; print(sys.executable)')
check py "$PY" "$ROOT/tests/sample/shares.py" "$S"
echo ok
