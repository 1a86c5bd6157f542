/* Forks WORKERS children while a second thread keeps calling the runtime. Each child makes
 * CHILD_CALLS calls and exits; the parent's own calls: PARENT_CALLS by the main thread after the
 * children are reaped, plus what the background thread made (printed). Used to check that every
 * process writes its own complete trace with exact counts, and that fork never deadlocks. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop, started;
static long bg_calls;
static void *background(void *arg) {
  (void)arg;
  int dev;
  while (!atomic_load(&stop)) {
    cudaGetDevice(&dev);
    atomic_store(&started, 1);
    if (++bg_calls % 100 == 0) usleep(100); /* a busy but realistic rate */
  }
  return NULL;
}

int main(int argc, char **argv) {
  int workers = argc > 1 ? atoi(argv[1]) : 4;
  long child_calls = argc > 2 ? atol(argv[2]) : 1000;
  pthread_t bg;
  pthread_create(&bg, NULL, background, NULL);
  /* the forks happen while the background thread is calling, however loaded the machine */
  while (!atomic_load(&started)) usleep(100);
  for (int i = 0; i < workers; i++) {
    pid_t p = fork();
    if (p == 0) {
      int n;
      for (long k = 0; k < child_calls; k++) cudaGetDeviceCount(&n);
      exit(0);
    }
  }
  int failed = 0, st;
  while (wait(&st) > 0)
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
  atomic_store(&stop, 1);
  pthread_join(bg, NULL);
  int v;
  for (int k = 0; k < 10; k++) cudaRuntimeGetVersion(&v);
  printf("background %ld\n", bg_calls);
  return failed;
}
