/* victim.c — a program that calls the CUDA runtime and then ends badly, for the reliability
 * tests. Every call is cudaSetDevice(i) with i = 0, 1, 2, ...: the trace shows which calls made
 * it (a complete prefix has exactly the devices 0..k-1).
 *   victim crash KIND N   N calls, "done N" on stdout, then KIND: segv bus abort fpe ill trap
 *                         exit _exit handler (own SIGSEGV handler that prints, restores the
 *                         default and returns: the fault repeats and kills) kill (SIGKILL self)
 *                         oom (a cudaMalloc of 1 PiB, "oom RET", then exit 0 at once)
 *   victim loop US [MS]   calls forever, one every US microseconds (busy), "ready" first; with
 *                         MS: _exit(0) after MS ms, printing "exit_ns T" (CLOCK_MONOTONIC) first
 *   victim out N          deterministic stdout, N calls with scattered arguments, exit 3 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void on_segv(int sig) {
  static const char msg[] = "caught SIGSEGV\n";
  ssize_t w = write(1, msg, sizeof msg - 1);
  (void)w;
  signal(sig, SIG_DFL); /* give up: the fault repeats with the default action */
}

static volatile int zero = 0;

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: victim crash KIND N | loop US [MS] | out N\n"); return 2; }
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(argv[1], "crash") && argc >= 4) {
    const char *kind = argv[2];
    long n = atol(argv[3]);
    if (!strcmp(kind, "handler")) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_segv;
      sigaction(SIGSEGV, &sa, NULL);
    }
    for (long i = 0; i < n; i++) cudaSetDevice((int)i);
    printf("done %ld\n", n);
    if (!strcmp(kind, "segv") || !strcmp(kind, "handler")) { *(volatile int *)(long)zero = 1; }
    else if (!strcmp(kind, "bus")) raise(SIGBUS);
    else if (!strcmp(kind, "abort")) abort();
    else if (!strcmp(kind, "fpe")) { volatile int x = 1 / zero; (void)x; raise(SIGFPE); }
    else if (!strcmp(kind, "ill") || !strcmp(kind, "trap")) __builtin_trap();
    else if (!strcmp(kind, "exit")) exit(4);
    else if (!strcmp(kind, "_exit")) _exit(4);
    else if (!strcmp(kind, "kill")) raise(SIGKILL);
    else if (!strcmp(kind, "oom")) { /* an out-of-memory error, then a normal exit at once */
      void *p = NULL;
      printf("oom %d\n", (int)cudaMalloc(&p, (size_t)1 << 50));
      return 0;
    }
    return 9;
  }
  if (!strcmp(argv[1], "loop")) {
    long us = atol(argv[2]);
    unsigned long long deadline = argc > 3 ? mono_ns() + (unsigned long long)atol(argv[3]) * 1000000ull : 0;
    printf("ready\n");
    for (int i = 0;; i++) {
      cudaSetDevice(i);
      unsigned long long t = mono_ns(), until = t + (unsigned long long)us * 1000ull;
      if (deadline && t >= deadline) {
        printf("exit_ns %llu calls %d\n", t, i + 1);
        _exit(0);
      }
      while (mono_ns() < until) {}
    }
  }
  if (!strcmp(argv[1], "out")) {
    long n = atol(argv[2]);
    int count = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    printf("cudaGetDeviceCount: %d\n", (int)e);
    unsigned x = 12345;
    long sum = 0;
    for (long i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      sum += (long)cudaSetDevice((int)(x >> 1));
      if (i % 50000 == 0) printf("step %ld\n", i);
    }
    printf("sum of results %ld\n", sum);
    return 3;
  }
  return 2;
}
