# Flight recorder triggers in one process (DLHOOK_MODE=flight): a program calling CUDA every
# 100 us for 2.5 s with a 1 s window is killed by SIGSEGV, SIGABRT and SIGTERM sent from
# outside, exits with status 4, is asked with `dlhook ctl PID dump` (then SIGKILLed), and gets a
# plain SIGUSR2 (DLHOOK_SIGNAL, as a scheduler sends before its time limit: it goes on). Each
# run ends as it would untraced (same wait status), writes nothing before the trigger, and
# leaves one <trace>.flight.dlh that dlhook dump reads without damage, whose FlightDump names
# the reason, whose calls (cudaSetDevice(i), i = 0, 1, ...) are one contiguous run of devices
# that starts after 0 (older frames were dropped), covers at least the last 0.9 s before the
# dump (made at the trigger, or a little after it for ctl; from the start of its oldest frame,
# FlightDump.first_ns, or its first call if earlier), and reaches the trigger within one
# frame (DLHOOK_FLUSH_MS 100 + slack). A clean exit writes nothing; the SIGKILLed process keeps
# only the dump it had written before.
. "$ROOT/tests/lib.sh"
R=$BUILD/tests/reliability
need "$R/victim"; need "$R/runner"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_STACKS=none DLHOOK_MODE=flight DLHOOK_FLIGHT_S=1 DLHOOK_FLUSH_MS=100 DLHOOK_HANG_S=0

check_dump() { # label, dump file, reason number, trigger time (CLOCK_MONOTONIC ns)
  "$DLHOOK_BIN" dump --all "$2" >"$1.jsonl" 2>"$1.err" || fail "$1: dump reports damage: $(cat "$1.err")"
  python3 - "$1.jsonl" "$1" "$3" "$4" <<'PY' || fail "$1: dump not as expected"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
label, reason, trig = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
calls = [e for e in ev if e["type"] == "api" and e["name"] == "cudaSetDevice"]
devs = [int(e["args"]["device"]) for e in calls]
fl = [e for e in ev if e["type"] == "flight"]
bad = []
if len(fl) != 1: bad.append(f"{len(fl)} flight packets")
elif fl[0]["reason"] != reason: bad.append(f"reason {fl[0]['reason']}, expected {reason}")
if not devs: bad.append("no calls")
else:
    if devs != list(range(devs[0], devs[0] + len(devs))): bad.append("calls not contiguous")
    if devs[0] == 0: bad.append("the first call is still there: nothing was dropped from a 2.5 s run")
    first, last = calls[0]["start_ns"], calls[-1]["start_ns"]
    # the window counts back from the dump, which a loaded machine may make a little after the
    # trigger (ctl: the writer's next look): the calls after the trigger count too. It starts
    # where its oldest frame starts (first_ns): a program held off the CPU there (a loaded
    # machine) made its first call of the window later, and none is missing (contiguous)
    since = min(first, fl[0]["first_ns"]) if len(fl) == 1 and fl[0].get("first_ns") else first
    if max(trig, last) - since < 0.9e9:
        bad.append(f"covers only {(max(trig, last) - since) / 1e9:.2f} s before the dump")
    if first - since > 0.1e9:
        print(f"{label}: its first call came {(first - since) / 1e9:.2f} s after the window's start")
    slack = 0.1e9 + 0.4e9  # one frame (DLHOOK_FLUSH_MS) and scheduling on a loaded machine
    if trig - last > slack: bad.append(f"last call {(trig - last) / 1e9:.3f} s before the trigger")
    print(f"{label}: calls {devs[0]}..{devs[-1]}, {(trig - first) / 1e9:.2f} s to "
          f"{(trig - last) * 1e-6:.1f} ms before the trigger, {fl[0]['frames'] if fl else 0} frames, "
          f"{fl[0]['frames_evicted'] if fl else 0} dropped from the ring")
if not any(e["type"] == "summary" and e["complete"] for e in ev): bad.append("not complete")
if bad: sys.exit(f"{label}: " + "; ".join(bad))
PY
}

