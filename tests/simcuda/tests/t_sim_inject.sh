#!/bin/sh
# CUDA_INJECTION64_PATH: the simulated driver loads the tool during cuInit and calls its
# InitializeInjection exactly once; the tool (cuptitool_inj.c) then checks the callbacks and
# activity records the CUPTI stand-in delivers for sim_workload.
set -e
out=$(CUDA_INJECTION64_PATH="$BUILD/tests/bin/libcuptitool_inj.so" "$SIMRUN" "$BUILD/tests/bin/sim_workload")
echo "$out"
echo "$out" | grep -q "^launches 12$"
echo "$out" | grep -q "cuptitool: InitializeInjection calls 1$"
echo "$out" | grep -q "^cuptitool: OK$"
# without the variable nothing is loaded
out=$("$SIMRUN" "$BUILD/tests/bin/sim_workload")
! echo "$out" | grep -q cuptitool
# a missing injection library is a warning, not a failure
CUDA_INJECTION64_PATH=/nonexistent/libtool.so "$SIMRUN" "$BUILD/tests/bin/sim_workload" >/dev/null 2>err.txt
grep -q "CUDA_INJECTION64_PATH" err.txt
