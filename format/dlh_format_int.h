/* dlh_format_int.h — helpers shared by encoder.c and reader.c; not part of the public API. */
#ifndef DLH_FORMAT_INT_H
#define DLH_FORMAT_INT_H

#include <stddef.h>
#include <stdint.h>

static inline void dlh_put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t dlh_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* write() all of data, retrying short writes and EINTR. Returns 0 or -1 (errno set). */
int dlh_write_all(int fd, const void *data, size_t len);

#endif
