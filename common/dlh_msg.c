/* dlh_msg.c — messages on stderr (dlh_msg.h). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlh_msg.h"

int dlh_msg_quiet;

/* The stream fd 2 was when dlh_msg_bind_stderr ran: 0 unbound (every message goes to fd 2),
 * 1 bound to (dev, ino), 2 fd 2 was closed then (no message goes anywhere). */
static int bound;
static dev_t bound_dev;
static ino_t bound_ino;

void dlh_msg_bind_stderr(void) {
  struct stat st;
  bound = fstat(2, &st) == 0 ? 1 : 2;
  bound_dev = bound == 1 ? st.st_dev : 0;
  bound_ino = bound == 1 ? st.st_ino : 0;
}

/* Whether fd 2 is still the stream it was at the binding: a program that closed fd 2 and opened
 * its own file there (a daemon's log, a tool's data) never gets dlhook's messages in it. */
static int stderr_is_ours(void) {
  struct stat st;
  if (bound == 0) return 1;
  return bound == 1 && fstat(2, &st) == 0 && st.st_dev == bound_dev && st.st_ino == bound_ino;
}

void dlh_vmsg(const char *prefix, const char *fmt, va_list ap) {
  if (!stderr_is_ours()) return;
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "dlhook: %s", prefix);
  if (n < 0) return;
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  if (m > 0) n += m;
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

void dlh_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dlh_vmsg("warning: ", fmt, ap);
  va_end(ap);
}

void dlh_info(const char *fmt, ...) {
  if (dlh_msg_quiet) return;
  va_list ap;
  va_start(ap, fmt);
  dlh_vmsg("", fmt, ap);
  va_end(ap);
}
