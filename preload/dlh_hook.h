/* dlh_hook.h — the event API that interposed wrappers (hooks/) call on the hot path.
 *
 * A wrapper does:
 *     static ret_t (*real)(params);
 *     if (!real) real = (ret_t (*)(params))dlh_resolve("name", DLH_LIB_CUDART);
 *     if (!real) return <error code of the API>;      // never crash the program
 *     dlh_call c;
 *     int rec = dlh_call_begin(&c);
 *     ret_t r = real(args);
 *     if (rec) { uint64_t a[N] = {...}; dlh_call_end(&c, FN_ID, (int64_t)r, N, a); }
 *     return r;
 * dlh_call_begin takes one timestamp and raises the per-thread nesting depth; dlh_call_end takes
 * the second timestamp and stores one record in the calling thread's ring (preload/ring.c): no
 * locks, no malloc; a repeat of the thread's previous call is counted into it instead (folding).
 * Calls made by dlhook itself (writer thread, init) are never recorded.
 */
#ifndef DLH_HOOK_H
#define DLH_HOOK_H

#include <stdint.h>
#include <stddef.h>

#define DLH_EXPORT __attribute__((visibility("default")))
#define DLH_LIKELY(x) __builtin_expect(!!(x), 1)
#define DLH_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Domains: same numbers as dlh.Domain in format/dlhook.proto (preload/defs.c checks). */
enum {
  DLH_DOMAIN_CUDART = 1, DLH_DOMAIN_DRIVER = 2, DLH_DOMAIN_CUBLAS = 3, DLH_DOMAIN_CUBLASLT = 4,
  DLH_DOMAIN_CUDNN = 5, DLH_DOMAIN_NCCL = 6, DLH_DOMAIN_NVTX = 7, DLH_DOMAIN_DLHOOK = 8,
};
/* A function id is (domain << 16) | index into that domain's descriptor table. */
#define DLH_FN_ID(domain, index) (((uint32_t)(domain) << 16) | (uint32_t)(index))

/* Argument types: same numbers as ArgDesc.type in format/dlhook.proto. */
enum { DLH_ARG_INT = 0, DLH_ARG_UINT = 1, DLH_ARG_PTR = 2, DLH_ARG_DOUBLE = 3, DLH_ARG_STR = 4,
       DLH_ARG_BOOL = 5 };

#define DLH_MAX_ARGS 16

/* Descriptor of one wrapped function. Generated tables are arrays of these. */
typedef struct dlh_fn_desc {
  const char *name;
  uint8_t nargs;                  /* number of recorded args (<= DLH_MAX_ARGS) */
  const char *const *argnames;    /* nargs names */
  const uint8_t *argtypes;        /* nargs DLH_ARG_* */
} dlh_fn_desc;

/* Libraries whose real functions wrappers forward to (common/dlh_cuda_libs.def). */
enum {
#define DLH_CUDA_LIB(name, lib, soname) DLH_LIB_##lib,
#include "dlh_cuda_libs.def"
#undef DLH_CUDA_LIB
  DLH_LIB_COUNT
};

/* Finds the real definition of `name` (RTLD_NEXT, then the library's soname if it is already
 * loaded). Returns NULL when there is none; never aborts. Thread-safe; callers cache the result. */
void *dlh_resolve(const char *name, int lib);

/* ---- per-thread state: one initial-exec TLS pointer (safe for dlopen'ed use) ---- */
typedef struct dlh_thread dlh_thread;
extern __thread dlh_thread *dlh_self __attribute__((tls_model("initial-exec")));

struct dlh_thread_hot {           /* the first members of struct dlh_thread */
  uint32_t depth;                 /* API nesting depth of this thread */
  uint32_t blocked;               /* > 0: do not record (inside dlhook, or thread shutting down) */
  uint64_t stolen;                /* ticks the host-sampling handler took on this thread: a call
                                     it interrupted does not count them (preload/sample.c) */
};

/* Slow path: attaches the calling thread (allocates its ring with mmap). Returns NULL when
 * recording is off (not initialised, disabled, out of memory, thread exiting). */
dlh_thread *dlh_thread_attach(void);

