#!/bin/sh
# The generated cudart wrappers forward to the real libcudart.so.13 with the same ABI and record
# the right function, return value and arguments. Runs without dlhook's runtime: the wrappers
# are linked with tests/hooks/stub_runtime.c, which prints each record. Works with and without a
# GPU (without one every call fails, and every call is still recorded).
# Covers: scalar args, dim3 expansion, struct return, the cudaMalloc/cudaMemcpy2D/
# cudaLaunchKernelExC extractors, per-thread-default-stream (_ptds/_ptsz) exported names, and
# the error returned when the real library is absent.
CUDA_INC="$CUDA_HOME/include" CUDA_LIB="$CUDA_HOME/lib64"
[ -f "$CUDA_INC/cuda_runtime_api.h" ] && [ -f "$CUDA_LIB/libcudart.so.13" ] \
  || { echo "skip: CUDA toolkit not found in $CUDA_HOME"; exit 77; }
CC=${CC:-cc}
set -e
$CC -shared -fPIC -O1 -fvisibility=hidden -o libstub.so -I"$ROOT/hooks/compat" -I"$ROOT/hooks" -I"$CUDA_INC" \
  -I"$ROOT/preload" -I"$ROOT/common" "$ROOT/tests/hooks/stub_runtime.c" "$ROOT/hooks/gen/cudart_hooks.c" -ldl

cat >ptds.c <<'C'
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda_runtime_api.h>
int ptds_calls(void *dst, const void *src) {
  int e = cudaMemcpy(dst, src, 16, cudaMemcpyHostToHost);
  return e + 1000 * cudaStreamSynchronize(0);
}
C
cat >prog.c <<'C'
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>
int ptds_calls(void *dst, const void *src);
static void kern(void) {}
int main(void) {
  int n = -1;
  printf("cudaGetDeviceCount %d\n", (int)cudaGetDeviceCount(&n));
  void *p = (void *)1;
  cudaError_t e = cudaMalloc(&p, 4096);
  printf("cudaMalloc %d %s\n", (int)e, e == cudaSuccess ? "ok" : "failed");
  const char *s = cudaGetErrorString(e);
  printf("cudaGetErrorString %s\n", s && *s && strncmp(s, "dlhook", 6) ? "real" : "wrong");
  static char a[64 * 8], b[128 * 8];
  printf("cudaMemcpy2D %d\n", (int)cudaMemcpy2D(a, 64, b, 128, 32, 8, cudaMemcpyHostToHost));
  dim3 g = {2, 3, 4}, bl = {32, 1, 1};
  printf("cudaLaunchKernel %d\n", (int)cudaLaunchKernel((const void *)kern, g, bl, NULL, 128, 0));
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim.x = 5; cfg.gridDim.y = 1; cfg.gridDim.z = 1;
  cfg.blockDim.x = 64; cfg.blockDim.y = 1; cfg.blockDim.z = 1;
  cfg.dynamicSmemBytes = 256;
  printf("cudaLaunchKernelExC %d\n", (int)cudaLaunchKernelExC(&cfg, (const void *)kern, NULL));
  struct cudaChannelFormatDesc d = cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindUnsigned);
  printf("cudaCreateChannelDesc %d %d %d\n", d.x, d.y, (int)d.f);
  printf("ptds %d\n", ptds_calls(a, b));
  return 0;
}
C
$CC -o prog prog.c ptds.c -I"$CUDA_INC" -L"$CUDA_LIB" -lcudart -Wl,-rpath,"$CUDA_LIB"
./prog >plain.out
DLH_STUB_OUT=$T/rec.out LD_PRELOAD=$T/libstub.so ./prog >hooked.out
echo "--- program output"; cat hooked.out
echo "--- records"; cat rec.out
set +e
fail=0
check() { grep -qE "$1" "$2" || { echo "FAIL: no line matching /$1/ in $2"; fail=1; }; }
# the wrappers change nothing the program sees
cmp -s plain.out hooked.out || { echo "FAIL: program output differs under the wrappers"; diff plain.out hooked.out; fail=1; }
check '^cudaGetErrorString real$' hooked.out
check '^cudaCreateChannelDesc 8 16 1$' hooked.out
ret() { sed -n "s/^$1 \([0-9-]*\).*/\1/p" hooked.out; }
check "^cudaGetDeviceCount ret=$(ret cudaGetDeviceCount) depth=0 count=0x[0-9a-f]+\$" rec.out
if grep -q '^cudaMalloc 0 ok' hooked.out; then
  check '^cudaMalloc ret=0 depth=0 ptr=0x[1-9a-f][0-9a-f]* size=4096$' rec.out
else
  check "^cudaMalloc ret=$(ret cudaMalloc) depth=0 ptr=0x0 size=4096\$" rec.out
fi
check '^cudaGetErrorString ret=[0-9-]+ depth=0 error=' rec.out
check "^cudaMemcpy2D ret=$(ret cudaMemcpy2D) depth=0 dst=0x[0-9a-f]+ dpitch=64 src=0x[0-9a-f]+ spitch=128 width=32 height=8 kind=0 bytes=256\$" rec.out
check "^cudaLaunchKernel ret=$(ret cudaLaunchKernel) depth=0 func=0x[0-9a-f]+ gridDim_x=2 gridDim_y=3 gridDim_z=4 blockDim_x=32 blockDim_y=1 blockDim_z=1 args=0x0 sharedMem=128 stream=0x0\$" rec.out
check "^cudaLaunchKernelExC ret=$(ret cudaLaunchKernelExC) depth=0 func=0x[0-9a-f]+ gridDim_x=5 gridDim_y=1 gridDim_z=1 blockDim_x=64 blockDim_y=1 blockDim_z=1 dynamicSmemBytes=256 stream=0x0 numAttrs=0 args=0x0\$" rec.out
check '^cudaCreateChannelDesc ret=0 depth=0 x=8 y=16 z=0 w=0 f=1$' rec.out
check '^cudaMemcpy_ptds ret=[0-9-]+ depth=0 dst=0x[0-9a-f]+ src=0x[0-9a-f]+ count=16 kind=0$' rec.out
check '^cudaStreamSynchronize_ptsz ret=[0-9-]+ depth=0 stream=0x0$' rec.out
if grep -q 'BAD' rec.out; then echo "FAIL: bad records"; fail=1; fi

# without libcudart, a wrapper returns cudaErrorInitializationError (3) and records nothing
cat >nolib.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  int (*f)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
  int n = 0;
  printf("%s %d\n", f ? "found" : "none", f ? f(&n) : -1);
  return 0;
}
C
$CC -o nolib nolib.c -ldl
DLH_STUB_OUT=$T/nolib.rec LD_PRELOAD=$T/libstub.so ./nolib >nolib.out
check '^found 3$' nolib.out
[ ! -s nolib.rec ] || { echo "FAIL: a call without a real function was recorded"; cat nolib.rec; fail=1; }
[ $fail = 0 ] && echo "cudart wrappers: forwarding and records OK"
exit $fail
