/* tests/hooks/stub_runtime.c — a stand-in for preload/'s implementation of dlh_hook.h, so that the
 * generated wrappers can be tested on their own: linked with hooks/gen/<lib>_hooks.c into a small
 * preload library, it prints every recorded call to the file named by $DLH_STUB_OUT as
 *   <fn name> ret=<ret> depth=<depth> <argname>=<value> ...
 * (value in decimal for INT/UINT/BOOL, 0x-hex for PTR, %g for DOUBLE; stderr when unset).
 * Not thread-safe beyond
 * what the test programs need (one thread). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_hook.h"

struct dlh_thread {
  struct dlh_thread_hot hot;
};

__thread dlh_thread *dlh_self __attribute__((tls_model("initial-exec")));
volatile int dlh_recording = 1;
volatile unsigned dlh_capture_closed;        /* capture ranges (preload/capture.c): always open */
void dlh_capture_profiler(int start) { (void)start; }
static dlh_thread the_thread;
static FILE *out;

#define TABLE(lib)                                                           \
  extern const dlh_fn_desc dlh_fns_##lib[] __attribute__((weak));          \
  extern const unsigned dlh_fns_##lib##_count __attribute__((weak));
TABLE(cudart)
TABLE(cublas)
TABLE(cublasLt)
TABLE(cudnn)
TABLE(nccl)

static const char *const sonames[DLH_LIB_COUNT] = {
    "libcudart.so.13", "libcuda.so.1", "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9",
    "libnccl.so.2"};

static int open_out(void) {
  if (!out) {
    const char *path = getenv("DLH_STUB_OUT");
    out = path ? fopen(path, "w") : stderr;
    if (!out) return 0;
    setvbuf(out, NULL, _IOLBF, 0);
  }
  return 1;
}

/* With DLH_STUB_RESOLVE set, also prints "resolve <name> <lib> found|missing". */
void *dlh_resolve(const char *name, int lib) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p && lib >= 0 && lib < DLH_LIB_COUNT) {
    void *h = dlopen(sonames[lib], RTLD_NOW | RTLD_NOLOAD);
    if (h) p = dlsym(h, name);
  }
  if (getenv("DLH_STUB_RESOLVE") && open_out())
    fprintf(out, "resolve %s %d %s\n", name, lib, p ? "found" : "missing");
  return p;
}

dlh_thread *dlh_thread_attach(void) {
  if (!open_out()) return NULL;
  dlh_self = &the_thread;
  return dlh_self;
}

uint64_t dlh_ticks_slow(void) { return 0; }

void dlh_call_store(dlh_call *c, uint64_t key, int64_t ret, const uint64_t *args, uint64_t t1) {
  (void)t1;
  uint32_t fn = (uint32_t)key, nargs = (uint32_t)(key >> 32) & 0xff;
  const dlh_fn_desc *t = NULL;
  unsigned n = 0;
  switch (fn >> 16) {
#define CASE(dom, lib) \
  case dom: if (dlh_fns_##lib) { t = dlh_fns_##lib; n = dlh_fns_##lib##_count; } break;
    CASE(DLH_DOMAIN_CUDART, cudart)
    CASE(DLH_DOMAIN_CUBLAS, cublas)
    CASE(DLH_DOMAIN_CUBLASLT, cublasLt)
    CASE(DLH_DOMAIN_CUDNN, cudnn)
    CASE(DLH_DOMAIN_NCCL, nccl)
  }
  ((struct dlh_thread_hot *)c->t)->depth = c->depth;
  unsigned idx = fn & 0xffff;
  if (!t || idx >= n) {
    fprintf(out, "BAD-FN-ID 0x%x\n", fn);
    return;
  }
  const dlh_fn_desc *d = &t[idx];
  fprintf(out, "%s ret=%" PRId64 " depth=%u", d->name, ret, c->depth);
  if (nargs != d->nargs) fprintf(out, " BAD-NARGS=%u/%u", nargs, d->nargs);
  for (uint32_t i = 0; i < nargs && i < d->nargs; i++) {
    switch (d->argtypes[i]) {
      case DLH_ARG_INT: fprintf(out, " %s=%" PRId64, d->argnames[i], (int64_t)args[i]); break;
      case DLH_ARG_PTR: fprintf(out, " %s=0x%" PRIx64, d->argnames[i], args[i]); break;
      case DLH_ARG_DOUBLE: {
        double v;
        memcpy(&v, &args[i], sizeof v);
        fprintf(out, " %s=%g", d->argnames[i], v);
        break;
      }
      default: fprintf(out, " %s=%" PRIu64, d->argnames[i], args[i]); break;
    }
  }
  fputc('\n', out);
}

void dlh_call_store0(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1) {
  dlh_call_store(c, key, ret, NULL, t1);
}
void dlh_call_store1(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0) {
  dlh_call_store(c, key, ret, &a0, t1);
}
void dlh_call_store2(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0,
                     uint64_t a1) {
  uint64_t a[2] = {a0, a1};
  dlh_call_store(c, key, ret, a, t1);
}
