# tests/sample/lib.sh — runs a program bare and under dlhook with host sampling, and compares
# (sourced after tests/lib.sh).
#   SAMPLE_HZ   the sampling rate of the traced runs (default 1000: timers fire 5x as often as
#               by default, so that more signals meet more system calls)
HZ=${SAMPLE_HZ:-1000}
# sampling_built: true when this tree's recorder has host sampling (its setting exists); until
# then the tests still compare bare with traced runs, and say that no samples were asked for.
sampling_built() { grep -q DLHOOK_SAMPLE_HZ "$ROOT/preload/dlh_settings.def"; }
REC_HZ=
if "$DLHOOK_BIN" record --help 2>&1 | grep -q -e '--sample-hz'; then REC_HZ="--sample-hz $HZ"; fi
bare() { "$SIMRUN" "$@"; }
# sampled DIR CMD...: CMD under `dlhook record --sim`, sampling from the start (DLHOOK_SAMPLE=always,
# also in a process that never calls CUDA) at $HZ, traces in DIR
sampled() {
  d=$1; shift
  # shellcheck disable=SC2086
  DLHOOK_SAMPLE=always DLHOOK_SAMPLE_HZ=$HZ "$DLHOOK_BIN" record --sim $REC_HZ -o "$d" -- "$@"
}
# samples_in DIR: "CPU WAIT HOW" over every trace in DIR (tests/sample/samples.py)
samples_in() {
  set -- "$1"/*.dlh
  [ -e "$1" ] || { echo "0 0 notrace"; return 0; }
  python3 "$ROOT/tests/sample/samples.py" "$DLHOOK_BIN" "$@"
}
# same_as_bare NAME NBARE NSAMPLED CMD...: NBARE bare runs (their stdout and exit status must
# agree with each other: the program's output is deterministic), then NSAMPLED runs under dlhook
# that must print the same and exit the same. Each traced run must have on-CPU samples once the
# recorder samples (SAMPLES=each, the default); SAMPLES=some: at least one run has them (short
# threads the sampler may never meet); SAMPLES=none: counted and shown only (the program keeps
# the signal from dlhook by design). Prints a summary line; fails
# with the first difference. Leaves CPU and WAIT (samples over all runs) set.
same_as_bare() {
  name=$1 nb=$2 ns=$3; shift 3
  i=0
  while [ "$i" -lt "$nb" ]; do
    bare "$@" >"$name.bare$i.out" 2>"$name.bare$i.err"; echo $? >"$name.bare$i.rc"
    if [ "$i" -gt 0 ] && ! { cmp -s "$name.bare0.out" "$name.bare$i.out" && cmp -s "$name.bare0.rc" "$name.bare$i.rc"; }; then
      diff "$name.bare0.out" "$name.bare$i.out" >&2
      fail "$name: bare runs disagree (exit $(cat "$name.bare0.rc") and $(cat "$name.bare$i.rc")): the program is not deterministic"
    fi
    i=$((i + 1))
  done
  want=$(cat "$name.bare0.rc")
  CPU=0 WAIT=0 bad=0 nosample=0 how=none
  i=0
  while [ "$i" -lt "$ns" ]; do
    d="$T/$name.s$i"
    sampled "$d" "$@" >"$name.s$i.out" 2>"$name.s$i.err"; rc=$?
    if [ "$rc" != "$want" ] || ! cmp -s "$name.bare0.out" "$name.s$i.out"; then
      bad=$((bad + 1))
      if [ "$bad" -eq 1 ]; then
        echo "--- $name: traced run $i: exit $rc (bare $want); stdout, bare vs traced:" >&2
        diff "$name.bare0.out" "$name.s$i.out" >&2
        echo "--- its stderr:" >&2; tail -n 20 "$name.s$i.err" >&2
      fi
    fi
    c=$(samples_in "$d") || fail "$name: traced run $i: trace unreadable"
    n_cpu=${c%% *}; rest=${c#* }; n_wait=${rest%% *}; how=${rest#* }
    CPU=$((CPU + n_cpu)); WAIT=$((WAIT + n_wait))
    [ "$n_cpu" -gt 0 ] || nosample=$((nosample + 1))
    rm -rf "$d"
    i=$((i + 1))
  done
  echo "$name: $ns traced runs, $bad differ from bare (exit $want); samples: $CPU on-CPU, $WAIT wait (counted by: $how)"
  [ "$bad" -eq 0 ] || fail "$name: $bad of $ns traced runs differ from the bare runs"
  if sampling_built; then
    if [ "$nosample" -gt 0 ]; then
      case ${SAMPLES:-each} in
        none) echo "$name: note: $nosample of $ns traced runs without on-CPU samples" ;;
        some) [ "$CPU" -gt 0 ] || fail "$name: no traced run has on-CPU samples (counted by: $how)"
              echo "$name: note: $nosample of $ns traced runs without on-CPU samples" ;;
        *) fail "$name: $nosample of $ns traced runs have no on-CPU samples (counted by: $how)" ;;
      esac
    fi
  else
    echo "$name: (this recorder has no host sampling yet: bare against traced only)"
  fi
}
