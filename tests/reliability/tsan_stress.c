/* tsan_stress.c — the rings and the writer under ThreadSanitizer (built only with TSAN=1, linked
 * against the TSan-built libdlhook.so so that its wrappers come before libcudart). 8 threads make
 * 20,000 calls each while 2,000 short-lived threads make 5 calls each (rings given back and
 * thread structs reused while the writer drains). Prints the number of calls made. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

static void *busy(void *arg) {
  long n = (long)arg;
  int d;
  for (long i = 0; i < n; i++) cudaGetDevice(&d);
  return NULL;
}

int main(void) {
  pthread_t big[8], small[16];
  for (int i = 0; i < 8; i++) pthread_create(&big[i], NULL, busy, (void *)20000L);
  for (int r = 0; r < 125; r++) {
    for (int i = 0; i < 16; i++) pthread_create(&small[i], NULL, busy, (void *)5L);
    for (int i = 0; i < 16; i++) pthread_join(small[i], NULL);
  }
  for (int i = 0; i < 8; i++) pthread_join(big[i], NULL);
  printf("calls %d\n", 8 * 20000 + 2000 * 5);
  return 0;
}
