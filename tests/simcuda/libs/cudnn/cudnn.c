/* Simulated libcudnn.so.9, legacy (descriptor) API: handle, tensor/filter/convolution/activation
 * descriptors, convolution algorithm queries, convolution forward/backward data/backward
 * filter, add tensor, activation, softmax and batch normalization. Each call enqueues kernels
 * with realistic names on the simulated GPU (conv flops = 2*N*K*P*Q*C*R*S/groups) and, for
 * small fp32/fp64 problems, computes the real result on the CPU. The GEMM forward algorithm
 * (CUDNN_CONVOLUTION_FWD_ALGO_GEMM) runs an im2col kernel and then cublasSgemmStridedBatched
 * through libcublas.so.13's exported symbol, so a profiler sees the nesting, as with the real
 * library's cuBLAS-backed algorithms. The backend API is in cudnn_backend.c. */
#include <dlfcn.h>
#include <pthread.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include <cublas_api.h>
#include "../../simcore.h"
/* exported whatever -fvisibility the build uses; the .map file chooses */
#pragma GCC visibility push(default)
#include "../simlib.h"
#include "cudnn_sim.h"

/* The GEMM algorithm calls cuBLAS. Linked against libcublas.so.13 (NEEDED), the calls go
 * through the PLT; if the build links libcudnn.so.9 without it, the references stay weak and
 * unresolved and libcublas.so.13 is opened at first use and its functions looked up in the
 * global scope (RTLD_DEFAULT), where a preloaded interposer is still found first. */
#pragma weak cublasCreate_v2
#pragma weak cublasSetStream_v2
#pragma weak cublasSgemmStridedBatched
#pragma weak cublasDestroy_v2
static struct {
  pthread_once_t once;
  __typeof__(&cublasCreate_v2) create;
  __typeof__(&cublasSetStream_v2) set_stream;
  __typeof__(&cublasSgemmStridedBatched) sgemm_sb;
  __typeof__(&cublasDestroy_v2) destroy;
} blas = {PTHREAD_ONCE_INIT, NULL, NULL, NULL, NULL};
static void blas_resolve(void) {
  dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
  blas.create = (__typeof__(blas.create))dlsym(RTLD_DEFAULT, "cublasCreate_v2");
  blas.set_stream = (__typeof__(blas.set_stream))dlsym(RTLD_DEFAULT, "cublasSetStream_v2");
  blas.sgemm_sb = (__typeof__(blas.sgemm_sb))dlsym(RTLD_DEFAULT, "cublasSgemmStridedBatched");
  blas.destroy = (__typeof__(blas.destroy))dlsym(RTLD_DEFAULT, "cublasDestroy_v2");
}
static int blas_ok(void) {
  if (cublasCreate_v2 && cublasSetStream_v2 && cublasSgemmStridedBatched && cublasDestroy_v2)
    return 1;
  pthread_once(&blas.once, blas_resolve);
  return blas.create && blas.set_stream && blas.sgemm_sb && blas.destroy;
}
#define BLAS(fn, field) (fn ? fn : blas.field)

#define HANDLE_MAGIC 0x43444e4eu
struct cudnnContext {
  unsigned magic;
  cudaStream_t stream;
  cublasHandle_t blas;
};
struct cudnnTensorStruct {
  cudnnDataType_t dt;
  int nb;
  int dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  cudnnTensorFormat_t fmt;
};
struct cudnnFilterStruct {
  cudnnDataType_t dt;
  cudnnTensorFormat_t fmt;
  int nb;
  int dims[CUDNN_DIM_MAX];
};
struct cudnnConvolutionStruct {
  int nb; /* spatial dims */
  int pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
  cudnnConvolutionMode_t mode;
  cudnnDataType_t ct;
  int groups;
  cudnnMathType_t math;
  cudnnReorderType_t reorder;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef, swish_beta;
};

static int same_dims(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b);
static char last_err[256];
#define BAD(msg) (snprintf(last_err, sizeof last_err, "%s", msg), CUDNN_STATUS_BAD_PARAM)
#define CHECK_HANDLE(h)                                                                      \
  do {                                                                                       \
    if (!(h) || (h)->magic != HANDLE_MAGIC) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;      \
  } while (0)

int cudnnsim_dtype(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_FLOAT: return CUDA_R_32F;
  case CUDNN_DATA_DOUBLE: return CUDA_R_64F;
  case CUDNN_DATA_HALF: return CUDA_R_16F;
  case CUDNN_DATA_BFLOAT16: return CUDA_R_16BF;
  case CUDNN_DATA_INT8: return CUDA_R_8I;
  case CUDNN_DATA_INT32: return CUDA_R_32I;
  case CUDNN_DATA_UINT8: return CUDA_R_8U;
  default: return -1;
  }
}
size_t cudnnsim_dtype_size(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_DOUBLE: case CUDNN_DATA_INT64: return 8;
  case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: case CUDNN_DATA_INT8x4: case CUDNN_DATA_UINT8x4:
    return 4;
  case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16: return 2;
  case CUDNN_DATA_INT8x32: return 32;
  default: return 1;
  }
}
int cudnnsim_class(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_DOUBLE: return SIMCU_DT_FP64;
  case CUDNN_DATA_HALF: return SIMCU_DT_FP16;
  case CUDNN_DATA_BFLOAT16: return SIMCU_DT_BF16;
  case CUDNN_DATA_FP8_E4M3: case CUDNN_DATA_FP8_E5M2: return SIMCU_DT_FP8;
  case CUDNN_DATA_INT8: case CUDNN_DATA_UINT8: case CUDNN_DATA_INT8x4: case CUDNN_DATA_INT8x32:
    return SIMCU_DT_INT8;
  default: return SIMCU_DT_FP32;
  }
}
const char *cudnnsim_xmma_types(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_HALF: return "f16f16_f16f32_f32";
  case CUDNN_DATA_BFLOAT16: return "bf16bf16_bf16f32_f32";
  case CUDNN_DATA_DOUBLE: return "f64f64_f64f64_f64";
  case CUDNN_DATA_INT8: case CUDNN_DATA_INT8x4: case CUDNN_DATA_INT8x32: return "s8s8_s32f32_f32";
  default: return "f32f32_f32f32_f32";
  }
}

int cudnnsim_launch(cudaStream_t stream, const char *name, unsigned grid, unsigned block,
                    double flops, double bytes, int dtype, void (*fn)(void *), void *arg) {
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.grid[0] = grid ? grid : 1;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = block;
  k.block[1] = k.block[2] = 1;
  k.regs = 128;
  k.flops = flops;
  k.bytes = bytes;
  k.dtype = dtype;
  /* inline: the jobs point to descriptors the caller may destroy after the call; the size
   * limit keeps the cost to tens of microseconds */
  if (fn && simlib_compute(flops > bytes ? flops : bytes) && !simlib_capturing(stream)) {
    k.host_fn = fn;
    k.host_arg = arg;
  }
  return simcu_launch_kernel(stream, &k);
}

/* ---- handle, versions, errors ---- */
cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  struct cudnnContext *h = calloc(1, sizeof *h);
  h->magic = HANDLE_MAGIC;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  CHECK_HANDLE(h);
  if (h->blas && blas_ok()) BLAS(cublasDestroy_v2, destroy)(h->blas);
  h->magic = 0;
  free(h);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  CHECK_HANDLE(h);
  h->stream = s;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetStream(cudnnHandle_t h, cudaStream_t *s) {
  CHECK_HANDLE(h);
  if (!s) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *s = h->stream;
  return CUDNN_STATUS_SUCCESS;
}
cudaStream_t cudnnsim_stream(cudnnHandle_t h) { return h->stream; }
int cudnnsim_handle_ok(cudnnHandle_t h) { return h && h->magic == HANDLE_MAGIC; }

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
size_t cudnnGetMaxDeviceVersion(void) { return 1200; }
size_t cudnnGetCudartVersion(void) { return 13000; }
cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  switch (type) {
  case MAJOR_VERSION: *value = CUDNN_MAJOR; break;
  case MINOR_VERSION: *value = CUDNN_MINOR; break;
  case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; break;
  default: return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}
const char *cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
  case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
  case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
  case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
  case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
  case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
  case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
  default: return "CUDNN_STATUS_UNKNOWN";
  }
}
void cudnnGetLastErrorString(char *message, size_t max_size) {
  if (message && max_size) {
    snprintf(message, max_size, "%s", last_err);
    last_err[0] = 0;
  }
}
cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnAdvVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

