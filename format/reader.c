/* reader.c — streaming reader for dlhook traces (see dlh_format.h for the file layout).
 *
 * The file is read through stdio in chunks; each zstd frame is decompressed completely (its
 * checksum verified) before any of its packets is handed out, so damage anywhere in a frame
 * loses that frame only. Memory is bounded by the largest frame (at most DLH_MAX_FRAME bytes
 * decompressed) plus one input chunk. Any damage turns into a sticky -1 with a message naming
 * the file offset.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "dlh_format.h"
#include "dlh_format_int.h"

#define DLH_MAX_FRAME (1ull << 30) /* refuse frames claiming more than 1 GiB */
#define DLH_IN_CHUNK (256u << 10)

struct dlh_reader {
  FILE *f;
  ZSTD_DCtx *dctx;
  uint8_t *in;          /* compressed input chunk */
  size_t in_pos, in_len;
  uint64_t in_off;      /* file offset of in[0] */
  int eof;
  uint8_t *frame;       /* decompressed current frame */
  size_t frame_cap, frame_len, frame_pos;
  uint64_t frame_off;   /* file offset where the current frame starts */
  uint64_t frames;
  Dlh__Packet *pkt;     /* last packet handed out */
  char *err;
  int failed;
};

static char *vfmt(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) return NULL;
  return s;
}

static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = vfmt(f, ap);
  va_end(ap);
  return s;
}

static int fail(dlh_reader *r, const char *f, ...) {
  if (!r->failed) {
    va_list ap;
    va_start(ap, f);
    free(r->err);
    r->err = vfmt(f, ap);
    va_end(ap);
    r->failed = 1;
  }
  return -1;
}

static void set_err(char **err, char *msg) {
  if (err) *err = msg ? msg : strdup("out of memory");
  else free(msg);
}

dlh_reader *dlh_reader_open(const char *path, char **err) {
  if (err) *err = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    set_err(err, fmt("cannot open: %s", strerror(errno)));
    return NULL;
  }
  uint8_t hdr[DLH_HEADER_SIZE];
  size_t n = fread(hdr, 1, sizeof hdr, f);
  if (n < sizeof hdr && ferror(f)) {
    set_err(err, fmt("cannot read: %s", strerror(errno ? errno : EIO)));
    fclose(f);
    return NULL;
  }
  if (n == 0) {
    set_err(err, fmt("empty file"));
    fclose(f);
    return NULL;
  }
  if (memcmp(hdr, DLH_MAGIC, n < 8 ? n : 8) != 0) {
    set_err(err, fmt("not a dlhook trace (bad magic)"));
    fclose(f);
    return NULL;
  }
  if (n < sizeof hdr) {
    set_err(err, fmt("truncated header (%zu of %d bytes)", n, DLH_HEADER_SIZE));
    fclose(f);
    return NULL;
  }
  uint32_t ver = dlh_get_le32(hdr + 8);
  if (ver != DLH_FORMAT_VERSION) {
    set_err(err, fmt("unsupported format version %u (this dlhook reads version %u)", ver,
                     DLH_FORMAT_VERSION));
    fclose(f);
    return NULL;
  }
  dlh_reader *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  r->f = f;
  r->dctx = ZSTD_createDCtx();
  r->in = malloc(DLH_IN_CHUNK);
  if (!r->dctx || !r->in) goto oom;
  ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 30);
  r->in_off = DLH_HEADER_SIZE;
  return r;
oom:
  set_err(err, NULL);
  if (r) {
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    free(r);
  }
  fclose(f);
  return NULL;
}

/* Makes sure at least `want` unread input bytes are buffered (fewer only at end of file).
 * Returns -1 on a read error. */
static int fill(dlh_reader *r, size_t want) {
  if (r->in_len - r->in_pos >= want || r->eof) return 0;
  if (r->in_pos > 0) {
    memmove(r->in, r->in + r->in_pos, r->in_len - r->in_pos);
    r->in_off += r->in_pos;
    r->in_len -= r->in_pos;
    r->in_pos = 0;
  }
  while (r->in_len < want && !r->eof) {
    size_t k = fread(r->in + r->in_len, 1, DLH_IN_CHUNK - r->in_len, r->f);
    r->in_len += k;
    if (k == 0) {
      if (ferror(r->f)) return -1;
      r->eof = 1;
    }
  }
  return 0;
}

