/* setid.c — loads libdlhook.so with dlopen after making the process look setuid/setgid, then
 * calls the runtime through dlhook's wrapper: dlhook must stay inert (no trace file).
 *   setid MODE LIB   MODE: gid (real gid 0, effective 65534), uid (effective uid 65534),
 *                    none (control: unchanged ids, the call is traced)
 * Prints "loaded" and the call's result; exit 0, or 1 when a step failed. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: setid gid|uid|none LIB\n"); return 2; }
  int c;
  cudaGetDeviceCount(&c); /* the real runtime is loaded and initialised first */
  if (!strcmp(argv[1], "gid") && setresgid(0, 65534, 0) != 0) { perror("setresgid"); return 1; }
  if (!strcmp(argv[1], "uid") && setresuid(0, 65534, 0) != 0) { perror("setresuid"); return 1; }
  void *h = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  printf("loaded\n");
  cudaError_t (*f)(int *) = (cudaError_t (*)(int *))dlsym(h, "cudaGetDeviceCount");
  if (!f) { fprintf(stderr, "no cudaGetDeviceCount in %s\n", argv[2]); return 1; }
  for (int i = 0; i < 10; i++) printf("result %d\n", (int)f(&c));
  /* back to the real ids so that the exit handlers write what they would */
  if (setresuid(0, 0, 0) != 0 || setresgid(0, 0, 0) != 0) return 1;
  return 0;
}