/* ---- tensor descriptors ---- */
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *d = calloc(1, sizeof **d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t dt,
                                         int nb, const int dims[], const int strides[]) {
  if (!d || !dims || !strides) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (nb < 1 || nb > CUDNN_DIM_MAX) return BAD("nbDims out of range");
  for (int i = 0; i < nb; i++)
    if (dims[i] <= 0 || strides[i] <= 0) return BAD("non-positive dimension or stride");
  d->dt = dt;
  d->nb = nb;
  memcpy(d->dims, dims, sizeof(int) * (size_t)nb);
  memcpy(d->strides, strides, sizeof(int) * (size_t)nb);
  d->fmt = CUDNN_TENSOR_NCHW;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d, cudnnTensorFormat_t fmt,
                                           cudnnDataType_t dt, int nb, const int dims[]) {
  if (!d || !dims) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (nb < 3 || nb > CUDNN_DIM_MAX) return BAD("nbDims out of range");
  int st[CUDNN_DIM_MAX];
  if (fmt == CUDNN_TENSOR_NHWC) { /* channels innermost */
    int s = 1;
    st[1] = s;
    s *= dims[1];
    for (int i = nb - 1; i >= 2; i--) {
      st[i] = s;
      s *= dims[i];
    }
    st[0] = s;
  } else {
    int s = 1;
    for (int i = nb - 1; i >= 0; i--) {
      st[i] = s;
      s *= dims[i];
    }
  }
  cudnnStatus_t r = cudnnSetTensorNdDescriptor(d, dt, nb, dims, st);
  if (!r) d->fmt = fmt;
  return r;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t fmt,
                                         cudnnDataType_t dt, int n, int c, int h, int w) {
  int dims[4] = {n, c, h, w};
  return cudnnSetTensorNdDescriptorEx(d, fmt, dt, 4, dims);
}
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int n,
                                           int c, int h, int w, int ns, int cs, int hs, int ws) {
  int dims[4] = {n, c, h, w}, st[4] = {ns, cs, hs, ws};
  return cudnnSetTensorNdDescriptor(d, dt, 4, dims, st);
}
cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d, cudnnDataType_t *dt,
                                         int *n, int *c, int *h, int *w, int *ns, int *cs,
                                         int *hs, int *ws) {
  if (!d || d->nb != 4) return CUDNN_STATUS_BAD_PARAM;
  if (dt) *dt = d->dt;
  if (n) *n = d->dims[0];
  if (c) *c = d->dims[1];
  if (h) *h = d->dims[2];
  if (w) *w = d->dims[3];
  if (ns) *ns = d->strides[0];
  if (cs) *cs = d->strides[1];
  if (hs) *hs = d->strides[2];
  if (ws) *ws = d->strides[3];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int req,
                                         cudnnDataType_t *dt, int *nb, int dims[], int st[]) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (dt) *dt = d->dt;
  if (nb) *nb = d->nb;
  for (int i = 0; i < req && i < d->nb; i++) {
    if (dims) dims[i] = d->dims[i];
    if (st) st[i] = d->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}