/* Decompresses the next frame into r->frame. Returns 1, 0 at the clean end, -1 on damage. */
static int read_frame(dlh_reader *r) {
  if (fill(r, 18) < 0) /* 18: the largest zstd frame header */
    return fail(r, "read error at offset %llu: %s",
                (unsigned long long)(r->in_off + r->in_pos), strerror(errno ? errno : EIO));
  size_t avail = r->in_len - r->in_pos;
  uint64_t off = r->in_off + r->in_pos;
  r->frame_off = off;
  if (avail == 0) return 0;
  /* The content size, when the header is readable, bounds the buffer up front; anything the
   * header check cannot tell (short or bad header) is reported by the decompressor below. */
  unsigned long long csize = ZSTD_getFrameContentSize(r->in + r->in_pos, avail);
  size_t cap = 1u << 20;
  if (csize != ZSTD_CONTENTSIZE_ERROR && csize != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (csize > DLH_MAX_FRAME)
      return fail(r, "frame at offset %llu claims %llu bytes (limit 1 GiB)",
                  (unsigned long long)off, csize);
    cap = (size_t)csize + 1; /* +1: room to notice an overrun */
  }
  if (cap > r->frame_cap) {
    uint8_t *p = realloc(r->frame, cap);
    if (!p) return fail(r, "out of memory for frame at offset %llu", (unsigned long long)off);
    r->frame = p;
    r->frame_cap = cap;
  }
  ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
  ZSTD_outBuffer out = {r->frame, r->frame_cap, 0};
  for (;;) {
    if (r->in_pos == r->in_len) {
      if (fill(r, 1) < 0)
        return fail(r, "read error at offset %llu: %s",
                    (unsigned long long)(r->in_off + r->in_pos), strerror(errno ? errno : EIO));
      if (r->in_pos == r->in_len)
        return fail(r, "truncated frame at offset %llu (file ends at %llu)",
                    (unsigned long long)off, (unsigned long long)r->in_off + r->in_len);
    }
    if (out.pos == out.size) {
      if (out.size >= DLH_MAX_FRAME)
        return fail(r, "frame at offset %llu exceeds 1 GiB", (unsigned long long)off);
      size_t nc = out.size * 2;
      if (nc > DLH_MAX_FRAME) nc = DLH_MAX_FRAME;
      uint8_t *p = realloc(r->frame, nc);
      if (!p) return fail(r, "out of memory for frame at offset %llu", (unsigned long long)off);
      r->frame = p;
      r->frame_cap = nc;
      out.dst = p;
      out.size = nc;
    }
    ZSTD_inBuffer in = {r->in, r->in_len, r->in_pos};
    size_t rc = ZSTD_decompressStream(r->dctx, &out, &in);
    r->in_pos = in.pos;
    if (ZSTD_isError(rc))
      return fail(r, "corrupt zstd frame at offset %llu: %s", (unsigned long long)off,
                  ZSTD_getErrorName(rc));
    if (rc == 0) break; /* frame complete, checksum verified */
  }
  r->frame_len = out.pos;
  r->frame_pos = 0;
  r->frames++;
  return 1;
}

int dlh_reader_next(dlh_reader *r, const Dlh__Packet **out) {
  if (out) *out = NULL;
  if (!r) return -1;
  if (r->pkt) {
    protobuf_c_message_free_unpacked(&r->pkt->base, NULL);
    r->pkt = NULL;
  }
  if (r->failed) return -1;
  while (r->frame_pos >= r->frame_len) {
    int rc = read_frame(r);
    if (rc <= 0) return rc;
  }
  const uint8_t *p = r->frame + r->frame_pos;
  size_t left = r->frame_len - r->frame_pos;
  uint64_t len = 0;
  size_t i = 0;
  for (;; i++) {
    if (i >= left || i >= 10)
      return fail(r, "bad packet length at byte %zu of the frame at offset %llu", r->frame_pos,
                  (unsigned long long)r->frame_off);
    len |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) break;
  }
  i++;
  if (len > left - i)
    return fail(r, "packet at byte %zu of the frame at offset %llu overruns the frame",
                r->frame_pos, (unsigned long long)r->frame_off);
  Dlh__Packet *pkt = dlh__packet__unpack(NULL, (size_t)len, p + i);
  if (!pkt)
    return fail(r, "undecodable packet at byte %zu of the frame at offset %llu", r->frame_pos,
                 (unsigned long long)r->frame_off);
  r->frame_pos += i + (size_t)len;
  r->pkt = pkt;
  if (out) *out = pkt;
  return 1;
}

const char *dlh_reader_error(const dlh_reader *r) { return r && r->failed ? r->err : NULL; }

