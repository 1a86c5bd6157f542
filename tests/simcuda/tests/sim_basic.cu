// sim_basic.cu — a self-checking CUDA program (nvcc -cudart shared) for the simulated stack:
// registration and <<<>>> launches, copies of every kind with correct results, synchronising
// calls that really wait, events, streams, graphs, driver entry points, errors, properties.
// Prints "sim_basic: OK" and exits 0, or names the first failed check and exits 1.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "sim_basic: FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define OK(x) CHECK((x) == cudaSuccess)

__global__ void scale(float *a, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= s;
}
__global__ void busy(int *p) { if (p) *p = 1; }
__device__ int dev_var[16];

static double now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

int main() {
  int n = 0;
  OK(cudaGetDeviceCount(&n));
  CHECK(n >= 1);
  cudaDeviceProp prop;
  OK(cudaGetDeviceProperties(&prop, 0));
  // on the simulator, the simulated H100; on a GPU the same program checks only what holds there
  const bool sim = strstr(prop.name, "(simulated)") != NULL;
  if (sim) {
    CHECK(strstr(prop.name, "H100") != NULL);
    CHECK(prop.multiProcessorCount == 132 && prop.major == 9 && prop.minor == 0);
    CHECK(prop.totalGlobalMem > (size_t)79 << 30);
  }
  int v = 0;
  OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
  CHECK(v == prop.multiProcessorCount);
  OK(cudaDriverGetVersion(&v));
  CHECK(v >= 13000);
  OK(cudaRuntimeGetVersion(&v));
  CHECK(v >= 13000);

  // copies of every kind, results checked
  const int N = 1 << 20;
  float *h = (float *)malloc(N * 4), *h2 = (float *)malloc(N * 4), *pin, *d, *d2;
  for (int i = 0; i < N; i++) h[i] = (float)i;
  OK(cudaMalloc(&d, N * 4));
  OK(cudaMalloc(&d2, N * 4));
  OK(cudaMallocHost(&pin, N * 4));
  OK(cudaMemcpy(d, h, N * 4, cudaMemcpyHostToDevice));
  OK(cudaMemcpy(d2, d, N * 4, cudaMemcpyDeviceToDevice));
  OK(cudaMemcpy(pin, d2, N * 4, cudaMemcpyDefault));
  CHECK(memcmp(pin, h, N * 4) == 0);
  OK(cudaMemset(d, 0, N * 4));
  OK(cudaMemcpy(h2, d, N * 4, cudaMemcpyDeviceToHost));
  CHECK(h2[0] == 0 && h2[N - 1] == 0);
  float m2d[4][8];
  for (int i = 0; i < 32; i++) ((float *)m2d)[i] = (float)i;
  size_t pitch = 0;
  float *dp;
  OK(cudaMallocPitch((void **)&dp, &pitch, 8 * 4, 4));
  CHECK(pitch >= 32);
  OK(cudaMemcpy2D(dp, pitch, m2d, 32, 16, 4, cudaMemcpyHostToDevice));
  float back[4][4];
  OK(cudaMemcpy2D(back, 16, dp, pitch, 16, 4, cudaMemcpyDeviceToHost));
  CHECK(back[3][3] == m2d[3][3] && back[2][0] == m2d[2][0]);
  int sym[16];
  for (int i = 0; i < 16; i++) sym[i] = i * 3;
  OK(cudaMemcpyToSymbol(dev_var, sym, sizeof sym));
  int symback[16] = { 0 };
  OK(cudaMemcpyFromSymbol(symback, dev_var, sizeof symback));
  CHECK(symback[15] == 45);

  // launches are asynchronous; synchronising waits for the simulated GPU
  double t0 = now_us();
  for (int i = 0; i < 200; i++) scale<<<N / 256, 256>>>(d, 2.0f, N);
  double t1 = now_us();
  OK(cudaGetLastError());
  OK(cudaDeviceSynchronize());
  double t2 = now_us();
  printf("200 launches: %.0f us, sync: %.0f us\n", t1 - t0, t2 - t1);
  if (sim) CHECK(t2 - t0 >= 200 * 15.0);  // each kernel takes ~15.5 us (3.9 waves of 4 us) on the timeline

  // events time the GPU, not the host
  cudaEvent_t e0, e1;
  OK(cudaEventCreate(&e0));
  OK(cudaEventCreate(&e1));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  OK(cudaEventRecord(e0, s));
  scale<<<1 << 22, 256, 0, s>>>(NULL, 1.0f, 0);  // 2^30 threads: ~15 ms on the timeline
  OK(cudaEventRecord(e1, s));
  CHECK(cudaEventQuery(e1) == cudaErrorNotReady);
  OK(cudaEventSynchronize(e1));
  OK(cudaEventQuery(e1));
  float ms = 0;
  OK(cudaEventElapsedTime(&ms, e0, e1));
  printf("a 2^30-thread kernel: %.3f ms\n", ms);
  CHECK(ms > 0 && ms < 1000);
  if (sim) CHECK(ms > 10 && ms < 30);

  // host functions run when the stream reaches them, without blocking the caller
  static volatile int host_ran = 0;
  static double host_at = 0;
  scale<<<1 << 22, 256, 0, s>>>(NULL, 1.0f, 0);  // ~15 ms
  double h0 = now_us();
  OK(cudaLaunchHostFunc(s, [](void *) { host_at = now_us(); host_ran = 1; }, NULL));
  CHECK(now_us() - h0 < 5000 && host_ran == 0);
  OK(cudaStreamSynchronize(s));
  CHECK(host_ran == 1);
  if (sim) CHECK(host_at - h0 > 10000);

  // cross-stream dependency: s2 waits for s
  cudaStream_t s2;
  OK(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, -1));
  int prio = 0;
  OK(cudaStreamGetPriority(s2, &prio));
  CHECK(prio == -1);
  for (int i = 0; i < 20; i++) scale<<<N / 256, 256, 0, s>>>(d, 1.0f, N);
  OK(cudaEventRecord(e0, s));
  OK(cudaStreamWaitEvent(s2, e0, 0));
  OK(cudaEventRecord(e1, s2));
  OK(cudaEventSynchronize(e1));
  CHECK(cudaStreamQuery(s) == cudaSuccess);  // e1 came after everything on s

  // async copies from pinned memory
  OK(cudaMemcpyAsync(d2, pin, N * 4, cudaMemcpyHostToDevice, s));
  OK(cudaMemsetAsync(d, 1, 16, s));
  OK(cudaStreamSynchronize(s));

  // graphs: capture two kernels and a copy, replay three times
  cudaGraph_t g;
  cudaGraphExec_t ge;
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus cs;
  OK(cudaStreamIsCapturing(s, &cs));
  CHECK(cs == cudaStreamCaptureStatusActive);
  scale<<<4, 256, 0, s>>>(d, 1.0f, 1024);
  busy<<<1, 32, 0, s>>>(NULL);
  OK(cudaMemcpyAsync(h2, d2, 64, cudaMemcpyDeviceToHost, s));
  OK(cudaStreamEndCapture(s, &g));
  size_t nn = 0;
  OK(cudaGraphGetNodes(g, NULL, &nn));
  CHECK(nn == 3);
  OK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 3; i++) OK(cudaGraphLaunch(ge, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaGraphExecDestroy(ge));
  OK(cudaGraphDestroy(g));
  // fork/join capture across two streams through events
  cudaStream_t s3;
  OK(cudaStreamCreate(&s3));
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  busy<<<1, 32, 0, s>>>(NULL);
  OK(cudaEventRecord(e0, s));
  OK(cudaStreamWaitEvent(s3, e0, 0));
  busy<<<2, 32, 0, s3>>>(NULL);
  OK(cudaEventRecord(e1, s3));
  OK(cudaStreamWaitEvent(s, e1, 0));
  busy<<<3, 32, 0, s>>>(NULL);
  OK(cudaStreamEndCapture(s, &g));
  OK(cudaStreamIsCapturing(s3, &cs));
  CHECK(cs == cudaStreamCaptureStatusNone);
  OK(cudaGraphGetNodes(g, NULL, &nn));
  CHECK(nn == 3);
  OK(cudaGraphInstantiate(&ge, g, 0));
  OK(cudaGraphLaunch(ge, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaGraphExecDestroy(ge));
  OK(cudaGraphDestroy(g));
  OK(cudaStreamWaitEvent(s3, e0, 0));  // the event's capture is over: an ordinary wait
  OK(cudaStreamIsCapturing(s3, &cs));
  CHECK(cs == cudaStreamCaptureStatusNone);
  OK(cudaStreamDestroy(s3));

  // launch through cudaLaunchKernel and the per-thread default stream
  void *args[] = { &d, &ms, &n };
  OK(cudaLaunchKernel((const void *)scale, dim3(2), dim3(64), args, 0, cudaStreamPerThread));
  OK(cudaStreamSynchronize(cudaStreamPerThread));
  const char *fname = NULL;
  OK(cudaFuncGetName(&fname, (const void *)scale));
  CHECK(fname && strcmp(fname, "_Z5scalePffi") == 0);

  // driver entry points
  void *fn = NULL;
  cudaDriverEntryPointQueryResult q;
  OK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 12000, cudaEnableDefault, &q));
  CHECK(fn && q == cudaDriverEntryPointSuccess);
  int dv = 0;
  CHECK(((CUresult (*)(int *))fn)(&dv) == CUDA_SUCCESS && dv >= 13000);
  OK(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &q));
  CUdeviceptr dptr = 0;
  CHECK(((CUresult (*)(CUdeviceptr *, size_t))fn)(&dptr, 1024) == CUDA_SUCCESS && dptr);

  // errors
  CHECK(cudaSetDevice(99) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
  CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
  CHECK(cudaMalloc(&d, (size_t)1 << 50) == cudaErrorMemoryAllocation);
  cudaGetLastError();
  CHECK(cudaIpcOpenEventHandle(NULL, cudaIpcEventHandle_t()) == cudaErrorNotSupported);
  cudaGetLastError();

  // a second simulated device (SIMCUDA_DEVICES=2): own context, streams and timeline
  if (n >= 2) {
    OK(cudaSetDevice(1));
    int cur = -1;
    OK(cudaGetDevice(&cur));
    CHECK(cur == 1);
    cudaStream_t s1;
    OK(cudaStreamCreate(&s1));
    int sd = -1;
    OK(cudaStreamGetDevice(s1, &sd));
    CHECK(sd == 1);
    float *d1;
    OK(cudaMalloc(&d1, 4096));
    scale<<<1, 64, 0, s1>>>(d1, 1.0f, 64);
    OK(cudaStreamSynchronize(s1));
    OK(cudaFree(d1));
    OK(cudaStreamDestroy(s1));
    OK(cudaSetDevice(0));
    printf("device 1: OK\n");
  }

  cudaPointerAttributes pa;
  OK(cudaPointerGetAttributes(&pa, d2 + 10));
  CHECK(pa.type == cudaMemoryTypeDevice);
  OK(cudaPointerGetAttributes(&pa, pin));
  CHECK(pa.type == cudaMemoryTypeHost);
  OK(cudaFree(d));
  OK(cudaFree(d2));
  OK(cudaFreeHost(pin));
  OK(cudaStreamDestroy(s));
  OK(cudaStreamDestroy(s2));
  OK(cudaProfilerStart());
  OK(cudaProfilerStop());
  printf("sim_basic: OK\n");
  return 0;
}
