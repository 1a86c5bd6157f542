// Built with `nvcc -cudart shared`: registration and <<<>>> launches go through the nvcc
// entry points (__cudaRegisterFatBinary, __cudaPushCallConfiguration, __cudaLaunchKernel).
#include <cstdio>
__global__ void scale(float *a, float f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= f;
}
int main() {
  float *d = nullptr;
  cudaError_t e = cudaMalloc(&d, 1024 * sizeof(float));
  printf("cudaMalloc -> %d\n", (int)e);
  for (int i = 0; i < 4; i++) scale<<<4, 256>>>(d, 2.0f, 1024);
  e = cudaGetLastError();
  printf("launch -> %d\n", (int)e);
  e = cudaDeviceSynchronize();
  printf("sync -> %d (%s)\n", (int)e, cudaGetErrorString(e));
  cudaFree(d);
  return e == cudaSuccess ? 0 : 3;
}