size_t cudnnsim_tensor_elems(const struct cudnnTensorStruct *d) {
  size_t n = 1;
  for (int i = 0; i < d->nb; i++) n *= (size_t)d->dims[i];
  return n;
}
static size_t tensor_span(const struct cudnnTensorStruct *d) {
  size_t n = 1;
  for (int i = 0; i < d->nb; i++) n += (size_t)(d->dims[i] - 1) * (size_t)d->strides[i];
  return n;
}
cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t d, size_t *size) {
  if (!d || !size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *size = tensor_span(d) * cudnnsim_dtype_size(d->dt);
  return CUDNN_STATUS_SUCCESS;
}
/* offset of the element with linear (row-major over dims) index i */
static size_t toff(const struct cudnnTensorStruct *d, size_t i) {
  size_t off = 0;
  for (int j = d->nb - 1; j >= 0; j--) {
    off += (i % (size_t)d->dims[j]) * (size_t)d->strides[j];
    i /= (size_t)d->dims[j];
  }
  return off;
}

/* ---- filter descriptors ---- */
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *d = calloc(1, sizeof **d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t fmt, int nb, const int dims[]) {
  if (!d || !dims) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (nb < 3 || nb > CUDNN_DIM_MAX) return BAD("nbDims out of range");
  for (int i = 0; i < nb; i++)
    if (dims[i] <= 0) return BAD("non-positive filter dimension");
  d->dt = dt;
  d->fmt = fmt;
  d->nb = nb;
  memcpy(d->dims, dims, sizeof(int) * (size_t)nb);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t fmt, int k, int c, int h, int w) {
  int dims[4] = {k, c, h, w};
  return cudnnSetFilterNdDescriptor(d, dt, fmt, 4, dims);
}
cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d, cudnnDataType_t *dt,
                                         cudnnTensorFormat_t *fmt, int *k, int *c, int *h,
                                         int *w) {
  if (!d || d->nb != 4) return CUDNN_STATUS_BAD_PARAM;
  if (dt) *dt = d->dt;
  if (fmt) *fmt = d->fmt;
  if (k) *k = d->dims[0];
  if (c) *c = d->dims[1];
  if (h) *h = d->dims[2];
  if (w) *w = d->dims[3];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d, int req,
                                         cudnnDataType_t *dt, cudnnTensorFormat_t *fmt, int *nb,
                                         int dims[]) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (dt) *dt = d->dt;
  if (fmt) *fmt = d->fmt;
  if (nb) *nb = d->nb;
  for (int i = 0; i < req && i < d->nb && dims; i++) dims[i] = d->dims[i];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t d, size_t *size) {
  if (!d || !size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  size_t n = 1;
  for (int i = 0; i < d->nb; i++) n *= (size_t)d->dims[i];
  *size = n * cudnnsim_dtype_size(d->dt);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution descriptors ---- */
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *d = calloc(1, sizeof **d);
  (*d)->groups = 1;
  (*d)->nb = 2;
  for (int i = 0; i < CUDNN_DIM_MAX; i++) (*d)->stride[i] = (*d)->dil[i] = 1;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n,
                                              const int pad[], const int stride[],
                                              const int dil[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t ct) {
  if (!d || !pad || !stride || !dil) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (n < 1 || n > CUDNN_DIM_MAX - 2) return BAD("arrayLength out of range");
  for (int i = 0; i < n; i++)
    if (pad[i] < 0 || stride[i] <= 0 || dil[i] <= 0) return BAD("bad pad/stride/dilation");
  d->nb = n;
  memcpy(d->pad, pad, sizeof(int) * (size_t)n);
  memcpy(d->stride, stride, sizeof(int) * (size_t)n);
  memcpy(d->dil, dil, sizeof(int) * (size_t)n);
  d->mode = mode;
  d->ct = ct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw,
                                              int u, int v, int dh, int dw,
                                              cudnnConvolutionMode_t mode, cudnnDataType_t ct) {
  int pad[2] = {ph, pw}, st[2] = {u, v}, dil[2] = {dh, dw};
  return cudnnSetConvolutionNdDescriptor(d, 2, pad, st, dil, mode, ct);
}
cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t d, int *ph,
                                              int *pw, int *u, int *v, int *dh, int *dw,
                                              cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *ct) {
  if (!d || d->nb != 2) return CUDNN_STATUS_BAD_PARAM;
  if (ph) *ph = d->pad[0];
  if (pw) *pw = d->pad[1];
  if (u) *u = d->stride[0];
  if (v) *v = d->stride[1];
  if (dh) *dh = d->dil[0];
  if (dw) *dw = d->dil[1];
  if (mode) *mode = d->mode;
  if (ct) *ct = d->ct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t d, int req,
                                              int *n, int pad[], int stride[], int dil[],
                                              cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *ct) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (n) *n = d->nb;
  for (int i = 0; i < req && i < d->nb; i++) {
    if (pad) pad[i] = d->pad[i];
    if (stride) stride[i] = d->stride[i];
    if (dil) dil[i] = d->dil[i];
  }
  if (mode) *mode = d->mode;
  if (ct) *ct = d->ct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (g < 1) return BAD("group count < 1");
  d->groups = g;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int *g) {
  if (!d || !g) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *g = d->groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  d->math = m;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t *m) {
  if (!d || !m) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *m = d->math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t d, cudnnReorderType_t r) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  d->reorder = r;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t d, cudnnReorderType_t *r) {
  if (!d || !r) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *r = d->reorder;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t c,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int nb,
                                                    int out[]) {
  if (!c || !x || !w || !out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (x->nb != w->nb || x->nb != c->nb + 2 || nb != x->nb) return BAD("dimension mismatch");
  if (x->dims[1] != w->dims[1] * c->groups) return BAD("input channels != filter C * groups");
  out[0] = x->dims[0];
  out[1] = w->dims[0];
  for (int i = 0; i < c->nb; i++) {
    int ext = c->dil[i] * (w->dims[i + 2] - 1) + 1;
    int o = (x->dims[i + 2] + 2 * c->pad[i] - ext) / c->stride[i] + 1;
    if (o <= 0) return BAD("output dimension <= 0");
    out[i + 2] = o;
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t c,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int *n,
                                                    int *ch, int *h, int *wd) {
  int out[4];
  cudnnStatus_t r = cudnnGetConvolutionNdForwardOutputDim(c, x, w, 4, out);
  if (r) return r;
  if (n) *n = out[0];
  if (ch) *ch = out[1];
  if (h) *h = out[2];
  if (wd) *wd = out[3];
  return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution: geometry, flops, CPU reference ---- */
struct conv_job {
  int dir; /* 0 fwd, 1 bwd data, 2 bwd filter */
  const struct cudnnTensorStruct *x, *y; /* x = input (or dx), y = output (or dy) */
  const struct cudnnFilterStruct *w;
  const struct cudnnConvolutionStruct *c;
  const void *xp, *wp, *yp; /* read operands */
  void *out;
  double alpha, beta;
};
static cudnnStatus_t conv_check(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                                const struct cudnnConvolutionStruct *c,
                                const struct cudnnTensorStruct *y) {
  if (!x || !w || !c || !y) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  int out[CUDNN_DIM_MAX];
  cudnnStatus_t r = cudnnGetConvolutionNdForwardOutputDim((cudnnConvolutionDescriptor_t)c,
      (cudnnTensorDescriptor_t)x, (cudnnFilterDescriptor_t)w, x->nb, out);
  if (r) return r;
  if (y->nb != x->nb) return BAD("output rank mismatch");
  for (int i = 0; i < y->nb; i++)
    if (y->dims[i] != out[i]) return BAD("output tensor dimensions do not match the convolution");
  return CUDNN_STATUS_SUCCESS;
}
static double conv_flops(const struct cudnnTensorStruct *y, const struct cudnnFilterStruct *w) {
  double f = 2.0 * (double)cudnnsim_tensor_elems(y); /* N*K*P*Q */
  for (int i = 1; i < w->nb; i++) f *= w->dims[i];   /* (C/groups)*R*S */
  return f;
}
static size_t woff(const struct cudnnFilterStruct *w, int k, int c, int r, int s) {
  int C = w->dims[1], R = w->dims[2], S = w->dims[3];
  if (w->fmt == CUDNN_TENSOR_NHWC) return (((size_t)k * R + r) * S + s) * C + c;
  return (((size_t)k * C + c) * R + r) * S + s;
}
static size_t xoff4(const struct cudnnTensorStruct *t, int n, int c, int h, int w) {
  return (size_t)n * t->strides[0] + (size_t)c * t->strides[1] + (size_t)h * t->strides[2] +
         (size_t)w * t->strides[3];
}
static void conv_host(void *arg) {
  struct conv_job *j = arg;
  const struct cudnnTensorStruct *x = j->x, *y = j->y;
  const struct cudnnFilterStruct *w = j->w;
  int N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int K = y->dims[1], P = y->dims[2], Q = y->dims[3], R = w->dims[2], S = w->dims[3];
  int G = j->c->groups, Cg = C / G, Kg = K / G;
  int xt = cudnnsim_dtype(x->dt), wt = cudnnsim_dtype(w->dt), yt = cudnnsim_dtype(y->dt);
  size_t nacc = j->dir == 0 ? cudnnsim_tensor_elems(y) : j->dir == 1 ? cudnnsim_tensor_elems(x)
                                                                      : (size_t)K * Cg * R * S;
  double *acc = calloc(nacc, sizeof *acc);
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++) {
      int g = k / Kg;
      for (int p = 0; p < P; p++)
        for (int q = 0; q < Q; q++) {
          size_t yi = (((size_t)n * K + k) * P + p) * Q + q;
          double yv = j->dir != 0 ? simlib_load(j->yp, yt, xoff4(y, n, k, p, q)) : 0;
          double sum = 0;
          for (int c = 0; c < Cg; c++)
            for (int r = 0; r < R; r++) {
              int h = p * j->c->stride[0] - j->c->pad[0] + r * j->c->dil[0];
              if (h < 0 || h >= H) continue;
              for (int s = 0; s < S; s++) {
                int ww = q * j->c->stride[1] - j->c->pad[1] + s * j->c->dil[1];
                if (ww < 0 || ww >= W) continue;
                int rr = j->c->mode == CUDNN_CONVOLUTION ? R - 1 - r : r;
                int ss = j->c->mode == CUDNN_CONVOLUTION ? S - 1 - s : s;
                size_t wi = woff(w, k, c, rr, ss);
                int cc = g * Cg + c;
                if (j->dir == 0)
                  sum += simlib_load(j->xp, xt, xoff4(x, n, cc, h, ww)) * simlib_load(j->wp, wt, wi);
                else if (j->dir == 1)
                  acc[(((size_t)n * C + cc) * H + h) * W + ww] += yv * simlib_load(j->wp, wt, wi);
                else
                  acc[wi] += yv * simlib_load(j->xp, xt, xoff4(x, n, cc, h, ww));
              }
            }
          if (j->dir == 0) acc[yi] = sum;
        }
    }
  if (j->dir == 0) {
    for (int n = 0; n < N; n++)
      for (int k = 0; k < K; k++)
        for (int p = 0; p < P; p++)
          for (int q = 0; q < Q; q++) {
            size_t o = xoff4(y, n, k, p, q);
            double old = j->beta != 0 ? simlib_load(j->out, yt, o) : 0;
            simlib_store(j->out, yt, o, j->alpha * acc[(((size_t)n * K + k) * P + p) * Q + q] + j->beta * old);
          }
  } else if (j->dir == 1) {
    for (int n = 0; n < N; n++)
      for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++)
          for (int ww = 0; ww < W; ww++) {
            size_t o = xoff4(x, n, c, h, ww);
            double old = j->beta != 0 ? simlib_load(j->out, xt, o) : 0;
            simlib_store(j->out, xt, o, j->alpha * acc[(((size_t)n * C + c) * H + h) * W + ww] + j->beta * old);
          }
  } else {
    for (size_t i = 0; i < nacc; i++) {
      double old = j->beta != 0 ? simlib_load(j->out, wt, i) : 0;
      simlib_store(j->out, wt, i, j->alpha * acc[i] + j->beta * old);
    }
  }
  free(acc);
}
static int conv_computable(const struct conv_job *j, double flops) {
  return j->x->nb == 4 && flops <= (double)(1 << 26) && cudnnsim_dtype(j->x->dt) >= 0 &&
         cudnnsim_dtype(j->w->dt) >= 0 && cudnnsim_dtype(j->y->dt) >= 0 && j->xp && j->wp &&
         j->yp && j->out;
}
static double scal(const void *p, cudnnDataType_t dt) {
  return p ? (dt == CUDNN_DATA_DOUBLE ? *(const double *)p : *(const float *)p) : 0;
}

static const char *layout_tag(const struct cudnnTensorStruct *x) {
  return x->nb == 4 && x->strides[1] == 1 ? "nhwckrsc_nhwc" : "nchwkcrs_nchw";
}
static void xmma_name(char *buf, size_t n, const char *pass, const struct cudnnTensorStruct *x,
                      const struct cudnnConvolutionStruct *c) {
  int tc = x->dt != CUDNN_DATA_FLOAT && x->dt != CUDNN_DATA_DOUBLE;
  if (tc)
    snprintf(buf, n, "sm90_xmma_%s_implicit_gemm_%s_%s_tilesize128x128x64_warpgroupsize1x1x1_g%d_"
             "execute_segment_k_off_kernel__5x_cudnn", pass, cudnnsim_xmma_types(x->dt), layout_tag(x),
             c->groups);
  else
    snprintf(buf, n, "sm90_xmma_%s_implicit_gemm_%s_%s_tilesize128x128x16_stage4_warpsize2x2x1_g%d_"
             "ffma_aligna4_alignc4_execute_kernel__5x_cudnn", pass, cudnnsim_xmma_types(x->dt),
             layout_tag(x), c->groups);
}

/* ---- algorithm queries ---- */
static const cudnnConvolutionFwdAlgo_t fwd_algos[] = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
    CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING};
static const cudnnConvolutionBwdDataAlgo_t bwd_data_algos[] = {
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING};
static const cudnnConvolutionBwdFilterAlgo_t bwd_filter_algos[] = {
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3};

