/* cublas_args.h — hand-written helpers for the GEMM extractors of hooks/gen/cublas_hooks.c
 * (included through the library's `pre_includes` in scripts/gen_hooks.py). Pure arithmetic on
 * the parameters: no call into cuBLAS, so the values are right even when the call fails. */
#ifndef DLH_CUBLAS_ARGS_H
#define DLH_CUBLAS_ARGS_H

#include <stdint.h>
#include <library_types.h>

/* cublasOperation_t of a legacy-API transpose character ('N', 'T', 'C'; else -1). */
static inline int dlh_op_char(char c) {
  switch (c) {
  case 'N': case 'n': return 0;
  case 'T': case 't': return 1;
  case 'C': case 'c': return 2;
  default: return -1;
  }
}

/* Whether a cudaDataType_t is complex (its flops count 4 real multiply-adds per element). */
static inline int dlh_cuda_type_complex(int t) {
  switch (t) {
  case CUDA_C_16F: case CUDA_C_16BF: case CUDA_C_32F: case CUDA_C_64F: case CUDA_C_8I:
  case CUDA_C_8U: case CUDA_C_32I: case CUDA_C_32U: case CUDA_C_4I: case CUDA_C_4U:
  case CUDA_C_16I: case CUDA_C_16U: case CUDA_C_64I: case CUDA_C_64U:
    return 1;
  default:
    return 0;
  }
}

/* 2·m·n·k·batch (×4 when complex); negative dimensions count as 0. */
static inline double dlh_gemm_flops(int64_t m, int64_t n, int64_t k, int64_t batch, int cplx) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) return 0;
  return 2.0 * (double)m * (double)n * (double)k * (double)batch * (cplx ? 4.0 : 1.0);
}

/* Grouped batched GEMMs (cublas*gemmGroupedBatched*): group i has group_size[i] GEMMs of
 * m[i] x n[i] x k[i]. Sum of the flops, number of GEMMs, and the first group's dimensions. */
#define DLH_GROUPED(T)                                                                           \
  static inline double dlh_grouped_flops_##T(const T *m, const T *n, const T *k, int64_t gc,     \
                                             const T *gs, int cplx) {                            \
    double f = 0;                                                                                \
    for (int64_t i = 0; m && n && k && gs && i < gc; i++)                                        \
      f += dlh_gemm_flops((int64_t)m[i], (int64_t)n[i], (int64_t)k[i], (int64_t)gs[i], cplx);   \
    return f;                                                                                    \
  }                                                                                              \
  static inline int64_t dlh_grouped_count_##T(int64_t gc, const T *gs) {                         \
    int64_t c = 0;                                                                               \
    for (int64_t i = 0; gs && i < gc; i++) c += (int64_t)gs[i];                                  \
    return c;                                                                                    \
  }
DLH_GROUPED(int)
DLH_GROUPED(int64_t)
#define dlh_grouped_flops(m, n, k, gc, gs, cplx)                                                 \
  _Generic((m), const int64_t *: dlh_grouped_flops_int64_t, int64_t *: dlh_grouped_flops_int64_t, \
           default: dlh_grouped_flops_int)(m, n, k, gc, gs, cplx)
#define dlh_grouped_count(gc, gs)                                                                \
  _Generic((gs), const int64_t *: dlh_grouped_count_int64_t, int64_t *: dlh_grouped_count_int64_t, \
           default: dlh_grouped_count_int)(gc, gs)
#define dlh_first(a, gc) ((gc) > 0 && (a) ? (int64_t)(a)[0] : 0)

#endif
