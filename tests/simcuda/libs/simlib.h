/* simlib.h — helpers shared by the simulated libraries (header-only, static). */
#ifndef SIMLIB_H
#define SIMLIB_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <library_types.h>
#include <cuda.h>
#include "../simcore.h"

/* During stream capture the simulated driver keeps a kernel's host_fn and host_arg to run them
 * at every graph launch; the libraries' host_arg lives on the caller's stack (and points to
 * descriptors the caller may destroy), so captured kernels get no host_fn: a replayed graph
 * costs simulated time but does not compute results. Asked only when a host_fn would be set. */
static inline int simlib_capturing(void *stream) {
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing((CUstream)stream, &cs) != CUDA_SUCCESS) return 0;
  return cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Whether a call doing `flops` of work computes its real result on the CPU (SIMCUDA_NUMERICS,
 * see simcu_numerics in simcore.h): by default only small calls do, so that a library call
 * costs the host what it costs on a GPU; above that it only occupies the simulated timeline. */
static inline int simlib_compute(double flops) { return simcu_numerics(flops); }

static inline int simlib_complex(int t) {
  return t == CUDA_C_32F || t == CUDA_C_64F || t == CUDA_C_16F || t == CUDA_C_16BF ||
         t == CUDA_C_8I || t == CUDA_C_32I;
}

/* Element size of a cudaDataType, 0 when not loadable by simlib_load. */
static inline size_t simlib_dtype_size(int t) {
  switch (t) {
  case CUDA_R_32F: case CUDA_R_32I: return 4;
  case CUDA_R_64F: return 8;
  case CUDA_R_16F: case CUDA_R_16BF: return 2;
  case CUDA_R_8I: case CUDA_R_8U: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: return 1;
  case CUDA_C_32F: return 8;
  case CUDA_C_64F: return 16;
  case CUDA_C_16F: return 4;
  }
  return 0;
}

static inline float simlib_bf16_to_f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t simlib_f_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static inline double simlib_load(const void *p, int t, int64_t i) {
  switch (t) {
  case CUDA_R_32F: return ((const float *)p)[i];
  case CUDA_R_64F: return ((const double *)p)[i];
  case CUDA_R_16F: return (double)((const _Float16 *)p)[i];
  case CUDA_R_16BF: return simlib_bf16_to_f(((const uint16_t *)p)[i]);
  case CUDA_R_32I: return ((const int32_t *)p)[i];
  case CUDA_R_8I: return ((const int8_t *)p)[i];
  case CUDA_R_8U: return ((const uint8_t *)p)[i];
  }
  return 0;
}
static inline void simlib_store(void *p, int t, int64_t i, double v) {
  switch (t) {
  case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
  case CUDA_R_64F: ((double *)p)[i] = v; break;
  case CUDA_R_16F: ((_Float16 *)p)[i] = (_Float16)v; break;
  case CUDA_R_16BF: ((uint16_t *)p)[i] = simlib_f_to_bf16((float)v); break;
  case CUDA_R_32I: ((int32_t *)p)[i] = (int32_t)v; break;
  case CUDA_R_8I: ((int8_t *)p)[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v); break;
  case CUDA_R_8U: ((uint8_t *)p)[i] = (uint8_t)(v > 255 ? 255 : v < 0 ? 0 : v); break;
  }
}

#ifdef CUBLAS_VER_MAJOR
static inline const char *simlib_cublas_status_name(int s) {
  switch (s) {
  case 0: return "CUBLAS_STATUS_SUCCESS";
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
static inline const char *simlib_cublas_status_string(int s) {
  switch (s) {
  case 0: return "success";
  case 1: return "the library was not initialized";
  case 3: return "the resource allocation failed";
  case 7: return "an invalid numeric value was used as an argument";
  case 13: return "the GPU program failed to execute";
  case 15: return "the functionality requested is not supported";
  }
  return "unknown error";
}
#endif
#endif
