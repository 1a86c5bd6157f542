#!/bin/sh
# tests/simcuda/run puts the stand-ins first on LD_LIBRARY_PATH, keeps the caller's
# LD_PRELOAD and DLHOOK_* variables, honours $BUILD, and fails clearly without a build.
set -e
out=$(LD_PRELOAD= DLHOOK_X=1 LD_LIBRARY_PATH=/opt/x "$SIMRUN" sh -c 'echo "$LD_LIBRARY_PATH|$DLHOOK_X"')
[ "$out" = "$BUILD/simcuda:/opt/x|1" ] || { echo "FAIL: $out"; exit 1; }
out=$(LD_PRELOAD=/nonexistent/x.so "$SIMRUN" sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
[ "$out" = "/nonexistent/x.so" ] || { echo "FAIL: LD_PRELOAD not kept: $out"; exit 1; }
if BUILD="$T/nobuild" "$SIMRUN" true 2>err.txt; then echo "FAIL: ran without a build"; exit 1; fi
grep -q "make" err.txt
echo "t_sim_run: OK"
