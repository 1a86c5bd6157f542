/* Internal interface between the files of the simulated libcudnn.so.9. */
#ifndef CUDNN_SIM_H
#define CUDNN_SIM_H
#include <stdint.h>
#include <cudnn.h>
int cudnnsim_dtype(cudnnDataType_t t);        /* cudaDataType for simlib_load, -1 if none */
size_t cudnnsim_dtype_size(cudnnDataType_t t);
int cudnnsim_class(cudnnDataType_t t);        /* SIMCU_DT_* */
const char *cudnnsim_xmma_types(cudnnDataType_t t);
int cudnnsim_launch(cudaStream_t stream, const char *name, unsigned grid, unsigned block,
                    double flops, double bytes, int dtype, void (*fn)(void *), void *arg);
cudaStream_t cudnnsim_stream(cudnnHandle_t h);
int cudnnsim_handle_ok(cudnnHandle_t h);

/* A 2-D convolution pass of the backend API (cudnn_backend.c) in the legacy API's terms, so
 * that cudnn.c's CPU reference computes it. Tensors: dims and strides (N,C,H,W; filter K,C,R,S,
 * packed NCHW or NHWC), cudnnDataType_t. dir: 0 forward (out = y), 1 backward data (out = x),
 * 2 backward filter (out = w). */
struct cudnnsim_conv {
  int dir;
  int64_t xd[4], xs[4], wd[4], ws[4], yd[4], ys[4];
  int xdt, wdt, ydt;
  int64_t pad[2], stride[2], dil[2];
  int mode; /* cudnnConvolutionMode_t */
  const void *x, *w, *y;
  void *out;
  double alpha, beta;
};
/* Enqueues the kernel `name` and, when the pass is small and its types are supported, computes
 * its result (at launch, like every simulated library kernel); 0 on success. */
int cudnnsim_conv_launch(cudaStream_t stream, const char *name, const struct cudnnsim_conv *c,
                         double flops, double bytes, int dtype);
#endif
