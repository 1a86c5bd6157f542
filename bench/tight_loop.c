/* Tight loop of a cheap runtime call (cudaGetDevice): prints ns per call. Run bare and under
 * dlhook (bench/run-bench alternates them) to state the cost of a hook.
 *
 *   tight_loop N [--depth D] [--rate CALLS_PER_S] [--pause-us US] [--vary] [--stats]
 *
 * N calls are timed in 1024 chunks; the printed figure is the median chunk's ns per call, so
 * that a chunk in which the process was descheduled (2-core machines, other work) does not count.
 * --depth D: make the calls with D frames on the stack (run, the recursion, main and 3 start
 *           frames of libc and crt1; stack capture cost grows with depth).
 * --rate R: space the calls to R per second (busy-waiting on the clock; a late call is not
 *           caught up by a burst); each call is timed on its own, and --stats reports the
 *           slowest ones: a writer that stalled the program would show there.
 * --pause-us US: sleep US microseconds after every 16th chunk (untimed): a tracer's writer thread
 *           catches up, so that every call is recorded (a loop this tight outruns any single
 *           writer thread; a full ring drops records, and a dropped call costs less).
 * --vary: consecutive calls differ (cudaGetDevice(&devs[i & 1]): the pointer argument alternates),
 *           so that a tracer that folds repeated identical calls into one record cannot fold
 *           them; the call and its cost stay those of the plain loop.
 * --stats: a second line of key=value figures: calls, wall_ns, min_chunk_ns, rate (calls/s
 *          achieved), paced_rate (calls/s while not descheduled), max_call_ns, calls_over_10us, calls_over_100us, calls_over_1ms, and the
 *          calling thread's context switches during the timed loop: nvcsw (voluntary: it
 *          blocked, e.g. on a lock or a full pipe) and nivcsw (involuntary: preempted), and
 *          other_cpu_ns: CPU time of the process's other threads so far (a tracer's writer),
 *          self_cpu_ns: CPU time of the calling thread in the timed loop, loop_other_cpu_ns: that of
 *          the other threads during the timed loop, timed_calls: the calls of the timed loop
 *          (calls also counts the warm-up's). */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CHUNKS 1024 /* small: a chunk in which the thread was preempted is an outlier */
#define PAUSE_EVERY 16 /* --pause-us: after every 16th chunk */

static inline uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* CPU time (ns, from /proc/self/task/TID/schedstat) of the process's threads other than the
 * calling one: under a tracer, its writer thread's work. */
static uint64_t other_threads_cpu_ns(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  uint64_t sum = 0;
  long self = (long)gettid();
  struct dirent *e;
  while ((e = readdir(d))) {
    long tid = atol(e->d_name);
    if (tid <= 0 || tid == self) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f) {
      if (fscanf(f, "%llu", &ns) == 1) sum += ns;
      fclose(f);
    }
  }
  closedir(d);
  return sum;
}

static long n_calls;
static double rate;
static long pause_us;
static int want_stats;
static int vary;
static volatile int sink;

/* cudaGetDevice, into devs[0] (identical calls) or, with --vary, into devs[k & 1] where k counts
 * the calls made (consecutive calls differ in their argument, across chunks too). */
#define CALL(k) cudaGetDevice(&devs[vary ? (int)((k) & 1) : 0])

static void run(void) {
  int devs[2] = {0, 0};
  double chunk_ns[CHUNKS];
  long per = n_calls / CHUNKS;
  if (per < 1) per = 1;
  uint64_t max_call = 0, over10us = 0, over100us = 0, over1ms = 0, skipped = 0;
  long warm = rate > 0 ? 1000 : n_calls / 10; /* paced runs: no unpaced burst */
  for (long i = 0; i < warm; i++) CALL(i); /* warm up */
  long k = warm; /* calls made so far (--vary) */
  if (pause_us > 0) { /* let a writer take the warm-up's records */
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  uint64_t other0 = want_stats ? other_threads_cpu_ns() : 0;
  uint64_t cpu0 = thread_cpu();
  uint64_t start = now();
  if (rate <= 0) {
    for (int c = 0; c < CHUNKS; c++) {
      uint64_t t0 = now();
      if (vary)
        for (long i = 0; i < per; i++) cudaGetDevice(&devs[(k + i) & 1]);
      else
        for (long i = 0; i < per; i++) cudaGetDevice(&devs[0]);
      chunk_ns[c] = (double)(now() - t0) / per;
      k += per;
      if (pause_us > 0 && c % PAUSE_EVERY == PAUSE_EVERY - 1) {
        struct timespec ts = {pause_us / 1000000, (pause_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
      }
    }
  } else {
    uint64_t gap = (uint64_t)(1e9 / rate), next = now();
    for (int c = 0; c < CHUNKS; c++) {
      uint64_t t0 = now(), busy = 0;
      for (long i = 0; i < per; i++) {
        uint64_t t;
        while ((t = now()) < next) {}
        if (t > next + 10000) { /* late (descheduled): no catch-up burst */
          skipped += t - next;
          next = t;
        }
        CALL(k);
        k++;
        uint64_t d = now() - t;
        busy += d;
        if (d > max_call) max_call = d;
        over10us += d > 10000;
        over100us += d > 100000;
        over1ms += d > 1000000;
        next += gap;
      }
      (void)t0;
      chunk_ns[c] = (double)busy / per;
    }
  }
  uint64_t wall = now() - start;
  uint64_t self_cpu = thread_cpu() - cpu0;
  getrusage(RUSAGE_THREAD, &ru1);
  uint64_t other_cpu = want_stats ? other_threads_cpu_ns() : 0;
  sink = devs[0] + devs[1];
  qsort(chunk_ns, CHUNKS, sizeof chunk_ns[0], cmp_d);
  printf("%.2f\n", (chunk_ns[CHUNKS / 2 - 1] + chunk_ns[CHUNKS / 2]) / 2);
  if (want_stats)
    printf("calls=%ld wall_ns=%llu min_chunk_ns=%.2f rate=%.0f paced_rate=%.0f max_call_ns=%llu "
           "calls_over_10us=%llu calls_over_100us=%llu calls_over_1ms=%llu nvcsw=%ld nivcsw=%ld "
           "other_cpu_ns=%llu self_cpu_ns=%llu loop_other_cpu_ns=%llu timed_calls=%ld\n",
           per * CHUNKS + warm, (unsigned long long)wall, chunk_ns[0],
           per * CHUNKS * 1e9 / wall, per * CHUNKS * 1e9 / (double)(wall - skipped),
           (unsigned long long)max_call,
           (unsigned long long)over10us, (unsigned long long)over100us,
           (unsigned long long)over1ms, ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw,
           (unsigned long long)other_cpu, (unsigned long long)self_cpu,
           (unsigned long long)(other_cpu - other0), per * CHUNKS);
}

/* D frames that the compiler can neither inline nor turn into a loop or a tail call. */
__attribute__((noinline)) static int nest(int d) {
  volatile int keep = d;
  if (d > 0) {
    int r = nest(d - 1);
    return r + keep;
  }
  run();
  return keep;
}

int main(int argc, char **argv) {
  int depth = 0;
  n_calls = 2000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--depth") && i + 1 < argc) depth = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc) rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--pause-us") && i + 1 < argc) pause_us = atol(argv[++i]);
    else if (!strcmp(argv[i], "--stats")) want_stats = 1;
    else if (!strcmp(argv[i], "--vary")) vary = 1;
    else n_calls = atol(argv[i]);
  }
  return nest(depth > 6 ? depth - 6 : 0) < 0; /* + run, nest(0), main, 3 start frames */
}
