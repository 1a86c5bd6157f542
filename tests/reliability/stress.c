/* stress.c — situations that deadlock or crash a naive preload library, for the reliability
 * tests. Each mode prints what it did (the counts the trace must show) and exits 0.
 *   stress fork N       4 threads call the runtime while main forks N times; each child calls
 *                       cudaGetDeviceCount 10 times and exits; the parent waits for each
 *   stress threads N    N threads (at most 64 alive at once), each calls cudaGetDevice once;
 *                       prints the peak RSS
 *   stress signals MS   a timer signal every 200 us whose handler calls cudaGetDeviceCount,
 *                       while main calls cudaGetDevice in a loop for MS milliseconds */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long worker_calls;

static void *caller(void *arg) {
  (void)arg;
  int d;
  while (!atomic_load(&stop)) {
    cudaGetDevice(&d);
    atomic_fetch_add(&worker_calls, 1);
    usleep(20);
  }
  return NULL;
}

static int do_fork(long n) {
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, caller, NULL);
  long ok = 0;
  for (long i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) {
      int c;
      for (int k = 0; k < 10; k++) cudaGetDeviceCount(&c);
      exit(0);
    }
    int st;
    if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0) ok++;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  printf("children ok %ld of %ld\n", ok, n);
  return ok == n ? 0 : 1;
}

static void *one_call(void *arg) {
  (void)arg;
  int d;
  cudaGetDevice(&d);
  return NULL;
}

static int do_threads(long n) {
  enum { ALIVE = 64 };
  pthread_t th[ALIVE];
  long made = 0;
  while (made < n) {
    int k = 0;
    for (; k < ALIVE && made < n; k++, made++)
      if (pthread_create(&th[k], NULL, one_call, NULL) != 0) { perror("pthread_create"); return 1; }
    for (int j = 0; j < k; j++) pthread_join(th[j], NULL);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("threads %ld\n", made);
  fprintf(stderr, "maxrss_kb %ld\n", ru.ru_maxrss);
  return 0;
}

static volatile sig_atomic_t in_handler_calls;
static void on_alarm(int sig) {
  (void)sig;
  int c;
  cudaGetDeviceCount(&c);
  in_handler_calls++;
}

static int do_signals(long ms) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  /* The runtime's one-time initialisation (a pthread_once that dlopens libcuda.so.1) runs before
   * the timer: a handler that calls the runtime while the same thread is inside that once waits
   * for itself forever, with or without a profiler (libcudart is not async-signal-safe). The
   * test is about signals arriving inside dlhook's hooks, not inside libcudart's start-up. */
  int d0;
  cudaGetDevice(&d0);
  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, NULL);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long calls = 1; /* the initialising call above */
  int d;
  do { /* about 2 us apart: the writer keeps up, so every call must be in the trace */
    cudaGetDevice(&d);
    calls++;
    struct timespec u;
    clock_gettime(CLOCK_MONOTONIC, &t);
    do clock_gettime(CLOCK_MONOTONIC, &u);
    while ((u.tv_sec - t.tv_sec) * 1000000000L + (u.tv_nsec - t.tv_nsec) < 2000);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("main calls %ld handler calls %ld\n", calls, (long)in_handler_calls);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: stress fork|threads|signals N\n"); return 2; }
  setvbuf(stdout, NULL, _IOLBF, 0);
  long n = atol(argv[2]);
  if (!strcmp(argv[1], "fork")) return do_fork(n);
  if (!strcmp(argv[1], "threads")) return do_threads(n);
  if (!strcmp(argv[1], "signals")) return do_signals(n);
  return 2;
}
