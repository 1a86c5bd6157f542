/* runtime.c — the life of libdlhook.so inside the profiled process: constructor, per-thread
 * state, symbol resolution, exit and fork.
 *
 * The hot path (storing a call) is ring.c. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dlh_internal.h"

__thread dlh_thread *dlh_self __attribute__((tls_model("initial-exec")));
volatile int dlh_recording;
_Atomic(struct dlh_thread *) dlh_threads;

static pthread_key_t thread_key;
static int initialised;
pid_t dlh_pid;                                    /* the traced process (set again after fork) */

uint64_t dlh_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t dlh_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t dlh_ticks_slow(void) { return dlh_mono_ns(); }

/* What a dying thread points at once its own struct may be reused: always blocked (the large
 * count survives racy ++/-- of dlh_resolve from several dying threads). */
static struct dlh_thread dead_thread = {.hot = {.blocked = 1u << 30}};

static void thread_exit(void *arg) {
  struct dlh_thread *t = arg;
  t->hot.blocked = 1;              /* later calls of this dying thread pass through */
  dlh_altstack_release(t->altstack, t->altstack_size);
  t->altstack = NULL;
  dlh_self = &dead_thread;         /* t is reused once the writer retires it */
  atomic_store(&t->state, DLH_T_EXITED);
}

/* Takes the struct of a thread that ended (RETIRED: ring drained and given back) for a new
 * thread, so that a program creating threads without end keeps a list as long as its most
 * threads alive at once. The writer skips a claimed struct; `dropped` keeps counting (the
 * totals include the dead threads' drops) and `next` keeps the list. */
static struct dlh_thread *thread_reuse(void) {
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    int st = DLH_T_RETIRED;
    if (atomic_load_explicit(&t->state, memory_order_relaxed) != DLH_T_RETIRED ||
        !atomic_compare_exchange_strong(&t->state, &st, DLH_T_CLAIMED))
      continue;
    memset(t, 0, offsetof(struct dlh_thread, dropped)); /* hot .. tail */
    atomic_store(&t->wake_sent, 0);
    size_t w0 = offsetof(struct dlh_thread, announced);   /* writer and CUPTI state */
    memset((char *)t + w0, 0, offsetof(struct dlh_thread, next) - w0);
    return t;
  }
  return NULL;
}