static size_t fwd_ws(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                     const struct cudnnTensorStruct *y, int algo) {
  size_t crs = 1;
  for (int i = 1; i < w->nb; i++) crs *= (size_t)w->dims[i];
  size_t pq = cudnnsim_tensor_elems(y) / ((size_t)y->dims[0] * (size_t)y->dims[1]);
  switch (algo) {
  case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
    return (size_t)x->dims[0] * crs * pq * cudnnsim_dtype_size(x->dt);
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return 4096 + crs * 8;
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
    return (cudnnsim_tensor_elems(x) + cudnnsim_tensor_elems(y)) * 2 * cudnnsim_dtype_size(x->dt);
  default: return 0;
  }
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  CHECK_HANDLE(h);
  if (!count) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  CHECK_HANDLE(h);
  if (!count) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  CHECK_HANDLE(h);
  if (!count) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

#define PERF_FILL(arr, algos, nalg, req, ret, flops, wsfn)                                   \
  do {                                                                                       \
    int n_ = 0;                                                                              \
    for (int i_ = 0; i_ < (int)(nalg) && n_ < (req); i_++, n_++) {                           \
      memset(&(arr)[n_], 0, sizeof (arr)[n_]);                                               \
      (arr)[n_].algo = (algos)[i_];                                                          \
      (arr)[n_].status = CUDNN_STATUS_SUCCESS;                                               \
      (arr)[n_].time = (float)((flops) / 4e13 * 1e3 * (1 + 0.35 * i_)) + 0.005f * (i_ + 1);   \
      (arr)[n_].memory = (wsfn);                                                             \
      (arr)[n_].determinism = CUDNN_DETERMINISTIC;                                           \
      (arr)[n_].mathType = CUDNN_DEFAULT_MATH;                                               \
    }                                                                                        \
    *(ret) = n_;                                                                             \
  } while (0)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h,
                                                     const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t c,
                                                     const cudnnTensorDescriptor_t y, const int req,
                                                     int *ret, cudnnConvolutionFwdAlgoPerf_t *perf) {
  CHECK_HANDLE(h);
  if (!ret || !perf) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(x, w, c, y);
  if (r) return r;
  if (req < 1) return BAD("requestedAlgoCount < 1");
  PERF_FILL(perf, fwd_algos, sizeof fwd_algos / sizeof *fwd_algos, req, ret, conv_flops(y, w),
            fwd_ws(x, w, y, fwd_algos[i_]));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx, const int req,
    int *ret, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  CHECK_HANDLE(h);
  if (!ret || !perf) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(dx, w, c, dy);
  if (r) return r;
  if (req < 1) return BAD("requestedAlgoCount < 1");
  PERF_FILL(perf, bwd_data_algos, sizeof bwd_data_algos / sizeof *bwd_data_algos, req, ret,
            conv_flops(dy, w), (size_t)(i_ == 2 ? 1 << 20 : 0));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw, const int req,
    int *ret, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
  CHECK_HANDLE(h);
  if (!ret || !perf) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(x, dw, c, dy);
  if (r) return r;
  if (req < 1) return BAD("requestedAlgoCount < 1");
  PERF_FILL(perf, bwd_filter_algos, sizeof bwd_filter_algos / sizeof *bwd_filter_algos, req, ret,
            conv_flops(dy, dw), (size_t)(i_ == 0 ? 0 : 1 << 20));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h,
                                                      const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t c,
                                                      const cudnnTensorDescriptor_t y,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *size) {
  CHECK_HANDLE(h);
  if (!size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(x, w, c, y);
  if (r) return r;
  if (algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT) return CUDNN_STATUS_NOT_SUPPORTED;
  *size = fwd_ws(x, w, y, algo);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h,
                                                           const cudnnFilterDescriptor_t w,
                                                           const cudnnTensorDescriptor_t dy,
                                                           const cudnnConvolutionDescriptor_t c,
                                                           const cudnnTensorDescriptor_t dx,
                                                           cudnnConvolutionBwdDataAlgo_t algo,
                                                           size_t *size) {
  CHECK_HANDLE(h);
  if (!size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(dx, w, c, dy);
  if (r) return r;
  *size = algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ? 0 : 1 << 20;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h,
                                                             const cudnnTensorDescriptor_t x,
                                                             const cudnnTensorDescriptor_t dy,
                                                             const cudnnConvolutionDescriptor_t c,
                                                             const cudnnFilterDescriptor_t dw,
                                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                                             size_t *size) {
  CHECK_HANDLE(h);
  if (!size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnStatus_t r = conv_check(x, dw, c, dy);
  if (r) return r;
  *size = algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ? 0 : 1 << 20;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution execution ---- */
struct im2col_job {
  const struct cudnnTensorStruct *x;
  const struct cudnnFilterStruct *w;
  const struct cudnnConvolutionStruct *c;
  const struct cudnnTensorStruct *y;
  const void *xp;
  float *col; /* [n][c*R*S][P*Q] */
};
static void im2col_host(void *arg) {
  struct im2col_job *j = arg;
  int N = j->x->dims[0], C = j->x->dims[1], H = j->x->dims[2], W = j->x->dims[3];
  int R = j->w->dims[2], S = j->w->dims[3], P = j->y->dims[2], Q = j->y->dims[3];
  size_t crs = (size_t)C * R * S, pq = (size_t)P * Q;
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
          int rr = j->c->mode == CUDNN_CONVOLUTION ? R - 1 - r : r;
          int ss = j->c->mode == CUDNN_CONVOLUTION ? S - 1 - s : s;
          size_t row = ((size_t)c * R + rr) * S + ss;
          for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
              int h = p * j->c->stride[0] - j->c->pad[0] + r * j->c->dil[0];
              int w = q * j->c->stride[1] - j->c->pad[1] + s * j->c->dil[1];
              float v = h < 0 || h >= H || w < 0 || w >= W
                            ? 0.f
                            : ((const float *)j->xp)[xoff4(j->x, n, c, h, w)];
              j->col[(size_t)n * crs * pq + row * pq + (size_t)p * Q + q] = v;
            }
        }
}

static int packed_nchw(const struct cudnnTensorStruct *t) {
  return t->nb == 4 && t->strides[3] == 1 && t->strides[2] == t->dims[3] &&
         t->strides[1] == t->dims[2] * t->dims[3] && t->strides[0] == t->dims[1] * t->strides[1];
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t xd, const void *x,
                                      const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wss,
                                      const void *beta, const cudnnTensorDescriptor_t yd,
                                      void *y) {
  CHECK_HANDLE(h);
  cudnnStatus_t r = conv_check(xd, wd, cd, yd);
  if (r) return r;
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT || (int)algo < 0 ||
      algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
    return CUDNN_STATUS_NOT_SUPPORTED;
  size_t need = fwd_ws(xd, wd, yd, algo);
  if (wss < need && algo != CUDNN_CONVOLUTION_FWD_ALGO_GEMM) return BAD("workspace too small");
  double flops = conv_flops(yd, wd);
  double bytes = (double)cudnnsim_tensor_elems(xd) * cudnnsim_dtype_size(xd->dt) +
                 (double)cudnnsim_tensor_elems(yd) * cudnnsim_dtype_size(yd->dt) * 2;
  struct conv_job j = {0, xd, yd, wd, cd, x, w, y, y, scal(alpha, xd->dt), scal(beta, xd->dt)};
  int dt = cudnnsim_class(xd->dt);
  unsigned grid = (unsigned)((cudnnsim_tensor_elems(yd) + 16383) / 16384);
  /* GEMM algorithm: im2col + cuBLAS, as a cuBLAS-backed cuDNN algorithm does */
  if (algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM && xd->dt == CUDNN_DATA_FLOAT &&
      wd->dt == CUDNN_DATA_FLOAT && yd->dt == CUDNN_DATA_FLOAT && cd->groups == 1 &&
      xd->nb == 4 && packed_nchw(yd) && wd->fmt == CUDNN_TENSOR_NCHW && blas_ok()) {
    if (!h->blas && BLAS(cublasCreate_v2, create)(&h->blas) != CUBLAS_STATUS_SUCCESS) {
      h->blas = NULL;
      return CUDNN_STATUS_INTERNAL_ERROR;
    }
    BLAS(cublasSetStream_v2, set_stream)(h->blas, h->stream);
    int N = xd->dims[0], K = wd->dims[0];
    int crs = wd->dims[1] * wd->dims[2] * wd->dims[3], pq = yd->dims[2] * yd->dims[3];
    float *col = ws && wss >= need ? ws : NULL, *own = NULL;
    int compute = flops <= (double)(1 << 26) && !simlib_capturing(h->stream);
    if (!col) col = own = compute ? malloc(need ? need : 1) : NULL;
    struct im2col_job ij = {xd, wd, cd, yd, x, col};
    if (cudnnsim_launch(h->stream, "void im2col4d_kernel<float, long>(im2col4d_params, "
                        "cudnnConvolutionStruct, cudnnTensor4dStruct, float const*, float*)",
                        (unsigned)((need / 4 + 511) / 512), 512, 0,
                        (double)cudnnsim_tensor_elems(xd) * 4 + (double)need, SIMCU_DT_FP32,
                        compute && col && x ? im2col_host : NULL, &ij)) {
      free(own);
      return CUDNN_STATUS_EXECUTION_FAILED;
    }
    float fa = (float)j.alpha, fb = (float)j.beta;
    /* y_n (PQ x K, col-major) = col_n (PQ x CRS) * W^T (CRS x K) */
    cublasStatus_t br;
    if (cublasSgemmStridedBatched) /* the PLT call */
      br = cublasSgemmStridedBatched(h->blas, CUBLAS_OP_N, CUBLAS_OP_N, pq, K, crs, &fa,
                                     col ? col : (float *)ws, pq, (long long)crs * pq, w, crs, 0,
                                     &fb, y, pq, (long long)K * pq, N);
    else
      br = blas.sgemm_sb(
        h->blas, CUBLAS_OP_N, CUBLAS_OP_N, pq, K, crs, &fa, col ? col : (float *)ws, pq,
        (long long)crs * pq, w, crs, 0, &fb, y, pq, (long long)K * pq, N);
    free(own);
    return br == CUBLAS_STATUS_SUCCESS ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
  }
  char name[400];
  switch (algo) {
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    snprintf(name, sizeof name, "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, "
             "false, false, true>(int, int, int, float const*, int, float*, float const*, "
             "kernel_conv_params, unsigned long long, int, float, float, int, float const*, "
             "float const*, bool, int, int)");
    break;
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT: case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
    snprintf(name, sizeof name, "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, "
             "int, int, int, int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)");
    break;
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
    snprintf(name, sizeof name, "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"
             "(cudnn::winograd_nonfused::WinogradDataParams<float, float>)");
    break;
  default: xmma_name(name, sizeof name, "fprop", xd, cd);
  }
  int ok = conv_computable(&j, flops);
  if (cudnnsim_launch(h->stream, name, grid, 256, flops, bytes, dt, ok ? conv_host : NULL, &j))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t wd, const void *w,
                                           const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                           size_t wss, const void *beta,
                                           const cudnnTensorDescriptor_t dxd, void *dx) {
  CHECK_HANDLE(h);
  cudnnStatus_t r = conv_check(dxd, wd, cd, dyd);
  if (r) return r;
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if ((int)algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) return CUDNN_STATUS_NOT_SUPPORTED;
  double flops = conv_flops(dyd, wd);
  double bytes = (double)cudnnsim_tensor_elems(dyd) * cudnnsim_dtype_size(dyd->dt) +
                 (double)cudnnsim_tensor_elems(dxd) * cudnnsim_dtype_size(dxd->dt) * 2;
  struct conv_job j = {1, dxd, dyd, wd, cd, NULL, w, dy, dx, scal(alpha, dxd->dt), scal(beta, dxd->dt)};
  j.xp = dx; /* only for the computable check */
  char name[400];
  if (algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0)
    snprintf(name, sizeof name, "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, "
             "int, int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned "
             "long long, int, unsigned long long, int, float, int, int, int)");
  else
    xmma_name(name, sizeof name, "dgrad", dxd, cd);
  int ok = conv_computable(&j, flops);
  if (cudnnsim_launch(h->stream, name, (unsigned)((cudnnsim_tensor_elems(dxd) + 16383) / 16384), 256,
                      flops, bytes, cudnnsim_class(dxd->dt), ok ? conv_host : NULL, &j))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnTensorDescriptor_t dyd, const void *dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws,
                                             size_t wss, const void *beta,
                                             const cudnnFilterDescriptor_t dwd, void *dw) {
  CHECK_HANDLE(h);
  cudnnStatus_t r = conv_check(xd, dwd, cd, dyd);
  if (r) return r;
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if ((int)algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT) return CUDNN_STATUS_NOT_SUPPORTED;
  double flops = conv_flops(dyd, dwd);
  double bytes = (double)cudnnsim_tensor_elems(dyd) * cudnnsim_dtype_size(dyd->dt) +
                 (double)cudnnsim_tensor_elems(xd) * cudnnsim_dtype_size(xd->dt);
  struct conv_job j = {2, xd, dyd, dwd, cd, x, dw, dy, dw, scal(alpha, xd->dt), scal(beta, xd->dt)};
  char name[400];
  if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0)
    snprintf(name, sizeof name, "void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, "
             "512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, "
             "unsigned long long, int, float, int, int, int, int)");
  else
    xmma_name(name, sizeof name, "wgrad", xd, cd);
  int ok = conv_computable(&j, flops);
  if (cudnnsim_launch(h->stream, name, 64, 256, flops, bytes, cudnnsim_class(xd->dt),
                      ok ? conv_host : NULL, &j))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

/* y = act(alpha1 * conv(x, w) + alpha2 * z + bias), one fused kernel */
struct cba_job {
  struct conv_job conv;
  const struct cudnnTensorStruct *zd, *bd;
  const void *z, *bias;
  double alpha2;
  int relu;
  void *y;
};
static void cba_host(void *arg) {
  struct cba_job *j = arg;
  const struct cudnnTensorStruct *yd = j->conv.y;
  size_t span = tensor_span(yd), n = cudnnsim_tensor_elems(yd);
  float *tmp = calloc(span, sizeof *tmp);
  j->conv.out = tmp;
  conv_host(&j->conv);
  int K = yd->dims[1];
  size_t sp = n / ((size_t)yd->dims[0] * (size_t)K);
  int yt = cudnnsim_dtype(yd->dt);
  for (size_t i = 0; i < n; i++) {
    size_t o = toff(yd, i);
    double v = tmp[o];
    if (j->alpha2 != 0 && j->z) v += j->alpha2 * simlib_load(j->z, cudnnsim_dtype(j->zd->dt), toff(j->zd, i));
    if (j->bias) v += simlib_load(j->bias, cudnnsim_dtype(j->bd->dt), toff(j->bd, (i / sp) % (size_t)K));
    if (j->relu && v < 0) v = 0;
    simlib_store(j->y, yt, o, v);
  }
  free(tmp);
}
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wss, const void *alpha2,
    const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t bd,
    const void *bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
    void *y) {
  CHECK_HANDLE(h);
  cudnnStatus_t r = conv_check(xd, wd, cd, yd);
  if (r) return r;
  if (!alpha1 || !alpha2 || !ad || !bd || !zd) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(zd, yd) || bd->nb != yd->nb || bd->dims[1] != yd->dims[1])
    return BAD("z/bias dimensions do not match y");
  if (ad->mode != CUDNN_ACTIVATION_RELU && ad->mode != CUDNN_ACTIVATION_IDENTITY)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (ad->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT || (int)algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
    return CUDNN_STATUS_NOT_SUPPORTED;
  double flops = conv_flops(yd, wd) + 3.0 * (double)cudnnsim_tensor_elems(yd);
  double bytes = (double)cudnnsim_tensor_elems(xd) * cudnnsim_dtype_size(xd->dt) +
                 (double)cudnnsim_tensor_elems(yd) * cudnnsim_dtype_size(yd->dt) * 3;
  struct cba_job j = {{0, xd, yd, wd, cd, x, w, y, y, scal(alpha1, xd->dt), 0}, zd, bd, z, bias,
                      scal(alpha2, xd->dt), ad->mode == CUDNN_ACTIVATION_RELU, y};
  char name[400];
  xmma_name(name, sizeof name, "fprop", xd, cd);
  int ok = conv_computable(&j.conv, flops) && yd->dt == CUDNN_DATA_FLOAT && bias;
  if (cudnnsim_launch(h->stream, name, (unsigned)((cudnnsim_tensor_elems(yd) + 16383) / 16384), 256,
                      flops, bytes, cudnnsim_class(xd->dt), ok ? cba_host : NULL, &j))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

/* Find*: like the real library, runs each candidate algorithm (its kernels) to time it. */
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                   const cudnnFilterDescriptor_t w,
                                                   const cudnnConvolutionDescriptor_t c,
                                                   const cudnnTensorDescriptor_t y, const int req,
                                                   int *ret, cudnnConvolutionFwdAlgoPerf_t *perf) {
  cudnnStatus_t r = cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, req, ret, perf);
  if (r) return r;
  char name[400];
  for (int i = 0; i < *ret; i++) {
    xmma_name(name, sizeof name, "fprop", x, c);
    cudnnsim_launch(h->stream, name, 1, 256, conv_flops(y, w), 0, cudnnsim_class(x->dt), NULL, NULL);
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t h,
                                                     const cudnnTensorDescriptor_t xd, const void *x,
                                                     const cudnnFilterDescriptor_t wd, const void *w,
                                                     const cudnnConvolutionDescriptor_t cd,
                                                     const cudnnTensorDescriptor_t yd, void *y,
                                                     const int req, int *ret,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf, void *ws,
                                                     size_t wss) {
  return cudnnFindConvolutionForwardAlgorithm(h, xd, wd, cd, yd, req, ret, perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t h,
                                                        const cudnnFilterDescriptor_t w,
                                                        const cudnnTensorDescriptor_t dy,
                                                        const cudnnConvolutionDescriptor_t c,
                                                        const cudnnTensorDescriptor_t dx,
                                                        const int req, int *ret,
                                                        cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  cudnnStatus_t r = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, c, dx, req, ret, perf);
  if (r) return r;
  char name[400];
  for (int i = 0; i < *ret; i++) {
    xmma_name(name, sizeof name, "dgrad", dx, c);
    cudnnsim_launch(h->stream, name, 1, 256, conv_flops(dy, w), 0, cudnnsim_class(dx->dt), NULL, NULL);
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const void *w,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
    const cudnnTensorDescriptor_t dxd, void *dx, const int req, int *ret,
    cudnnConvolutionBwdDataAlgoPerf_t *perf, void *ws, size_t wss) {
  return cudnnFindConvolutionBackwardDataAlgorithm(h, wd, dyd, cd, dxd, req, ret, perf);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t h,
                                                          const cudnnTensorDescriptor_t x,
                                                          const cudnnTensorDescriptor_t dy,
                                                          const cudnnConvolutionDescriptor_t c,
                                                          const cudnnFilterDescriptor_t dw,
                                                          const int req, int *ret,
                                                          cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
  cudnnStatus_t r = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, c, dw, req, ret, perf);
  if (r) return r;
  char name[400];
  for (int i = 0; i < *ret; i++) {
    xmma_name(name, sizeof name, "wgrad", x, c);
    cudnnsim_launch(h->stream, name, 1, 256, conv_flops(dy, dw), 0, cudnnsim_class(x->dt), NULL, NULL);
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
    const cudnnFilterDescriptor_t dwd, void *dw, const int req, int *ret,
    cudnnConvolutionBwdFilterAlgoPerf_t *perf, void *ws, size_t wss) {
  return cudnnFindConvolutionBackwardFilterAlgorithm(h, xd, dyd, cd, dwd, req, ret, perf);
}

/* ---- element-wise ops ---- */
struct ew_job {
  int op;
  const struct cudnnTensorStruct *a, *b, *c;
  const void *ap, *bp, *cp;
  void *out;
  const struct cudnnTensorStruct *outd;
  double alpha, beta, coef, swish;
  int mode, algo;
};
enum { EW_ADD, EW_ACT_FWD, EW_ACT_BWD, EW_SOFTMAX_FWD, EW_SOFTMAX_BWD };

static double act(int mode, double x, double coef, double swish) {
  switch (mode) {
  case CUDNN_ACTIVATION_SIGMOID: return 1 / (1 + exp(-x));
  case CUDNN_ACTIVATION_RELU: return x > 0 ? x : 0;
  case CUDNN_ACTIVATION_TANH: return tanh(x);
  case CUDNN_ACTIVATION_CLIPPED_RELU: return x < 0 ? 0 : x > coef ? coef : x;
  case CUDNN_ACTIVATION_ELU: return x > 0 ? x : coef * (exp(x) - 1);
  case CUDNN_ACTIVATION_SWISH: return x / (1 + exp(-swish * x));
  default: return x;
  }
}
static double act_grad(int mode, double x, double y, double coef, double swish) {
  switch (mode) {
  case CUDNN_ACTIVATION_SIGMOID: return y * (1 - y);
  case CUDNN_ACTIVATION_RELU: return x > 0;
  case CUDNN_ACTIVATION_TANH: return 1 - y * y;
  case CUDNN_ACTIVATION_CLIPPED_RELU: return x > 0 && x < coef;
  case CUDNN_ACTIVATION_ELU: return x > 0 ? 1 : y + coef;
  case CUDNN_ACTIVATION_SWISH: {
    double s = 1 / (1 + exp(-swish * x));
    return s + swish * x * s * (1 - s);
  }
  default: return 1;
  }
}

static void ew_host(void *arg) {
  struct ew_job *j = arg;
  const struct cudnnTensorStruct *o = j->outd;
  size_t n = cudnnsim_tensor_elems(o);
  int ot = cudnnsim_dtype(o->dt);
  if (j->op == EW_SOFTMAX_FWD || j->op == EW_SOFTMAX_BWD) {
    /* groups: per image (INSTANCE) or per (n, spatial) over channels (CHANNEL) */
    size_t N = (size_t)o->dims[0], C = (size_t)o->dims[1], sp = n / (N * C);
    int inst = j->mode == CUDNN_SOFTMAX_MODE_INSTANCE;
    size_t groups = inst ? N : N * sp, len = inst ? C * sp : C;
    double *tmp = malloc(len * sizeof *tmp);
    for (size_t g = 0; g < groups; g++) {
      size_t nn = inst ? g : g / sp, s0 = inst ? 0 : g % sp;
#define IDX(i) (inst ? nn * C * sp + (i) : (nn * C + (i)) * sp + s0)
      if (j->op == EW_SOFTMAX_FWD) {
        double mx = -INFINITY, sum = 0;
        for (size_t i = 0; i < len; i++) {
          tmp[i] = simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, IDX(i)));
          if (tmp[i] > mx) mx = tmp[i];
        }
        for (size_t i = 0; i < len; i++) sum += exp(tmp[i] - mx);
        for (size_t i = 0; i < len; i++) {
          double v = j->algo == CUDNN_SOFTMAX_LOG ? tmp[i] - mx - log(sum) : exp(tmp[i] - mx) / sum;
          size_t oo = toff(o, IDX(i));
          double old = j->beta != 0 ? simlib_load(j->out, ot, oo) : 0;
          simlib_store(j->out, ot, oo, j->alpha * v + j->beta * old);
        }
      } else { /* a = y, b = dy */
        double dot = 0;
        for (size_t i = 0; i < len; i++) {
          double yv = simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, IDX(i)));
          double dyv = simlib_load(j->bp, cudnnsim_dtype(j->b->dt), toff(j->b, IDX(i)));
          dot += j->algo == CUDNN_SOFTMAX_LOG ? dyv : yv * dyv;
        }
        for (size_t i = 0; i < len; i++) {
          double yv = simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, IDX(i)));
          double dyv = simlib_load(j->bp, cudnnsim_dtype(j->b->dt), toff(j->b, IDX(i)));
          double v = j->algo == CUDNN_SOFTMAX_LOG ? dyv - exp(yv) * dot : yv * (dyv - dot);
          size_t oo = toff(o, IDX(i));
          double old = j->beta != 0 ? simlib_load(j->out, ot, oo) : 0;
          simlib_store(j->out, ot, oo, j->alpha * v + j->beta * old);
        }
      }
