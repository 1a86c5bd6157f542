/* Simulated libcublas.so.13: handles, stream/workspace/math/pointer modes, and GEMMs. Like the
 * real cuBLAS, every GEMM goes through cuBLASLt: it builds Lt descriptors and calls
 * cublasLtMatmul through libcublasLt.so.13's exported (interposable, PLT) symbols, so a
 * profiler sees cublasSgemm_v2 -> cublasLtMatmul -> kernel launch. GEMV/AXPY/DOT/SCAL enqueue
 * their own kernels. Everything else the real library exports is a generated stub. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublas_api.h>
#include <cublasLt.h>
#include "../../simcore.h"
/* exported whatever -fvisibility the build uses; the .map file chooses */
#pragma GCC visibility push(default)
#include "../simlib.h"

#define CUBLAS_MAGIC 0x43424c53u

struct cublasContext {
  unsigned magic;
  cublasLtHandle_t lt;
  cudaStream_t stream;
  void *workspace;
  size_t workspace_size;
  cublasMath_t math;
  cublasPointerMode_t pmode;
  cublasAtomicsMode_t amode;
  int sm_count;
};

#define CHECK_HANDLE(h)                                                                      \
  do {                                                                                       \
    if (!(h) || (h)->magic != CUBLAS_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;            \
  } while (0)

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasContext *h = calloc(1, sizeof *h);
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  if (cublasLtCreate(&h->lt) != CUBLAS_STATUS_SUCCESS) {
    free(h);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  h->magic = CUBLAS_MAGIC;
  h->math = CUBLAS_DEFAULT_MATH;
  h->pmode = CUBLAS_POINTER_MODE_HOST;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  CHECK_HANDLE(h);
  cublasLtDestroy(h->lt);
  h->magic = 0;
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version) {
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
  case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; break;
  case MINOR_VERSION: *value = CUBLAS_VER_MINOR; break;
  case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; break;
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}
size_t cublasGetCudartVersion(void) { return 13000; }
const char *cublasGetStatusName(cublasStatus_t s) { return simlib_cublas_status_name(s); }
const char *cublasGetStatusString(cublasStatus_t s) { return simlib_cublas_status_string(s); }

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  CHECK_HANDLE(h);
  h->stream = s;
  h->workspace = NULL; /* as the real one: a stream change resets the user workspace */
  h->workspace_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s) {
  CHECK_HANDLE(h);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t size) {
  CHECK_HANDLE(h);
  if (size && !ws) return CUBLAS_STATUS_INVALID_VALUE;
  h->workspace = ws;
  h->workspace_size = size;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  CHECK_HANDLE(h);
  h->math = m;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *m) {
  CHECK_HANDLE(h);
  if (!m) return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) {
  CHECK_HANDLE(h);
  h->pmode = m;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t *m) {
  CHECK_HANDLE(h);
  if (!m) return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->pmode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t m) {
  CHECK_HANDLE(h);
  h->amode = m;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t *m) {
  CHECK_HANDLE(h);
  if (!m) return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->amode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t h, int n) {
  CHECK_HANDLE(h);
  h->sm_count = n;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetSmCountTarget(cublasHandle_t h, int *n) {
  CHECK_HANDLE(h);
  if (!n) return CUBLAS_STATUS_INVALID_VALUE;
  *n = h->sm_count;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- GEMM through cuBLASLt ---- */
static cudaDataType scale_type_of(cublasComputeType_t ct) {
  switch (ct) {
  case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: return CUDA_R_16F;
  case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: return CUDA_R_64F;
  case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: return CUDA_R_32I;
  default: return CUDA_R_32F;
  }
}

static cublasStatus_t gemm_lt(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                              int64_t m, int64_t n, int64_t k, const void *alpha,
                              const void *A, cudaDataType at, int64_t lda, int64_t sa,
                              const void *B, cudaDataType bt, int64_t ldb, int64_t sb,
                              const void *beta, void *C, cudaDataType ct, int64_t ldc,
                              int64_t sc, int64_t batch, int ptrarray, cublasComputeType_t comp) {
  CHECK_HANDLE(h);
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m ||
      lda < 1 || ldb < 1 || ldc < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if ((comp == CUBLAS_COMPUTE_32F || comp == CUBLAS_COMPUTE_32F_PEDANTIC) &&
      (h->math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH && at == CUDA_R_32F)
    comp = CUBLAS_COMPUTE_32F_FAST_TF32;
  cudaDataType st = scale_type_of(comp);
  cublasLtMatmulDesc_t d = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasStatus_t r = cublasLtMatmulDescCreate(&d, comp, st);
  int32_t v;
  if (!r) { v = ta; r = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &v, 4); }
  if (!r) { v = tb; r = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &v, 4); }
  if (!r) {
    v = h->pmode == CUBLAS_POINTER_MODE_DEVICE ? CUBLASLT_POINTER_MODE_DEVICE
                                               : CUBLASLT_POINTER_MODE_HOST;
    r = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_POINTER_MODE, &v, 4);
  }
  if (!r) r = cublasLtMatrixLayoutCreate(&la, at, ta == CUBLAS_OP_N ? m : k,
                                         ta == CUBLAS_OP_N ? k : m, lda);
  if (!r) r = cublasLtMatrixLayoutCreate(&lb, bt, tb == CUBLAS_OP_N ? k : n,
                                         tb == CUBLAS_OP_N ? n : k, ldb);
  if (!r) r = cublasLtMatrixLayoutCreate(&lc, ct, m, n, ldc);
  if (!r && batch > 1) {
    int32_t b32 = (int32_t)batch;
    cublasLtMatrixLayout_t ls[3] = {la, lb, lc};
    int64_t strides[3] = {sa, sb, sc};
    for (int i = 0; i < 3 && !r; i++) {
      r = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b32, 4);
      if (!r && !ptrarray)
        r = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &strides[i], 8);
    }
  }
  if (!r && ptrarray) {
    int32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    int32_t b32 = (int32_t)batch;
    cublasLtMatrixLayout_t ls[3] = {la, lb, lc};
    for (int i = 0; i < 3 && !r; i++) {
      r = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, 4);
      if (!r)
        r = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b32, 4);
    }
  }
  if (!r)
    r = cublasLtMatmul(h->lt, d, alpha, A, la, B, lb, beta, C, lc, C, lc, NULL, h->workspace,
                       h->workspace_size, h->stream);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (d) cublasLtMatmulDescDestroy(d);
  return r;
}

