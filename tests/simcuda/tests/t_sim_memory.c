/* t_sim_memory.c — the simulator frees what a long run leaves behind: 200k kernel launches,
 * copies and event records with CUPTI activity on grow the resident set by little. */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName,
                                   int thread_limit, void *tid, void *bid, void *bDim, void *gDim, int *wSize);
static void stub(void) {}

static long rss_kb(void) {
  long pages = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
  if (f) fclose(f);
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}
static long records;
static void CUPTIAPI req(uint8_t **b, size_t *sz, size_t *mx) { *sz = 1 << 20; *b = aligned_alloc(8, *sz); *mx = 0; }
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) records++;
  free(b);
}

static void run(int n, cudaStream_t s, cudaEvent_t ev, void *d, void *h) {
  void *args[1] = { 0 };
  for (int i = 0; i < n; i++) {
    cudaLaunchKernel((const void *)stub, (dim3){ 1, 1, 1 }, (dim3){ 32, 1, 1 }, args, 0, s);
    if (i % 100 == 0) {
      cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, s);
      cudaEventRecord(ev, s);
    }
    if (i % 1000 == 999) cudaStreamSynchronize(s);
  }
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(0);
}

int main(void) {
  static char fat[16];
  void **h = __cudaRegisterFatBinary(fat);
  __cudaRegisterFunction(h, (const char *)stub, (char *)"_Z4stubv", "_Z4stubv", -1, 0, 0, 0, 0, 0);
  cuptiActivityRegisterCallbacks(req, done);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cudaStream_t s;
  cudaEvent_t ev;
  void *d, *hb;
  cudaStreamCreate(&s);
  cudaEventCreate(&ev);
  cudaMalloc(&d, 4096);
  cudaMallocHost(&hb, 4096);
  run(20000, s, ev, d, hb); /* warm-up: allocator pools, buffers */
  long before = rss_kb();
  run(200000, s, ev, d, hb);
  long after = rss_kb();
  printf("rss %ld -> %ld kB, %ld records\n", before, after, records);
  int ok = after - before < 8 * 1024 && records > 400000;
  printf(ok ? "t_sim_memory: OK\n" : "t_sim_memory: FAILED\n");
  return ok ? 0 : 1;
}
