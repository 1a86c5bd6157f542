/* signals.c — SIGINT/SIGTERM: flush the trace, then do what the program would have done.
 * Fatal signals (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL; abort() and uncaught C++ exceptions
 * end in SIGABRT): when the program has no handler of its own, finish the trace with the
 * async-signal-safe dlh_writer_stop(), restore the default action and re-raise, so the process
 * dies the same way (same signal, same core dump). A handler of the program for a fatal signal
 * is called at once, without a flush: programs use SIGSEGV/SIGFPE for their own purposes (JITs,
 * guard pages), and a handler that gives up re-raises with the default, which comes back here.
 *
 * dlhook's handler stays installed in front of the program's: sigaction() and signal() are
 * wrapped so that a handler the program installs for these signals is remembered and chained
 * to, and what the program reads back is its own handler.
 *
 * Rules (each a bug that was found in real programs):
 * - The front handler is installed with the program's own flags and mask (SA_RESTART or not,
 *   SA_ONSTACK, SA_NODEFER): a program that relies on EINTR to stop a blocking read (CPython's
 *   KeyboardInterrupt, EINTR-based shutdown) sees it. Only when dlhook itself is the last word
 *   (the program's action is the default) does a fatal signal run on dlhook's alternate stack.
 * - A vfork child (CPython >= 3.10 `subprocess`) runs in the parent's memory and resets its
 *   handlers with sigaction() before exec: there, sigaction() goes straight to libc and nothing
 *   shared with the parent (the table of the program's handlers) is written.
 * - Each thread that records gets an alternate signal stack (altstack.c), unless it has one
 *   of its own, so that a stack overflow still runs the flush. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dlh_internal.h"

#define NSIG_HOOKED 7
#define NSIG_FLUSH 2 /* the first NSIG_FLUSH: flush, then call the program's handler */
static const int hooked[NSIG_HOOKED] = {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
static struct sigaction app_action[NSIG_HOOKED]; /* what the program asked for */
static int installed[NSIG_HOOKED];
static int armed; /* dlh_signals_install ran: a later sigaction() may put the front in place */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static void on_signal(int sig, siginfo_t *si, void *uc);

static int hooked_slot(int sig) {
  for (int i = 0; i < NSIG_HOOKED; i++)
    if (hooked[i] == sig) return i;
  return -1;
}

static int slot(int sig) {
  int i = hooked_slot(sig);
  return i >= 0 && installed[i] ? i : -1;
}

static int app_is_default(const struct sigaction *a) {
  return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

/* Whether the process goes on after slot i's signal arrives under action a, with no handler of
 * its own to run: the signal is ignored, or it is SIGINT/SIGTERM with the default action in the
 * init process of a PID namespace (a container's pid 1), where the kernel discards a signal
 * that has the default action (only a fault is forced on it). dlhook then stays out of the way:
 * a front handler would make the kernel deliver the signal (EINTR in the program's calls), and
 * its flush-and-re-raise would finish the trace of a process that goes on. */
static int app_goes_on(int i, const struct sigaction *a) {
  if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN) return 1;
  return i < NSIG_FLUSH && app_is_default(a) && getpid() == 1;
}

/* dlhook's front action for slot i, given the program's action a: the program's flags and mask
 * (so that EINTR, nesting and the stack are what the program asked for), SA_SIGINFO always;
 * SA_ONSTACK also when dlhook's flush is the last thing that runs (fatal signal, no handler of
 * the program): a stack overflow must still reach the flush. */
static void front_action(int i, const struct sigaction *a, struct sigaction *ours) {
  memset(ours, 0, sizeof *ours);
  ours->sa_sigaction = on_signal;
  ours->sa_mask = a->sa_mask;
  ours->sa_flags = SA_SIGINFO | (a->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
  if (i >= NSIG_FLUSH && app_is_default(a)) ours->sa_flags |= SA_ONSTACK;
}

/* A fault inside a guarded read of dlhook's (dlh_thread.prod.probe: host sampling reads a
 * Python thread's frames in its signal handler, where a frame may be half made): back to the
 * guard, which drops what it read. */
static inline void probe_fault(int sig) {
  struct dlh_thread *t = dlh_self;
  if ((sig == SIGSEGV || sig == SIGBUS) && t && t->os.probe) siglongjmp(*(sigjmp_buf *)t->os.probe, 1);
}

int dlh_signals_fault_front(void) {
  int a = slot(SIGSEGV), b = slot(SIGBUS);
  return a >= 0 && b >= 0;
}

/* The signal that host sampling took (sample.c): the program's sigaction() for it goes there. */
static int route_sig;
static int (*route_fn)(int, const struct sigaction *, struct sigaction *,
                       int (*)(int, const struct sigaction *, struct sigaction *));
void dlh_signals_route(int sig, int (*fn)(int, const struct sigaction *, struct sigaction *,
                                          int (*)(int, const struct sigaction *,
                                                  struct sigaction *))) {
  route_fn = fn;
  route_sig = sig;
}

static void on_signal(int sig, siginfo_t *si, void *uc) {
  probe_fault(sig);
  int saved = errno;
  int i = slot(sig);
  if (i < 0) { errno = saved; return; }
  /* A vfork child (or a raw clone) runs in our memory but is not the traced process: it does
   * what the program would do, and writes nothing that the parent shares. */
  int foreign = dlh_foreign_process();
  struct sigaction *a = &app_action[i];
  if (a->sa_handler == SIG_IGN && !(a->sa_flags & SA_SIGINFO)) { errno = saved; return; }
  if (app_is_default(a)) {
    /* The program dies of this signal: finish the trace, then die the same way. A fault in
     * the writer thread itself cannot wait for the writer. */
    if (!foreign && !dlh_writer_is_self()) dlh_writer_stop(1, sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(sig, &dfl, NULL);
    if (!foreign) installed[i] = 0; /* the default is in place: a later sigaction() goes through */
    errno = saved;
    /* Delivered when this handler returns (the signal is blocked until then); a synchronous
     * fault also re-executes the faulting instruction, which now gets the default action. */
    raise(sig);
    return;
  }
  if (i < NSIG_FLUSH && !foreign) { /* flight mode: SIGINT/SIGTERM dump the ring */
    if (!dlh_cfg.flight || dlh_writer_dump_wait(DLH_FLIGHT_SIGNAL, sig, 2000) != 0)
      dlh_writer_flush_wait(2000);
  }
  errno = saved;
  struct sigaction call = *a;
  if ((a->sa_flags & SA_RESETHAND) && !foreign) { /* one-shot: the next one is the default */
    memset(a, 0, sizeof *a);
    a->sa_handler = SIG_DFL;
    struct sigaction ours;
    front_action(i, a, &ours);
    if (app_goes_on(i, a)) installed[i] = 0; /* pid 1: the default goes on, dlhook steps aside */
    real_sigaction(sig, installed[i] ? &ours : a, NULL);
  }
  if (!(call.sa_flags & SA_NODEFER)) sigaddset(&call.sa_mask, sig);
  pthread_sigmask(SIG_BLOCK, &call.sa_mask, NULL); /* the program's mask; restored on return */
  if (call.sa_flags & SA_SIGINFO) call.sa_sigaction(sig, si, uc);
  else call.sa_handler(sig);
}

static void resolve_real(void) {
  if (!real_sigaction)
    real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
        RTLD_NEXT, "sigaction");
}

void dlh_signals_install(void) {
  dlh_altstack_init();
  resolve_real();
  if (!real_sigaction) return;
  armed = 1;
  for (int i = 0; i < NSIG_HOOKED; i++) {
    struct sigaction old, ours;
    if (real_sigaction(hooked[i], NULL, &old) != 0) continue;
    if (app_goes_on(i, &old)) continue; /* e.g. nohup; a later sigaction() may install it */
    front_action(i, &old, &ours);
    app_action[i] = old;
    installed[i] = 1;
    if (real_sigaction(hooked[i], &ours, NULL) != 0) installed[i] = 0;
  }
}

DLH_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve_real();
  if (!real_sigaction) { errno = ENOSYS; return -1; }
  int i = slot(sig);
  if (i < 0 && sig == dlh_cfg.ctl_signal && dlh_ctl_installed && !dlh_foreign_process())
    return dlh_ctl_sigaction(sig, act, old);
  if (i < 0 && route_sig && sig == route_sig && route_fn && !dlh_foreign_process())
    return route_fn(sig, act, old, real_sigaction);
  if (i < 0) {
    i = hooked_slot(sig);
    if (i < 0 || !armed || !act || app_goes_on(i, act) || dlh_foreign_process())
      return real_sigaction(sig, act, old);
    /* The signal was ignored (at start-up: nohup, `trap '' TERM`) and the program now gives it
     * a handler or the default: the process may die of it, so the front goes in place. */
    struct sigaction prev, ours;
    if (real_sigaction(sig, NULL, &prev) != 0) return -1;
    app_action[i] = *act;
    front_action(i, act, &ours);
    installed[i] = 1; /* before the kernel has it: a signal that comes at once is handled */
    if (real_sigaction(sig, &ours, NULL) != 0) {
      installed[i] = 0;
      return -1; /* e.g. a bad mask: the program's error */
    }
    if (old) *old = prev;
    return 0;
  }
  if (dlh_foreign_process()) {
    /* A vfork child: its kernel table is its own, our memory is the parent's. */
    struct sigaction prev = app_action[i];
    if (act && real_sigaction(sig, act, NULL) != 0) return -1;
    if (old) *old = prev;
    return 0;
  }
  struct sigaction prev = app_action[i];
  if (act) {
    if (app_goes_on(i, act)) {
      /* The program goes on after this signal from now on: step aside entirely. */
      installed[i] = 0;
      int r = real_sigaction(sig, act, NULL);
      if (r == 0 && old) *old = prev;
      if (r != 0) installed[i] = 1;
      return r;
    }
    struct sigaction ours;
    front_action(i, act, &ours);
    if (real_sigaction(sig, &ours, NULL) != 0) return -1; /* e.g. a bad mask: the program's error */
    app_action[i] = *act;
  }
  if (old) *old = prev;
  return 0;
}

DLH_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART; /* BSD semantics, as glibc's signal() */
  sigemptyset(&act.sa_mask);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? (__sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}
