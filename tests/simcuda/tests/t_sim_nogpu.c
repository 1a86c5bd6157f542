/* t_sim_nogpu.c — SIMCUDA_DEVICES=0 simulates a machine with the CUDA libraries but no GPU:
 * device queries report none, every call that needs a device fails (cudaErrorNoDevice,
 * CUDA_ERROR_NO_DEVICE / NOT_INITIALIZED), cuptiSubscribe returns CUPTI_ERROR_UNKNOWN, and
 * version and error-string queries still work. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define CHECK(c) do { if (!(c)) { fails++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

int main(void) {
  setenv("SIMCUDA_DEVICES", "0", 1);
  int n = 5, v = 0;
  CHECK(cudaGetDeviceCount(&n) == cudaErrorNoDevice && n == 0);
  CHECK(cudaGetLastError() == cudaErrorNoDevice);
  CHECK(cudaRuntimeGetVersion(&v) == cudaSuccess && v >= 13000);
  CHECK(cudaDriverGetVersion(&v) == cudaSuccess && v >= 13000);
  void *d = NULL;
  CHECK(cudaMalloc(&d, 16) == cudaErrorNoDevice);
  CHECK(strcmp(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected") == 0);
  CHECK(cuInit(0) == CUDA_ERROR_NO_DEVICE);
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED);
  CUpti_SubscriberHandle sub;
  CHECK(cuptiSubscribe(&sub, NULL, NULL) == CUPTI_ERROR_UNKNOWN);
  printf(fails ? "t_sim_nogpu: FAILED\n" : "t_sim_nogpu: OK\n");
  return fails ? 1 : 0;
}
