/* Worker threads calling a cheap runtime function at full speed while one more thread polls
 * a stream: the case of a program whose polling thread makes the same call again and again
 * (cudaStreamQuery returning cudaErrorNotReady in a loop) next to threads doing real work.
 * Every thread counts its own calls and the program prints them, so that a tracer's trace can
 * be checked call for call, thread by thread (bench/trace_figures.py does).
 *
 *   poll_threads [--threads N] [--calls C] [--same] [--pause-us US]
 *
 * --threads N: worker threads (4). Each makes C calls (--calls, 500000) of cudaGetDevice, into
 *           one of two variables in turn (consecutive calls differ in their argument: a tracer
 *           that folds repeated identical calls cannot fold them); --same: always the same one.
 * --pause-us US: the workers time their calls in 64 chunks and sleep US microseconds after each
 *           (untimed; default 0: none); the polling thread goes on polling meanwhile.
 * The polling thread calls cudaStreamQuery(0) flat out from when the workers start until the
 * last one is done (without a GPU every call returns the same error: identical calls).
 * The main thread makes one call (cudaGetDevice) before starting the others (the runtime's
 * one-time initialisation happens there).
 *
 * Output: first line, the workers' ns per call (median of all their chunks); then one line per
 * thread, "thread=K role=main|worker|poll tid=TID calls=N"; last, the totals:
 * "calls=TOTAL wall_ns=W workers=N worker_calls=... polls=P threads=T". */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNKS 64
#define MAX_THREADS 256

static inline uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  int index;
  pid_t tid;
  long calls;
  double chunk_ns[CHUNKS];
} thr;

static long n_calls = 500000;
static int same;
static long pause_us;
static pthread_barrier_t start_line;
static int workers_left; /* atomic: workers not yet done */
static volatile int sink;

static void *worker(void *arg) {
  thr *t = arg;
  t->tid = gettid();
  int devs[2] = {0, 0};
  long per = n_calls / CHUNKS, k = 0;
  pthread_barrier_wait(&start_line);
  for (int c = 0; c < CHUNKS; c++) {
    long n = c == CHUNKS - 1 ? n_calls - per * (CHUNKS - 1) : per; /* the rest in the last */
    uint64_t t0 = now();
    if (same)
      for (long i = 0; i < n; i++) cudaGetDevice(&devs[0]);
    else
      for (long i = 0; i < n; i++) cudaGetDevice(&devs[(k + i) & 1]);
    t->chunk_ns[c] = n ? (double)(now() - t0) / n : 0;
    k += n;
    if (pause_us > 0) {
      struct timespec ts = {pause_us / 1000000, (pause_us % 1000000) * 1000};
      nanosleep(&ts, NULL);
    }
  }
  t->calls = k;
  sink = devs[0] + devs[1];
  __atomic_sub_fetch(&workers_left, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void *poller(void *arg) {
  thr *t = arg;
  t->tid = gettid();
  long k = 0;
  pthread_barrier_wait(&start_line);
  while (__atomic_load_n(&workers_left, __ATOMIC_ACQUIRE) > 0) {
    cudaStreamQuery(0);
    k++;
  }
  t->calls = k;
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = 4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--calls") && i + 1 < argc) n_calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--pause-us") && i + 1 < argc) pause_us = atol(argv[++i]);
    else if (!strcmp(argv[i], "--same")) same = 1;
    else {
      fprintf(stderr, "usage: poll_threads [--threads N] [--calls C] [--same] [--pause-us US]\n");
      return 2;
    }
  }
  if (nthreads < 1 || nthreads > MAX_THREADS - 2 || n_calls < CHUNKS) {
    fprintf(stderr, "poll_threads: 1 to %d threads, at least %d calls each\n", MAX_THREADS - 2,
            CHUNKS);
    return 2;
  }
  static thr t[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  int dev = 0;
  t[0].index = 0;
  t[0].tid = gettid();
  cudaGetDevice(&dev); /* the runtime's initialisation, in the main thread */
  t[0].calls = 1;
  workers_left = nthreads;
  pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 2);
  uint64_t t0 = now();
  for (int i = 1; i <= nthreads + 1; i++) {
    t[i].index = i;
    if (pthread_create(&th[i], NULL, i <= nthreads ? worker : poller, &t[i])) {
      perror("poll_threads: pthread_create");
      return 1;
    }
  }
  pthread_barrier_wait(&start_line);
  for (int i = 1; i <= nthreads + 1; i++) pthread_join(th[i], NULL);
  uint64_t wall = now() - t0;
  pthread_barrier_destroy(&start_line);
  sink = dev;

  static double all[MAX_THREADS * CHUNKS];
  int na = 0;
  long total = 0, worker_calls = 0;
  for (int i = 1; i <= nthreads; i++)
    for (int c = 0; c < CHUNKS; c++) all[na++] = t[i].chunk_ns[c];
  qsort(all, na, sizeof all[0], cmp_d);
  printf("%.2f\n", na % 2 ? all[na / 2] : (all[na / 2 - 1] + all[na / 2]) / 2);
  for (int i = 0; i <= nthreads + 1; i++) {
    printf("thread=%d role=%s tid=%ld calls=%ld\n", i,
           i == 0 ? "main" : i <= nthreads ? "worker" : "poll", (long)t[i].tid, t[i].calls);
    total += t[i].calls;
    if (i >= 1 && i <= nthreads) worker_calls += t[i].calls;
  }
  printf("calls=%ld wall_ns=%llu workers=%d worker_calls=%ld polls=%ld threads=%d\n", total,
         (unsigned long long)wall, nthreads, worker_calls, t[nthreads + 1].calls, nthreads + 2);
  return 0;
}
