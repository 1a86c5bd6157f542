// advise_gpu.cu — planted GPU-side causes for tests/advise/: `advise_gpu MODE`, MODE one of
//   launch     1,000 tiny kernels per step, one by one, each after ~10 us of host work (what a
//              framework spends per operator; launch-bound, at PLANT-LAUNCH)
//   fused      the same host work, then all of the step's work as one kernel (tuned launch)
//   occupancy  kernels whose shared memory per block leaves one small block per SM
//              (low-occupancy, at PLANT-OCCUPANCY)
//   occupied   the same work in full blocks without the shared memory (tuned occupancy)
//   sgemm      float32 GEMMs on a handle in the default math mode (no-tensor-cores, PLANT-SGEMM)
//   tf32       the same GEMMs with CUBLAS_TF32_TENSOR_OP_MATH (tuned)
//   memory     92 % of the device's memory allocated, then the loop (memory-near-capacity,
//              at PLANT-MEMORY)
//   headroom   the same loop with 50 % allocated (tuned)
// Every mode runs STEPS steps, each ending in one cudaStreamSynchronize.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define STEPS 10

__global__ void tiny(float *d, int i) { d[threadIdx.x] += (float)i; }
__global__ void many(float *d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += 1.0f;
}
__global__ void staged(float *d, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? d[i] : 0.0f;
  __syncthreads();
  if (i < n) d[i] = buf[threadIdx.x] * 2.0f;
}

/* ~10 us of host work (a framework's per-operator overhead) */
static double host_work(int i) {
  volatile double a = i;
  for (int k = 0; k < 3000; k++) a = a * 1.0000001 + 0.5;
  return a;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fused";
  float *d = NULL;
  if (cudaMalloc(&d, 64 << 20) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  void *big = NULL;
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  if (!strcmp(mode, "memory")) cudaMalloc(&big, total_b / 100 * 92); /* PLANT-MEMORY */
  if (!strcmp(mode, "headroom")) cudaMalloc(&big, total_b / 2);
  cudaFuncSetAttribute(staged, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10);
  cublasHandle_t h = NULL;
  int gemm = !strcmp(mode, "sgemm") || !strcmp(mode, "tf32");
  if (gemm) {
    cublasCreate(&h);
    if (!strcmp(mode, "tf32")) cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
  }
  const float one = 1.0f, zero = 0.0f;
  const int n = 2048;
  for (int s = 0; s < STEPS; s++) {
    if (!strcmp(mode, "launch"))
      for (int i = 0; i < 1000; i++) {
        host_work(i);
        tiny<<<1, 32>>>(d, i); /* PLANT-LAUNCH */
      }
    if (!strcmp(mode, "fused"))
      for (int i = 0; i < 1000; i++) host_work(i);
    if (!strcmp(mode, "fused") || !strcmp(mode, "memory") || !strcmp(mode, "headroom"))
      many<<<1000, 32>>>(d, 32000);
    if (!strcmp(mode, "occupancy"))
      for (int i = 0; i < 20; i++)
        staged<<<132 * 40, 128, 200 << 10>>>(d, 132 * 40 * 128); /* PLANT-OCCUPANCY */
    if (!strcmp(mode, "occupied"))
      for (int i = 0; i < 20; i++) staged<<<132 * 10, 512, 512 * sizeof(float)>>>(d, 132 * 40 * 128);
    if (gemm)
      for (int i = 0; i < 4; i++)
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, d, n, d, n, &zero, d, n); /* PLANT-SGEMM */
    cudaStreamSynchronize(0);
  }
  if (h) cublasDestroy(h);
  if (big) cudaFree(big);
  cudaFree(d);
  printf("%s done\n", mode);
  return 0;
}
