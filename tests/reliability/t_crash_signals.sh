# Crash safety with a handler: SIGSEGV, SIGBUS, SIGABRT (abort), SIGFPE, SIGILL (trap), exit(),
# an uncaught C++ exception, and a program whose own SIGSEGV handler runs first. Each traced run
# ends exactly like the untraced one (same wait status, core-dump bit included, same stdout), and
# its trace is complete: read without damage, all N calls (devices 0..N-1), trailer present.
. "$ROOT/tests/lib.sh"
R=$BUILD/tests/reliability
need "$R/victim"; need "$R/runner"; need "$R/throw"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_STACKS=none DLHOOK_QUIET=1
N=5000
check() { # label, then the command
  label=$1; shift
  plain=$("$R/runner" -o "plain-$label.out" -- "$@")
  d="$T/$label"
  traced=$(DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/runner" -o "traced-$label.out" -- "$@")
  if [ -n "${ASAN_LIB:-}" ]; then # ASan turns core dumps off in the processes it runs in
    plain=$(echo "$plain" | sed 's/^status [^ ]* //; s/ core [01]//'); traced=$(echo "$traced" | sed 's/^status [^ ]* //; s/ core [01]//')
  fi
  [ "$plain" = "$traced" ] || fail "$label: untraced '$plain', traced '$traced'"
  cmp -s "plain-$label.out" "traced-$label.out" || fail "$label: stdout differs"
  tr=$(one_trace "$d")
  "$DLHOOK_BIN" dump "$tr" >"$label.jsonl" 2>"$label.err" || fail "$label: dump reports damage: $(cat "$label.err")"
  python3 - "$label.jsonl" "$N" "$label" <<'PY' || fail "$label: trace incomplete"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
devs = [int(e["args"]["device"]) for e in ev if e["type"] == "api" and e["name"] == "cudaSetDevice"]
n = int(sys.argv[2])
if devs != list(range(n)):
    sys.exit(f"{len(devs)} calls, expected devices 0..{n - 1}")
if not any(e["type"] == "summary" for e in ev):
    sys.exit("no summary")
print(f"{sys.argv[3]}: {len(devs)} of {n} calls, trace complete")
PY
  echo "  ($traced)"
  rm -f core core.*
}
# core dumps on, when the kernel writes them to a file here: the core bit must match too
ulimit -c unlimited 2>/dev/null || true
for k in segv bus abort fpe ill exit handler; do check "$k" "$R/victim" crash "$k" "$N"; done
check throw "$R/throw" "$N"
grep -q "caught SIGSEGV" traced-handler.out || fail "the program's own SIGSEGV handler did not run"
echo ok
