/* dlh_fmt.h — numbers for people: the one way dlhook writes byte counts and durations in text
 * (tables of `dlhook stats`, flame-graph tooltips, messages of libdlhook.so). */
#ifndef DLH_FMT_H
#define DLH_FMT_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.50 KiB", "9.00 MiB", "2.00 GiB" (binary units, two decimals). Returns buf. */
const char *dlh_fmt_bytes(char *buf, size_t cap, uint64_t bytes);
/* "850 ns", "1.50 us", "2.25 ms", "3.000 s". Returns buf. */
const char *dlh_fmt_ns(char *buf, size_t cap, uint64_t ns);

#endif
