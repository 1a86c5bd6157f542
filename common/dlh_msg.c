/* dlh_msg.c — messages on stderr (dlh_msg.h). */
#include <stdio.h>
#include <unistd.h>

#include "dlh_msg.h"

int dlh_msg_quiet;

void dlh_vmsg(const char *prefix, const char *fmt, va_list ap) {
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
