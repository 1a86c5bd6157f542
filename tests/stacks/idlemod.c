/* idlemod — loads LIB (built from badmod_lib.c), calls its badmod_call() (a stack through LIB),
 * then calls cudaGetDeviceCount from main only, every 10 ms for SECONDS (LIB's frames are not
 * seen again), then, with "again", LIB's badmod_again() (a pc of LIB seen for the first time).
 * usage: idlemod LIB SECONDS [again]; prints one line, exit 0 when LIB was loaded and called. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: idlemod LIB SECONDS [again]\n");
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  int (*call)(void) = h ? (int (*)(void))dlsym(h, "badmod_call") : NULL;
  int (*again)(void) = h ? (int (*)(void))dlsym(h, "badmod_again") : NULL;
  if (!call || !again) {
    fprintf(stderr, "%s: %s\n", argv[1], dlerror());
    return 1;
  }
  int r = call(), n = 0;
  long ticks = (long)(atof(argv[2]) * 100);
  for (long i = 0; i < ticks; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cudaGetDeviceCount(&n);
  }
  if (argc > 3 && !strcmp(argv[3], "again")) r += again();
  printf("idlemod: %d\n", r);
  return 0;
}
