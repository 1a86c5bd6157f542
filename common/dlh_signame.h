/* dlh_signame.h — signal names for DLHOOK_SIGNAL, shared by libdlhook.so (preload/config.c)
 * and `dlhook ctl`, so that both read a setting the same way. */
#ifndef DLH_SIGNAME_H
#define DLH_SIGNAME_H

#include <signal.h>
#include <stdlib.h>
#include <strings.h>

/* A signal by number or name (USR1, SIGUSR2, RTMIN+3); -1 when unknown. */
static inline int dlh_parse_signal(const char *s) {
  static const struct { const char *n; int sig; } names[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"URG", SIGURG},
      {"WINCH", SIGWINCH}, {"PWR", SIGPWR}, {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}};
  char *end;
  long v = strtol(s, &end, 10);
  if (*s && !*end) return v > 0 && v < NSIG ? (int)v : -1;
  if (!strncasecmp(s, "SIG", 3)) s += 3;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcasecmp(s, names[i].n)) return names[i].sig;
  if (!strncasecmp(s, "RTMIN+", 6)) {
    v = strtol(s + 6, &end, 10);
    if (!*end && v >= 0 && SIGRTMIN + v <= SIGRTMAX) return SIGRTMIN + (int)v;
  }
  return -1;
}

/* Whether sig may be DLHOOK_SIGNAL: a signal that nothing else needs for its default meaning
 * (USR1, USR2, HUP, URG, WINCH, PWR, PROF, VTALRM, the real-time ones). Fault signals (SEGV,
 * BUS, FPE, ILL, TRAP, SYS, ABRT: a handler that returns makes the fault repeat forever), the
 * ones that end or stop the process (INT, TERM, QUIT, KILL, STOP, job control), PIPE, CHLD,
 * ALRM, XCPU and XFSZ are refused, by the library and by `dlhook ctl` alike. */
static inline int dlh_ctl_signal_ok(int sig) {
  switch (sig) {
    case SIGUSR1: case SIGUSR2: case SIGHUP: case SIGURG: case SIGWINCH: case SIGPWR:
    case SIGPROF: case SIGVTALRM:
      return 1;
    default:
      return sig >= SIGRTMIN && sig <= SIGRTMAX;
  }
}

#endif
