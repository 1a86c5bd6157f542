#!/bin/sh
# An nvcc-built program (-cudart shared, linked against the real toolkit) runs unchanged on the
# simulated stack: launches, copies with correct results, synchronising calls that wait.
set -e
out=$("$SIMRUN" "$BUILD/tests/bin/sim_basic")
echo "$out"
echo "$out" | grep -q "sim_basic: OK"
# it really used the stand-ins
"$SIMRUN" ldd "$BUILD/tests/bin/sim_basic" | grep -q "$BUILD/simcuda/libcudart.so.13"
# two simulated devices
out=$(SIMCUDA_DEVICES=2 "$SIMRUN" "$BUILD/tests/bin/sim_basic")
echo "$out" | grep -q "device 1: OK"
echo "$out" | grep -q "sim_basic: OK"
