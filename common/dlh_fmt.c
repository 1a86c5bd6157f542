/* dlh_fmt.c — numbers for people (dlh_fmt.h). */
#include <inttypes.h>
#include <stdio.h>

#include "dlh_fmt.h"

const char *dlh_fmt_bytes(char *buf, size_t cap, uint64_t b) {
  if (b >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double)b / (1ull << 30));
  else if (b >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double)b / (1ull << 20));
  else if (b >= 1024) snprintf(buf, cap, "%.2f KiB", (double)b / 1024);
  else snprintf(buf, cap, "%" PRIu64 " B", b);
  return buf;
}

const char *dlh_fmt_ns(char *buf, size_t cap, uint64_t ns) {
  double d = (double)ns;
  if (d < 1e3) snprintf(buf, cap, "%" PRIu64 " ns", ns);
  else if (d < 1e6) snprintf(buf, cap, "%.2f us", d / 1e3);
  else if (d < 1e9) snprintf(buf, cap, "%.2f ms", d / 1e6);
  else snprintf(buf, cap, "%.3f s", d / 1e9);
  return buf;
}
