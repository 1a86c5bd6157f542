/* Internal interface between the files of the simulated libcudnn.so.9. */
#ifndef CUDNN_SIM_H
#define CUDNN_SIM_H
#include <cudnn.h>
int cudnnsim_dtype(cudnnDataType_t t);        /* cudaDataType for simlib_load, -1 if none */
size_t cudnnsim_dtype_size(cudnnDataType_t t);
int cudnnsim_class(cudnnDataType_t t);        /* SIMCU_DT_* */
const char *cudnnsim_xmma_types(cudnnDataType_t t);
int cudnnsim_launch(cudaStream_t stream, const char *name, unsigned grid, unsigned block,
                    double flops, double bytes, int dtype, void (*fn)(void *), void *arg);
cudaStream_t cudnnsim_stream(cudnnHandle_t h);
int cudnnsim_handle_ok(cudnnHandle_t h);
#endif
