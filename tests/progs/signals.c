/* Calls the runtime in a loop until a signal arrives. Modes:
 *   default   no handler: SIGTERM/SIGINT kill it (the trace must still be complete)
 *   handler   its own SIGINT handler prints and exits with status 3
 *   exitthread  exit(5) called from a second thread while main keeps calling */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void on_int(int sig) { got = sig; }
static void *exiter(void *arg) {
  (void)arg;
  usleep(100000);
  exit(5);
}
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "default";
  if (!strcmp(mode, "handler")) signal(SIGINT, on_int);
  if (!strcmp(mode, "exitthread")) {
    pthread_t t;
    pthread_create(&t, NULL, exiter, NULL);
  }
  int dev;
  for (long i = 0;; i++) {
    cudaGetDevice(&dev);
    if (i == 1000) { /* some calls are recorded before the test signals us */
      printf("ready\n");
      fflush(stdout);
    }
    if (got) {
      printf("handler ran for signal %d\n", (int)got);
      return 3;
    }
    if (i % 1000 == 0) usleep(1000);
  }
}
