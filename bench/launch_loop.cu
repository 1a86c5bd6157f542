// launch_loop.cu — a launch-heavy loop, the host side of a training step without the math:
// per iteration two <<<>>> kernel launches, one cudaMemcpyAsync (host to device, pinned) and
// one cublasSgemm on a stream, with a cudaStreamSynchronize every SYNC_EVERY iterations so the
// queue stays short. Built with `nvcc -cudart shared` (bench/build.mk) so that the calls go
// through libcudart.so and libcublas.so. Prints the host's issue time per iteration in ns (the
// loop minus the time spent waiting in cudaStreamSynchronize; median of 256 chunks, like
// tight_loop) on the first line; with --stats a second line of key=value figures.
//
//   launch_loop ITERS [--stats]

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNKS 256
#define SYNC_EVERY 64
#define DIM 16

#define CHECK(x)                                                                 \
  do {                                                                           \
    int e_ = (int)(x);                                                           \
    if (e_) {                                                                    \
      fprintf(stderr, "launch_loop: %s failed: %d\n", #x, e_);                   \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

__global__ void scale_kernel(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
__global__ void add_kernel(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long iters = 20000;
  int stats = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stats")) stats = 1;
    else iters = atol(argv[i]);
  }
  const int n = DIM * DIM;
  float *a, *b, *c, *host;
  cudaStream_t s;
  cublasHandle_t h;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMalloc((void **)&a, n * sizeof(float)));
  CHECK(cudaMalloc((void **)&b, n * sizeof(float)));
  CHECK(cudaMalloc((void **)&c, n * sizeof(float)));
  CHECK(cudaMallocHost((void **)&host, n * sizeof(float)));
  for (int i = 0; i < n; i++) host[i] = 1.0f / (1 + i);
  CHECK(cublasCreate(&h));
  CHECK(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;

  // Issue time: the loop minus its cudaStreamSynchronize calls (time the host waits for the
  // simulated GPU is not overhead of the calls; a hook's cost shows in the issue time).
  long per = iters / CHUNKS;
  if (per < SYNC_EVERY) per = SYNC_EVERY;
  double chunk_ns[CHUNKS];
  uint64_t start = now(), sync_total = 0;
  for (int ch = -1; ch < CHUNKS; ch++) {  // chunk -1 warms up
    uint64_t t0 = now(), sync_ns = 0;
    for (long i = 0; i < per; i++) {
      CHECK(cudaMemcpyAsync(a, host, n * sizeof(float), cudaMemcpyHostToDevice, s));
      scale_kernel<<<1, n, 0, s>>>(a, 0.5f, n);
      CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, a, DIM, b, DIM, &zero,
                        c, DIM));
      add_kernel<<<1, n, 0, s>>>(b, c, n);
      if (i % SYNC_EVERY == SYNC_EVERY - 1) {
        uint64_t s0 = now();
        CHECK(cudaStreamSynchronize(s));
        sync_ns += now() - s0;
      }
    }
    uint64_t s0 = now();
    CHECK(cudaStreamSynchronize(s));
    sync_ns += now() - s0;
    if (ch >= 0) {
      chunk_ns[ch] = (double)(now() - t0 - sync_ns) / per;
      sync_total += sync_ns;
    }
    if (ch == -1) start = now();
  }
  uint64_t wall = now() - start;
  qsort(chunk_ns, CHUNKS, sizeof chunk_ns[0], cmp_d);
  printf("%.1f\n", (chunk_ns[CHUNKS / 2 - 1] + chunk_ns[CHUNKS / 2]) / 2);
  if (stats)
    printf("iters=%ld all_iters=%ld wall_ns=%llu sync_ns=%llu min_chunk_ns=%.1f\n",
           per * CHUNKS, per * (CHUNKS + 1), (unsigned long long)wall,
           (unsigned long long)sync_total, chunk_ns[0]);
  cublasDestroy(h);
  cudaFreeHost(host);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(s);
  return 0;
}
