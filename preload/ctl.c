/* ctl.c — `dlhook ctl PID start|stop|toggle|dump`: DLHOOK_SIGNAL (default SIGUSR2) opens and
 * closes the capture window (capture.c). The command sends it with sigqueue (value 1 start,
 * 2 stop, 3 dump: the flight recorder writes its ring, DLHOOK_MODE=flight); a plain
 * `kill -USR2 PID` toggles. In flight mode the handler is always installed.
 *
 * A program may have a handler of its own for that signal: signals.c's sigaction() wrapper
 * hands such a sigaction here (dlh_ctl_sigaction), the program's handler is remembered and
 * called for every such signal but ctl's requests, and the program reads back its own action. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "dlh_internal.h"

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static struct sigaction ctl_app;  /* the program's own action for DLHOOK_SIGNAL */
static int ctl_app_set;
int dlh_ctl_installed;            /* dlhook's DLHOOK_SIGNAL handler is in place */

/* signals.c's sigaction() for DLHOOK_SIGNAL once dlhook's handler is in place: the program's
 * action is remembered (and read back); dlhook's handler takes the program's flags and mask
 * while the program has a handler. */
int dlh_ctl_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  struct sigaction prev;
  if (ctl_app_set) prev = ctl_app;
  else { memset(&prev, 0, sizeof prev); prev.sa_handler = SIG_DFL; }
  if (act) {
    struct sigaction cur, ours;
    if (real_sigaction(sig, NULL, &cur) != 0) return -1;
    int handler = (act->sa_flags & SA_SIGINFO) ||
                  (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN);
    ours = cur;
    if (handler) {
      ours.sa_mask = act->sa_mask;
      ours.sa_flags = SA_SIGINFO | (act->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
    } else {
      sigemptyset(&ours.sa_mask);
      ours.sa_flags = SA_SIGINFO | SA_RESTART; /* dlhook's own signal: never an EINTR */
    }
    if (real_sigaction(sig, &ours, NULL) != 0) return -1;
    ctl_app = *act;
    ctl_app_set = 1;
  }
  if (old) *old = prev;
  return 0;
}

/* For a DLHOOK_SIGNAL that is not a start/stop request: calls the program's own handler for
 * it. Returns 1 when it did, 0 when the program has none (the signal then toggles the capture
 * window). */
static int chain(int sig, siginfo_t *si, void *uc) {
  if (!ctl_app_set) return 0;
  struct sigaction call = ctl_app;
  if (!(call.sa_flags & SA_SIGINFO) &&
      (call.sa_handler == SIG_DFL || call.sa_handler == SIG_IGN))
    return 0;
  if ((call.sa_flags & SA_RESETHAND) && !dlh_foreign_process()) {
    memset(&ctl_app, 0, sizeof ctl_app);
    ctl_app.sa_handler = SIG_DFL;
  }
  if (!(call.sa_flags & SA_NODEFER)) sigaddset(&call.sa_mask, sig);
  pthread_sigmask(SIG_BLOCK, &call.sa_mask, NULL); /* the program's mask; restored on return */
  if (call.sa_flags & SA_SIGINFO) call.sa_sigaction(sig, si, uc);
  else call.sa_handler(sig);
  return 1;
}

static void on_ctl_signal(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  int request = si && si->si_code == SI_QUEUE &&
                (si->si_value.sival_int == 1 || si->si_value.sival_int == 2 ||
                 (si->si_value.sival_int == 3 && dlh_cfg.flight));
  /* Flight mode without signal capture ranges: a plain DLHOOK_SIGNAL (a scheduler's warning
   * before a time limit: `sbatch --signal=USR2@120`) dumps; the program's handler, if any,
   * still gets it. */
  if (!request && dlh_cfg.flight && dlh_capture_mode != DLH_CAPTURE_SIGNAL)
    dlh_flight_request(DLH_FLIGHT_SIGNAL, sig);
  /* The program's own handler for this signal gets everything but ctl's requests. */
  if (!request && chain(sig, si, uc)) { errno = saved; return; }
  if (!request && dlh_cfg.flight && dlh_capture_mode != DLH_CAPTURE_SIGNAL) { errno = saved; return; }
  if (request && si->si_value.sival_int == 3) dlh_flight_request(DLH_FLIGHT_CTL, 0); /* dump */
  else dlh_capture_request(request ? si->si_value.sival_int : 0);
  errno = saved;
}

/* Constructor (and dlhook attach's late start), after dlh_capture_init: the handler, when
 * DLHOOK_CAPTURE_RANGE=signal or DLHOOK_SIGNAL was given. */
void dlh_ctl_init(void) {
  if (dlh_capture_mode != DLH_CAPTURE_SIGNAL && !dlh_cfg.ctl_signal_set && !dlh_cfg.flight) return;
  int sig = dlh_cfg.ctl_signal;
  real_sigaction =
      (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
  if (!real_sigaction) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_ctl_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (real_sigaction(sig, &sa, NULL) != 0) dlh_warn("cannot install the DLHOOK_SIGNAL handler (signal %d)", sig);
  else dlh_ctl_installed = 1;
}