/* Global switch (init failures, end of trace): 0 = hooks pass through. */
extern volatile int dlh_recording __attribute__((visibility("hidden")));
/* Capture ranges (preload/capture.c): nonzero outside the capture window. Tested after
 * dlh_recording: outside a window a hook costs two predictable branches. */
extern volatile unsigned dlh_capture_closed __attribute__((visibility("hidden")));
/* cudaProfilerStart (start = 1) / cudaProfilerStop (0): opens/closes the window when
 * DLHOOK_CAPTURE_RANGE=cudaProfilerApi. Called by the wrappers around the real call (Start
 * before it, Stop after it, so both are recorded as the window's edges). */
void dlh_capture_profiler(int start);

static inline uint64_t dlh_ticks(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#else
  extern uint64_t dlh_ticks_slow(void);
  return dlh_ticks_slow();
#endif
}

typedef struct dlh_call {
  dlh_thread *t;
  uint64_t t0;
  uint64_t stolen0;               /* the thread's stolen ticks when the call began */
  uint32_t depth;
} dlh_call;

/* Starts a call. Returns 1 when the call must be recorded with dlh_call_end(), 0 when it must
 * not (then dlh_call_end must not be called). */
static inline __attribute__((always_inline)) int dlh_call_begin(dlh_call *c) {
  if (DLH_UNLIKELY(!dlh_recording)) return 0;
  if (DLH_UNLIKELY(__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED))) return 0;
  dlh_thread *t = dlh_self;
  if (DLH_UNLIKELY(!t)) {
    t = dlh_thread_attach();
    if (!t) return 0;
  }
  struct dlh_thread_hot *h = (struct dlh_thread_hot *)t;
  if (DLH_UNLIKELY(h->blocked)) return 0;
  c->t = t;
  c->depth = h->depth++;
  /* t0 before the stolen ticks, t1 after them (dlh_call_end): a sample's handler counted as
   * stolen then always ran inside [t0, t1], so the call's duration never goes below 0 */
  c->t0 = dlh_ticks();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  c->stolen0 = h->stolen;
  return 1;
}

/* What a wrapper passes to dlh_call_store for a call of fn with nargs recorded arguments: the
 * header word of its API record less the depth, a constant in a generated wrapper (the layout is
 * ring.h's; ring.c checks that both agree). */
#define DLH_API_KEY(fn, nargs)                                                                  \
  ((uint64_t)(uint32_t)(fn) | (uint64_t)(nargs) << 32 | (uint64_t)1 << 48 |                      \
   (uint64_t)(4 + (nargs)) << 56)

/* Store the record of a call started by dlh_call_begin (out of line, preload/ring.c): any
 * number of arguments in memory, or up to two in registers (no array to write and read back). */
void dlh_call_store(dlh_call *c, uint64_t key, int64_t ret, const uint64_t *args, uint64_t t1);
void dlh_call_store0(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1);
void dlh_call_store1(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0);
void dlh_call_store2(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0,
                     uint64_t a1);

/* Ends a call started by dlh_call_begin: stores one record (drops and counts it if the ring is
 * full). args: nargs values, encoded as the descriptor's argtypes say. */
static inline __attribute__((always_inline)) void dlh_call_end(dlh_call *c, uint32_t fn, int64_t ret, uint32_t nargs,
                                const uint64_t *args) {
  /* the end less what a host sample's handler took inside the call (it was not the call's) */
  uint64_t stolen = ((struct dlh_thread_hot *)c->t)->stolen - c->stolen0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  uint64_t t1 = dlh_ticks() - stolen;
  if (DLH_UNLIKELY(t1 < c->t0)) t1 = c->t0; /* ticks of another CPU a little behind */
  if (DLH_UNLIKELY(nargs > DLH_MAX_ARGS)) nargs = DLH_MAX_ARGS;
  uint64_t key = DLH_API_KEY(fn, nargs);
  if (__builtin_constant_p(nargs) && nargs == 0)
    dlh_call_store0(c, key, ret, t1);
  else if (__builtin_constant_p(nargs) && nargs == 1)
    dlh_call_store1(c, key, ret, t1, args[0]);
  else if (__builtin_constant_p(nargs) && nargs == 2)
    dlh_call_store2(c, key, ret, t1, args[0], args[1]);
  else
    dlh_call_store(c, key, ret, args, t1);
}

#endif
