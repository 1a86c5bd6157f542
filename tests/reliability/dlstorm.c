/* dlstorm.c — dlopen/dlclose storm of the CUDA runtime (this program does not link it, so each
 * dlclose really unloads it). N cycles: dlopen libcudart (RTLD_LOCAL and RTLD_GLOBAL in turn),
 * call cudaGetDeviceCount through dlsym(handle) and through the global symbol (dlhook's wrapper
 * when preloaded), dlclose. A second thread does the same meanwhile. Prints "cycles N". */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*count_fn)(int *);

static long cycles(long n, int flags0) {
  long done = 0;
  for (long i = 0; i < n; i++) {
    void *h = dlopen("libcudart.so.13", RTLD_NOW | ((i + flags0) & 1 ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return -1; }
    count_fn f = (count_fn)dlsym(h, "cudaGetDeviceCount");
    count_fn g = (count_fn)dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
    int c;
    if (f) f(&c);
    if (g) g(&c);
    dlclose(h);
    done++;
  }
  return done;
}

static long n_cycles;
static void *second(void *arg) {
  (void)arg;
  return (void *)cycles(n_cycles, 1);
}

int main(int argc, char **argv) {
  n_cycles = argc > 1 ? atol(argv[1]) : 200;
  pthread_t th;
  pthread_create(&th, NULL, second, NULL);
  long a = cycles(n_cycles, 0);
  void *b;
  pthread_join(th, &b);
  printf("cycles %ld %ld\n", a, (long)b);
  return a == n_cycles && (long)b == n_cycles ? 0 : 1;
}
