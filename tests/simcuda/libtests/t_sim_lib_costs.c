/* The simulator's cost model, measured as a user measures a GPU: device time between two CUDA
 * events around GEMMs (cublasGemmEx by data type and size), copies (pinned and pageable host
 * memory, device to device), a memset, and NCCL all-reduces over 2 devices by message size
 * (bus bandwidth as nccl-tests reports it), plus the host time of a launch and of a synchronize.
 * Prints the table of docs/simulator.md ("Cost model") and checks each figure against the range
 * written there, which holds the published H100 SXM figures the model follows. On a GPU the same
 * program prints the GPU's own figures (the checks then say how far the model is from it). */
#include <stdint.h>
#include <time.h>
#include <cublas_v2.h>
#include <nccl.h>
#include "simtest.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static cudaEvent_t e0, e1;
static void start(cudaStream_t s) { cudaEventRecord(e0, s); }
/* device milliseconds since start() */
static double stop(cudaStream_t s) {
  float ms = 0;
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  cudaEventElapsedTime(&ms, e0, e1);
  return ms;
}

static void expect(const char *what, double got, double lo, double hi, const char *unit) {
  int ok = got >= lo && got <= hi;
  printf("| %-34s | %10.1f %-7s | %s [%g, %g] |\n", what, got, unit, ok ? "ok " : "OFF", lo, hi);
  CHECK(ok, "%s: %.2f %s outside [%g, %g]", what, got, unit, lo, hi);
}

static void gemms(cublasHandle_t h, cudaStream_t s) {
  struct { const char *name; cudaDataType_t t; cublasComputeType_t c; double peak; } ty[] = {
      {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 67},
      {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 495},
      {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 990},
      {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 990},
  };
  const int sizes[] = {512, 2048, 8192};
  void *a, *b, *c;
  size_t big = (size_t)8192 * 8192 * 4;
  OK(cudaMalloc(&a, big));
  OK(cudaMalloc(&b, big));
  OK(cudaMalloc(&c, big));
  float one = 1, zero = 0;
  for (size_t i = 0; i < sizeof ty / sizeof ty[0]; i++)
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
      int n = sizes[j];
      start(s);
      for (int r = 0; r < 4; r++)
        OK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, ty[i].t, n, b, ty[i].t, n,
                        &zero, c, ty[i].t, n, ty[i].c, CUBLAS_GEMM_DEFAULT));
      double ms = stop(s) / 4;
      double tflops = 2.0 * n * n * n / (ms * 1e-3) / 1e12;
      char what[64];
      snprintf(what, sizeof what, "GEMM %s %dx%dx%d", ty[i].name, n, n, n);
      /* large: 60-75 % of the dense peak; small ones are below by wave quantization and
       * launch floors, so only an upper bound */
      expect(what, tflops, n >= 8192 ? 0.6 * ty[i].peak : 0.0, 0.75 * ty[i].peak, "TFLOP/s");
    }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

