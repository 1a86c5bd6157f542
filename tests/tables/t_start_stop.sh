# dlhook.start() / dlhook.stop() from inside a Python program recorded with
# --capture-range=signal: only the calls between them are in the trace (7 cudaGetDeviceCount,
# none of the 10 cudaGetDevice before and after); outside dlhook they return False, harmlessly.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcudart.so.13"; need "$DLHOOK_LIB"
cat >cap.py <<'PY'
import ctypes, time, dlhook
rt = ctypes.CDLL("libcudart.so.13")
d = ctypes.c_int()
for i in range(5): rt.cudaGetDevice(ctypes.byref(d))
print("start", dlhook.start()); time.sleep(0.3)
for i in range(7): rt.cudaGetDeviceCount(ctypes.byref(d))
time.sleep(0.1); print("stop", dlhook.stop()); time.sleep(0.3)
for i in range(5): rt.cudaGetDevice(ctypes.byref(d))
PY
PYTHONPATH=$ROOT/command/python DLHOOK_QUIET=1 "$DLHOOK_BIN" record --capture-range=signal -o "$T/cap" -- \
  "$SIMRUN" python3 cap.py >out.txt 2>err.txt || { cat err.txt; fail "record failed"; }
grep -q "start True" out.txt && grep -q "stop True" out.txt || fail "start/stop did not send: $(cat out.txt)"
"$DLHOOK_BIN" stats --json "$T"/cap/*.dlh >stats.json || fail "stats failed"
expect_calls stats.json cudaGetDeviceCount=7 cudaGetDevice=0
PYTHONPATH=$ROOT/command/python python3 -c "import dlhook; assert dlhook.start() is False and dlhook.stop() is False" ||
  fail "start/stop outside dlhook"
echo ok