#define GEMM_T(NAME, T, DT, COMP, IT)                                                        \
  cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IT m,    \
                      IT n, IT k, const T *alpha, const T *A, IT lda, const T *B, IT ldb,    \
                      const T *beta, T *C, IT ldc) {                                         \
    return gemm_lt(h, ta, tb, m, n, k, alpha, A, DT, lda, 0, B, DT, ldb, 0, beta, C, DT, ldc, \
                   0, 1, 0, COMP);                                                           \
  }
GEMM_T(cublasSgemm_v2, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, int)
GEMM_T(cublasDgemm_v2, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, int)
GEMM_T(cublasSgemm_v2_64, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, int64_t)
GEMM_T(cublasDgemm_v2_64, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, int64_t)
/* __half is C++-only in the headers; the ABI is pointers. */
GEMM_T(cublasHgemm, void, CUDA_R_16F, CUBLAS_COMPUTE_16F, int)
GEMM_T(cublasHgemm_64, void, CUDA_R_16F, CUBLAS_COMPUTE_16F, int64_t)

#define GEMM_SB(NAME, T, DT, COMP, IT)                                                       \
  cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IT m,    \
                      IT n, IT k, const T *alpha, const T *A, IT lda, long long sa,          \
                      const T *B, IT ldb, long long sb, const T *beta, T *C, IT ldc,         \
                      long long sc, IT batch) {                                              \
    return gemm_lt(h, ta, tb, m, n, k, alpha, A, DT, lda, sa, B, DT, ldb, sb, beta, C, DT,   \
                   ldc, sc, batch, 0, COMP);                                                 \
  }
