/* ctl.c — `dlhook ctl PID start|stop|toggle`: opens or closes the capture window of a running
 * process traced with DLHOOK_CAPTURE_RANGE=signal (or with DLHOOK_SIGNAL set). It sends the
 * process's DLHOOK_SIGNAL (default SIGUSR2) with sigqueue: value 1 = start, 2 = stop; a signal
 * without a value (kill) toggles. Before anything is sent, the target must really have dlhook
 * loaded (/proc/PID/maps), recording (not DLHOOK_DISABLE=1), with a DLHOOK_SIGNAL the library
 * accepts, and catching that signal (/proc/PID/status SigCgt): a process without dlhook's
 * handler is never sent a signal that could kill it, and each refusal says why. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dlh_signame.h"
#include "rd.h"
#include "rd_opts.h"

/* The actions, in the order of their sigqueue values: toggle 0 (a plain kill), start 1, stop 2. */
static const rd_choice actions[] = {{"toggle", NULL, 0}, {"start", NULL, 0}, {"stop", NULL, 0},
                                    {"dump", NULL, 0}, {NULL, NULL, 0}};

static const rd_option options[] = {{NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_ctl_spec = {
    .name = "ctl",
    .synopsis = "PID start|stop|toggle|dump",
    .summary = "start or stop recording of a running process (capture ranges); dump a flight recorder",
    .about = "Opens (start) or closes (stop) the capture window of process PID, which must run "
             "under libdlhook.so with DLHOOK_CAPTURE_RANGE=signal (recording starts closed; "
             "dlhook record --capture-range=signal) or with DLHOOK_SIGNAL set (recording starts "
             "open). The signal is DLHOOK_SIGNAL of that process (default SIGUSR2), sent with "
             "sigqueue; a plain `kill -USR2 PID` toggles. Each window is marked in the trace.\n\n"
             "dump: process PID runs the flight recorder (DLHOOK_MODE=flight, dlhook record "
             "--flight-recorder): it writes what its ring holds to <trace name>.flight.dlh and goes "
             "on recording; every other process recording into the same directory dumps too.\n\n"
             "Before anything is sent, the process must really have dlhook loaded, be recording "
             "and catch that signal: a process without dlhook's handler is never sent a signal "
             "that could kill it, and each refusal says why.",
    .examples = " dlhook record --capture-range=signal -o traces ./train &\n"
                " dlhook ctl $! start\n"
                " sleep 10\n"
                " dlhook ctl $! stop\n"
                " dlhook record --flight-recorder -o dumps ./train &\n"
                " dlhook ctl $! dump",
    .options = options,
};

/* The value of NAME in /proc/PID/environ (malloc'd), or NULL. Sets *readable. */
static char *environ_of(long pid, const char *name, int *readable) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/environ", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  *readable = fd >= 0;
  if (fd < 0) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = rd_xmalloc(cap + 1);
  ssize_t r;
  while ((r = read(fd, buf + n, cap - n)) > 0) {
    n += (size_t)r;
    if (n == cap) { cap *= 2; buf = rd_xrealloc(buf, cap + 1); }
  }
  close(fd);
  buf[n] = 0;
  size_t nl = strlen(name);
  char *val = NULL;
  for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
    if (!strncmp(buf + i, name, nl) && buf[i + nl] == '=') { val = rd_xstrdup(buf + i + nl + 1); break; }
  free(buf);
  return val;
}

/* Whether a library named libdlhook*.so* is mapped in process pid: 1 yes, 0 no, -1 unreadable. */
static int has_dlhook(long pid) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/%ld/maps", pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    char *slash = strrchr(line, '/');
    if (slash && !strncmp(slash + 1, "libdlhook", 9) && strstr(slash, ".so")) found = 1;
  }
  fclose(f);
  return found;
}

/* Whether process pid catches sig (SigCgt of /proc/PID/status): 1, 0, or -1 unreadable. */
static int catches(long pid, int sig) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int r = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "SigCgt:", 7)) {
      unsigned long long mask = strtoull(line + 7, NULL, 16);
      r = sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1);
      break;
    }
  fclose(f);
  return r;
}

