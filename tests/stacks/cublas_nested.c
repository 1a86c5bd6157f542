/* Calls cuBLAS through three nested functions of its own (compiled -O0 -g) so that the stack of
 * each recorded call names them, innermost first, with file:line. Against the real libcublas
 * with no GPU, cublasCreate_v2 fails; cublasSgemm_v2 with a NULL handle returns an error. The
 * lines marked CALL-L1/2/3 are where the tests expect each frame. */
#include <cublas_v2.h>
#include <stdio.h>

static int gemm_inner(cublasHandle_t h, int i) {
  float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t s = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, NULL, 4, NULL, 4, &beta, NULL, 4); /* CALL-L3 */
  return (int)s + i * 0;
}

static int gemm_middle(cublasHandle_t h, int i) {
  int r = gemm_inner(h, i); /* CALL-L2 */
  return r;
}

static int gemm_outer(cublasHandle_t h, int i) {
  int r = gemm_middle(h, i); /* CALL-L1 */
  return r;
}

int main(void) {
  cublasHandle_t h = NULL;
  cublasStatus_t c = cublasCreate_v2(&h);
  printf("cublasCreate_v2 -> %d\n", (int)c);
  if (c != CUBLAS_STATUS_SUCCESS) h = NULL;
  for (int i = 0; i < 3; i++) printf("cublasSgemm_v2 -> %d\n", gemm_outer(h, i));
  if (h) cublasDestroy_v2(h);
  return 0;
}
