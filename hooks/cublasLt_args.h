/* cublasLt_args.h — the cublasLtMatmul extractor of hooks/gen/cublasLt_hooks.c: m, n, k,
 * transposes, types, batch and leading dimensions read from the operation descriptor and the
 * matrix layouts through the real cublasLt*GetAttribute functions (resolved with dlh_resolve:
 * they bypass the wrappers, so these queries are never recorded). Host-only queries: they work
 * without a GPU, and whether or not the matmul itself succeeded. */
#ifndef DLH_CUBLASLT_ARGS_H
#define DLH_CUBLASLT_ARGS_H

#include <stdint.h>
#include <string.h>
#include <cublasLt.h>
#include "dlh_hook.h"
#include "cublas_args.h"

struct dlh_lt_info {
  int64_t m, n, k, batch, lda, ldb, ldc;
  int transa, transb, atype, ctype, compute;
  double flops;
};

typedef cublasStatus_t (*dlh_lt_desc_get_fn)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                             void *, size_t, size_t *);
typedef cublasStatus_t (*dlh_lt_layout_get_fn)(cublasLtMatrixLayout_t,
                                               cublasLtMatrixLayoutAttribute_t, void *, size_t,
                                               size_t *);

/* Reads one attribute of at most 8 bytes, zero-extended; 0 when it cannot be read. */
static inline int64_t dlh_lt_layout_attr(dlh_lt_layout_get_fn get, cublasLtMatrixLayout_t l,
                                         cublasLtMatrixLayoutAttribute_t a, size_t size) {
  uint64_t v = 0;
  size_t written = 0;
  if (!get || !l || get(l, a, &v, size, &written) != CUBLAS_STATUS_SUCCESS) return 0;
  if (size == 4) return (int64_t)(int32_t)(uint32_t)v;
  return (int64_t)v;
}

static inline void dlh_lt_read(struct dlh_lt_info *o, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                               cublasLtMatrixLayout_t C) {
  static dlh_lt_desc_get_fn dget;
  static dlh_lt_layout_get_fn lget;
  memset(o, 0, sizeof *o);
  dlh_lt_desc_get_fn dg = __atomic_load_n(&dget, __ATOMIC_ACQUIRE);
  if (!dg) {
    dg = (dlh_lt_desc_get_fn)dlh_resolve("cublasLtMatmulDescGetAttribute", DLH_LIB_CUBLASLT);
    __atomic_store_n(&dget, dg, __ATOMIC_RELEASE);
  }
  dlh_lt_layout_get_fn lg = __atomic_load_n(&lget, __ATOMIC_ACQUIRE);
  if (!lg) {
    lg = (dlh_lt_layout_get_fn)dlh_resolve("cublasLtMatrixLayoutGetAttribute", DLH_LIB_CUBLASLT);
    __atomic_store_n(&lget, lg, __ATOMIC_RELEASE);
  }
  if (dg && desc) {
    int32_t v = 0;
    size_t w = 0;
    if (dg(desc, CUBLASLT_MATMUL_DESC_TRANSA, &v, sizeof v, &w) == CUBLAS_STATUS_SUCCESS) o->transa = v;
    v = 0;
    if (dg(desc, CUBLASLT_MATMUL_DESC_TRANSB, &v, sizeof v, &w) == CUBLAS_STATUS_SUCCESS) o->transb = v;
    v = 0;
    if (dg(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof v, &w) == CUBLAS_STATUS_SUCCESS)
      o->compute = v;
  }
  int64_t arows = dlh_lt_layout_attr(lg, A, CUBLASLT_MATRIX_LAYOUT_ROWS, 8);
  int64_t acols = dlh_lt_layout_attr(lg, A, CUBLASLT_MATRIX_LAYOUT_COLS, 8);
  o->m = dlh_lt_layout_attr(lg, C, CUBLASLT_MATRIX_LAYOUT_ROWS, 8);
  o->n = dlh_lt_layout_attr(lg, C, CUBLASLT_MATRIX_LAYOUT_COLS, 8);
  o->k = o->transa == CUBLAS_OP_N ? acols : arows;
  o->lda = dlh_lt_layout_attr(lg, A, CUBLASLT_MATRIX_LAYOUT_LD, 8);
  o->ldb = dlh_lt_layout_attr(lg, B, CUBLASLT_MATRIX_LAYOUT_LD, 8);
  o->ldc = dlh_lt_layout_attr(lg, C, CUBLASLT_MATRIX_LAYOUT_LD, 8);
  o->atype = (int)dlh_lt_layout_attr(lg, A, CUBLASLT_MATRIX_LAYOUT_TYPE, 4);
  o->ctype = (int)dlh_lt_layout_attr(lg, C, CUBLASLT_MATRIX_LAYOUT_TYPE, 4);
  o->batch = dlh_lt_layout_attr(lg, C, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4);
  if (o->batch < 1) o->batch = 1;
  o->flops = (C && A) ? dlh_gemm_flops(o->m, o->n, o->k, o->batch, dlh_cuda_type_complex(o->atype)) : 0;
}

#endif
