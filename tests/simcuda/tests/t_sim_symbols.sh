#!/bin/sh
# The stand-ins export exactly the real libraries' symbols (common/*.syms, from nm -D of the
# real ones), under the real sonames and version nodes: cudart and cupti symbols versioned
# (cudaMalloc@@libcudart.so.13), the driver's unversioned, its private API under SIMCUDA_PRIVATE.
set -e
S="$BUILD/simcuda"
L="$ROOT/tests/simcuda/common"
fail() { echo "FAIL: $*"; exit 1; }
names() { nm -D --defined-only "$1" | awk '{print $3}' | sed 's/@.*//' | sort -u; }
[ "$(names "$S/libcudart.so.13")" = "$(sort -u "$L/cudart.syms")" ] || fail "libcudart.so.13 symbols differ"
[ "$(names "$S/libcupti.so.13")" = "$(sort -u "$L/cupti.syms")" ] || fail "libcupti.so.13 symbols differ"
names "$S/libcuda.so.1" | grep -v -e '^simcu_' -e '^simi_' -e '^SIMCUDA_PRIVATE$' > drv.txt
[ "$(cat drv.txt)" = "$(sort -u "$L/cuda.syms")" ] || fail "libcuda.so.1 symbols differ"
nm -D --defined-only "$S/libcudart.so.13" | grep -q ' cudaMalloc@@libcudart.so.13$' || fail "cudaMalloc not versioned"
nm -D --defined-only "$S/libcudart.so.13" | grep -q ' __cudaLaunchKernel@@libcudart.so.13$' || fail "__cudaLaunchKernel"
nm -D --defined-only "$S/libcupti.so.13" | grep -q ' cuptiSubscribe@@libcupti.so.13$' || fail "cuptiSubscribe not versioned"
nm -D --defined-only "$S/libcuda.so.1" | grep -q ' cuLaunchKernel$' || fail "cuLaunchKernel must be unversioned"
nm -D --defined-only "$S/libcuda.so.1" | grep -q ' simcu_launch_kernel@@SIMCUDA_PRIVATE$' || fail "simcu_launch_kernel"
for l in libcuda.so.1 libcudart.so.13 libcupti.so.13; do
  readelf -d "$S/$l" | grep -q "Library soname: \[$l\]" || fail "soname of $l"
done
echo "t_sim_symbols: OK"