int cmd_ctl(int argc, char **argv) {
  const char *args[3] = {NULL, NULL, NULL};
  int n = 0, opt;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_ctl_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0)
    if (n < 3) args[n++] = g.arg; /* only operands: ctl has no options but --help */
  if (opt < 0) return g.status;
  if (n != 2) return rd_usage_error("ctl", "expected PID and start, stop, toggle or dump");
  char *end;
  long pid = strtol(args[0], &end, 10);
  if (*end || pid <= 0) return rd_usage_error("ctl", "'%s' is not a process id", args[0]);
  int value = -1;
  for (int i = 0; actions[i].name; i++)
    if (!strcmp(args[1], actions[i].name)) value = i;
  if (value < 0)
    return rd_usage_error("ctl", "unknown action '%s' (%s)", args[1], rd_choices_text(actions));
  int readable;
  char *range = environ_of(pid, "DLHOOK_CAPTURE_RANGE", &readable);
  if (!readable) {
    rd_error("ctl: cannot read the environment of process %ld: %s", pid, strerror(errno));
    return RD_BAD_INPUT;
  }
  char *sigs = environ_of(pid, "DLHOOK_SIGNAL", &readable);
  char *mode = environ_of(pid, "DLHOOK_MODE", &readable);
  int flight = mode && !strcasecmp(mode, "flight");
  free(mode);
  int on_demand = (range && (!strcasecmp(range, "signal") || !strcasecmp(range, "manual"))) ||
                  (sigs && *sigs) || flight;
  if (value == 3 && !flight) {
    rd_error("ctl: process %ld does not run the flight recorder (DLHOOK_MODE=flight, dlhook "
             "record --flight-recorder); nothing to dump, not sending it a signal", pid);
    free(range); free(sigs);
    return RD_BAD_INPUT;
  }
  if (!on_demand) {
    rd_error("ctl: process %ld was not started with DLHOOK_CAPTURE_RANGE=signal or DLHOOK_SIGNAL "
             "(dlhook record --capture-range=signal); not sending it a signal", pid);
    free(range); free(sigs);
    return RD_BAD_INPUT;
  }
  int sig = sigs && *sigs ? dlh_parse_signal(sigs) : SIGUSR2;
  char *disable = environ_of(pid, "DLHOOK_DISABLE", &readable);
  int disabled = disable && (!strcmp(disable, "1") || !strcasecmp(disable, "true") ||
                             !strcasecmp(disable, "yes") || !strcasecmp(disable, "on"));
  free(disable);
  if (!dlh_ctl_signal_ok(sig)) {
    rd_error("ctl: process %ld has DLHOOK_SIGNAL='%s', which dlhook does not accept (it uses "
             "SIGUSR2 there); not sending it a signal", pid, sigs);
    free(range); free(sigs);
    return RD_BAD_INPUT;
  }
  free(range); free(sigs);
  if (disabled) {
    rd_error("ctl: process %ld runs with DLHOOK_DISABLE=1 (dlhook records nothing there); "
             "not sending it a signal", pid);
    return RD_BAD_INPUT;
  }
  int loaded = has_dlhook(pid);
  if (loaded <= 0) {
    rd_error(loaded < 0 ? "ctl: cannot read the memory map of process %ld; not sending it a signal"
                        : "ctl: process %ld does not have libdlhook.so loaded (a static program, "
                          "or started without LD_PRELOAD); not sending it a signal", pid);
    return RD_BAD_INPUT;
  }
  if (catches(pid, sig) != 1) {
    rd_error("ctl: process %ld does not catch signal %d (dlhook's handler is not installed there: "
             "secure execution, a program that ignores it); not sending it a signal", pid, sig);
    return RD_BAD_INPUT;
  }
  int rc;
  if (value) {
    union sigval v;
    v.sival_int = value;
    rc = sigqueue((pid_t)pid, sig, v);
  } else {
    rc = kill((pid_t)pid, sig);
  }
  if (rc != 0) {
    rd_error("ctl: cannot signal process %ld: %s", pid, strerror(errno));
    return RD_BAD_INPUT;
  }
  return RD_OK;
}
