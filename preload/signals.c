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
 * to, and what the program reads back is its own handler. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "dlh_internal.h"

#define NSIG_HOOKED 7
#define NSIG_FLUSH 2 /* the first NSIG_FLUSH: flush, then call the program's handler */
static const int hooked[NSIG_HOOKED] = {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
static struct sigaction app_action[NSIG_HOOKED]; /* what the program asked for */
static int installed[NSIG_HOOKED];
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static int slot(int sig) {
  for (int i = 0; i < NSIG_HOOKED; i++)
    if (hooked[i] == sig && installed[i]) return i;
  return -1;
}

static void on_signal(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  int i = slot(sig);
  if (i < 0) { errno = saved; return; }
  struct sigaction *a = &app_action[i];
  if (a->sa_handler == SIG_IGN && !(a->sa_flags & SA_SIGINFO)) { errno = saved; return; }
  if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL) {
    /* The program dies of this signal: finish the trace, then die the same way. A fault in
     * the writer thread itself cannot wait for the writer. */
    if (!dlh_writer_is_self()) dlh_writer_stop(1, sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(sig, &dfl, NULL);
    installed[i] = 0; /* the default is in place: a later sigaction() goes straight through */
    errno = saved;
    /* Delivered when this handler returns (the signal is blocked until then); a synchronous
     * fault also re-executes the faulting instruction, which now gets the default action. */
    raise(sig);
    return;
  }
  if (i < NSIG_FLUSH) dlh_writer_flush_wait(2000);
  errno = saved;
  struct sigaction call = *a;
  if (a->sa_flags & SA_RESETHAND) { /* one-shot handler: the next one is the default */
    memset(a, 0, sizeof *a);
    a->sa_handler = SIG_DFL;
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
  resolve_real();
  if (!real_sigaction) return;
  for (int i = 0; i < NSIG_HOOKED; i++) {
    struct sigaction old, ours;
    if (real_sigaction(hooked[i], NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue; /* e.g. nohup */
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | (i >= NSIG_FLUSH ? SA_ONSTACK : 0);
    sigemptyset(&ours.sa_mask);
    app_action[i] = old;
    installed[i] = 1;
    if (real_sigaction(hooked[i], &ours, NULL) != 0) installed[i] = 0;
  }
}

DLH_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve_real();
  if (!real_sigaction) { errno = ENOSYS; return -1; }
  int i = slot(sig);
  if (i < 0) return real_sigaction(sig, act, old);
  struct sigaction prev = app_action[i];
  if (act) {
    if (!(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_IGN) {
      /* The program ignores it from now on: step aside entirely. */
      installed[i] = 0;
      int r = real_sigaction(sig, act, NULL);
      if (r == 0 && old) *old = prev;
      if (r != 0) installed[i] = 1;
      return r;
    }
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