dlh_thread *dlh_thread_attach(void) {
  if (!initialised || !dlh_recording) return NULL;
  struct dlh_thread *t = thread_reuse();
  int fresh = !t;
  if (fresh) {
    /* mmap, not malloc: the first call of a thread may come from a signal handler that
     * interrupted malloc. Zeroed, and page-aligned (head and tail need 64 bytes). */
    void *m = mmap(NULL, (sizeof *t + 4095) & ~(size_t)4095, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    dlh_mem_add(DLH_MEM_THREADS, (int64_t)((sizeof *t + 4095) & ~(size_t)4095));
    t = m;
  }
  t->hot.blocked = 1;              /* no recording of what we call while attaching */
  dlh_self = t;
  if (dlh_cfg.signals) t->altstack = dlh_altstack_setup(&t->altstack_size);
  dlh_stack_cache_reset(&t->stack_cache); /* a reused dlh_thread: its stacks were another thread's */
  t->buf = dlh_ring_alloc(&t->cap);
  if (!t->buf) {                   /* stays blocked: this thread passes through */
    return NULL;
  }
  t->tid = (uint32_t)syscall(SYS_gettid);
  prctl(PR_GET_NAME, t->name, 0, 0, 0);
  atomic_store(&t->state, DLH_T_ACTIVE);
  pthread_setspecific(thread_key, t);
  if (fresh) {
    struct dlh_thread *old = atomic_load(&dlh_threads);
    do t->next = old; while (!atomic_compare_exchange_weak(&dlh_threads, &old, t));
  }
  if (dlh_writer_ensure() != 0) return NULL; /* stays blocked: recording is off */
  t->hot.blocked = 0;
  dlh_cupti_lazy_init();
  return t;
}

/* ---------------------------------------------------------------- resolution */

static const char *const lib_sonames[DLH_LIB_COUNT] = {
#define DLH_CUDA_LIB(name, lib, soname) [DLH_LIB_##lib] = soname,
#include "dlh_cuda_libs.def"
#undef DLH_CUDA_LIB
};

/* Wrappers cache the real function for good, so the library that defines it must stay mapped:
 * a program that dlcloses the CUDA runtime and opens it again (a dlopen/dlclose storm) would
 * otherwise call through a pointer into unmapped memory. RTLD_NODELETE on the loaded object
 * pins it; its dlclose then only drops the reference. */
void dlh_pin_library(void *sym) {
  Dl_info info;
  if (!dladdr(sym, &info) || !info.dli_fname || !info.dli_fname[0]) return;
  void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (h) dlclose(h);
}

void *dlh_resolve(const char *name, int lib) {
  struct dlh_thread *t = dlh_self;
  if (t) t->hot.blocked++;
  void *p = dlsym(RTLD_NEXT, name);
  if (!p && lib >= 0 && lib < DLH_LIB_COUNT) {
    void *h = dlopen(lib_sonames[lib], RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      p = dlsym(h, name);
      dlclose(h);
    }
  }
  if (p) dlh_pin_library(p);
  if (t) t->hot.blocked--;
  return p;
}

/* ---------------------------------------------------------------- life cycle */

static void at_exit(void) {
  if (!initialised || dlh_foreign_process()) return;
  dlh_cupti_flush(1);
  dlh_writer_stop(0, 0);
}

int dlh_foreign_process(void) { return getpid() != dlh_pid; }

/* _exit, _Exit and quick_exit skip atexit handlers: Python's multiprocessing (so PyTorch's
 * DataLoader workers) and many forked workers end with them. The trace is finished first
 * (bounded: dlh_writer_stop waits at most 5 s). A vfork child's _exit (an exec that failed)
 * is not the traced process: it goes straight through. */
static void exit_flush(void) {
  if (!initialised || dlh_foreign_process() || dlh_writer_is_self()) return;
  /* _exit from a signal handler that interrupted this thread inside a CUDA call or inside
   * dlhook: CUPTI's locks may be held by the interrupted code; its buffers are left alone. */
  struct dlh_thread *t = dlh_self;
  if (!t || (!t->hot.depth && !t->hot.blocked && !t->cupti_depth)) dlh_cupti_flush(1);
  dlh_writer_stop(0, 0);
}

/* The real functions, looked up in the constructor (_exit is often called from a signal handler,
 * where dlsym must not run: it may malloc). Before the constructor, dlsym is the fallback. */
static void (*real_exit_fn[3])(int);
static const char *const exit_names[3] = {"_exit", "_Exit", "quick_exit"};

static void resolve_exits(void) {
  for (int i = 0; i < 3; i++) real_exit_fn[i] = (void (*)(int))dlsym(RTLD_NEXT, exit_names[i]);
}

static void call_real_exit(int which, int status) {
  void (*real)(int) = real_exit_fn[which];
  if (!real) real = (void (*)(int))dlsym(RTLD_NEXT, exit_names[which]);
  if (real) real(status);
  syscall(SYS_exit_group, status);
  for (;;) {}
}

DLH_EXPORT void _exit(int status) {
  exit_flush();
  call_real_exit(0, status);
  __builtin_unreachable();
}

DLH_EXPORT void _Exit(int status) {
  exit_flush();
  call_real_exit(1, status);
  __builtin_unreachable();
}

DLH_EXPORT void quick_exit(int status) {
  exit_flush(); /* before the program's at_quick_exit handlers, which may end in _exit */
  call_real_exit(2, status);
  __builtin_unreachable();
}

static void fork_child(void) {
  dlh_ring_after_fork_child();
  dlh_pid = getpid();
  if (!initialised) return;
  /* The child starts a trace of its own: the parent's rings and writer are left alone. */
  dlh_recording = 0;
  atomic_store(&dlh_threads, NULL);
  dlh_mem_after_fork_child();
  dlh_self = NULL;
  dlh_cupti_after_fork_child();
  dlh_writer_after_fork_child();
}

static int setuid_program(void) {
  return getuid() != geteuid() || getgid() != getegid();
}

__attribute__((constructor)) static void dlh_init(void) {
  /* The real functions behind the libc wrappers, in every state of dlhook (lookups only): exec,
   * pipe2 and _exit work with DLHOOK_DISABLE=1 and under secure execution, and are never looked
   * up later from a signal handler or a forked child. */
  dlh_exec_resolve();
  dlh_fds_resolve();
  resolve_exits();
  /* Loaded by `dlhook attach` into a running program: dlhook_attach_start (attach.c) sets up
   * the rest, with the settings the command passes; nothing of the program's is touched here. */
  if (dlh_attach_detect()) return;
  /* Secure execution (setuid, setgid, file capabilities): the environment belongs to a less
   * privileged user. Nothing at all is done: no setting read, no file, no thread. */
  if (getauxval(AT_SECURE)) return;
  dlh_pid = getpid();
  dlh_config_load();
  if (!dlh_cfg.enabled) return;
  if (setuid_program()) return; /* never trace setuid/setgid programs */
  if (pthread_key_create(&thread_key, thread_exit) != 0) {
    dlh_warn("cannot create a thread key; tracing disabled");
    return;
  }
  pthread_atfork(NULL, NULL, fork_child);
  dlh_stacks_init(dlh_stacks_settings());
  dlh_fds_init(); /* after libunwind is loaded */
  dlh_capture_init();
  initialised = 1;
  /* The trace file and the writer thread come with the first recorded call (dlh_writer_ensure):
   * processes that never call CUDA (shells, launchers) leave no trace behind. */
  atexit(at_exit);
  if (dlh_cfg.signals) dlh_signals_install();
  dlh_cupti_setup_injection();
  dlh_nvtx_setup_injection();
  dlh_exec_init();
  dlh_recording = 1;
}

/* ---------------------------------------------------------------- dlhook attach */

/* The run-time part of the constructor for a library loaded by `dlhook attach` (attach.c), after
 * it set dlh_cfg: per-thread state, stacks, fds, capture state, the exit flush. No signal
 * handler, no environment change, no CUDA_INJECTION64_PATH. Returns 0, or -1. Once. */
int dlh_runtime_late_init(void) {
  if (initialised) return 0;
  if (getauxval(AT_SECURE) || setuid_program()) return -1;
  dlh_pid = getpid();
  if (pthread_key_create(&thread_key, thread_exit) != 0) return -1;
  pthread_atfork(NULL, NULL, fork_child);
  dlh_stacks_init(dlh_stacks_settings());
  dlh_fds_init();
  dlh_capture_init();
  initialised = 1;
  atexit(at_exit); /* an exit while attached finishes the trace */
  return 0;
}
