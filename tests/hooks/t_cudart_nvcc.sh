#!/bin/sh
# An nvcc-built program (-cudart shared) under the generated cudart wrappers: the nvcc-internal
# entry points (hand-written prototypes in scripts/hookgen/specs.py) register, configure and launch
# the kernel through the wrappers, with grid/block/shared memory recorded, and the program's
# behaviour is unchanged. Uses tests/hooks/stub_runtime.c in place of dlhook's runtime.
CUDA_INC="$CUDA_HOME/include" CUDA_LIB="$CUDA_HOME/lib64" NVCC="$CUDA_HOME/bin/nvcc"
[ -x "$NVCC" ] && [ -f "$CUDA_LIB/libcudart.so.13" ] || { echo "skip: nvcc or libcudart.so.13 not found in $CUDA_HOME"; exit 77; }
CC=${CC:-cc}
set -e
$CC -shared -fPIC -O1 -fvisibility=hidden -o libstub.so -I"$ROOT/hooks/compat" -I"$ROOT/hooks" -I"$CUDA_INC" \
  -I"$ROOT/preload" -I"$ROOT/common" "$ROOT/tests/hooks/stub_runtime.c" "$ROOT/hooks/gen/cudart_hooks.c" -ldl
cat >k.cu <<'CU'
#include <cstdio>
__global__ void add(int *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }
__device__ int gvar;
int main() {
  int *d = nullptr;
  cudaError_t e = cudaMalloc(&d, 256 * sizeof(int));
  add<<<dim3(2, 1, 1), dim3(128, 1, 1), 64>>>(d, 256);
  cudaError_t l = cudaGetLastError();
  cudaError_t s = cudaDeviceSynchronize();
  printf("malloc=%d launch=%d sync=%d\n", (int)e, (int)l, (int)s);
  return 0;
}
CU
"$NVCC" -cudart shared -o k k.cu
./k >plain.out
DLH_STUB_OUT=$T/rec.out LD_PRELOAD=$T/libstub.so ./k >hooked.out
echo "--- program output"; cat hooked.out
echo "--- records"; cat rec.out
set +e
fail=0
cmp -s plain.out hooked.out || { echo "FAIL: program output differs under the wrappers"; fail=1; }
for re in \
  '^__cudaRegisterFatBinary ret=[0-9]+ depth=0 fatCubin=0x[0-9a-f]+$' \
  '^__cudaRegisterFunction ret=0 depth=0 fatCubinHandle=0x[0-9a-f]+ hostFun=0x[0-9a-f]+ deviceFun=0x[0-9a-f]+ deviceName=0x[0-9a-f]+ thread_limit=-1 ' \
  '^__cudaRegisterVar ret=0 depth=0 .* size=4 constant=0 global=0$' \
  '^__cudaRegisterFatBinaryEnd ret=0 depth=0 fatCubinHandle=0x' \
  '^cudaMalloc ret=[0-9]+ depth=0 ptr=0x[0-9a-f]+ size=1024$' \
  '^__cudaPushCallConfiguration ret=0 depth=0 gridDim_x=2 gridDim_y=1 gridDim_z=1 blockDim_x=128 blockDim_y=1 blockDim_z=1 sharedMem=64 stream=0x0$' \
  '^__cudaPopCallConfiguration ret=0 depth=0 gridDim_x=2 gridDim_y=1 gridDim_z=1 blockDim_x=128 blockDim_y=1 blockDim_z=1 sharedMem=64 stream=0x0$' \
  '^__cudaLaunchKernel ret=[0-9]+ depth=0 kernel=0x[0-9a-f]+ gridDim_x=2 gridDim_y=1 gridDim_z=1 blockDim_x=128 blockDim_y=1 blockDim_z=1 args=0x[0-9a-f]+ sharedMem=64 stream=0x0$' \
  '^cudaDeviceSynchronize ret=[0-9]+ depth=0$' \
  '^__cudaUnregisterFatBinary ret=0 depth=0 fatCubinHandle=0x'; do
  grep -qE "$re" rec.out || { echo "FAIL: no record matching /$re/"; fail=1; }
done
# with a GPU the launch must have succeeded
if grep -q '^malloc=0 ' hooked.out; then
  grep -q '^malloc=0 launch=0 sync=0$' hooked.out || { echo "FAIL: launch failed on a GPU"; fail=1; }
fi
[ $fail = 0 ] && echo "nvcc program: registration and launch recorded"
exit $fail
