# The on-CPU samples see where the CPU time goes: tests/sample/shares.c spends 60 %, 30 % and
# 10 % of its CPU time in share_sixty, share_thirty and share_ten (measured by the program with
# CLOCK_THREAD_CPUTIME_ID, chunks of pseudo-random length), tests/sample/shares.py the same in
# the Python functions py_sixty, py_thirty, py_ten (Python frames in the mixed stacks). The
# shares in `dlhook export --format folded --weight samples` must be within 3 points of those;
# `dlhook stats --json` must count the on-CPU samples. Skipped (with the reason) while the
# recorder or the exporter has no host samples.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/shares
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
sampling_built || skip "the recorder has no host sampling yet (no DLHOOK_SAMPLE_HZ setting)"
"$DLHOOK_BIN" export --help 2>&1 | grep -q -e '^ *samples\b' -e '[^a-z]samples[^a-z_]' ||
  skip "dlhook export has no --weight samples yet"
# 8 s of CPU time: the timers fire at the kernel's tick (250 Hz here, whatever the rate asked
# for: a sample then stands for 4 ms), about 2000 samples, one point of standard deviation
S=${SHARES_SECS:-8}
check() { # NAME CMD...: run, export, compare with what the program measured itself
  name=$1; shift
  sampled "$T/$name" "$@" >"$name.out" 2>"$name.err" || { cat "$name.err"; fail "$name: traced run failed"; }
  tr=$(one_trace "$T/$name")
  set -- $(awk '{print $1 "=" $2}' "$name.out")
  [ $# -eq 3 ] || fail "$name: program output: $(cat "$name.out")"
  "$DLHOOK_BIN" export -q --format folded --weight samples -o "$name.folded" "$tr" 2>"$name.xerr" ||
    fail "$name: export --weight samples: $(cat "$name.xerr")"
  python3 "$ROOT/tests/sample/shares_check.py" "$name.folded" "$@" >"$name.shares" 2>&1; ok=$?
  sed "s/^/$name: /" "$name.shares"
  [ $ok -eq 0 ] || { sort -t' ' -k2 -n -r "$name.folded" | head -n 15 >&2; fail "$name: sampled shares off by more than 3 points"; }
  "$DLHOOK_BIN" stats --json "$tr" >"$name.json" || fail "$name: stats"
  # at least 30 on-CPU samples a second of CPU time: a 1 kHz timer fires at the kernel's tick
  # (CONFIG_HZ, 100 to 1000), every CPU second is one of the thread's
  pyassert "$name.json" "j.get('samples', {}).get('cpu', 0) >= 30 * $S"
}
check c "$P" "$S"
# the interpreter itself, not a launcher script (pyenv's shims are bash scripts: sampled from
# the start they would leave traces of their own)
PY=$(python3 -c 'import sys; print(sys.executable)')
check py "$PY" "$ROOT/tests/sample/shares.py" "$S"
echo ok
