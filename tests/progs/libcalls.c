/* tests/progs/libcalls.c — calls cuBLAS, cuBLASLt, cuDNN and NCCL with known shapes; works with
 * or without a GPU (without one every call fails, which is what tests/libs check: the calls are
 * still recorded with their arguments). Prints one line per call with its status.
 * The computing calls get NULL handles/communicators (the handles are still created): they fail
 * before touching memory on any machine, GPU or not, and their shapes are still recorded.
 * Built twice by tests/libs: linked against the libraries, and with -DDLOPEN, where every
 * function is reached through dlopen(RTLD_LOCAL) + dlsym. */
#include <stdio.h>
#include <string.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <nccl.h>
#ifdef DLOPEN
#include <dlfcn.h>
static void *lib(const char *so) {
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen %s: %s\n", so, dlerror()); return NULL; }
  return h;
}
#define FN(h, name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(h, #name)
#define CALL(name) p_##name
#else
#define CALL(name) name
#endif

int main(void) {
#ifdef DLOPEN
  void *hb = lib("libcublas.so.13"), *hl = lib("libcublasLt.so.13"), *hd = lib("libcudnn.so.9"),
       *hn = lib("libnccl.so.2");
  if (!hb || !hl || !hd || !hn) return 1;
  FN(hb, cublasCreate_v2); FN(hb, cublasSgemm_v2); FN(hb, cublasGemmEx);
  FN(hb, cublasGemmStridedBatchedEx); FN(hb, cublasSgemmGroupedBatched);
  FN(hl, cublasLtCreate); FN(hl, cublasLtMatmulDescCreate); FN(hl, cublasLtMatmulDescSetAttribute);
  FN(hl, cublasLtMatrixLayoutCreate); FN(hl, cublasLtMatrixLayoutSetAttribute); FN(hl, cublasLtMatmul);
  FN(hd, cudnnCreate); FN(hd, cudnnCreateTensorDescriptor); FN(hd, cudnnCreateFilterDescriptor);
  FN(hd, cudnnCreateConvolutionDescriptor); FN(hd, cudnnSetTensor4dDescriptor);
  FN(hd, cudnnSetFilter4dDescriptor); FN(hd, cudnnSetConvolution2dDescriptor);
  FN(hd, cudnnSetConvolutionGroupCount); FN(hd, cudnnConvolutionForward);
  FN(hn, ncclGetUniqueId); FN(hn, ncclCommInitRank); FN(hn, ncclAllReduce);
  FN(hn, ncclGroupStart); FN(hn, ncclGroupEnd);
#endif
  float one = 1, zero = 0;
  cublasHandle_t cb = NULL;  /* created, unused: see above */
  printf("cublasCreate %d\n", (int)CALL(cublasCreate_v2)(&cb));
  printf("cublasSgemm_v2 %d\n", (int)CALL(cublasSgemm_v2)(NULL, CUBLAS_OP_T, CUBLAS_OP_N, 128, 64, 32,
                                                          &one, NULL, 32, NULL, 32, &zero, NULL, 128));
  printf("cublasGemmEx %d\n",
         (int)CALL(cublasGemmEx)(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 256, 128, 64, &one, NULL, CUDA_R_16BF,
                                 256, NULL, CUDA_R_16BF, 64, &zero, NULL, CUDA_R_32F, 256,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  printf("cublasGemmStridedBatchedEx %d\n",
         (int)CALL(cublasGemmStridedBatchedEx)(NULL, CUBLAS_OP_N, CUBLAS_OP_T, 64, 64, 16, &one, NULL,
                                               CUDA_R_16F, 64, 1024, NULL, CUDA_R_16F, 64, 1024,
                                               &zero, NULL, CUDA_R_16F, 64, 4096, 8,
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  /* two groups: 3 GEMMs of 4x5x7 and 2 of 8x6x9 */
  cublasOperation_t gta[2] = {CUBLAS_OP_N, CUBLAS_OP_T}, gtb[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
  int gm[2] = {4, 8}, gn[2] = {5, 6}, gk[2] = {7, 9}, gld[2] = {16, 16}, gsz[2] = {3, 2};
  float galpha[2] = {1, 1}, gbeta[2] = {0, 0};
  printf("cublasSgemmGroupedBatched %d\n",
         (int)CALL(cublasSgemmGroupedBatched)(NULL, gta, gtb, gm, gn, gk, galpha, NULL, gld, NULL,
                                              gld, gbeta, NULL, gld, 2, gsz));
  cublasLtHandle_t lt = NULL;
  printf("cublasLtCreate %d\n", (int)CALL(cublasLtCreate)(&lt));
  cublasLtMatmulDesc_t md = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  printf("cublasLtMatmulDescCreate %d\n",
         (int)CALL(cublasLtMatmulDescCreate)(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T;
  if (md) CALL(cublasLtMatmulDescSetAttribute)(md, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  /* D (m x n) = op(A) (m x k) * B (k x n), A stored k x m: m 96, n 48, k 80, batch 3 */
  printf("cublasLtMatrixLayoutCreate %d\n", (int)CALL(cublasLtMatrixLayoutCreate)(&la, CUDA_R_16F, 80, 96, 80));
  CALL(cublasLtMatrixLayoutCreate)(&lb, CUDA_R_16F, 80, 48, 80);
  CALL(cublasLtMatrixLayoutCreate)(&lc, CUDA_R_16F, 96, 48, 96);
  int32_t batch = 3;
  if (lc) CALL(cublasLtMatrixLayoutSetAttribute)(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  printf("cublasLtMatmul %d\n",
         (int)CALL(cublasLtMatmul)(NULL, md, &one, NULL, la, NULL, lb, &zero, NULL, lc, NULL, lc, NULL,
                                   NULL, 0, 0));
  cudnnHandle_t dn = NULL;
  printf("cudnnCreate %d\n", (int)CALL(cudnnCreate)(&dn));
  cudnnTensorDescriptor_t x = NULL, y = NULL;
  cudnnFilterDescriptor_t w = NULL;
  cudnnConvolutionDescriptor_t cv = NULL;
  printf("cudnnCreateTensorDescriptor %d\n", (int)CALL(cudnnCreateTensorDescriptor)(&x));
  CALL(cudnnCreateTensorDescriptor)(&y);
  CALL(cudnnCreateFilterDescriptor)(&w);
  CALL(cudnnCreateConvolutionDescriptor)(&cv);
  /* N 8, C 16, 32x32 -> K 32, 3x3, stride 2, pad 1, dilation 1, groups 2: P = Q = 16 */
  printf("cudnnSetTensor4dDescriptor %d\n",
         (int)CALL(cudnnSetTensor4dDescriptor)(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 8, 16, 32, 32));
  CALL(cudnnSetTensor4dDescriptor)(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 8, 32, 16, 16);
  CALL(cudnnSetFilter4dDescriptor)(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 32, 8, 3, 3);
  CALL(cudnnSetConvolution2dDescriptor)(cv, 1, 1, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  CALL(cudnnSetConvolutionGroupCount)(cv, 2);
  printf("cudnnConvolutionForward %d\n",
         (int)CALL(cudnnConvolutionForward)(NULL, &one, x, NULL, w, NULL, cv,
                                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 4096,
                                            &zero, y, NULL));
  ncclUniqueId id;
  memset(&id, 7, sizeof id);
  printf("ncclGetUniqueId %d\n", (int)CALL(ncclGetUniqueId)(&id));
  ncclComm_t comm = NULL;
  printf("ncclCommInitRank %d\n", (int)CALL(ncclCommInitRank)(&comm, 1, id, 0));
  CALL(ncclGroupStart)();
  printf("ncclAllReduce %d\n", (int)CALL(ncclAllReduce)(NULL, NULL, 1000, ncclFloat16, ncclSum, NULL, 0));
  CALL(ncclGroupEnd)();
  return 0;
}
