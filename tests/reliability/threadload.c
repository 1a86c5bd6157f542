/* threadload.c — programs with many threads, or one thread flat out, calling the runtime: what
 * issue 39 found losing calls. Each mode prints the calls it made ("calls N"), its wall time
 * ("wall_ms N"), the CPU time of all its threads so far ("cpu_ms N") and its peak RSS ("maxrss_kb N"), so that a test compares the trace's recorded +
 * dropped with the calls made, and the time and memory with a bare run.
 *   threadload many N M        N threads (all started, then joined) x M calls each, consecutive
 *                              calls differing (cudaGetDevice into two alternating variables)
 *   threadload alt T MS        T threads, each alternating cudaGetDevice and cudaGetDeviceCount
 *                              flat out for MS milliseconds
 *   threadload churn N         N threads one after the other (created, one call, joined); prints
 *                              "threads_per_s N" as well
 *   threadload timer MS        a 10 kHz timer signal (the handler counts) while main calls
 *                              cudaGetDevice/cudaGetDeviceCount alternating flat out for MS ms
 *   threadload handler MS      a 2 kHz timer signal whose handler calls cudaGetDeviceCount, while
 *                              main calls cudaGetDevice in a loop (with a short spin) for MS ms;
 *                              prints "handler_calls N" and "main_calls N" */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

static long per_thread, ms_limit;
static atomic_long total_calls;
static atomic_int go;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *many_worker(void *arg) {
  (void)arg;
  int d[2];
  for (long i = 0; i < per_thread; i++) cudaGetDevice(&d[i & 1]);
  atomic_fetch_add(&total_calls, per_thread);
  return NULL;
}

static void *alt_worker(void *arg) {
  (void)arg;
  while (!atomic_load(&go)) {}
  double end = now_ms() + ms_limit;
  long n = 0;
  int d, c;
  while (now_ms() < end)
    for (int k = 0; k < 256; k++, n += 2) {
      cudaGetDevice(&d);
      cudaGetDeviceCount(&c);
    }
  atomic_fetch_add(&total_calls, n);
  return NULL;
}

static void *one_call(void *arg) {
  (void)arg;
  int d;
  cudaGetDevice(&d);
  return NULL;
}

static volatile sig_atomic_t ticks, handler_calls;
static void on_tick(int sig) { (void)sig; ticks++; }
static void on_tick_call(int sig) {
  (void)sig;
  int c;
  cudaGetDeviceCount(&c);
  handler_calls++;
}

static void timer_hz(void (*fn)(int), long usec) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, usec}, {0, usec}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static void timer_off(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

static pthread_t *start(long n, void *(*fn)(void *)) {
  pthread_t *th = calloc((size_t)n, sizeof *th);
  if (!th) { perror("calloc"); exit(1); }
  for (long i = 0; i < n; i++)
    if (pthread_create(&th[i], NULL, fn, NULL) != 0) { perror("pthread_create"); exit(1); }
  return th;
}

static void join(pthread_t *th, long n) {
  for (long i = 0; i < n; i++) pthread_join(th[i], NULL);
  free(th);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: threadload many N M | alt T MS | churn N | timer MS | handler MS\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int d0;
  cudaGetDevice(&d0); /* the runtime's start-up, outside the measured part */
  long calls = 1;
  double t0 = now_ms();
  const char *m = argv[1];
  long n = atol(argv[2]);
  if (!strcmp(m, "many") && argc > 3) {
    per_thread = atol(argv[3]);
    join(start(n, many_worker), n);
    calls += atomic_load(&total_calls);
  } else if (!strcmp(m, "alt") && argc > 3) {
    ms_limit = atol(argv[3]);
    pthread_t *th = start(n, alt_worker);
    atomic_store(&go, 1);
    join(th, n);
    calls += atomic_load(&total_calls);
  } else if (!strcmp(m, "churn")) {
    for (long i = 0; i < n; i++) {
      pthread_t t;
      if (pthread_create(&t, NULL, one_call, NULL) != 0) { perror("pthread_create"); return 1; }
      pthread_join(t, NULL);
    }
    calls += n;
    printf("threads_per_s %.0f\n", n / ((now_ms() - t0) / 1e3));
  } else if (!strcmp(m, "timer")) {
    timer_hz(on_tick, 100);
    double end = t0 + n;
    int d, c;
    while (now_ms() < end)
      for (int k = 0; k < 256; k++, calls += 2) {
        cudaGetDevice(&d);
        cudaGetDeviceCount(&c);
      }
    timer_off();
    printf("ticks %ld\n", (long)ticks);
  } else if (!strcmp(m, "handler")) {
    timer_hz(on_tick_call, 500);
    double end = t0 + n;
    long main_calls = 0;
    int d;
    while (now_ms() < end) {
      cudaGetDevice(&d);
      main_calls++;
      for (volatile int k = 0; k < 200; k++) {}
    }
    timer_off();
    calls += main_calls + handler_calls;
    printf("main_calls %ld\nhandler_calls %ld\n", main_calls, (long)handler_calls);
  } else {
    fprintf(stderr, "threadload: unknown mode %s\n", m);
    return 2;
  }
  double wall = now_ms() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  printf("calls %ld\nwall_ms %.1f\ncpu_ms %.1f\nmaxrss_kb %ld\n", calls, wall, cpu, ru.ru_maxrss);
  return 0;
}