GEMM_SB(cublasSgemmStridedBatched, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, int)
GEMM_SB(cublasDgemmStridedBatched, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, int)
GEMM_SB(cublasHgemmStridedBatched, void, CUDA_R_16F, CUBLAS_COMPUTE_16F, int)
GEMM_SB(cublasSgemmStridedBatched_64, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, int64_t)
GEMM_SB(cublasDgemmStridedBatched_64, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, int64_t)

#define GEMM_B(NAME, T, DT, COMP, IT)                                                        \
  cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IT m,    \
                      IT n, IT k, const T *alpha, const T *const A[], IT lda,                \
                      const T *const B[], IT ldb, const T *beta, T *const C[], IT ldc,       \
                      IT batch) {                                                            \
    return gemm_lt(h, ta, tb, m, n, k, alpha, A, DT, lda, 0, B, DT, ldb, 0, beta, (void *)C, DT, \
                   ldc, 0, batch, 1, COMP);                                                  \
  }
GEMM_B(cublasSgemmBatched, float, CUDA_R_32F, CUBLAS_COMPUTE_32F, int)
GEMM_B(cublasDgemmBatched, double, CUDA_R_64F, CUBLAS_COMPUTE_64F, int)
GEMM_B(cublasHgemmBatched, void, CUDA_R_16F, CUBLAS_COMPUTE_16F, int)

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                            int m, int n, int k, const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
                            int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t ct, cublasGemmAlgo_t algo) {
  return gemm_lt(h, ta, tb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype,
                 ldc, 0, 1, 0, ct);
}
cublasStatus_t cublasGemmEx_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                               int64_t m, int64_t n, int64_t k, const void *alpha,
                               const void *A, cudaDataType Atype, int64_t lda, const void *B,
                               cudaDataType Btype, int64_t ldb, const void *beta, void *C,
                               cudaDataType Ctype, int64_t ldc, cublasComputeType_t ct,
                               cublasGemmAlgo_t algo) {
  return gemm_lt(h, ta, tb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype,
                 ldc, 0, 1, 0, ct);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long sa, const void *B,
                                          cudaDataType Btype, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType Ctype,
                                          int ldc, long long sc, int batch,
                                          cublasComputeType_t ct, cublasGemmAlgo_t algo) {
  return gemm_lt(h, ta, tb, m, n, k, alpha, A, Atype, lda, sa, B, Btype, ldb, sb, beta, C, Ctype,
                 ldc, sc, batch, 0, ct);
}
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha,
                                   const void *const Aarray[], cudaDataType Atype, int lda,
                                   const void *const Barray[], cudaDataType Btype, int ldb,
                                   const void *beta, void *const Carray[], cudaDataType Ctype,
                                   int ldc, int batch, cublasComputeType_t ct,
                                   cublasGemmAlgo_t algo) {
  return gemm_lt(h, ta, tb, m, n, k, alpha, Aarray, Atype, lda, 0, Barray, Btype, ldb, 0, beta,
                 (void *)Carray, Ctype, ldc, 0, batch, 1, ct);
}
cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                             int m, int n, int k, const float *alpha, const void *A,
                             cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
                             int ldb, const float *beta, void *C, cudaDataType Ctype, int ldc) {
  return gemm_lt(h, ta, tb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype,
                 ldc, 0, 1, 0, CUBLAS_COMPUTE_32F);
}

/* ---- level 1/2: own kernels ---- */
struct vec_job {
  int op; /* 0 gemv, 1 axpy, 2 scal, 3 dot */
  int trans;
  int64_t m, n, lda, incx, incy;
  double alpha, beta;
  const void *A, *x;
  void *y;
  int type;
  void *result;
  int result_type;
};