static void copies(cudaStream_t s) {
  size_t n = (size_t)256 << 20;
  void *d, *d2, *pinned, *pageable = malloc(n);
  OK(cudaMalloc(&d, n));
  OK(cudaMalloc(&d2, n));
  OK(cudaMallocHost(&pinned, n));
  struct { const char *what; void *dst; const void *src; enum cudaMemcpyKind k; double lo, hi; } c[] = {
      {"copy H2D pinned 256 MiB", d, pinned, cudaMemcpyHostToDevice, 45, 55},
      {"copy D2H pinned 256 MiB", pinned, d, cudaMemcpyDeviceToHost, 45, 55},
      /* the device copy runs at 12 GB/s; the host's staging copy (the call returns after
       * it, as CUDA's does) may be slower on a busy machine */
      {"copy H2D pageable 256 MiB", d, pageable, cudaMemcpyHostToDevice, 2, 13},
      {"copy D2D 256 MiB", d2, d, cudaMemcpyDeviceToDevice, 1200, 1700},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    OK(cudaMemcpyAsync(c[i].dst, c[i].src, n, c[i].k, s)); /* first touch of the pages */
    OK(cudaStreamSynchronize(s));
    start(s);
    OK(cudaMemcpyAsync(c[i].dst, c[i].src, n, c[i].k, s));
    expect(c[i].what, (double)n / (stop(s) * 1e-3) / 1e9, c[i].lo, c[i].hi, "GB/s");
  }
  start(s);
  OK(cudaMemsetAsync(d, 0, n, s));
  expect("memset 256 MiB", (double)n / (stop(s) * 1e-3) / 1e9, 2000, 3400, "GB/s");
  /* host side: an asynchronous launch returns in microseconds; a synchronize on an idle
   * stream too */
  double t0 = now_us();
  for (int i = 0; i < 100; i++) OK(cudaMemsetAsync(d, 0, 256, s));
  double launch = (now_us() - t0) / 100;
  OK(cudaStreamSynchronize(s));
  t0 = now_us();
  for (int i = 0; i < 100; i++) OK(cudaStreamSynchronize(s));
  expect("host: memset launch", launch, 0, 50, "us");
  expect("host: idle stream synchronize", (now_us() - t0) / 100, 0, 50, "us");
  cudaFree(d);
  cudaFree(d2);
  cudaFreeHost(pinned);
  free(pageable);
}

/* all-reduce over 2 devices of this process: busbw = algbw * 2 (n - 1) / n */
static void allreduce(void) {
  ncclComm_t comms[2];
  int devs[2] = {0, 1}, ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
    printf("| all-reduce: fewer than 2 devices, left out |\n");
    return;
  }
  if (ncclCommInitAll(comms, 2, devs) != ncclSuccess) {
    CHECK(0, "ncclCommInitAll");
    return;
  }
  size_t max = (size_t)256 << 20;
  void *buf[2];
  cudaStream_t st[2];
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    OK(cudaMalloc(&buf[r], max));
    OK(cudaStreamCreate(&st[r]));
  }
  const size_t sizes[] = {4, 65536, (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t bytes = sizes[i];
    double ms = 0;
    for (int it = 0; it < 6; it++) { /* the first one warms up, as nccl-tests does */
      cudaSetDevice(0);
      start(st[0]);
      ncclGroupStart();
      for (int r = 0; r < 2; r++)
        ncclAllReduce(buf[r], buf[r], bytes / 4 ? bytes / 4 : 1, ncclFloat, ncclSum, comms[r], st[r]);
      ncclGroupEnd();
      cudaSetDevice(0);
      double t = stop(st[0]);
      cudaSetDevice(1);
      cudaStreamSynchronize(st[1]);
      if (it) ms += t / 5;
    }
    char what[64];
    snprintf(what, sizeof what, "all-reduce 2 GPUs %zu B", bytes);
    double busbw = (double)bytes / (ms * 1e-3) / 1e9 * 2 * (2 - 1) / 2;
    /* large messages reach the NVLink bus bandwidth; small ones are latency-bound */
    if (bytes >= ((size_t)256 << 20)) expect(what, busbw, 300, 400, "GB/s");
    else if (bytes <= 4) expect(what, ms * 1e3, 4, 30, "us");
    else expect(what, busbw, 0, 400, "GB/s");
  }
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaFree(buf[r]);
    ncclCommDestroy(comms[r]);
  }
  cudaSetDevice(0);
}

int main(int argc, char **argv) {
  setenv("SIMCUDA_NUMERICS", "off", 1); /* timing only: nothing computed on the host */
  setenv("SIMCUDA_DEVICES", "2", 0);
  simtest_init(argc, argv);
  OK(cudaEventCreate(&e0));
  OK(cudaEventCreate(&e1));
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  cublasHandle_t h;
  OK(cublasCreate(&h));
  OK(cublasSetStream(h, s));
  printf("| measured | value | expected range |\n|---|---|---|\n");
  gemms(h, s);
  copies(s);
  allreduce();
  cublasDestroy(h);
  return simtest_done("t_sim_lib_costs");
}