#undef IDX
    }
    free(tmp);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    size_t oo = toff(o, i);
    double old = j->beta != 0 ? simlib_load(j->out, ot, oo) : 0, v = 0;
    if (j->op == EW_ADD) { /* a broadcast over dims of size 1 */
      size_t ai = 0, rem = i, mul = 1;
      for (int d = o->nb - 1; d >= 0; d--) {
        size_t id = rem % (size_t)o->dims[d];
        rem /= (size_t)o->dims[d];
        if (j->a->dims[d] != 1) ai += id * mul;
        mul *= (size_t)j->a->dims[d];
      }
      v = simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, ai));
    } else if (j->op == EW_ACT_FWD) {
      v = act(j->mode, simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, i)), j->coef, j->swish);
    } else { /* a = y, b = dy, c = x */
      double yv = simlib_load(j->ap, cudnnsim_dtype(j->a->dt), toff(j->a, i));
      double dyv = simlib_load(j->bp, cudnnsim_dtype(j->b->dt), toff(j->b, i));
      double xv = simlib_load(j->cp, cudnnsim_dtype(j->c->dt), toff(j->c, i));
      v = dyv * act_grad(j->mode, xv, yv, j->coef, j->swish);
    }
    simlib_store(j->out, ot, oo, j->alpha * v + j->beta * old);
  }
}

