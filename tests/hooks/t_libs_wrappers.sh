#!/bin/sh
# The generated cuBLAS, cuBLASLt, cuDNN and NCCL wrappers forward to the real libraries with the
# same ABI (size_t and string returns, the C++-only cublasHgemm read as void pointers) and record
# name, result and scalar arguments; NCCL wrappers call pncclX. Works with and without a GPU.
# Uses tests/hooks/stub_runtime.c in place of dlhook's runtime.
CUDA_INC="$CUDA_HOME/include" CUDA_LIB="$CUDA_HOME/lib64"
for so in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  [ -f "$CUDA_LIB/$so" ] || { echo "skip: $CUDA_LIB/$so not found"; exit 77; }
done
CC=${CC:-cc}
set -e
$CC -shared -fPIC -O0 -fvisibility=hidden -o libstub.so -I"$ROOT/hooks/compat" -I"$ROOT/hooks" -I"$CUDA_INC" \
  -I"$ROOT/preload" -I"$ROOT/common" "$ROOT/tests/hooks/stub_runtime.c" "$ROOT/hooks/gen/cublas_hooks.c" \
  "$ROOT/hooks/gen/cublasLt_hooks.c" "$ROOT/hooks/gen/cudnn_hooks.c" "$ROOT/hooks/gen/nccl_hooks.c" -ldl
cat >prog.c <<'C'
#include <stdio.h>
#include <string.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <nccl.h>
/* declared for C++ only in cublas_api.h; the half-precision values are behind pointers */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void *, const void *, int, const void *, int, const void *, void *, int);
int main(void) {
  printf("cublasLtGetVersion %zu\n", cublasLtGetVersion());
  printf("cudnnGetVersion %zu\n", cudnnGetVersion());
  const char *s = cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM);
  printf("cudnnGetErrorString %s\n", s && *s && strncmp(s, "dlhook", 6) ? "real" : "wrong");
  int v = 0;
  printf("ncclGetVersion %d %d\n", (int)ncclGetVersion(&v), v);
  printf("ncclGetErrorString %s\n", strncmp(ncclGetErrorString(ncclInvalidArgument), "dlhook", 6) ? "real" : "wrong");
  int cv = 0;
  printf("cublasGetProperty %d %d\n", (int)cublasGetProperty(MAJOR_VERSION, &cv), cv);
  printf("cublasHgemm %d\n", (int)cublasHgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_T, 64, 32, 16, NULL, NULL, 64, NULL, 32, NULL, NULL, 64));
  printf("cublasSgemm_v2 %d\n", (int)cublasSgemm(NULL, CUBLAS_OP_T, CUBLAS_OP_N, 8, 4, 2, NULL, NULL, 8, NULL, 4, NULL, NULL, 8));
  return 0;
}
C
$CC -o prog prog.c -I"$CUDA_INC" -L"$CUDA_LIB" -lcublas -lcublasLt -lcudnn -lnccl -Wl,-rpath,"$CUDA_LIB"
./prog >plain.out
DLH_STUB_RESOLVE=1 DLH_STUB_OUT=$T/rec.out LD_PRELOAD=$T/libstub.so ./prog >hooked.out
echo "--- program output"; cat hooked.out
echo "--- records"; cat rec.out
set +e
fail=0
check() { grep -qE "$1" "$2" || { echo "FAIL: no line matching /$1/ in $2"; fail=1; }; }
cmp -s plain.out hooked.out || { echo "FAIL: program output differs under the wrappers"; diff plain.out hooked.out; fail=1; }
ret() { sed -n "s/^$1 \([0-9-]*\).*/\1/p" hooked.out; }
check '^cudnnGetErrorString real$' hooked.out
check '^ncclGetErrorString real$' hooked.out
check "^cublasLtGetVersion ret=0 depth=0\$" rec.out  # not a status: recorded as 0
check "^cudnnGetVersion ret=0 depth=0\$" rec.out
check '^cudnnGetErrorString ret=[0-9]+ depth=0 status=2000$' rec.out
check "^ncclGetVersion ret=$(ret ncclGetVersion) depth=0 version=0x[0-9a-f]+\$" rec.out
check '^resolve pncclGetVersion 5 found$' rec.out
check "^cublasGetProperty ret=$(ret cublasGetProperty) depth=0 type=0 value=0x[0-9a-f]+\$" rec.out
check "^cublasHgemm ret=$(ret cublasHgemm) depth=0 handle=0x0 transa=0 transb=1 m=64 n=32 k=16 A=0x0 lda=64 B=0x0 ldb=32 C=0x0 ldc=64 batch=1 dtype=2 flops=65536\$" rec.out
check "^cublasSgemm_v2 ret=$(ret cublasSgemm_v2) depth=0 handle=0x0 transa=1 transb=0 m=8 n=4 k=2 " rec.out
if grep -q 'BAD' rec.out; then echo "FAIL: bad records"; fail=1; fi
[ $fail = 0 ] && echo "library wrappers: forwarding and records OK"
exit $fail
