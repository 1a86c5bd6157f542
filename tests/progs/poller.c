/* W worker threads each make M calls that differ from one call to the next (cudaGetDevice with
 * alternating pointers: nothing to fold), while one more thread polls cudaStreamQuery(0) as fast
 * as it can until the workers are done (identical calls: folded). Prints each thread's own count,
 * `thread=K tid=TID fn=NAME calls=N`, then `total=N`: the trace must hold exactly these. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long per_worker;
static _Atomic int workers_left;
static struct { long calls; int tid; } count[65];

static void *worker(void *arg) {
  long k = (long)arg;
  int dev[2];
  count[k].tid = gettid();
  for (long i = 0; i < per_worker; i++) cudaGetDevice(&dev[i & 1]);
  count[k].calls = per_worker;
  atomic_fetch_sub(&workers_left, 1);
  return NULL;
}

static void *poller(void *arg) {
  long k = (long)arg, n = 0;
  count[k].tid = gettid();
  while (atomic_load(&workers_left) > 0) {
    cudaStreamQuery(0);
    n++;
  }
  count[k].calls = n;
  return NULL;
}

int main(int argc, char **argv) {
  int w = argc > 1 ? atoi(argv[1]) : 4;
  per_worker = argc > 2 ? atol(argv[2]) : 200000;
  if (w < 1) w = 1;
  if (w > 64) w = 64;
  int dev;
  cudaGetDevice(&dev); /* the runtime initialised before the threads race */
  pthread_t t[65];
  atomic_store(&workers_left, w);
  pthread_create(&t[w], NULL, poller, (void *)(long)w);
  for (long i = 0; i < w; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i <= w; i++) pthread_join(t[i], NULL);
  long total = 1;
  for (int i = 0; i <= w; i++) {
    printf("thread=%d tid=%d fn=%s calls=%ld\n", i, count[i].tid,
           i == w ? "cudaStreamQuery" : "cudaGetDevice", count[i].calls);
    total += count[i].calls;
  }
  printf("total=%ld\n", total);
  return 0;
}
