/* shares.c — a program that spends known shares of its CPU time in three functions:
 * share_sixty 60 %, share_thirty 30 %, share_ten 10 %, measured by the program itself with
 * CLOCK_THREAD_CPUTIME_ID (so the shares are exact, whatever the machine's load), for
 * tests/sample/t_sample_shares.sh: the on-CPU samples must give the same shares.
 *   shares SECS      SECS seconds of CPU time in all (default 3)
 * The time goes in chunks of 50 to 450 µs (a pseudo-random length, never a multiple of the
 * sampling period, so that the samples' phase does not lock onto the chunks), each to the
 * function furthest behind its share. The burning loop is inside each function (noinline, its
 * own frames), the clock read included. Prints the measured shares in whole percent, one line
 * per function ("share_sixty 60"), deterministic; then on stderr what the machine gave it:
 * "shares: loop_cpu_ns N wall_ns N thread_cpu_ns N" (the loop's CPU and wall time, the thread's
 * CPU time at the end: a starved program's timer signals come late, in lumps). */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t wall_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static volatile unsigned sink;

#define BURNER(name)                                                 \
  __attribute__((noinline)) static uint64_t name(uint64_t ns) {      \
    uint64_t t0 = cpu_ns(), t;                                       \
    unsigned x = sink;                                               \
    do {                                                             \
      for (int i = 0; i < 100; i++) x = x * 1103515245u + 12345u;    \
      t = cpu_ns();                                                  \
    } while (t - t0 < ns);                                           \
    sink = x;                                                        \
    __asm__ volatile("" ::: "memory");                               \
    return t - t0;                                                   \
  }
BURNER(share_sixty)
BURNER(share_thirty)
BURNER(share_ten)

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 3;
  int n = 0;
  cudaGetDeviceCount(&n); /* sampling starts at the first CUDA call */
  static const double want[3] = {0.6, 0.3, 0.1};
  uint64_t spent[3] = {0, 0, 0}, total = 0, goal = (uint64_t)(secs * 1e9);
  uint32_t rnd = 12345;
  uint64_t w0 = wall_ns();
  while (total < goal) {
    int k = 0;
    double worst = 1e30;
    for (int i = 0; i < 3; i++) { /* the one furthest behind its share */
      double d = (double)spent[i] - want[i] * (double)total;
      if (d < worst) { worst = d; k = i; }
    }
    rnd = rnd * 1664525u + 1013904223u;
    uint64_t chunk = 50000 + (rnd >> 8) % 400000;
    uint64_t t = k == 0 ? share_sixty(chunk) : k == 1 ? share_thirty(chunk) : share_ten(chunk);
    spent[k] += t;
    total += t;
  }
  uint64_t w1 = wall_ns();
  static const char *const names[3] = {"share_sixty", "share_thirty", "share_ten"};
  for (int i = 0; i < 3; i++) printf("%s %.0f\n", names[i], 100.0 * (double)spent[i] / (double)total);
  fprintf(stderr, "shares: loop_cpu_ns %llu wall_ns %llu thread_cpu_ns %llu\n", (unsigned long long)total,
          (unsigned long long)(w1 - w0), (unsigned long long)cpu_ns());
  return 0;
}