static cudnnStatus_t ew_launch(cudnnHandle_t h, struct ew_job *j, const char *name, double flops_per) {
  size_t n = cudnnsim_tensor_elems(j->outd);
  int ok = n <= (1u << 24) && cudnnsim_dtype(j->outd->dt) >= 0 && j->out && j->ap;
  double bytes = (double)n * cudnnsim_dtype_size(j->outd->dt) * (j->op == EW_ACT_BWD ? 4 : 3);
  return cudnnsim_launch(h->stream, name, (unsigned)((n + 1023) / 1024), 128, flops_per * n, bytes,
                         cudnnsim_class(j->outd->dt), ok ? ew_host : NULL, j)
             ? CUDNN_STATUS_EXECUTION_FAILED
             : CUDNN_STATUS_SUCCESS;
}
static int same_dims(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b) {
  if (!a || !b || a->nb != b->nb) return 0;
  for (int i = 0; i < a->nb; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t ad,
                             const void *A, const void *beta, const cudnnTensorDescriptor_t cdsc,
                             void *C) {
  CHECK_HANDLE(h);
  if (!ad || !cdsc || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (ad->nb != cdsc->nb) return BAD("rank mismatch");
  for (int i = 0; i < ad->nb; i++)
    if (ad->dims[i] != 1 && ad->dims[i] != cdsc->dims[i]) return BAD("dims not broadcastable");
  struct ew_job j = {EW_ADD, ad, NULL, NULL, A, NULL, NULL, C, cdsc, scal(alpha, cdsc->dt),
                     scal(beta, cdsc->dt), 0, 0, 0, 0};
  return ew_launch(h, &j, "void op_generic_tensor_kernel<2, float, float, float, 256, "
                   "(cudnnGenericOp_t)0, (cudnnNanPropagation_t)0, (cudnnDimOrder_t)0, 1>("
                   "cudnnTensorStruct, float*, cudnnTensorStruct, float const*, cudnnTensorStruct, "
                   "float const*, float, float, float, float, dimArray, reducedDivisorArray, bool)", 2);
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *d) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *d = calloc(1, sizeof **d);
  (*d)->swish_beta = 1;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t m,
                                           cudnnNanPropagation_t nan, double coef) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  d->mode = m;
  d->nan = nan;
  d->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t *m, cudnnNanPropagation_t *nan,
                                           double *coef) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (m) *m = d->mode;
  if (nan) *nan = d->nan;
  if (coef) *coef = d->coef;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double b) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  d->swish_beta = b;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double *b) {
  if (!d || !b) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *b = d->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}
