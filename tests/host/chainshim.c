/* chainshim.c — stands for a program's own interposer on cudaMalloc (a GPU-sharing or
 * checkpointing shim): it exports cudaMalloc, counts the calls it sees and forwards each to the
 * "real" function, found on the first call in one of two ways, chosen when it is built:
 *   -DCHAIN_HANDLE  dlsym(dlopen("libcudart.so.13", RTLD_LAZY), "cudaMalloc")
 *   -DCHAIN_NEXT    dlsym(RTLD_NEXT, "cudaMalloc")
 * At exit it writes "chainshim: N calls" on stderr. A call that re-enters the shim on the same
 * thread (the chain of interposers loops back to it) is not forwarded again: it says
 * "chainshim: recursion" once and fails with cudaErrorUnknown, so that a loop shows as a clear
 * failure instead of a stack overflow. tests/host/t_interposer_chain.sh loads it next to
 * libdlhook.so, in both orders. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*malloc_fn)(void **, size_t);

static malloc_fn real;
static unsigned long seen;
static __thread int depth;

static void say(const char *msg) {
  ssize_t w = write(2, msg, strlen(msg));
  (void)w;
}

static malloc_fn find_real(void) {
#if defined(CHAIN_HANDLE)
  void *h = dlopen("libcudart.so.13", RTLD_LAZY);
  return h ? (malloc_fn)dlsym(h, "cudaMalloc") : NULL;
#elif defined(CHAIN_NEXT)
  return (malloc_fn)dlsym(RTLD_NEXT, "cudaMalloc");
#else
#error "build with -DCHAIN_HANDLE or -DCHAIN_NEXT"
#endif
}

__attribute__((visibility("default"))) int cudaMalloc(void **p, size_t size) {
  static int said;
  if (depth) {
    if (!said) say("chainshim: recursion\n");
    said = 1;
    return 999; /* cudaErrorUnknown */
  }
  depth++;
  __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED);
  if (!real) real = find_real();
  int r = real ? real(p, size) : 3; /* cudaErrorInitializationError */
  if (!real) say("chainshim: no real cudaMalloc\n");
  depth--;
  return r;
}

__attribute__((destructor)) static void report(void) {
  char buf[64];
  snprintf(buf, sizeof buf, "chainshim: %lu calls\n", seen);
  say(buf);
}
