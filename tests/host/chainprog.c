/* chainprog.c — makes N cudaMalloc calls of 256 bytes, each followed by a cudaFree, reaching the
 * runtime the way a program does; built twice (tests/host/build.mk):
 *   chainprog-linked N   linked with -lcudart: calls through the program's own references
 *   chainprog-dlopen N   not linked with it: dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL),
 *                        then dlsym on that handle for both functions, as Python's ctypes and
 *                        plugin hosts do (-DCHAIN_DLOPEN)
 *   chainprog-mixed N    linked with -lcudart, but its first call goes through
 *                        dlsym(dlopen("libcudart.so.13"), "cudaMalloc"), which untraced passes
 *                        by every interposer; the other N - 1 through its references
 *                        (-DCHAIN_MIXED)
 * Prints "calls N ok K" (K: calls that returned cudaSuccess). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef CHAIN_DLOPEN
#include <cuda_runtime_api.h>
#endif

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]), ok = 0;
#ifdef CHAIN_DLOPEN
  void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "chainprog: %s\n", dlerror());
    return 1;
  }
  int (*cuda_malloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(h, "cudaMalloc");
  int (*cuda_free)(void *) = (int (*)(void *))dlsym(h, "cudaFree");
  if (!cuda_malloc || !cuda_free) {
    fprintf(stderr, "chainprog: %s\n", dlerror());
    return 1;
  }
  for (long i = 0; i < n; i++) {
    void *p = NULL;
    if (cuda_malloc(&p, 256) == 0) {
      ok++;
      cuda_free(p);
    }
  }
#else
  long i = 0;
#ifdef CHAIN_MIXED
  void *h = dlopen("libcudart.so.13", RTLD_LAZY);
  cudaError_t (*first)(void **, size_t) =
      h ? (cudaError_t(*)(void **, size_t))dlsym(h, "cudaMalloc") : NULL;
  if (!first) {
    fprintf(stderr, "chainprog: %s\n", dlerror());
    return 1;
  }
  for (; i < 1 && i < n; i++) {
    void *p = NULL;
    if (first(&p, 256) == cudaSuccess) {
      ok++;
      cudaFree(p);
    }
  }
#endif
  for (; i < n; i++) {
    void *p = NULL;
    if (cudaMalloc(&p, 256) == cudaSuccess) {
      ok++;
      cudaFree(p);
    }
  }
#endif
  printf("calls %ld ok %ld\n", n, ok);
  return 0;
}
