/* gzip.c — the gzip stream of rd_create(path, 1): the Kineto JSON (hundreds of MB for a few
 * million events) and pprof profiles.
 *
 * Deflate by ISA-L (igzip, Debian libisal-dev) at its level 1: one gzip member, as zlib
 * wrote it, but 5-8x faster than zlib's level 1 on this JSON (3.4 GB/s against ~0.45 GB/s on a
 * tight loop's Kineto JSON, 1.2 against 0.14 GB/s on GPU records; libdeflate's level 1, whole
 * buffers only: 0.7 and 0.5 GB/s) and 10% smaller. zlib took half of a Kineto export's CPU. */
#include <errno.h>
#include <isa-l/igzip_lib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rd_scan.h"

#define GZ_OUT (256u << 10) /* compressed bytes written at a time */
#define GZ_IN (1u << 20)   /* stdio's buffer: the JSON handed to deflate at a time */

typedef struct gz {
  struct isal_zstream s;
  int fd, bad;
  uint8_t level_buf[ISAL_DEF_LVL1_DEFAULT];
  uint8_t out[GZ_OUT];
  /* stdio's buffer, ours: setvbuf(f, NULL, ...) keeps glibc's own (8 KiB for a cookie stream),
   * and deflate copies input of less than its 32 KiB history into its window first (a fifth of
   * a Kineto export's CPU went to that copy) */
  char in[GZ_IN];
} gz;

static int gz_drain(gz *z) {
  size_t n = GZ_OUT - z->s.avail_out;
  for (size_t o = 0; o < n;) {
    ssize_t w = write(z->fd, z->out + o, n - o);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { z->bad = 1; return -1; }
    o += (size_t)w;
  }
  z->s.next_out = z->out;
  z->s.avail_out = GZ_OUT;
  return 0;
}

/* Compresses what is in s.next_in; with end set, finishes the stream. */
static int gz_run(gz *z, int end) {
  z->s.end_of_stream = (uint16_t)end;
  for (;;) {
    if (isal_deflate(&z->s) != COMP_OK) { z->bad = 1; return -1; }
    int done = end ? z->s.internal_state.state == ZSTATE_END : z->s.avail_in == 0;
    if ((!z->s.avail_out || done) && gz_drain(z) < 0) return -1;
    if (done) return 0;
  }
}

static ssize_t gz_write(void *c, const char *buf, size_t n) {
  gz *z = c;
  if (z->bad) return -1;
  z->s.next_in = (uint8_t *)(uintptr_t)buf;
  /* avail_in is 32 bits; stdio hands at most its buffer (1 MiB) */
  for (size_t left = n; left;) {
    uint32_t k = left > (1u << 30) ? 1u << 30 : (uint32_t)left;
    z->s.avail_in = k;
    if (gz_run(z, 0) < 0) return -1;
    left -= k;
  }
  return (ssize_t)n;
}

static int gz_close(void *c) {
  gz *z = c;
  int rc = z->bad ? -1 : gz_run(z, 1);
  if (close(z->fd) < 0) rc = -1;
  free(z);
  return rc;
}

FILE *rd_gzip_fdopen(int fd) {
  gz *z = malloc(sizeof *z);
  if (!z) { close(fd); return NULL; }
  isal_deflate_init(&z->s);
  z->s.level = 1;
  z->s.level_buf = z->level_buf;
  z->s.level_buf_size = sizeof z->level_buf;
  z->s.gzip_flag = IGZIP_GZIP;
  z->s.next_out = z->out;
  z->s.avail_out = GZ_OUT;
  z->fd = fd;
  z->bad = 0;
  cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
  FILE *f = fopencookie(z, "w", io);
  if (!f) { close(fd); free(z); return NULL; }
  setvbuf(f, z->in, _IOFBF, GZ_IN); /* lives until gz_close, the last use of it */
  return f;
}
