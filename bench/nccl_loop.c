/* nccl_loop.c — host time of an NCCL collective call (bench/nccl-bench): N ungrouped
 * ncclAllReduce calls of one float on a one-rank communicator, each timed on its own (the
 * stream is synchronized every 64 calls, outside the timed part, so that the GPU's launch
 * queue never makes a call wait). Prints "ns_per_call X" (the mean).
 * `nccl_loop plugin N`: the profiler plugin's calls alone, as NCCL makes them for N
 * collectives on two channels (Coll start and stop on the calling thread; per channel a
 * KernelCh start, KernelChStop state and stop, which NCCL's proxy thread makes), through the
 * ncclProfiler_v5 of the preloaded libdlhook.so (plugin_loop). */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <string.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "dlh_ncclprof.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The plugin's calls for n collectives, in chunks of 256 (each followed by an untimed 2 ms
 * pause in which the writer drains: collectives come microseconds apart at the least, a loop
 * of plugin calls alone would outrun the writer); the median chunk's ns per collective of the
 * calling thread's part (Coll start and stop) and of the proxy thread's (two KernelCh). */
static int plugin_loop(int n) {
  const dlh_ncclp_v5 *p = dlsym(RTLD_DEFAULT, "ncclProfiler_v5");
  void *ctx = NULL, *h, *k[2];
  int mask = 0;
  if (!p || p->init(&ctx, 42, &mask, "bench", 1, 2, 0, NULL) != 0 || !ctx) {
    fprintf(stderr, "nccl_loop: no ncclProfiler_v5 (run under libdlhook.so)\n");
    return 1;
  }
  enum { CHUNK = 256 };
  int nchunks = n / CHUNK > 0 ? n / CHUNK : 1;
  double *call = calloc((size_t)nchunks, sizeof *call), *proxy = calloc((size_t)nchunks, sizeof *proxy);
  dlh_ncclp_descr_v5 d;
  dlh_ncclp_state_args a;
  uint64_t seq = 0;
  for (int c = -2; c < nchunks; c++) { /* two chunks of warm-up */
    double tc = 0, tp = 0;
    for (int i = 0; i < CHUNK; i++) {
      memset(&d, 0, sizeof d);
      d.type = DLH_NCCLP_COLL;
      d.coll.c.seq = seq++;
      d.coll.c.func = "AllReduce";
      d.coll.c.count = 1;
      d.coll.c.datatype = "ncclFloat32";
      d.coll.c.nchannels = 2;
      d.coll.c.nwarps = 20;
      d.coll.c.algo = "RING";
      d.coll.c.proto = "LL";
      double t0 = now_ns();
      p->start_event(ctx, &h, &d);
      p->stop_event(h);
      double t1 = now_ns();
      for (int ch = 0; ch < 2; ch++) {
        memset(&d, 0, sizeof d);
        d.type = DLH_NCCLP_KERNEL_CH;
        d.parent = h;
        d.kernel_ch.channel = (uint8_t)ch;
        d.kernel_ch.ptimer = (uint64_t)t1;
        p->start_event(ctx, &k[ch], &d);
        a.kernel_ch.ptimer = d.kernel_ch.ptimer + 1000;
        p->record_state(k[ch], DLH_NCCLP_KERNEL_CH_STOP, &a);
        p->stop_event(k[ch]);
      }
      tc += t1 - t0;
      tp += now_ns() - t1;
    }
    if (c >= 0) { call[c] = tc / CHUNK; proxy[c] = tp / CHUNK; }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  qsort(call, (size_t)nchunks, sizeof *call, cmp_d);
  qsort(proxy, (size_t)nchunks, sizeof *proxy, cmp_d);
  printf("ns_per_coll_call %.1f\nns_per_coll_proxy %.1f\n", call[nchunks / 2], proxy[nchunks / 2]);
  p->finalize(ctx);
  free(call);
  free(proxy);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "plugin")) return plugin_loop(atoi(argv[2]));
  int n = argc > 1 ? atoi(argv[1]) : 20000, dev = 0;
  ncclComm_t comm;
  cudaStream_t s;
  float *buf;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess || cudaStreamCreate(&s) != cudaSuccess ||
      cudaMalloc((void **)&buf, 4096) != cudaSuccess) {
    fprintf(stderr, "nccl_loop: no NCCL or CUDA\n");
    return 1;
  }
  double total = 0;
  for (int i = -1000; i < n; i++) {
    if (i % 64 == 0) cudaStreamSynchronize(s);
    double t0 = now_ns();
    ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s);
    if (i >= 0) total += now_ns() - t0;
  }
  cudaStreamSynchronize(s);
  ncclCommDestroy(comm);
  printf("ns_per_call %.1f\n", total / n);
  return 0;
}
