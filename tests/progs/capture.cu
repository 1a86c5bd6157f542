// capture.cu — known calls inside and outside capture windows, for tests/record/.
//   capture seq     NVTX "roi" ranges and cudaProfilerStart/Stop pairs around known calls:
//                   outside: cudaDeviceSynchronize, cudaStreamQuery, kernel k_out;
//                   "roi" #1: 3 cudaMemset + k_in; profiler #1: 2 cudaMemcpy + k_in;
//                   "roi" #2: 3 cudaMemset; profiler #2: 2 cudaMemcpy
//   capture wait    phase 1 (5 cudaDeviceSynchronize), touches phase1, waits for file go1;
//                   phase 2 (3 cudaMemset + k_in), touches phase2, waits for go2;
//                   phase 3 (5 cudaStreamQuery)
//   capture timed [S]  phase 1 at once, phase 2 at 2*S s, phase 3 at 4*S s after main starts
//                   (S: seconds, default 1)
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__global__ void k_in(float *p) { p[threadIdx.x] += 1.0f; }
__global__ void k_out(float *p) { p[threadIdx.x] *= 2.0f; }

static float *d;
static char h[64];

static void outside(void) {
  cudaDeviceSynchronize();
  k_out<<<1, 16>>>(d);
  cudaDeviceSynchronize();
}
static void memsets(int launch) {
  for (int i = 0; i < 3; i++) cudaMemset(d, 0, 64);
  if (launch) k_in<<<1, 16>>>(d);
}
static void copies(int launch) {
  for (int i = 0; i < 2; i++) cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  if (launch) k_in<<<1, 16>>>(d);
}
static void wait_file(const char *f) {
  for (int i = 0; i < 6000 && access(f, F_OK) != 0; i++) usleep(10000);
}
static void touch(const char *f) {
  FILE *o = fopen(f, "w");
  if (o) fclose(o);
}
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void sleep_until(double t) {
  double n = now();
  if (t > n) usleep((useconds_t)((t - n) * 1e6));
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "seq";
  double t0 = now();
  if (cudaMalloc(&d, 4096) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
  if (!strcmp(mode, "seq")) {
    outside();
    nvtxRangePushA("outer");
    nvtxRangePushA("roi");
    memsets(1);
    nvtxRangePop();
    nvtxRangePop();
    cudaProfilerStart();
    copies(1);
    cudaProfilerStop();
    cudaStreamQuery(0);
    cudaStreamQuery(0);
    nvtxRangePushA("roi");
    memsets(0);
    nvtxRangePop();
    cudaProfilerStart();
    copies(0);
    cudaProfilerStop();
    outside();
  } else if (!strcmp(mode, "wait")) {
    for (int i = 0; i < 5; i++) cudaDeviceSynchronize();
    touch("phase1");
    wait_file("go1");
    memsets(1);
    cudaDeviceSynchronize();
    touch("phase2");
    wait_file("go2");
    for (int i = 0; i < 5; i++) cudaStreamQuery(0);
  } else if (!strcmp(mode, "timed")) {
    double s = argc > 2 ? atof(argv[2]) : 1.0;
    if (!(s > 0)) s = 1.0;
    for (int i = 0; i < 5; i++) cudaDeviceSynchronize();
    sleep_until(t0 + 2.0 * s);
    memsets(1);
    cudaDeviceSynchronize();
    sleep_until(t0 + 4.0 * s);
    for (int i = 0; i < 5; i++) cudaStreamQuery(0);
  }
  return 0;
}