static const char *act_functor(int mode) {
  switch (mode) {
  case CUDNN_ACTIVATION_SIGMOID: return "Sigmoid";
  case CUDNN_ACTIVATION_RELU: return "Relu";
  case CUDNN_ACTIVATION_TANH: return "Tanh";
  case CUDNN_ACTIVATION_CLIPPED_RELU: return "ClippedRelu";
  case CUDNN_ACTIVATION_ELU: return "Elu";
  case CUDNN_ACTIVATION_SWISH: return "Swish";
  default: return "Identity";
  }
}
cudnnStatus_t cudnnActivationForward(cudnnHandle_t h, cudnnActivationDescriptor_t ad,
                                     const void *alpha, const cudnnTensorDescriptor_t xd,
                                     const void *x, const void *beta,
                                     const cudnnTensorDescriptor_t yd, void *y) {
  CHECK_HANDLE(h);
  if (!ad || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(xd, yd)) return BAD("x and y dims differ");
  struct ew_job j = {EW_ACT_FWD, xd, NULL, NULL, x, NULL, NULL, y, yd, scal(alpha, yd->dt),
                     scal(beta, yd->dt), ad->coef, ad->swish_beta, ad->mode, 0};
  char name[512];
  snprintf(name, sizeof name, "void cudnn::ops::activation_fw_4d_kernel<float, float, 128, 1, 4, "
           "cudnn::ops::%sForward<float>>(cudnnTensorStruct, float const*, cudnnTensorStruct, "
           "float*, float, float, float, float, int)", act_functor(ad->mode));
  return ew_launch(h, &j, name, 1);
}
cudnnStatus_t cudnnActivationBackward(cudnnHandle_t h, cudnnActivationDescriptor_t ad,
                                      const void *alpha, const cudnnTensorDescriptor_t yd,
                                      const void *y, const cudnnTensorDescriptor_t dyd,
                                      const void *dy, const cudnnTensorDescriptor_t xd,
                                      const void *x, const void *beta,
                                      const cudnnTensorDescriptor_t dxd, void *dx) {
  CHECK_HANDLE(h);
  if (!ad || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(yd, dyd) || !same_dims(dyd, dxd) || (xd && !same_dims(xd, dxd)))
    return BAD("tensor dims differ");
  struct ew_job j = {EW_ACT_BWD, yd, dyd, xd ? xd : yd, y, dy, xd ? x : y, dx, dxd, scal(alpha, dxd->dt),
                     scal(beta, dxd->dt), ad->coef, ad->swish_beta, ad->mode, 0};
  char name[512];
  snprintf(name, sizeof name, "void cudnn::ops::activation_bw_4d_kernel<float, float, 128, 1, 4, "
           "cudnn::ops::%sBackward<float>>(cudnnTensorStruct, float const*, cudnnTensorStruct, "
           "float const*, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float, "
           "float, float, float, int)", act_functor(ad->mode));
  if (!j.bp || !j.cp) j.ap = NULL; /* no compute without all inputs */
  return ew_launch(h, &j, name, 2);
}
cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void *alpha,
                                  const cudnnTensorDescriptor_t xd, const void *x,
                                  const void *beta, const cudnnTensorDescriptor_t yd, void *y) {
  CHECK_HANDLE(h);
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(xd, yd) || xd->nb < 2) return BAD("x and y dims differ");
  struct ew_job j = {EW_SOFTMAX_FWD, xd, NULL, NULL, x, NULL, NULL, y, yd, scal(alpha, yd->dt),
                     scal(beta, yd->dt), 0, 0, mode, algo};
  return ew_launch(h, &j, "void cudnn::ops::softmax_fw_kernel<2, float, float, 256, 1, 0, 0>(float*, "
                   "float const*, int, int, float, float, int, int)", 5);
}
cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                   cudnnSoftmaxMode_t mode, const void *alpha,
                                   const cudnnTensorDescriptor_t yd, const void *y,
                                   const cudnnTensorDescriptor_t dyd, const void *dy,
                                   const void *beta, const cudnnTensorDescriptor_t dxd, void *dx) {
  CHECK_HANDLE(h);
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(yd, dyd) || !same_dims(dyd, dxd) || yd->nb < 2) return BAD("tensor dims differ");
  struct ew_job j = {EW_SOFTMAX_BWD, yd, dyd, NULL, y, dy, NULL, dx, dxd, scal(alpha, dxd->dt),
                     scal(beta, dxd->dt), 0, 0, mode, algo};
  if (!dy) j.ap = NULL;
  return ew_launch(h, &j, "void cudnn::ops::softmax_bw_kernel<2, float, float, 256, 1, 0>(float*, "
                   "float const*, float const*, int, int, float, float, int, int)", 4);
}

/* ---- batch normalization ---- */
cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t d,
                                            const cudnnTensorDescriptor_t x,
                                            cudnnBatchNormMode_t mode) {
  if (!d || !x) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  int dims[CUDNN_DIM_MAX];
  dims[0] = 1;
  for (int i = 1; i < x->nb; i++) dims[i] = mode == CUDNN_BATCHNORM_PER_ACTIVATION || i == 1 ? x->dims[i] : 1;
  cudnnDataType_t dt = x->dt == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  return cudnnSetTensorNdDescriptorEx(d, CUDNN_TENSOR_NCHW, dt, x->nb, dims);
}

struct bn_job {
  int phase; /* 0 train, 1 inference, 2 backward */
  int mode;
  const struct cudnnTensorStruct *x, *bn;
  const void *xp, *dyp, *scale, *bias, *mean_in, *var_in;
  void *yp, *dxp, *run_mean, *run_var, *save_mean, *save_inv, *dscale, *dbias;
  double alpha, beta, alpha_p, beta_p, eps, factor;
};
static void bn_host(void *arg) {
  struct bn_job *j = arg;
  const struct cudnnTensorStruct *x = j->x;
  size_t n = cudnnsim_tensor_elems(x), N = (size_t)x->dims[0], C = (size_t)x->dims[1],
         sp = n / (N * C);
  int per_act = j->mode == CUDNN_BATCHNORM_PER_ACTIVATION;
  size_t groups = per_act ? C * sp : C, cnt = n / groups;
  int xt = cudnnsim_dtype(x->dt), pt = cudnnsim_dtype(j->bn->dt);
  for (size_t g = 0; g < groups; g++) {
    /* elements of group g: for nn in N, (c, s) */
    size_t c = per_act ? g / sp : g;
#define EL(t) (per_act ? (t) * C * sp + g : ((t) / sp) * C * sp + c * sp + (t) % sp)
    double mean, var, invstd;
    if (j->phase == 1) {
      mean = simlib_load(j->mean_in, pt, g);
      var = simlib_load(j->var_in, pt, g);
    } else if (j->phase == 2 && j->mean_in && j->var_in) {
      mean = simlib_load(j->mean_in, pt, g);
      double inv = simlib_load(j->var_in, pt, g);
      var = 1 / (inv * inv) - j->eps;
    } else {
      double s = 0, s2 = 0;
      for (size_t t = 0; t < cnt; t++) {
        double v = simlib_load(j->xp, xt, toff(x, EL(t)));
        s += v;
        s2 += v * v;
      }
      mean = s / cnt;
      var = s2 / cnt - mean * mean;
      if (var < 0) var = 0;
    }
    invstd = 1 / sqrt(var + j->eps);
    double sc = simlib_load(j->scale, pt, g);
    if (j->phase <= 1) {
      double bi = simlib_load(j->bias, pt, g);
      for (size_t t = 0; t < cnt; t++) {
        size_t o = toff(x, EL(t));
        double v = sc * (simlib_load(j->xp, xt, o) - mean) * invstd + bi;
        double old = j->beta != 0 ? simlib_load(j->yp, xt, o) : 0;
        simlib_store(j->yp, xt, o, j->alpha * v + j->beta * old);
      }
      if (j->phase == 0) {
        if (j->run_mean)
          simlib_store(j->run_mean, pt, g, (1 - j->factor) * simlib_load(j->run_mean, pt, g) + j->factor * mean);
        if (j->run_var)
          simlib_store(j->run_var, pt, g, (1 - j->factor) * simlib_load(j->run_var, pt, g) +
                                              j->factor * var * cnt / (cnt > 1 ? cnt - 1 : 1));
        if (j->save_mean) simlib_store(j->save_mean, pt, g, mean);
        if (j->save_inv) simlib_store(j->save_inv, pt, g, invstd);
      }
    } else {
      double sdy = 0, sdyx = 0;
      for (size_t t = 0; t < cnt; t++) {
        size_t o = toff(x, EL(t));
        double dy = simlib_load(j->dyp, xt, o), xh = (simlib_load(j->xp, xt, o) - mean) * invstd;
        sdy += dy;
        sdyx += dy * xh;
      }
      for (size_t t = 0; t < cnt; t++) {
        size_t o = toff(x, EL(t));
        double dy = simlib_load(j->dyp, xt, o), xh = (simlib_load(j->xp, xt, o) - mean) * invstd;
        double dx = sc * invstd * (dy - sdy / cnt - xh * sdyx / cnt);
        double old = j->beta != 0 ? simlib_load(j->dxp, xt, o) : 0;
        simlib_store(j->dxp, xt, o, j->alpha * dx + j->beta * old);
      }
      if (j->dscale)
        simlib_store(j->dscale, pt, g, j->alpha_p * sdyx + (j->beta_p != 0 ? j->beta_p * simlib_load(j->dscale, pt, g) : 0));
      if (j->dbias)
        simlib_store(j->dbias, pt, g, j->alpha_p * sdy + (j->beta_p != 0 ? j->beta_p * simlib_load(j->dbias, pt, g) : 0));
    }
#undef EL
  }
}
static cudnnStatus_t bn_launch(cudnnHandle_t h, struct bn_job *j, const char *name, int passes) {
  size_t n = cudnnsim_tensor_elems(j->x);
  int ok = n <= (1u << 24) && cudnnsim_dtype(j->x->dt) >= 0 && j->xp && j->scale &&
           (j->phase == 2 ? j->dxp && j->dyp : j->yp && (j->phase == 0 || (j->bias && j->mean_in && j->var_in))) &&
           (j->phase == 2 || j->bias);
  return cudnnsim_launch(h->stream, name, (unsigned)j->x->dims[1], 512, 8.0 * n,
                         (double)n * cudnnsim_dtype_size(j->x->dt) * passes,
                         cudnnsim_class(j->x->dt), ok ? bn_host : NULL, j)
             ? CUDNN_STATUS_EXECUTION_FAILED
             : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xd, const void *x, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t bnd, const void *scale, const void *bias, double factor,
    void *run_mean, void *run_var, double eps, void *save_mean, void *save_inv) {
  CHECK_HANDLE(h);
  if (!alpha || !beta || !bnd) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(xd, yd)) return BAD("x and y dims differ");
  if (eps < CUDNN_BN_MIN_EPSILON) return BAD("epsilon too small");
  struct bn_job j = {0, mode, xd, bnd, x, NULL, scale, bias, NULL, NULL, y, NULL, run_mean, run_var,
                     save_mean, save_inv, NULL, NULL, scal(alpha, CUDNN_DATA_FLOAT),
                     scal(beta, CUDNN_DATA_FLOAT), 0, 0, eps, factor};
  return bn_launch(h, &j, "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1, 2>("
                   "cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float "
                   "const*, float, float, float*, float*, float*, float*, float, float)", 3);
}
cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xd, const void *x, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t bnd, const void *scale, const void *bias, const void *mean,
    const void *var, double eps) {
  CHECK_HANDLE(h);
  if (!alpha || !beta || !bnd) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(xd, yd)) return BAD("x and y dims differ");
  struct bn_job j = {1, mode, xd, bnd, x, NULL, scale, bias, mean, var, y, NULL, NULL, NULL, NULL,
                     NULL, NULL, NULL, scal(alpha, CUDNN_DATA_FLOAT), scal(beta, CUDNN_DATA_FLOAT),
                     0, 0, eps, 0};
  return bn_launch(h, &j, "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, "
                   "float, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, "
                   "float const*, float const*, float const*, float)", 2);
}
cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *ad, const void *bd, const void *ap,
    const void *bp, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnTensorDescriptor_t dxd,
    void *dx, const cudnnTensorDescriptor_t bnd, const void *scale, void *dscale, void *dbias,
    double eps, const void *saved_mean, const void *saved_inv) {
  CHECK_HANDLE(h);
  if (!ad || !bd || !ap || !bp || !bnd) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!same_dims(xd, dyd) || !same_dims(xd, dxd)) return BAD("tensor dims differ");
  struct bn_job j = {2, mode, xd, bnd, x, dy, scale, NULL, saved_mean, saved_inv, NULL, dx, NULL,
                     NULL, NULL, NULL, dscale, dbias, scal(ad, CUDNN_DATA_FLOAT),
                     scal(bd, CUDNN_DATA_FLOAT), scal(ap, CUDNN_DATA_FLOAT),
                     scal(bp, CUDNN_DATA_FLOAT), eps, 0};
  return bn_launch(h, &j, "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>("
                   "float, float, float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, "
                   "float const*, cudnnTensorStruct, float*, float const*, float*, float*, float "
                   "const*, float const*, float)", 4);
}

