/* A plain C program linked with -lcudart (gcc), unaware of any profiler. It makes a known
 * number of runtime calls and prints what they returned; tests compare its output and exit
 * code with and without dlhook, and the counts in the trace with COUNTS below. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void) {
  int n = -1;
  void *p = NULL;
  char host[64] = {0};
  cudaStream_t s = NULL;
  for (int i = 0; i < 3; i++) printf("cudaGetDeviceCount -> %d\n", (int)cudaGetDeviceCount(&n));
  for (int i = 0; i < 2; i++) printf("cudaMalloc -> %d\n", (int)cudaMalloc(&p, 1 << 20));
  printf("cudaMemcpy -> %d\n", (int)cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost));
  printf("cudaMemsetAsync -> %d\n", (int)cudaMemsetAsync(p, 0, 64, 0));
  printf("cudaStreamCreate -> %d\n", (int)cudaStreamCreate(&s));
  for (int i = 0; i < 5; i++) printf("cudaGetLastError -> %d\n", (int)cudaGetLastError());
  printf("cudaFree -> %d\n", (int)cudaFree(p));
  printf("cudaGetErrorString -> %s\n", cudaGetErrorString(cudaErrorInvalidValue));
  int v = 0;
  printf("cudaRuntimeGetVersion -> %d\n", (int)cudaRuntimeGetVersion(&v));
  return 7; /* a distinctive exit code that must survive */
}
