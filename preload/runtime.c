/* runtime.c — the life of libdlhook.so inside the profiled process: the constructor, what a
 * thread's first recorded call starts (the writer; CUPTI when another tool injects), the CUDA
 * driver's InitializeInjection, exit and fork. Everything else of the runtime is below it:
 * it starts the other parts, none of them calls it (attach.c's late start excepted).
 *
 * The hot path (storing a call) is ring.c; the threads' state, thread.c. */
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

static int initialised;

/* ---------------------------------------------------------------- life cycle */

static void at_exit(void) {
  if (!initialised || dlh_foreign_process()) return;
  dlh_cupti_flush(1);
  dlh_writer_stop(0, 0);
}


static void at_exit_status(int status, void *arg) {
  (void)arg;
  if (!initialised || dlh_foreign_process()) return;
  dlh_flight_exit_status(status);
  at_exit();
}

/* _exit, _Exit and quick_exit skip atexit handlers: Python's multiprocessing (so PyTorch's
 * DataLoader workers) and many forked workers end with them. The trace is finished first
 * (bounded: dlh_writer_stop waits at most 5 s). A vfork child's _exit (an exec that failed)
 * is not the traced process: it goes straight through. */
static void exit_flush(int status) {
  if (!initialised || dlh_foreign_process() || dlh_writer_is_self()) return;
  dlh_flight_exit_status(status); /* flight mode: a non-zero status dumps */
  /* _exit from a signal handler that interrupted this thread inside a CUDA call or inside
   * dlhook: CUPTI's locks may be held by the interrupted code; its buffers are left alone. */
  struct dlh_thread *t = dlh_self;
  if (!t || (!t->hot.depth && !t->hot.blocked && !t->cupti.depth)) dlh_cupti_flush(1);
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
  exit_flush(status);
  call_real_exit(0, status);
  __builtin_unreachable();
}

DLH_EXPORT void _Exit(int status) {
  exit_flush(status);
  call_real_exit(1, status);
  __builtin_unreachable();
}

DLH_EXPORT void quick_exit(int status) {
  exit_flush(status); /* before the program's at_quick_exit handlers, which may end in _exit */
  call_real_exit(2, status);
  __builtin_unreachable();
}

/* ---------------------------------------------------------------- starts */

/* A thread's first recorded call (thread.c): the trace file and the writer thread come with it
 * (processes that never call CUDA, shells and launchers, leave no trace behind); CUPTI too when
 * another tool owns CUDA_INJECTION64_PATH. 0 when recording goes on. */
static int start_services(void) {
  if (dlh_writer_ensure() != 0) return -1;
  dlh_ncclprof_started();
  static int copy_checked; /* once per process: a later copy of libdlhook.so stands aside */
  const char *later = __atomic_exchange_n(&copy_checked, 1, __ATOMIC_RELAXED) ? NULL
                                                                            : dlh_later_copy();
  if (later)
    dlh_warn("libdlhook.so is loaded twice: this copy records the process, the one loaded later "
             "(%s) passes every call through", later);
  dlh_cupti_lazy_init();
  return 0;
}

/* Called by the CUDA driver (real or simulated) during cuInit when CUDA_INJECTION64_PATH names
 * this library. Returns 1 (success) in every case: a failure only costs GPU activity. */
DLH_EXPORT int InitializeInjection(void) {
  if (dlh_recording && dlh_writer_ensure() == 0) dlh_cupti_start();
  return 1;
}

/* The parent's records reach its trace before it forks: a parent that ends right after the fork
 * inside libc loses nothing (daemon(3) ends it with libc's own _exit, which no wrapper sees).
 * A vfork child forks nothing of ours (pthread_atfork handlers do not run for vfork). */
static void fork_prepare(void) {
  if (!initialised || !dlh_recording || dlh_foreign_process()) return;
  dlh_writer_flush_wait(1000);
}

static void fork_child(void) {
  dlh_ring_after_fork_child();
  dlh_pid = getpid();
  if (!initialised) return;
  /* The child starts a trace of its own: the parent's rings and writer are left alone. */
  dlh_recording = 0;
  dlh_threads_after_fork_child();
  dlh_mem_after_fork_child();
  dlh_cupti_after_fork_child();
  dlh_writer_after_fork_child();
  dlh_sample_after_fork_child();
}

static void wire_sampling(void) {
  static const dlh_sample_ops ops = {dlh_sample_on_call, dlh_sample_lost, dlh_sample_cost_ticks,
                                     dlh_sample_stop, dlh_sample_reset_for_attach,
                                     dlh_sample_starting, dlh_sample_thread_cpu_ns};
  dlh_writer_sampling(&ops);
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
  dlh_msg_bind_stderr(); /* dlhook's messages go only to the stream fd 2 is now */
  dlh_config_load();
  if (!dlh_cfg.enabled) return;
  if (setuid_program()) return; /* never trace setuid/setgid programs */
  /* A second copy of libdlhook.so in this process: the first one loaded records (and warns);
   * this one starts nothing, and its wrappers pass every call through (dlh_recording stays 0). */
  if (dlh_earlier_copy()) return;
  if (dlh_threads_init(start_services) != 0) {
    dlh_warn("cannot create a thread key; tracing disabled");
    return;
  }
  pthread_atfork(NULL, NULL, fork_child);
  dlh_stacks_init(dlh_stacks_settings());
  dlh_fds_init(); /* after libunwind is loaded */
  dlh_capture_init();
  dlh_ctl_init();
  /* Registered last, so that it runs first (prepare handlers run in reverse order): unwind/'s
   * takes the lock that the writer's module scan needs, and the flush would wait for nothing. */
  pthread_atfork(fork_prepare, NULL, NULL);
  initialised = 1;
  /* The trace file and the writer thread come with the first recorded call (dlh_writer_ensure):
   * processes that never call CUDA (shells, launchers) leave no trace behind. */
  /* flight mode: on_exit, which is given the status exit() got (main's return value included):
   * a non-zero status dumps the flight recorder */
  if (dlh_cfg.flight) on_exit(at_exit_status, NULL);
  else atexit(at_exit);
  if (dlh_cfg.signals) dlh_signals_install();
  dlh_cupti_setup_injection();
  dlh_nvtx_setup_injection();
  dlh_ncclprof_setup();
  dlh_exec_init();
  dlh_recording = 1;
  wire_sampling();
  dlh_sample_init(dlh_writer_ensure); /* DLHOOK_SAMPLE=always: the sampler starts now */
}

/* ---------------------------------------------------------------- dlhook attach */

/* The run-time part of the constructor for a library loaded by `dlhook attach` (attach.c), after
 * it set dlh_cfg: per-thread state, stacks, fds, capture state, the exit flush. No signal
 * handler, no environment change, no CUDA_INJECTION64_PATH. Returns 0, or -1. Once. */
int dlh_runtime_late_init(void) {
  if (initialised) return 0;
  if (getauxval(AT_SECURE) || setuid_program()) return -1;
  dlh_pid = getpid();
  if (dlh_threads_init(start_services) != 0) return -1;
  pthread_atfork(NULL, NULL, fork_child);
  dlh_stacks_init(dlh_stacks_settings());
  dlh_fds_init();
  dlh_capture_init();
  dlh_ctl_init();
  pthread_atfork(fork_prepare, NULL, NULL); /* last: see dlh_init */
  initialised = 1;
  atexit(at_exit); /* an exit while attached finishes the trace */
  wire_sampling();
  dlh_sample_init(dlh_writer_ensure);
  return 0;
}
