/* Cost of a recorded call with its stack: recurses FRAMES functions deep, then times a tight
 * loop of cudaGetDevice, then (in the same process) a loop of bare unw_backtrace(DEPTH) from the
 * same place, with libunwind loaded the way dlhook loads it (dlopen RTLD_LOCAL).
 * Usage: stack_bench N DEPTH [FRAMES]; prints "call_ns unw_ns". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long n;
static int depth;
static int (*unw_bt)(void **, int);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void measure(void) {
  int dev;
  for (long i = 0; i < n / 10; i++) cudaGetDevice(&dev); /* warm up */
  double t0 = now();
  for (long i = 0; i < n; i++) cudaGetDevice(&dev);
  double t1 = now();
  double unw = 0;
  if (unw_bt) {
    void *pcs[512];
    for (long i = 0; i < n / 10; i++) unw_bt(pcs, depth);
    double u0 = now();
    for (long i = 0; i < n; i++) unw_bt(pcs, depth);
    unw = (now() - u0) / n;
  }
  printf("%.2f %.2f\n", (t1 - t0) / n, unw);
}

__attribute__((noinline)) static int nest(int k) {
  if (k <= 0) { measure(); return 0; }
  int r = nest(k - 1);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
  return r + 1;
}

int main(int argc, char **argv) {
  n = argc > 1 ? atol(argv[1]) : 500000;
  depth = argc > 2 ? atoi(argv[2]) : 32;
  int frames = argc > 3 ? atoi(argv[3]) : 100;
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (h) *(void **)&unw_bt = dlsym(h, "unw_backtrace");
  return nest(frames) < 0;
}
