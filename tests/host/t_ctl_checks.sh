# Hazard: `dlhook ctl PID` used to check only /proc/PID/environ, and so signalled processes that
# had no dlhook handler for the signal: one started with DLHOOK_DISABLE=1, a program without
# libdlhook.so whose environment has DLHOOK_* (a static binary filled by the exec wrapper), one
# whose DLHOOK_SIGNAL the library refused (9: ctl sent SIGKILL). ctl now checks that dlhook is
# loaded (/proc/PID/maps), recording, with an accepted signal that the process catches
# (/proc/PID/status SigCgt), and says why not: the process lives on. A process really under
# dlhook with capture ranges is still controlled, also when the program has its own handler for
# the signal: ctl's start/stop go to dlhook, every other such signal to the program's handler.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
P=$BUILD/tests/host/hostprog
need "$V"; need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done' EXIT
start() { # label, then env assignments and the command
  label=$1; shift
  env "$@" >"$label.out" 2>"$label.err" &
  pid=$!; pids="$pids $pid"
  for i in $(seq 400); do grep -q ready "$label.out" 2>/dev/null && break; sleep 0.05; done
  grep -q ready "$label.out" || fail "$label: the program did not start: $(cat $label.err)"
}
refused() { # label pid reason-pattern
  "$DLHOOK_BIN" ctl "$2" start >"$1.ctl" 2>&1 && fail "$1: ctl sent the signal: $(cat $1.ctl)"
  grep -qi "$3" "$1.ctl" || fail "$1: the refusal does not say why: $(cat $1.ctl)"
  sleep 0.2
  kill -0 "$2" 2>/dev/null || fail "$1: the process died"
  echo "$1: refused ($(head -c 150 $1.ctl))"
}
start disabled DLHOOK_DISABLE=1 DLHOOK_SIGNAL=USR2 LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/d/" "$V" loop 1000
refused disabled $pid "DLHOOK_DISABLE"
start nolib DLHOOK_SIGNAL=USR2 DLHOOK_CAPTURE_RANGE=signal "$V" loop 1000
refused nolib $pid "libdlhook.so"
start sig9 DLHOOK_SIGNAL=9 LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/s/" "$V" loop 1000
refused sig9 $pid "does not accept"
start usr1 DLHOOK_SIGNAL=USR1 LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/i/" DLHOOK_DELAY=1000 "$V" loop 1000
# (DLHOOK_SIGNAL=USR1 with a delay and no range: ctl works once the handler is in place)
"$DLHOOK_BIN" ctl $pid start >usr1.ctl 2>&1 || fail "a traced process with DLHOOK_SIGNAL was refused: $(cat usr1.ctl)"
sleep 0.2; kill -0 $pid || fail "DLHOOK_SIGNAL=USR1: the process died"
start good DLHOOK_CAPTURE_RANGE=signal LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/g/" "$V" loop 1000
"$DLHOOK_BIN" ctl $pid start >good.ctl 2>&1 || fail "a traced process was refused: $(cat good.ctl)"
sleep 0.2; kill -0 $pid || fail "the traced process died of ctl"
# ---- the program has its own SIGUSR2 handler
send_usr2() { # pid output: one at a time (standard signals do not queue), each one seen
  for k in 1 2 3; do
    kill -USR2 $1
    for i in $(seq 400); do grep -q "got $k" "$2" && break; sleep 0.05; done
  done
}
start own-plain "$P" usr2 0
send_usr2 $pid own-plain.out; wait $pid; want=$?
start own DLHOOK_CAPTURE_RANGE=signal LD_PRELOAD="$DLHOOK_PRELOAD" DLHOOK_OUTPUT="$T/own/" "$P" usr2 0
"$DLHOOK_BIN" ctl $pid start >own.ctl 2>&1 || fail "own handler: ctl start refused: $(cat own.ctl)"
sleep 1
"$DLHOOK_BIN" ctl $pid stop >>own.ctl 2>&1 || fail "own handler: ctl stop refused: $(cat own.ctl)"
sleep 1 # a stop request still pending would swallow a SIGUSR2 sent now
send_usr2 $pid own.out; wait $pid; rc=$?
[ "$rc" = "$want" ] || fail "own handler: exit $rc, untraced $want: $(cat own.err)"
cmp -s own-plain.out own.out || fail "own handler: output differs: $(cat own.out)"
"$DLHOOK_BIN" stats --json "$(one_trace "$T/own")" >own.json || fail "own handler: trace unreadable"
python3 -c 'import json,sys; j=json.load(open("own.json")); n={a["name"]:a["calls"] for a in j["api"]}.get("cudaGetDeviceCount",0); print("calls in the window:", n); sys.exit(0 if n > 0 else 1)' ||
  fail "own handler: nothing recorded between ctl start and stop"
echo "own handler: $(tail -n 1 own.out); ctl start/stop recorded a window"
echo "ok: refused with reasons, processes alive; traced processes are controlled"
