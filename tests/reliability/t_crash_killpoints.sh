# Crash safety where no handler can run: SIGKILL at 20 pseudo-random points and _exit at 8,
# with DLHOOK_FLUSH_MS 1000 (default) and 200. The trace must read back as a complete prefix of
# the calls (devices 0..k-1) whose last call ended at most DLHOOK_FLUSH_MS (+ slack for the
# writer's drain interval and a loaded machine) before the kill. Prints the measured losses.
. "$ROOT/tests/lib.sh"
R=$BUILD/tests/reliability
need "$R/victim"; need "$R/runner"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
# slack: the writer's drain interval (10 ms) and scheduling; a machine loaded far past its cores
# (other test suites) delays the writer thread, so the slack grows with the load average, read
# again at each kill point
slack() {
  echo "${REL_SLACK_MS:-$(awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v c="$(nproc)" \
    'BEGIN { s = 300; if (l > 2 * c) s += int(100 * l / c); if (s > 3000) s = 3000; print s }')}"
}
echo "slack $(slack) ms at the start (load average $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs)"
export DLHOOK_STACKS=none DLHOOK_QUIET=1
# deterministic "random" delays (ms): 20 kill points, 8 _exit points
set -- $(python3 -c "import random; r = random.Random(10); print(' '.join(str(r.randint(150, 1600)) for _ in range(28)))")
i=0
for ms in "$@"; do
  i=$((i + 1))
  if [ $((i % 2)) = 1 ]; then fl=1000; else fl=200; fi
  d="$T/k$i"; mkdir -p "$d"
  if [ $i -le 20 ]; then
    line=$(DLHOOK_FLUSH_MS=$fl DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/runner" -k "$ms" -o "$d/out" -- "$R/victim" loop 100)
    end=$(echo "$line" | sed 's/.*kill_ns //')
    echo "$line" | grep -q "signal 9" || fail "kill point $i: $line"
    label="SIGKILL@${ms}ms flush=${fl}"
  else
    DLHOOK_FLUSH_MS=$fl DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" loop 100 "$ms" >"$d/out" || fail "_exit point $i: exit $?"
    end=$(sed -n 's/^exit_ns \([0-9]*\).*/\1/p' "$d/out")
    label="_exit@${ms}ms flush=${fl}"
  fi
  if [ -z "$(ls "$d"/*.dlh 2>/dev/null)" ]; then # the file comes with the first call
    [ $i -gt 20 ] && fail "$label: no trace file"
    echo "$label calls 0 lost_ms 0.0 (killed before the first call)" | tee -a losses.txt
    continue
  fi
  tr=$(one_trace "$d")
  python3 "$ROOT/tests/reliability/killcheck.py" "$tr" "$end" "$fl" "$(slack)" "$label" | tee -a losses.txt
  grep -q "^$label " losses.txt || fail "$label: check failed"
done
python3 - losses.txt <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
for fl in ("flush=1000", "flush=200"):
    ls = [float(r[r.index("lost_ms") + 1]) for r in rows if fl in r]
    print(f"{fl}: {len(ls)} kill points, lost ms: max {max(ls):.1f}, mean {sum(ls)/len(ls):.1f}")
PY
echo ok
