/* Tight loop of a cheap runtime call: prints ns per call. Run bare and under dlhook
 * (bench/run-bench alternates them) to state the cost of a hook as a ratio. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  int dev;
  for (long i = 0; i < n / 10; i++) cudaGetDevice(&dev); /* warm up */
  double t0 = now();
  for (long i = 0; i < n; i++) cudaGetDevice(&dev);
  double t1 = now();
  printf("%.2f\n", (t1 - t0) / n);
  return 0;
}