static void vec_host(void *arg) {
  struct vec_job *j = arg;
  if (j->op == 0) {
    int64_t ylen = j->trans ? j->n : j->m, xlen = j->trans ? j->m : j->n;
    for (int64_t i = 0; i < ylen; i++) {
      double acc = 0;
      for (int64_t p = 0; p < xlen; p++) {
        int64_t ia = j->trans ? p + i * j->lda : i + p * j->lda;
        acc += simlib_load(j->A, j->type, ia) * simlib_load(j->x, j->type, p * j->incx);
      }
      double old = j->beta != 0 ? simlib_load(j->y, j->type, i * j->incy) : 0;
      simlib_store(j->y, j->type, i * j->incy, j->alpha * acc + j->beta * old);
    }
  } else if (j->op == 1) {
    for (int64_t i = 0; i < j->n; i++)
      simlib_store(j->y, j->type, i * j->incy,
                   simlib_load(j->y, j->type, i * j->incy) +
                       j->alpha * simlib_load(j->x, j->type, i * j->incx));
  } else if (j->op == 2) {
    for (int64_t i = 0; i < j->n; i++)
      simlib_store(j->y, j->type, i * j->incy, j->alpha * simlib_load(j->y, j->type, i * j->incy));
  } else {
    double acc = 0;
    for (int64_t i = 0; i < j->n; i++)
      acc += simlib_load(j->x, j->type, i * j->incx) * simlib_load(j->y, j->type, i * j->incy);
    simlib_store(j->result, j->result_type, 0, acc);
  }
}

static cublasStatus_t vec_launch(cublasHandle_t h, struct vec_job *j, const char *name,
                                 double flops, double bytes) {
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  int64_t len = j->op == 0 ? (j->trans ? j->n : j->m) : j->n;
  k.grid[0] = (unsigned)((len + 127) / 128);
  if (!k.grid[0]) k.grid[0] = 1;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = 128;
  k.block[1] = k.block[2] = 1;
  k.flops = flops;
  k.bytes = bytes;
  k.dtype = j->type == CUDA_R_64F ? SIMCU_DT_FP64 : SIMCU_DT_FP32;
  if (flops <= (double)(1 << 26) && simlib_compute(flops) && !simlib_capturing(h->stream)) {
    k.host_fn = vec_host;
    k.host_arg = j;
    /* off the caller's path, except a dot product, whose result may be the caller's variable */
    k.host_arg_size = j->op == 3 ? 0 : sizeof *j;
  }
  return simcu_launch_kernel(h->stream, &k) ? CUBLAS_STATUS_EXECUTION_FAILED
                                            : CUBLAS_STATUS_SUCCESS;
}

#define GEMV(NAME, T, DT, KN, KT)                                                            \
  cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t trans, int m, int n,               \
                      const T *alpha, const T *A, int lda, const T *x, int incx,             \
                      const T *beta, T *y, int incy) {                                       \
    CHECK_HANDLE(h);                                                                         \
    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !incx || !incy || !alpha || !beta)        \
      return CUBLAS_STATUS_INVALID_VALUE;                                                    \
    if (!m || !n) return CUBLAS_STATUS_SUCCESS;                                              \
    struct vec_job j = {0, trans != CUBLAS_OP_N, m, n, lda, incx, incy, *alpha, *beta, A, x,  \
                        y, DT, NULL, 0};                                                     \
    return vec_launch(h, &j, trans != CUBLAS_OP_N ? KT : KN, 2.0 * m * n,                    \
                      (double)sizeof(T) * ((double)m * n + m + n));                          \
  }
GEMV(cublasSgemv_v2, float, CUDA_R_32F,
     "void gemv2N_kernel<int, int, float, float, float, float, 128, 32, 4, 4, false, false, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
     "float>>(float const)",
     "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
     "float>>(float, float)")
