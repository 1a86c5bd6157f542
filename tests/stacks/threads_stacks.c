/* Interning under concurrency: 8 threads call cudaSetDevice(d) from d nested frames of rec()
 * (d = 0..12, varying per call), so that many distinct stacks are interned at once by several
 * threads. The test checks that every call's stack starts with exactly d frames of rec(). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) static int rec(int k, int d) {
  if (k == 0) return (int)cudaSetDevice(d);
  int r = rec(k - 1, d);
  __asm__ volatile("" ::: "memory");
  return r;
}

static void *worker(void *arg) {
  long t = (long)arg;
  for (int i = 0; i < 2000; i++) {
    int d = (int)((t * 7 + i) % 13);
    rec(d, d);
  }
  return NULL;
}

int main(void) {
  pthread_t th[8];
  for (long t = 0; t < 8; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  for (int t = 0; t < 8; t++) pthread_join(th[t], NULL);
  printf("done\n");
  return 0;
}