uint64_t dlh_reader_frames(const dlh_reader *r) { return r ? r->frames : 0; }

uint64_t dlh_reader_offset(const dlh_reader *r) { return r ? r->in_off + r->in_pos : 0; }

void dlh_reader_close(dlh_reader *r) {
  if (!r) return;
  if (r->pkt) protobuf_c_message_free_unpacked(&r->pkt->base, NULL);
  ZSTD_freeDCtx(r->dctx);
  if (r->f) fclose(r->f);
  free(r->in);
  free(r->frame);
  free(r->err);
  free(r);
}

/* ---------------------------------------------------------------- ApiBatch iterator */

void dlh_api_iter_init(dlh_api_iter *it, const Dlh__ApiBatch *b) {
  memset(it, 0, sizeof *it);
  it->b = b;
  if (!b) return;
  it->t = b->base_start_ns;
  size_t n = b->n_start_delta;
  /* every column has one value per event, or none at all (= all zero); fn is required */
  if (b->n_fn != n || (b->n_dur && b->n_dur != n) || (b->n_ret && b->n_ret != n) ||
      (b->n_corr_delta && b->n_corr_delta != n) || (b->n_stack && b->n_stack != n) ||
      (b->n_nargs && b->n_nargs != n) || (b->n_depth && b->n_depth != n))
    it->bad = 1;
}

int dlh_api_iter_next(dlh_api_iter *it, dlh_api_event *ev) {
  const Dlh__ApiBatch *b = it->b;
  if (!b || it->bad || it->i >= b->n_start_delta) return 0;
  size_t i = it->i;
  uint32_t na = b->n_nargs ? b->nargs[i] : 0;
  if (na > b->n_args - it->argpos) {
    it->bad = 1;
    return 0;
  }
  it->t += (uint64_t)b->start_delta[i];
  memset(ev, 0, sizeof *ev);
  ev->start_ns = it->t;
  ev->dur_ns = b->n_dur ? b->dur[i] : 0;
  ev->fn = b->fn[i];
  ev->ret = b->n_ret ? b->ret[i] : 0;
  int64_t d = b->n_corr_delta ? b->corr_delta[i] : 0;
  if (d != 0) {
    if (d != INT64_MIN) it->corr += (uint64_t)d;
    ev->corr = it->corr;
  }
  ev->stack = b->n_stack ? b->stack[i] : 0;
  ev->depth = b->n_depth ? b->depth[i] : 0;
  ev->nargs = na;
  ev->args = na ? b->args + it->argpos : NULL;
  it->argpos += na;
  it->i = i + 1;
  return 1;
}

void dlh_gpu_iter_init(dlh_gpu_iter *it, const Dlh__GpuBatch *b) {
  memset(it, 0, sizeof *it);
  it->b = b;
  if (!b) return;
  it->t = b->base_start_ns;
  size_t n = b->n_kind;
  if ((b->n_start_delta && b->n_start_delta != n) || (b->n_dur && b->n_dur != n) ||
      (b->n_corr && b->n_corr != n) || (b->n_stream && b->n_stream != n) ||
      (b->n_name && b->n_name != n) || (b->n_nvals && b->n_nvals != n) ||
      (b->n_context && b->n_context != n) || (b->n_devices && b->n_devices != n))
    it->bad = 1;
}

int dlh_gpu_iter_next(dlh_gpu_iter *it, dlh_gpu_event *ev) {
  const Dlh__GpuBatch *b = it->b;
  if (!b || it->bad || it->i >= b->n_kind) return 0;
  size_t i = it->i;
  uint32_t nv = b->n_nvals ? b->nvals[i] : 0;
  if (nv > b->n_vals - it->valpos) {
    it->bad = 1;
    return 0;
  }
  if (b->n_start_delta) it->t += (uint64_t)b->start_delta[i];
  memset(ev, 0, sizeof *ev);
  ev->kind = b->kind[i];
  ev->start_ns = it->t;
  ev->dur_ns = b->n_dur ? b->dur[i] : 0;
  ev->corr = b->n_corr ? b->corr[i] : 0;
  ev->stream = b->n_stream ? b->stream[i] : 0;
  ev->name = b->n_name ? b->name[i] : 0;
  ev->context = b->n_context ? b->context[i] : 0;
  ev->device = b->n_devices ? b->devices[i] : b->device;
  ev->nvals = nv;
  ev->vals = nv ? b->vals + it->valpos : NULL;
  it->valpos += nv;
  it->i = i + 1;
  return 1;
}