GEMV(cublasDgemv_v2, double, CUDA_R_64F,
     "void gemv2N_kernel<int, int, double, double, double, double, 128, 32, 4, 4, false, false, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<double const>, "
     "cublasGemvTensorStridedBatched<double const>, cublasGemvTensorStridedBatched<double>, "
     "double>>(double const)",
     "void gemv2T_kernel_val<int, int, double, double, double, double, 128, 16, 4, 4, false, "
     "false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<double const>, "
     "cublasGemvTensorStridedBatched<double const>, cublasGemvTensorStridedBatched<double>, "
     "double>>(double, double)")

#define AXPY(NAME, T, DT, KN)                                                                \
  cublasStatus_t NAME(cublasHandle_t h, int n, const T *alpha, const T *x, int incx, T *y,   \
                      int incy) {                                                            \
    CHECK_HANDLE(h);                                                                         \
    if (n < 0 || !alpha) return CUBLAS_STATUS_INVALID_VALUE;                                 \
    if (!n) return CUBLAS_STATUS_SUCCESS;                                                    \
    struct vec_job j = {1, 0, 0, n, 0, incx, incy, *alpha, 0, NULL, x, y, DT, NULL, 0};      \
    return vec_launch(h, &j, KN, 2.0 * n, 3.0 * sizeof(T) * n);                              \
  }
AXPY(cublasSaxpy_v2, float, CUDA_R_32F, "void axpy_kernel_val<float, float>(cublasAxpyParamsVal<float, float, float>)")
AXPY(cublasDaxpy_v2, double, CUDA_R_64F, "void axpy_kernel_val<double, double>(cublasAxpyParamsVal<double, double, double>)")

#define SCAL(NAME, T, DT, KN)                                                                \
  cublasStatus_t NAME(cublasHandle_t h, int n, const T *alpha, T *x, int incx) {             \
    CHECK_HANDLE(h);                                                                         \
    if (n < 0 || !alpha) return CUBLAS_STATUS_INVALID_VALUE;                                 \
    if (!n || incx <= 0) return CUBLAS_STATUS_SUCCESS;                                       \
    struct vec_job j = {2, 0, 0, n, 0, incx, incx, *alpha, 0, NULL, NULL, x, DT, NULL, 0};   \
    return vec_launch(h, &j, KN, 1.0 * n, 2.0 * sizeof(T) * n);                              \
  }
SCAL(cublasSscal_v2, float, CUDA_R_32F, "void scal_kernel_val<float, float>(cublasScalParamsVal<float, float>)")
SCAL(cublasDscal_v2, double, CUDA_R_64F, "void scal_kernel_val<double, double>(cublasScalParamsVal<double, double>)")

#define DOT(NAME, T, DT, KN)                                                                 \
  cublasStatus_t NAME(cublasHandle_t h, int n, const T *x, int incx, const T *y, int incy,   \
                      T *result) {                                                           \
    CHECK_HANDLE(h);                                                                         \
    if (n < 0 || !result) return CUBLAS_STATUS_INVALID_VALUE;                                \
    struct vec_job j = {3, 0, 0, n, 0, incx, incy, 1, 0, NULL, x, (void *)y, DT, result, DT}; \
    if (!n) { *result = 0; return CUBLAS_STATUS_SUCCESS; }                                   \
    return vec_launch(h, &j, KN, 2.0 * n, 2.0 * sizeof(T) * n);                              \
  }
DOT(cublasSdot_v2, float, CUDA_R_32F, "void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensor<float const>, cublasGemvTensorStridedBatched<float>>>(cublasDotParams<cublasGemvTensor<float const>, cublasGemvTensorStridedBatched<float>>)")
DOT(cublasDdot_v2, double, CUDA_R_64F, "void dot_kernel<double, 128, 0, cublasDotParams<cublasGemvTensor<double const>, cublasGemvTensorStridedBatched<double>>>(cublasDotParams<cublasGemvTensor<double const>, cublasGemvTensorStridedBatched<double>>)")