for s in segv:11:1 abort:6:1 term:15:1; do
  label=${s%%:*}; rest=${s#*:}; sig=${rest%%:*}; reason=${rest#*:}
  plain=$("$R/runner" -k 2500 -s "$sig" -o /dev/null -- "$R/victim" loop 100 | sed 's/ kill_ns.*//')
  d="$T/$label"; mkdir -p "$d"
  line=$(DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/runner" -k 2500 -s "$sig" -o /dev/null -- "$R/victim" loop 100 2>"$label.stderr")
  [ "$(echo "$line" | sed 's/ kill_ns.*//')" = "$plain" ] || fail "$label: untraced '$plain', traced '$line'"
  n=$(ls "$d" | grep -c '\.flight\.dlh$')
  [ "$n" -eq 1 ] || fail "$label: expected one dump, found: $(ls "$d")"
  ls "$d"/*.dlh | grep -v '\.flight\.dlh$' && fail "$label: a file other than the dump was written"
  check_dump "$label" "$d"/*.flight.dlh "$reason" "$(echo "$line" | sed 's/.*kill_ns //')"
done

# a non-zero exit status: victim loop exits with _exit(0) after MS; crash exit -> exit(4)
d="$T/exit"; mkdir -p "$d"
DLHOOK_FLIGHT_S=100 DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" crash exit 3000 >/dev/null 2>exit.stderr
[ $? -eq 4 ] || fail "exit: status changed"
[ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 1 ] || fail "exit: no dump: $(ls "$d")"
"$DLHOOK_BIN" dump --type flight,api "$d"/*.flight.dlh >exit.jsonl || fail "exit: damaged dump"
python3 - exit.jsonl <<'PY' || fail "exit: dump not as expected"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fl = [e for e in ev if e["type"] == "flight"]
devs = [int(e["args"]["device"]) for e in ev if e["type"] == "api" and e["name"] == "cudaSetDevice"]
assert len(fl) == 1 and fl[0]["reason"] == 2 and fl[0]["signal"] == 4, fl
assert devs == list(range(3000)), (len(devs), devs[:3], devs[-3:])
print("exit: status 4 dumped, all 3000 calls (window 100 s)")
PY

# a clean exit writes nothing
d="$T/clean"; mkdir -p "$d"
DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" loop 100 500 >/dev/null 2>clean.stderr || fail "clean: exit status"
[ -z "$(ls "$d")" ] || fail "clean exit wrote $(ls -a "$d")"
grep -q "no trigger, nothing written" clean.stderr || fail "clean: no message: $(cat clean.stderr)"

# dlhook ctl PID dump: a dump while the process goes on; SIGKILL afterwards adds nothing
d="$T/ctl"; mkdir -p "$d"
DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" loop 100 >/dev/null 2>ctl.stderr &
pid=$!
sleep 2.5
t_ctl=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
"$DLHOOK_BIN" ctl "$pid" dump || { kill -9 "$pid"; fail "ctl dump refused"; }
i=0
while [ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.3
kill -0 "$pid" 2>/dev/null || fail "ctl: the process did not go on after the dump"
kill -9 "$pid"; wait "$pid" 2>/dev/null
[ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 1 ] || fail "ctl: expected one dump: $(ls "$d")"
check_dump ctl "$d"/*.flight.dlh 0 "$t_ctl"
# a plain DLHOOK_SIGNAL (SIGUSR2: a scheduler's warning) dumps; the process goes on
d="$T/usr2"; mkdir -p "$d"
DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" loop 100 >/dev/null 2>usr2.stderr &
pid=$!
sleep 2.5
t_usr=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
kill -USR2 "$pid"
i=0
while [ "$(ls "$d" | grep -c '\.flight\.dlh$')" -eq 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.3
kill -0 "$pid" 2>/dev/null || fail "usr2: the process did not go on"
kill -9 "$pid"; wait "$pid" 2>/dev/null
check_dump usr2 "$d"/*.flight.dlh 1 "$t_usr"
# a process not in flight mode is never sent the signal
"$DLHOOK_BIN" ctl $$ dump 2>ctl-refused.err && fail "ctl dump of a process without the flight recorder"
grep -q "flight recorder\|libdlhook\|DLHOOK" ctl-refused.err || fail "ctl: no reason given: $(cat ctl-refused.err)"
# cudaErrorMemoryAllocation (the simulator refuses 1 PiB), then the program goes on
if [ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$SIMRUN" ]; then
  d="$T/oom"; mkdir -p "$d"
  DLHOOK_OUTPUT="$d/" "$SIMRUN" env LD_PRELOAD="$DLHOOK_PRELOAD" python3 -c '
import ctypes, time
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
for i in range(3): rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))
for i in range(2): print("oom", rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 50)))
time.sleep(0.5)
print("done")' >oom.out 2>oom.err || fail "oom: the program failed: $(cat oom.err)"
  [ "$(grep -c '^oom 2$' oom.out)" -eq 2 ] && grep -q '^done$' oom.out || fail "oom: $(cat oom.out)"
  [ "$(ls "$d" | grep -c '\.flight.*\.dlh$')" -eq 1 ] || fail "oom: expected one dump: $(ls "$d")"
  "$DLHOOK_BIN" dump --type flight,api "$d"/*.flight.dlh >oom.jsonl || fail "oom: damaged dump"
  python3 - oom.jsonl <<'PY' || fail "oom: dump not as expected"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fl = [e for e in ev if e["type"] == "flight"]
assert len(fl) == 1 and fl[0]["reason"] == 4 and "cudaMalloc" in fl[0]["detail"], fl
assert any(e["type"] == "api" and e["name"] == "cudaMalloc" and e["ret"] == 2 for e in ev), "no failed cudaMalloc"
print("oom: one dump (" + fl[0]["detail"] + "), the program went on")
PY
  # the same error right before a normal exit: the writer drains it only at the exit, and its
  # dump is still written (none was before)
  d="$T/oomexit"; mkdir -p "$d"
  DLHOOK_OUTPUT="$d/" "$SIMRUN" env LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" crash oom 10 >oomexit.out 2>oomexit.err ||
    fail "oom at exit: the program failed: $(cat oomexit.err)"
  grep -q '^oom 2$' oomexit.out || fail "oom at exit: $(cat oomexit.out)"
  [ "$(ls "$d" | grep -c '\.flight.*\.dlh$')" -eq 1 ] || fail "oom at exit: expected one dump: $(ls "$d") $(cat oomexit.err)"
  "$DLHOOK_BIN" dump --type flight "$d"/*.flight.dlh | grep -q '"reason":4' || fail "oom at exit: not an out-of-memory dump"
  echo "oom at exit: one dump"
else
  echo "oom: skipped (simulated CUDA stack not built)"
fi
# DLHOOK_FLIGHT_DISK_MB: tight_loop --vary fills some MB of frames a second
if [ -x "$BUILD/bench/tight_loop" ]; then
  d="$T/disk"; mkdir -p "$d"
  DLHOOK_FLIGHT_S=100 DLHOOK_FLIGHT_DISK_MB=2 DLHOOK_OUTPUT="$d/" LD_PRELOAD="$DLHOOK_PRELOAD" \
    "$BUILD/bench/tight_loop" 100000000000 --vary >/dev/null 2>disk.stderr &
  pid=$!
  sleep 3
  "$DLHOOK_BIN" ctl "$pid" dump || { kill -9 "$pid"; fail "disk: ctl dump"; }
  i=0
  while ! grep -q "flight recorder: wrote" disk.stderr && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  n=1 # more dumps until the cap is used up
  while ! grep -q "DLHOOK_FLIGHT_DISK_MB" disk.stderr && [ $n -lt 8 ]; do
    sleep 0.5
    "$DLHOOK_BIN" ctl "$pid" dump || { kill -9 "$pid"; fail "disk: ctl dump $n"; }
    n=$((n + 1)); i=0
    while [ "$(grep -c "flight recorder: wrote\|DISK_MB" disk.stderr)" -lt $n ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  done
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  grep -q "DLHOOK_FLIGHT_DISK_MB (2 MiB) is used up" disk.stderr || fail "disk: never refused: $(cat disk.stderr)"
  [ "$(grep -c "DLHOOK_FLIGHT_DISK_MB" disk.stderr)" -eq 1 ] || fail "disk: said more than once"
  size=$(cat "$d"/*.flight*.dlh | wc -c)
  [ "$size" -le $((2 << 20)) ] || fail "disk: the dumps have $size bytes, over 2 MiB"
  for f in "$d"/*.flight*.dlh; do "$DLHOOK_BIN" dump --type summary "$f" >/dev/null || fail "disk: $f damaged"; done
  "$DLHOOK_BIN" dump --type flight,summary "$d"/*.flight.dlh >disk.jsonl || fail "disk: damaged dump"
  python3 - disk.jsonl "$size" <<'PY' || fail "disk: dump not as expected"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fl = [e for e in ev if e["type"] == "flight"][0]
summ = [e for e in ev if e["type"] == "summary"][0]
assert summ["complete"] and summ["calls"] > 0, summ
assert fl["frames"] > 0 and fl["ring_bytes"] > 2 << 20, f"the ring ({fl['ring_bytes']} bytes) did not need cutting"
print(f"disk: a ring of {fl['ring_bytes'] / 2**20:.1f} MiB dumped with its {fl['frames']} newest frames "
      f"({(fl['time_ns'] - fl['first_ns']) / 1e9:.2f} s); all dumps {int(sys.argv[2]) / 2**20:.2f} MiB, then refused")
PY
fi
echo ok
