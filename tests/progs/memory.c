/* memory.c — device allocations of known sizes for the GPU memory ledger tests (tests/record/):
 *   a = 1 MiB, b = 2 MiB, leak_buffer(): 3 MiB never freed, free a, c = 4 MiB (cudaMallocAsync;
 *   peak 9 MiB), free c, a failed allocation (cudaErrorMemoryAllocation; live then: b and the
 *   leak, 5 MiB), free b, then 5 MiB through the driver API (cuMemAlloc_v2 / cuMemFree_v2, found
 *   with dlsym: seen through CUPTI). At exit: one leak of 3 MiB allocated by leak_buffer.
 * `memory churn N` instead makes N allocations (cudaMallocAsync) from three functions (weights,
 * activations, workspace) in phases that grow and shrink live memory, each freed (cudaFreeAsync)
 * within 256 allocations, nothing live at exit: the report's memory timeline at scale. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024u * 1024u)

__attribute__((noinline)) void *leak_buffer(size_t bytes) {
  void *p = NULL;
  if (cudaMalloc(&p, bytes) != cudaSuccess) fprintf(stderr, "leak_buffer: cudaMalloc failed\n");
  __asm__ volatile("" ::: "memory"); /* not a tail call: leak_buffer stays on the stack */
  return p;
}

__attribute__((noinline)) static void *weights(size_t bytes) {
  void *p = NULL;
  cudaMallocAsync(&p, bytes, 0);
  __asm__ volatile("" ::: "memory");
  return p;
}
__attribute__((noinline)) static void *activations(size_t bytes) {
  void *p = NULL;
  cudaMallocAsync(&p, bytes, 0);
  __asm__ volatile("" ::: "memory");
  return p;
}
__attribute__((noinline)) static void *workspace(size_t bytes) {
  void *p = NULL;
  cudaMallocAsync(&p, bytes, 0);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* N allocations; live: a ring of up to 256 whose fill follows slow waves over the run. */
static int churn(long n) {
  static void *ring[256];
  long head = 0, tail = 0;
  for (long i = 0; i < n; i++) {
    long ph = (long)((i * 8 * 400LL / (n ? n : 1)) % 400); /* 8 triangle waves over the run */
    long want = 16 + (ph < 200 ? ph : 400 - ph);
    while (head - tail >= want || head - tail >= 256) {
      cudaFreeAsync(ring[tail % 256], 0);
      tail++;
    }
    size_t sz = 4096u << (i % 5);
    ring[head % 256] = i % 7 == 0 ? weights(sz * 8) : i % 3 == 0 ? workspace(sz) : activations(sz * 2);
    head++;
  }
  while (tail < head) cudaFreeAsync(ring[tail++ % 256], 0);
  cudaStreamSynchronize(0);
  printf("churn: %ld allocations\n", n);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "churn")) return churn(atol(argv[2]));
  void *a = NULL, *b = NULL, *c = NULL, *huge = NULL;
  if (cudaMalloc(&a, 1 * MiB) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
  cudaMalloc(&b, 2 * MiB);
  void *leaked = leak_buffer(3 * MiB);
  cudaFree(a);
  cudaMallocAsync(&c, 4 * MiB, 0);
  cudaStreamSynchronize(0);
  cudaFreeAsync(c, 0);
  cudaStreamSynchronize(0);
  cudaError_t e = cudaMalloc(&huge, (size_t)1 << 50); /* out of memory */
  cudaFree(b);
  void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  int (*alloc)(unsigned long long *, size_t) = drv ? (int (*)(unsigned long long *, size_t))dlsym(drv, "cuMemAlloc_v2") : NULL;
  int (*release)(unsigned long long) = drv ? (int (*)(unsigned long long))dlsym(drv, "cuMemFree_v2") : NULL;
  unsigned long long dp = 0;
  if (alloc && release && alloc(&dp, 5 * MiB) == 0) release(dp);
  printf("leaked %p, huge allocation: %s\n", leaked, cudaGetErrorName(e));
  return 0;
}
