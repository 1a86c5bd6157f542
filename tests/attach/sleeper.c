/* sleeper.c — a program that sleeps while it is attached to: makes one CUDA call (so that the
 * runtime is loaded and `dlhook attach` accepts it), prints "ready", then measures one
 * nanosleep (or clock_nanosleep, relative, on CLOCK_MONOTONIC) of MS milliseconds and prints
 * "slept <ms> rc <result> errno <errno> runq <ms>": runq is the time the thread waited for a
 * CPU meanwhile (schedstat's run-queue delay; -1 when it cannot be read), the part of the sleep
 * a loaded machine adds. tests/attach/t_attach_sleep.sh attaches and detaches during the
 * sleep.
 *   sleeper nanosleep|clock_nanosleep MS */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The thread's run-queue delay so far, in ms; -1 when unknown. */
static double runq_ms(void) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long on = 0, wait = 0;
  int n = f ? fscanf(f, "%llu %llu", &on, &wait) : 0;
  if (f) fclose(f);
  return n == 2 ? wait / 1e6 : -1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: sleeper nanosleep|clock_nanosleep MS\n");
    return 2;
  }
  int n = 0;
  cudaGetDeviceCount(&n);
  long ms = atol(argv[2]);
  struct timespec req = {ms / 1000, (ms % 1000) * 1000000L};
  printf("ready\n");
  fflush(stdout);
  double q0 = runq_ms(), t0 = now_ms();
  int rc, err = 0;
  if (!strcmp(argv[1], "clock_nanosleep")) {
    rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
  } else {
    rc = nanosleep(&req, NULL);
    err = rc ? errno : 0;
  }
  double t1 = now_ms(), q1 = runq_ms();
  printf("slept %.0f rc %d errno %d runq %.0f\n", t1 - t0, rc, err, q0 >= 0 && q1 >= q0 ? q1 - q0 : -1);
  return 0;
}
