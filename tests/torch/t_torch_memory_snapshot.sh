#!/bin/sh
# run-tests: timeout=600
# t_torch_memory_snapshot: `dlhook export -f memory-snapshot` writes the pickle that
# torch.cuda.memory._snapshot() returns. For a CNN and a transformer recorded with
# --torch-memory (tensor level) and a CNN recorded without (segment level), PyTorch's own
# torch.cuda._memory_viz (trace_plot, segment_plot, segsum, trace, memory, segments) reads it,
# its alloc/free counts, peak and live-at-exit bytes equal `dlhook stats --memory`, its frames
# reach the user's line and native code, and it uses only the opcodes memory_viz's browser
# unpickler knows. Bad requests (two traces, --window, a file that is no trace) exit non-zero
# with a message.
. "$ROOT/tests/torch/common.sh"
cd "$T" || exit 1
CHECK="$ROOT/tests/torch/memsnap_check.py"

snapshot() { # NAME LEVEL RECORD-ARGS...
  name=$1 level=$2; shift 2
  "$DLHOOK_BIN" record --sim "$@" -o "$name" -- "$PY" "$W" "$wl" --steps 2 >"$name.out" 2>"$name.err" ||
    fail "record $name: $(tail -n 5 "$name.err")"
  "$DLHOOK_BIN" stats --memory --json "$name"/*.dlh >"$name.json" || fail "stats --memory $name"
  "$DLHOOK_BIN" export -f memory-snapshot -o "$name.pickle" "$name"/*.dlh 2>"$name.exp" ||
    fail "export $name: $(cat "$name.exp")"
  grep -q "$level level" "$name.exp" || fail "export $name does not say its level: $(cat "$name.exp")"
  "$PY" "$CHECK" "$name.pickle" "$name.json" "$level" workload.py || fail "$name: snapshot check"
}

wl=cnn snapshot cnn tensor --torch-memory
wl=transformer snapshot lm tensor --torch-memory
wl=cnn snapshot plain segment
grep -q 'without --torch-memory' plain.exp || fail "segment level not explained: $(cat plain.exp)"

# bad requests
"$DLHOOK_BIN" export -f memory-snapshot -o two.pickle cnn/*.dlh plain/*.dlh 2>two.err
[ $? -eq 2 ] || fail "two traces: not a usage error"
grep -q 'one trace' two.err || fail "two traces: $(cat two.err)"
"$DLHOOK_BIN" export -f memory-snapshot --window 1:2 -o w.pickle cnn/*.dlh 2>w.err
[ $? -eq 2 ] || fail "--window: not a usage error"
printf 'not a trace at all' >junk.dlh
"$DLHOOK_BIN" export -f memory-snapshot -o junk.pickle junk.dlh 2>junk.err
rc=$?
[ $rc -eq 1 ] || fail "junk trace: exit $rc: $(cat junk.err)"
[ ! -e junk.pickle ] || fail "junk trace left a snapshot"
exit 0
