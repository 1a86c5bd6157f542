// CUDA graphs without PyTorch (tests/e2e/t_sim_graphs.sh): one graph made by stream capture
// (two kernels, a memset and a device-to-device copy, each issued from a function of its own so
// that their stacks differ), one made with explicit node calls (cudaGraphAddKernelNode,
// cudaGraphAddMemsetNode), both instantiated once and replayed: the capture graph REPLAYS
// times, the explicit one REPLAYS/2 times; eager launches of a third kernel beside them.
// Prints what it did for the checker.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

__global__ void g_scale(float *a, float f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= f;
}
__global__ void g_add(float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}
__global__ void g_eager(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 0;
}

static const int N = 1 << 16;
__attribute__((noinline)) void capture_scale(float *a, cudaStream_t s) {
  g_scale<<<N / 256, 256, 0, s>>>(a, 2.0f, N);
}
__attribute__((noinline)) void capture_add(float *a, const float *b, cudaStream_t s) {
  g_add<<<N / 256, 256, 0, s>>>(a, b, N);
}
__attribute__((noinline)) void capture_clear(float *b, cudaStream_t s) {
  OK(cudaMemsetAsync(b, 0, N * sizeof(float), s));
}
__attribute__((noinline)) void capture_copy(float *dst, const float *src, cudaStream_t s) {
  OK(cudaMemcpyAsync(dst, src, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
}
__attribute__((noinline)) cudaGraph_t build_explicit(float *a) {
  cudaGraph_t g;
  OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t k, m;
  cudaMemsetParams mp = {};
  mp.dst = a; mp.value = 0; mp.elementSize = 1; mp.width = N * sizeof(float); mp.height = 1;
  OK(cudaGraphAddMemsetNode(&m, g, nullptr, 0, &mp));
  float f = 3.0f;
  int n = N;
  void *args[] = {&a, &f, &n};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)g_scale;
  kp.gridDim = dim3(N / 256); kp.blockDim = dim3(256);
  kp.kernelParams = args;
  OK(cudaGraphAddKernelNode(&k, g, &m, 1, &kp));
  return g;
}

int main(int argc, char **argv) {
  int replays = argc > 1 ? atoi(argv[1]) : 100;
  float *a, *b, *c;
  OK(cudaMalloc(&a, N * sizeof(float)));
  OK(cudaMalloc(&b, N * sizeof(float)));
  OK(cudaMalloc(&c, N * sizeof(float)));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  capture_scale(a, s);
  capture_add(a, b, s);
  capture_clear(b, s);
  capture_copy(c, a, s);
  OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge, xe;
  OK(cudaGraphInstantiate(&ge, g, 0));
  cudaGraph_t x = build_explicit(c);
  OK(cudaGraphInstantiate(&xe, x, 0));
  for (int i = 0; i < replays; i++) {
    OK(cudaGraphLaunch(ge, s));
    if (i % 2 == 0) OK(cudaGraphLaunch(xe, s));
    if (i % 10 == 0) g_eager<<<N / 256, 256, 0, s>>>(b, N);
  }
  OK(cudaStreamSynchronize(s));
  OK(cudaGraphExecDestroy(ge));
  OK(cudaGraphExecDestroy(xe));
  OK(cudaGraphDestroy(g));
  OK(cudaGraphDestroy(x));
  printf("replays %d\nexplicit_replays %d\neager %d\n", replays, (replays + 1) / 2, (replays + 9) / 10);
  return 0;
}