/* ---- the Ex forms (PyTorch's cudnn_batch_norm): bnOps CUDNN_BATCHNORM_OPS_BN only (the fused
 * add/activation variants return NOT_SUPPORTED); no workspace or reserve space is needed */
static cudnnStatus_t bn_ex_check(cudnnHandle_t h, cudnnBatchNormOps_t ops, const void *x,
                                 size_t *size) {
  CHECK_HANDLE(h);
  if (!x || !size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (ops != CUDNN_BATCHNORM_OPS_BN) return CUDNN_STATUS_NOT_SUPPORTED;
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t zd,
    const cudnnTensorDescriptor_t yd, const cudnnTensorDescriptor_t bnd,
    const cudnnActivationDescriptor_t ad, size_t *size) {
  return bn_ex_check(h, ops, xd, size);
}
cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t yd,
    const cudnnTensorDescriptor_t dyd, const cudnnTensorDescriptor_t dzd,
    const cudnnTensorDescriptor_t dxd, const cudnnTensorDescriptor_t bnd,
    const cudnnActivationDescriptor_t ad, size_t *size) {
  return bn_ex_check(h, ops, xd, size);
}
cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t xd, size_t *size) {
  return bn_ex_check(h, ops, xd, size);
}
cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void *alpha,
    const void *beta, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t bnd, const void *scale, const void *bias, double factor,
    void *run_mean, void *run_var, double eps, void *save_mean, void *save_inv,
    cudnnActivationDescriptor_t ad, void *ws, size_t wss, void *rs, size_t rss) {
  CHECK_HANDLE(h);
  if (ops != CUDNN_BATCHNORM_OPS_BN) return CUDNN_STATUS_NOT_SUPPORTED;
  return cudnnBatchNormalizationForwardTraining(h, mode, alpha, beta, xd, x, yd, y, bnd, scale,
                                                bias, factor, run_mean, run_var, eps, save_mean,
                                                save_inv);
}
cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void *ad,
    const void *bd, const void *ap, const void *bp, const cudnnTensorDescriptor_t xd,
    const void *x, const cudnnTensorDescriptor_t yd, const void *y,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnTensorDescriptor_t dzd,
    void *dz, const cudnnTensorDescriptor_t dxd, void *dx, const cudnnTensorDescriptor_t bnd,
    const void *scale, const void *bias, void *dscale, void *dbias, double eps,
    const void *saved_mean, const void *saved_inv, cudnnActivationDescriptor_t actd, void *ws,
    size_t wss, void *rs, size_t rss) {
  CHECK_HANDLE(h);
  if (ops != CUDNN_BATCHNORM_OPS_BN) return CUDNN_STATUS_NOT_SUPPORTED;
  return cudnnBatchNormalizationBackward(h, mode, ad, bd, ap, bp, xd, x, dyd, dy, dxd, dx, bnd,
                                         scale, dscale, dbias, eps, saved_mean, saved_inv);
}

/* ---- the backend API's convolutions (cudnn_backend.c) on the CPU reference above ---- */
int cudnnsim_conv_launch(cudaStream_t stream, const char *name, const struct cudnnsim_conv *c,
                         double flops, double bytes, int dtype) {
  struct cudnnTensorStruct x, y;
  struct cudnnFilterStruct w;
  struct cudnnConvolutionStruct cv;
  memset(&x, 0, sizeof x); memset(&y, 0, sizeof y); memset(&w, 0, sizeof w); memset(&cv, 0, sizeof cv);
  int ok = 1;
  x.dt = (cudnnDataType_t)c->xdt; y.dt = (cudnnDataType_t)c->ydt; w.dt = (cudnnDataType_t)c->wdt;
  x.nb = y.nb = w.nb = 4;
  for (int i = 0; i < 4; i++) {
    if (c->xd[i] <= 0 || c->yd[i] <= 0 || c->wd[i] <= 0 || c->xd[i] > INT32_MAX || c->yd[i] > INT32_MAX ||
        c->xs[i] > INT32_MAX || c->ys[i] > INT32_MAX)
      ok = 0;
    x.dims[i] = (int)c->xd[i]; x.strides[i] = (int)c->xs[i];
    y.dims[i] = (int)c->yd[i]; y.strides[i] = (int)c->ys[i];
    w.dims[i] = (int)c->wd[i];
  }
  /* the filter: packed NCHW (KCRS) or packed NHWC (KRSC) only */
  int64_t K = c->wd[0], C = c->wd[1], R = c->wd[2], S = c->wd[3];
  if (c->ws[3] == 1 && c->ws[2] == S && c->ws[1] == R * S && c->ws[0] == C * R * S) w.fmt = CUDNN_TENSOR_NCHW;
  else if (c->ws[1] == 1 && c->ws[3] == C && c->ws[2] == S * C && c->ws[0] == R * S * C) w.fmt = CUDNN_TENSOR_NHWC;
  else ok = 0;
  cv.nb = 2;
  for (int i = 0; i < 2; i++) {
    cv.pad[i] = (int)c->pad[i]; cv.stride[i] = (int)c->stride[i]; cv.dil[i] = (int)c->dil[i];
    if (c->stride[i] < 1 || c->dil[i] < 1 || c->pad[i] < 0) ok = 0;
  }
  cv.mode = (cudnnConvolutionMode_t)c->mode;
  cv.groups = C > 0 && c->xd[1] % C == 0 ? (int)(c->xd[1] / C) : 0;
  if (cv.groups < 1 || K % cv.groups) ok = 0;
  struct conv_job j = {c->dir, &x, &y, &w, &cv, c->x, c->w, c->y, c->out, c->alpha, c->beta};
  if (c->dir == 1) j.xp = c->out; /* only for the computable check, as the legacy call */
  ok = ok && conv_computable(&j, flops);
  unsigned grid = (unsigned)((flops / 2 / 16384) < 1 ? 1 : (flops / 2 / 16384) > 132 * 4 ? 132 * 4 : flops / 2 / 16384);
  return cudnnsim_launch(stream, name, grid, 384, flops, bytes, dtype, ok ? conv_host : NULL, &j);
}
