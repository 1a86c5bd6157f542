/* N threads x M calls of a cheap runtime call; prints the total. Used to check that nothing is
 * lost (exact counts, no drops) and, with a tiny ring, that drops are counted, not hung on. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long calls;
static void *work(void *arg) {
  (void)arg;
  int dev;
  for (long i = 0; i < calls; i++) cudaGetDevice(&dev);
  return NULL;
}
int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 8;
  calls = argc > 2 ? atol(argv[2]) : 100000;
  pthread_t t[256];
  if (nthreads > 256) nthreads = 256;
  for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  printf("%ld calls\n", (long)nthreads * calls);
  return 0;
}