/* ---- host <-> device helpers: Set/GetVector, Set/GetMatrix (+ Async, _64) ----
 * Device memory is host memory in the simulation: a strided copy, done at once (the Async
 * forms too: the data is in place before any later work on the stream). Argument checks as
 * documented: n, rows, cols >= 0; elemSize, incx, incy > 0; lda, ldb >= max(1, rows). */
static cublasStatus_t copy_vector(int64_t n, int64_t es, const void *x, int64_t incx, void *y,
                                  int64_t incy) {
  if (n < 0 || es <= 0 || incx <= 0 || incy <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  if (!x || !y) return CUBLAS_STATUS_INVALID_VALUE;
  if (incx == 1 && incy == 1) {
    memmove(y, x, (size_t)(n * es));
    return CUBLAS_STATUS_SUCCESS;
  }
  for (int64_t i = 0; i < n; i++)
    memmove((char *)y + i * incy * es, (const char *)x + i * incx * es, (size_t)es);
  return CUBLAS_STATUS_SUCCESS;
}
static cublasStatus_t copy_matrix(int64_t rows, int64_t cols, int64_t es, const void *a,
                                  int64_t lda, void *b, int64_t ldb) {
  int64_t minld = rows > 1 ? rows : 1;
  if (rows < 0 || cols < 0 || es <= 0 || lda < minld || ldb < minld)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (rows == 0 || cols == 0) return CUBLAS_STATUS_SUCCESS;
  if (!a || !b) return CUBLAS_STATUS_INVALID_VALUE;
  for (int64_t j = 0; j < cols; j++)
    memmove((char *)b + j * ldb * es, (const char *)a + j * lda * es, (size_t)(rows * es));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetVector(int n, int es, const void *x, int incx, void *y, int incy) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasGetVector(int n, int es, const void *x, int incx, void *y, int incy) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasSetVector_64(int64_t n, int64_t es, const void *x, int64_t incx, void *y,
                                  int64_t incy) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasGetVector_64(int64_t n, int64_t es, const void *x, int64_t incx, void *y,
                                  int64_t incy) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasSetVectorAsync(int n, int es, const void *x, int incx, void *y, int incy,
                                    cudaStream_t s) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasGetVectorAsync(int n, int es, const void *x, int incx, void *y, int incy,
                                    cudaStream_t s) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasSetVectorAsync_64(int64_t n, int64_t es, const void *x, int64_t incx,
                                       void *y, int64_t incy, cudaStream_t s) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasGetVectorAsync_64(int64_t n, int64_t es, const void *x, int64_t incx,
                                       void *y, int64_t incy, cudaStream_t s) {
  return copy_vector(n, es, x, incx, y, incy);
}
cublasStatus_t cublasSetMatrix(int rows, int cols, int es, const void *a, int lda, void *b,
                               int ldb) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasGetMatrix(int rows, int cols, int es, const void *a, int lda, void *b,
                               int ldb) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasSetMatrix_64(int64_t rows, int64_t cols, int64_t es, const void *a,
                                  int64_t lda, void *b, int64_t ldb) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasGetMatrix_64(int64_t rows, int64_t cols, int64_t es, const void *a,
                                  int64_t lda, void *b, int64_t ldb) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int es, const void *a, int lda, void *b,
                                    int ldb, cudaStream_t s) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int es, const void *a, int lda, void *b,
                                    int ldb, cudaStream_t s) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasSetMatrixAsync_64(int64_t rows, int64_t cols, int64_t es, const void *a,
                                       int64_t lda, void *b, int64_t ldb, cudaStream_t s) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
cublasStatus_t cublasGetMatrixAsync_64(int64_t rows, int64_t cols, int64_t es, const void *a,
                                       int64_t lda, void *b, int64_t ldb, cudaStream_t s) {
  return copy_matrix(rows, cols, es, a, lda, b, ldb);
}
