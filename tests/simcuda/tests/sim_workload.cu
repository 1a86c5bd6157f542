// sim_workload.cu — a small CUDA program with known calls for the CUPTI checks
// (cuptitool_inj.c): launches on three streams, copies, memsets, syncs, a graph replay.
// Prints what it did ("launches N", "graph_kernels N") for the checker.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

__global__ void fill(float *a, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = v;
}
__global__ void step(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += 1.0f;
}

#define OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

int main() {
  const int N = 1 << 18;
  float *d, *h;
  OK(cudaMalloc(&d, N * sizeof(float)));
  OK(cudaMallocHost(&h, N * sizeof(float)));
  cudaStream_t s[2];
  OK(cudaStreamCreate(&s[0]));
  OK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
  int launches = 0;
  fill<<<N / 128, 128>>>(d, 1.0f, N); launches++;
  OK(cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 10; i++) { step<<<N / 256, 256, 0, s[i & 1]>>>(d, N); launches++; }
  OK(cudaMemcpyAsync(d, h, N * sizeof(float), cudaMemcpyHostToDevice, s[0]));
  OK(cudaMemsetAsync(d, 0, 4096, s[1]));
  OK(cudaStreamSynchronize(s[0]));
  cudaEvent_t ev;
  OK(cudaEventCreate(&ev));
  OK(cudaEventRecord(ev, s[0]));
  OK(cudaStreamWaitEvent(s[1], ev, 0));
  step<<<2, 64, 0, s[1]>>>(d, 128); launches++;
  OK(cudaEventSynchronize(ev));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  OK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
  step<<<4, 32, 0, s[0]>>>(d, 128);
  step<<<8, 32, 0, s[0]>>>(d, 256);
  OK(cudaStreamEndCapture(s[0], &g));
  OK(cudaGraphInstantiate(&ge, g, 0));
  OK(cudaGraphLaunch(ge, s[0]));
  OK(cudaGraphLaunch(ge, s[0]));
  OK(cudaDeviceSynchronize());
  OK(cudaFree(d));
  OK(cudaFreeHost(h));
  printf("launches %d\ngraph_kernels %d\n", launches, 4);
  return 0;
}
