/* reader.c — streaming reader for dlhook traces (see dlh_format.h for the file layout).
 *
 * The file is read through stdio in chunks; each zstd frame is decompressed completely (its
 * checksum verified) before any of its packets is handed out, so damage anywhere in a frame
 * loses that frame only. Memory is bounded by the largest frame (DLH_MAX_FRAME_CONTENT) plus
 * one decoded packet (DLH_MAX_PACKET_MEMORY, enforced by the allocator given to protobuf-c) plus
 * one input chunk. Damage the reader cannot step over (a bad zstd frame, a bad packet length)
 * turns into a sticky -1 with a message naming the file offset; a frame or packet over a limit
 * (dlh_format.h) is skipped, remembered, and reported at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "dlh_format.h"
#include "dlh_format_int.h"

#define DLH_IN_CHUNK (256u << 10)

struct last_pos { uint32_t fn, stamp, pos, nargs; };

struct dlh_reader {
  struct last_pos *last;  /* undelta_args: function -> its last args in the batch */
  uint32_t last_cap, last_stamp;
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
  uint64_t frame_packets; /* packets of the current frame read so far */
  Dlh__Packet *pkt;     /* last packet handed out */
  char *err;
  int failed;
  uint64_t skipped;     /* frames and packets over a limit, skipped */
  char *skip_msg;       /* what the first of them was */
  uint64_t defs;        /* definition packets so far */
  uint64_t content, content_max;  /* decompressed bytes so far, and the budget */
  uint64_t packets, packets_max;  /* packets so far, and the budget */
  uint64_t def_bytes, def_bytes_max; /* string bytes of definitions so far, and the budget */
  size_t mem_used;      /* bytes allocated for the packet being decoded */
  uint8_t *arena;       /* where the decoded packet lives (reused: one packet at a time) */
  size_t arena_cap, arena_used, arena_want;
  int mem_over;         /* ... and whether one allocation was refused */
  size_t heap_allocs;   /* allocations of the packet that did not fit the arena (malloc'd) */
  ProtobufCAllocator alloc;
  uint64_t skip_cases;  /* dlh_reader_skip: data cases passed over undecoded */
  /* dlh_reader_keep: the packets' memory comes from keep(keep_ctx, size) and is the caller's */
  void *(*keep)(void *ctx, size_t size);
  void *keep_ctx;
  struct dlh_ahead *ah; /* dlh_reader_open_ahead's reader: every call goes to ops (ahead.c) */
  const struct dlh_reader_ops *ops;
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

/* A frame or packet over a limit: remembered (the first message kept), reading goes on. */
static void skip(dlh_reader *r, const char *f, ...) {
  if (!r->skip_msg) {
    va_list ap;
    va_start(ap, f);
    r->skip_msg = vfmt(f, ap);
    va_end(ap);
  }
  r->skipped++;
}

/* protobuf-c's allocator for packets: at most DLH_MAX_PACKET_MEMORY per packet, so that a few
 * bytes of packed varints cannot claim gigabytes once decoded. */
static void *pkt_alloc(void *data, size_t size) {
  dlh_reader *r = data;
  if (size > DLH_MAX_PACKET_MEMORY - r->mem_used) {
    r->mem_over = 1;
    return NULL;
  }
  r->mem_used += size;
  if (r->keep) return r->keep(r->keep_ctx, size);
  /* the packet's memory comes from the reader's arena, reset for each packet: no malloc, free
   * or page faults per packet; what does not fit is malloc'd, and the arena grows for next time */
  size_t a = (size + 15) & ~(size_t)15;
  if (r->arena && a <= r->arena_cap - r->arena_used) {
    void *p = r->arena + r->arena_used;
    r->arena_used += a;
    return p;
  }
  if (r->mem_used > r->arena_want) r->arena_want = r->mem_used;
  r->heap_allocs++;
  return malloc(size);
}

static void pkt_free(void *data, void *p) {
  dlh_reader *r = data;
  if (r->keep) return; /* the caller's memory */
  if (r->arena && (uint8_t *)p >= r->arena && (uint8_t *)p < r->arena + r->arena_cap) return;
  free(p);
}

/* Before decoding a packet: the arena is empty again (the last packet was freed), and as large
 * as the largest packet so far needed (at most DLH_MAX_PACKET_MEMORY plus alignment). */
static void arena_reset(dlh_reader *r) {
  r->arena_used = 0;
  r->heap_allocs = 0;
  if (r->arena_want > r->arena_cap) {
    size_t cap = r->arena_want + (r->arena_want >> 2) + 4096;
    uint8_t *a = malloc(cap);
    if (a) {
      free(r->arena);
      r->arena = a;
      r->arena_cap = cap;
    }
    r->arena_want = 0;
  }
}

static void set_err(char **err, char *msg) {
  if (err) *err = msg ? msg : strdup("out of memory");
  else free(msg);
}

/* What a file that is not a regular one is, for the refusal. */
static const char *kind_of(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "a special file";
}

FILE *dlh_open_input(const char *path, char **err) {
  if (err) *err = NULL;
  /* O_NONBLOCK: opening a FIFO for reading waits for a writer without it (a FIFO planted as
   * x.dlh in a shared directory hung every subcommand); it is cleared once the file is known to
   * be a regular one. O_NOCTTY: a terminal given as input never becomes ours. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    set_err(err, fmt("cannot open: %s", strerror(errno)));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fstat(fd, &st) != 0) set_err(err, fmt("cannot read: %s", strerror(errno)));
    else set_err(err, fmt("cannot read: %s, not a regular file", kind_of(st.st_mode)));
    close(fd);
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    set_err(err, fmt("cannot open: %s", strerror(errno)));
    close(fd);
  }
  return f;
}

dlh_reader *dlh_reader_open(const char *path, char **err) {
  FILE *f = dlh_open_input(path, err);
  if (!f) return NULL;
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
  if (ver < DLH_FORMAT_VERSION_MIN || ver > DLH_FORMAT_VERSION) {
    set_err(err, fmt("unsupported format version %u (this dlhook reads versions %u to %u)", ver,
                     DLH_FORMAT_VERSION_MIN, DLH_FORMAT_VERSION));
    fclose(f);
    return NULL;
  }
  dlh_reader *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  r->f = f;
  r->dctx = ZSTD_createDCtx();
  r->in = malloc(DLH_IN_CHUNK);
  if (!r->dctx || !r->in) goto oom;
  ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 27);
  r->alloc.alloc = pkt_alloc;
  r->alloc.free = pkt_free;
  r->alloc.allocator_data = r;
  r->in_off = DLH_HEADER_SIZE;
  struct stat st;
  uint64_t size = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
  r->content_max = DLH_CONTENT_BASE + DLH_MAX_RATIO * size;
  r->packets_max = DLH_PACKETS_BASE + DLH_PACKETS_PER_BYTE * size;
  r->def_bytes_max = DLH_DEF_BYTES_BASE + (uint64_t)DLH_DEF_BYTES_PER_BYTE * size;
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

/* Steps over `n` input bytes. Returns 0, or -1 when the file ends first (or on a read error). */
static int skip_bytes(dlh_reader *r, uint64_t n) {
  while (n > 0) {
    if (r->in_pos == r->in_len && (fill(r, 1) < 0 || r->in_pos == r->in_len)) return -1;
    size_t k = r->in_len - r->in_pos;
    if (k > n) k = (size_t)n;
    r->in_pos += k;
    n -= k;
  }
  return 0;
}

/* Reads `n` (<= 8) bytes little-endian. Returns -1 when the file ends first. */
static int take_le(dlh_reader *r, size_t n, uint64_t *v) {
  if (fill(r, n) < 0 || r->in_len - r->in_pos < n) return -1;
  *v = 0;
  for (size_t i = 0; i < n; i++) *v |= (uint64_t)r->in[r->in_pos + i] << (8 * i);
  r->in_pos += n;
  return 0;
}

/* Steps over the zstd frame at the read position without decompressing it, by its block
 * headers (RFC 8878, 3.1.1). Returns 0, or -1 when it is not a well-formed zstd frame. */
static int skip_frame(dlh_reader *r) {
  uint64_t magic, fhd, v;
  if (take_le(r, 4, &magic) < 0 || magic != 0xFD2FB528u || take_le(r, 1, &fhd) < 0) return -1;
  unsigned fcs_flag = (unsigned)(fhd >> 6), single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1,
           dict = fhd & 3;
  if (fhd & 8) return -1; /* reserved bit */
  static const unsigned dict_len[4] = {0, 1, 2, 4}, fcs_len[4] = {0, 2, 4, 8};
  size_t hdr = (single ? 0 : 1) + dict_len[dict] + (fcs_flag == 0 && single ? 1 : fcs_len[fcs_flag]);
  if (skip_bytes(r, hdr) < 0) return -1;
  for (;;) {
    if (take_le(r, 3, &v) < 0) return -1;
    unsigned type = (unsigned)(v >> 1) & 3;
    uint64_t size = v >> 3;
    if (type == 3 || skip_bytes(r, type == 1 ? 1 : size) < 0) return -1;
    if (v & 1) break; /* last block */
  }
  return checksum ? skip_bytes(r, 4) : 0;
}

/* Decompresses the next frame into r->frame. Returns 1, 0 at the clean end, -1 on damage.
 * Frames over DLH_MAX_FRAME_CONTENT are stepped over (and remembered by skip()). */
static int read_frame(dlh_reader *r) {
  for (;;) {
    if (fill(r, 18) < 0) /* 18: the largest zstd frame header */
      return fail(r, "read error at offset %llu: %s",
                  (unsigned long long)(r->in_off + r->in_pos), strerror(errno ? errno : EIO));
    size_t avail = r->in_len - r->in_pos;
    uint64_t off = r->in_off + r->in_pos;
    r->frame_off = off;
    if (avail == 0) return 0;
    /* The content size bounds the buffer up front; a header the check cannot read (short or
     * bad) is reported by the decompressor below. */
    unsigned long long csize = ZSTD_getFrameContentSize(r->in + r->in_pos, avail);
    size_t cap = 1u << 20;
    if (csize != ZSTD_CONTENTSIZE_ERROR) {
      if (csize == ZSTD_CONTENTSIZE_UNKNOWN || csize > DLH_MAX_FRAME_CONTENT ||
          csize > r->content_max - r->content || r->packets >= r->packets_max) {
        char what[128];
        if (r->packets >= r->packets_max)
          snprintf(what, sizeof what, "frame at offset %llu comes after the trace's %llu packets "
                   "(%u per byte of the file, and 256 Ki)", (unsigned long long)off,
                   (unsigned long long)r->packets_max, DLH_PACKETS_PER_BYTE);
        else if (csize == ZSTD_CONTENTSIZE_UNKNOWN)
          snprintf(what, sizeof what, "frame at offset %llu does not state its size",
                   (unsigned long long)off);
        else if (csize <= DLH_MAX_FRAME_CONTENT)
          snprintf(what, sizeof what, "frame at offset %llu would take the trace over %llu MiB "
                   "decompressed (%u times its size)", (unsigned long long)off,
                   (unsigned long long)(r->content_max >> 20), DLH_MAX_RATIO);
        else
          snprintf(what, sizeof what, "frame at offset %llu holds %llu bytes (limit %u MiB)",
                   (unsigned long long)off, csize, DLH_MAX_FRAME_CONTENT >> 20);
        if (skip_frame(r) < 0)
          return fail(r, "%s and is truncated or corrupt", what);
        skip(r, "%s (skipped)", what);
        continue;
      }
      cap = (size_t)csize + 1; /* +1: room to notice an overrun */
      r->content += csize;
    }
    if (cap > r->frame_cap) {
      uint8_t *p = realloc(r->frame, cap);
      if (!p) return fail(r, "out of memory for frame at offset %llu", (unsigned long long)off);
      r->frame = p;
      r->frame_cap = cap;
    }
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    ZSTD_outBuffer out = {r->frame, cap, 0};
    for (;;) {
      if (r->in_pos == r->in_len) {
        if (fill(r, 1) < 0)
          return fail(r, "read error at offset %llu: %s",
                      (unsigned long long)(r->in_off + r->in_pos), strerror(errno ? errno : EIO));
        if (r->in_pos == r->in_len)
          return fail(r, "truncated frame at offset %llu (file ends at %llu)",
                      (unsigned long long)off, (unsigned long long)r->in_off + r->in_len);
      }
      if (out.pos == out.size)
        return fail(r, "frame at offset %llu holds more than its header says",
                    (unsigned long long)off);
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
    r->frame_packets = 0;
    r->frames++;
    return 1;
  }
}

/* ---------------------------------------------------------------- packet limits */

static int is_definition(Dlh__Packet__DataCase c) {
  return c == DLH__PACKET__DATA_FUNCTION || c == DLH__PACKET__DATA_STRING ||
         c == DLH__PACKET__DATA_STACK || c == DLH__PACKET__DATA_MODULE ||
         c == DLH__PACKET__DATA_SYMBOL || c == DLH__PACKET__DATA_PY_FRAME ||
         c == DLH__PACKET__DATA_THREAD || c == DLH__PACKET__DATA_DEVICE;
}

/* Every string of message m (and of its sub-messages: the schema nests at most 3 deep) within
 * DLH_MAX_STRING, every repeated string or message field within DLH_MAX_LIST. Returns NULL or
 * what is over. */
static const char *strings_over(const ProtobufCMessage *m, int depth, uint64_t *bytes) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[i];
    if (fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *base = (const char *)m;
    size_t n = 1;
    void *const *v = (void *const *)(base + fd->offset);
    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
      n = *(const size_t *)(base + fd->quantifier_offset);
      v = *(void *const *const *)(base + fd->offset);
      if (n > DLH_MAX_LIST) return "list";
    } else if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      if (*(const uint32_t *)(base + fd->quantifier_offset) != fd->id) continue;
    }
    for (size_t k = 0; k < n; k++) {
      if (!v[k]) continue;
      if (fd->type == PROTOBUF_C_TYPE_STRING) {
        size_t l = strnlen(v[k], DLH_MAX_STRING + 1);
        if (l > DLH_MAX_STRING) return "string";
        *bytes += l;
      } else if (depth < 4) {
        const char *w = strings_over(v[k], depth + 1, bytes);
        if (w) return w;
      }
    }
  }
  return NULL;
}

/* ApiBatch.args_delta back into args (dlhook.proto): each event's args are differences from the
 * args of the last earlier event of the batch with the same function (first 16). Decoded in
 * place, the column then becomes `args`, so that everything after the reader sees plain values.
 * Returns 0, or -1 when the batch is inconsistent (it is then left for the iterator to reject). */
static int undelta_args(dlh_reader *r, Dlh__ApiBatch *b) {
  if (!b->n_args_delta) return 0;
  if (b->n_args || b->n_nargs != b->n_fn) return -1;
  size_t n = b->n_fn;
  /* table: fn -> position and count of the last args of that function (stamped per batch) */
  uint32_t cap = 64;
  while (cap < 2 * n && cap < (1u << 18)) cap *= 2;
  if (cap > r->last_cap) {
    free(r->last);
    r->last = calloc(cap, sizeof *r->last);
    r->last_cap = r->last ? cap : 0;
    if (!r->last) return -1;
  }
  if (++r->last_stamp == 0) { /* wrapped: start clean */
    memset(r->last, 0, r->last_cap * sizeof *r->last);
    r->last_stamp = 1;
  }
  uint32_t mask = r->last_cap - 1;
  uint64_t *v = (uint64_t *)b->args_delta; /* the same array, decoded in place */
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t na = b->nargs[i], fn = b->fn[i];
    if (na > b->n_args_delta - pos) return -1;
    uint32_t h = (fn * 2654435761u) & mask, probes = 0;
    while (r->last[h].stamp == r->last_stamp && r->last[h].fn != fn) {
      h = (h + 1) & mask;
      if (++probes > mask) return -1;
    }
    struct last_pos *e = &r->last[h];
    int have = e->stamp == r->last_stamp;
    for (uint32_t k = 0; k < na; k++) {
      uint64_t base = have && k < e->nargs && k < DLH_ARGS_DELTA_BASE ? v[e->pos + k] : 0;
      v[pos + k] = base + (uint64_t)b->args_delta[pos + k];
    }
    e->fn = fn;
    e->stamp = r->last_stamp;
    e->pos = (uint32_t)pos;
    e->nargs = na;
    pos += na;
  }
  b->args = v;
  b->n_args = b->n_args_delta;
  b->args_delta = NULL;
  b->n_args_delta = 0;
  return 0;
}

/* NULL when packet p is within the limits of dlh_format.h, else what is over (for the message;
 * `buf` holds it when it has numbers). */
static const char *over_limit(dlh_reader *r, const Dlh__Packet *p, char *buf, size_t n) {
  if (p->data_case == DLH__PACKET__DATA_STACK && p->stack->n_pc > DLH_MAX_STACK_DEPTH) {
    snprintf(buf, n, "a stack of %zu frames (limit %u)", p->stack->n_pc, DLH_MAX_STACK_DEPTH);
    return buf;
  }
  if (p->data_case == DLH__PACKET__DATA_API &&
      (p->api->n_fn > DLH_MAX_BATCH_EVENTS ||
       p->api->n_args + p->api->n_args_delta > (size_t)DLH_MAX_BATCH_EVENTS * DLH_MAX_EVENT_ARGS)) {
    snprintf(buf, n, "an API batch of %zu events, %zu args (limit %u events, %u args each)",
             p->api->n_fn, p->api->n_args + p->api->n_args_delta, DLH_MAX_BATCH_EVENTS,
             DLH_MAX_EVENT_ARGS);
    return buf;
  }
  if (p->data_case == DLH__PACKET__DATA_GPU &&
      (p->gpu->n_kind > DLH_MAX_BATCH_EVENTS ||
       p->gpu->n_vals > (size_t)DLH_MAX_BATCH_EVENTS * DLH_MAX_GPU_VALS)) {
    snprintf(buf, n, "a GPU batch of %zu records, %zu values (limit %u records)", p->gpu->n_kind,
             p->gpu->n_vals, DLH_MAX_BATCH_EVENTS);
    return buf;
  }
  uint64_t bytes = 0;
  /* a packet is its oneof alone: only the set member is looked at (not the packet's 20 fields);
   * batches of events hold no strings */
  const ProtobufCFieldDescriptor *fd =
      p->data_case == DLH__PACKET__DATA_API || p->data_case == DLH__PACKET__DATA_GPU ||
      p->data_case == DLH__PACKET__DATA_SAMPLES
          ? NULL : protobuf_c_message_descriptor_get_field(p->base.descriptor, (unsigned)p->data_case);
  const ProtobufCMessage *sub = fd && fd->type == PROTOBUF_C_TYPE_MESSAGE
                                    ? *(ProtobufCMessage *const *)((const char *)p + fd->offset) : NULL;
  const char *w = sub ? strings_over(sub, 1, &bytes) : NULL;
  if (w) {
    snprintf(buf, n, w[0] == 's' ? "a string over %u bytes" : "a list over %u entries",
             w[0] == 's' ? DLH_MAX_STRING : DLH_MAX_LIST);
    return buf;
  }
  if (is_definition(p->data_case) && ++r->defs > DLH_MAX_DEFINITIONS) {
    snprintf(buf, n, "definition number %llu (limit %u per trace)", (unsigned long long)r->defs,
             DLH_MAX_DEFINITIONS);
    return buf;
  }
  if (is_definition(p->data_case) && (r->def_bytes += bytes) > r->def_bytes_max) {
    snprintf(buf, n, "definitions over %llu MiB of names (%u MiB, and %u bytes per byte of the "
             "file)", (unsigned long long)(r->def_bytes_max >> 20), DLH_DEF_BYTES_BASE >> 20,
             DLH_DEF_BYTES_PER_BYTE);
    return buf;
  }
  return NULL;
}

/* Whether the encoded packet `p` (len bytes) is one field of a data case in `cases`: its first
 * tag is that field, length-delimited, and its length covers the whole packet (a packet of
 * several fields, which our writer never writes, is decoded as usual). */
static int passes_over(uint64_t cases, const uint8_t *p, size_t len) {
  uint64_t tag = 0, n = 0;
  size_t i = 0;
  for (;; i++) {
    if (i >= len || i >= 5) return 0;
    tag |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) break;
  }
  size_t j = ++i;
  for (;; i++) {
    if (i >= len || i - j >= 10) return 0;
    n |= (uint64_t)(p[i] & 0x7f) << (7 * (i - j));
    if (!(p[i] & 0x80)) break;
  }
  i++;
  uint64_t field = tag >> 3;
  return (tag & 7) == 2 && field < 64 && (cases >> field & 1) && n == len - i;
}

void dlh_reader_skip(dlh_reader *r, uint64_t cases) {
  if (r && r->ah) r->ops->skip(r->ah, cases);
  else if (r) r->skip_cases = cases;
}

void dlh_reader_keep(dlh_reader *r, void *(*keep)(void *ctx, size_t size), void *ctx) {
  r->keep = keep;
  r->keep_ctx = ctx;
}

dlh_reader *dlh_reader_shell(struct dlh_ahead *ah, const struct dlh_reader_ops *ops) {
  dlh_reader *r = calloc(1, sizeof *r);
  if (r) {
    r->ah = ah;
    r->ops = ops;
  }
  return r;
}

/* Frees a decoded packet: nothing to do when it lies in the arena alone (the next packet
 * reuses it), which spares walking every field of the packet to free nothing. */
static void free_decoded(dlh_reader *r, Dlh__Packet *p) {
  if (p && r->heap_allocs) protobuf_c_message_free_unpacked(&p->base, &r->alloc);
}

static void free_pkt(dlh_reader *r) {
  free_decoded(r, r->pkt);
  r->pkt = NULL;
}

int dlh_reader_next(dlh_reader *r, const Dlh__Packet **out) {
  if (out) *out = NULL;
  if (!r) return -1;
  if (r->ah) return r->ops->next(r->ah, out);
  free_pkt(r);
  if (r->failed) return -1;
  for (;;) {
    while (r->frame_pos >= r->frame_len) {
      int rc = read_frame(r);
      if (rc == 0 && r->skipped) {
        if (r->skipped > 1)
          return fail(r, "%s, and %llu more frames or packets over a limit (skipped; the rest "
                      "was read)", r->skip_msg ? r->skip_msg : "", (unsigned long long)r->skipped - 1);
        return fail(r, "%s", r->skip_msg ? r->skip_msg : "over a limit");
      }
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
    size_t at = r->frame_pos;
    r->frame_pos += i + (size_t)len;
    if (len == 0) { /* the encoder never writes an empty packet: the frame is not ours */
      skip(r, "empty packet at byte %zu of the frame at offset %llu (the rest of the frame "
           "skipped)", at, (unsigned long long)r->frame_off);
      r->frame_pos = r->frame_len;
      continue;
    }
    if (++r->packets > r->packets_max) {
      skip(r, "frame at offset %llu takes the trace over %llu packets (%u per byte of the "
           "file, and 256 Ki; the rest of the frame skipped)", (unsigned long long)r->frame_off,
           (unsigned long long)r->packets_max, DLH_PACKETS_PER_BYTE);
      r->frame_pos = r->frame_len;
      continue;
    }
    if (++r->frame_packets > DLH_MAX_FRAME_PACKETS) {
      skip(r, "frame at offset %llu holds more than %u packets (the rest of it skipped)",
           (unsigned long long)r->frame_off, DLH_MAX_FRAME_PACKETS);
      r->frame_pos = r->frame_len;
      continue;
    }
    if (r->skip_cases && passes_over(r->skip_cases, p + i, (size_t)len)) continue;
    r->mem_used = 0;
    r->mem_over = 0;
    arena_reset(r);
    Dlh__Packet *part = NULL, *pkt = dlh_flat_packet(&r->alloc, p + i, (size_t)len, &part);
    int flat = pkt != NULL;
    if (!pkt) {
      if (part) free_decoded(r, part);
      r->mem_used = 0;
      r->mem_over = 0;
      arena_reset(r);
      pkt = dlh__packet__unpack(&r->alloc, (size_t)len, p + i);
    }
    if (!pkt && r->mem_over) {
      skip(r, "packet at byte %zu of the frame at offset %llu needs more than %u MiB decoded "
           "(skipped)", at, (unsigned long long)r->frame_off, DLH_MAX_PACKET_MEMORY >> 20);
      continue;
    }
    if (!pkt)
      return fail(r, "undecodable packet at byte %zu of the frame at offset %llu", at,
                  (unsigned long long)r->frame_off);
    char buf[160];
    /* NCCL's events decoded by flat.c are within the limits on strings and lists already */
    const char *why = flat && pkt->data_case == DLH__PACKET__DATA_NCCL_EVENTS
                          ? NULL : over_limit(r, pkt, buf, sizeof buf);
    if (why) {
      skip(r, "packet at byte %zu of the frame at offset %llu: %s (skipped)", at,
           (unsigned long long)r->frame_off, why);
      free_decoded(r, pkt);
      continue;
    }
    if (pkt->data_case == DLH__PACKET__DATA_API) undelta_args(r, pkt->api);
    r->pkt = pkt;
    if (out) *out = pkt;
    return 1;
  }
}

const char *dlh_reader_error(const dlh_reader *r) {
  if (r && r->ah) return r->ops->error(r->ah);
  return r && r->failed ? r->err : NULL;
}

uint64_t dlh_reader_frames(const dlh_reader *r) {
  if (r && r->ah) return r->ops->count(r->ah, 0);
  return r ? r->frames : 0;
}

uint64_t dlh_reader_skipped(const dlh_reader *r) {
  if (r && r->ah) return r->ops->count(r->ah, 1);
  return r ? r->skipped : 0;
}

uint64_t dlh_reader_offset(const dlh_reader *r) {
  if (r && r->ah) return r->ops->count(r->ah, 2);
  return r ? r->in_off + r->in_pos : 0;
}

void dlh_reader_close(dlh_reader *r) {
  if (!r) return;
  if (r->ah) {
    r->ops->close(r->ah);
    free(r);
    return;
  }
  free_pkt(r);
  ZSTD_freeDCtx(r->dctx);
  if (r->f) fclose(r->f);
  free(r->in);
  free(r->frame);
  free(r->err);
  free(r->skip_msg);
  free(r->last);
  free(r->arena);
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
      (b->n_nargs && b->n_nargs != n) || (b->n_depth && b->n_depth != n) ||
      (b->n_count && b->n_count != n) || (b->n_span && b->n_span != n))
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
  ev->count = b->n_count ? b->count[i] : 1;
  if (ev->count == 0) ev->count = 1;
  ev->span_ns = ev->count > 1 && b->n_span ? b->span[i] : 0;
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
      (b->n_context && b->n_context != n) || (b->n_devices && b->n_devices != n) ||
      (b->n_graph && b->n_graph != n) || (b->n_graph_node && b->n_graph_node != n))
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
  ev->graph = b->n_graph ? b->graph[i] : 0;
  ev->graph_node = b->n_graph_node ? b->graph_node[i] : 0;
  ev->nvals = nv;
  ev->vals = nv ? b->vals + it->valpos : NULL;
  it->valpos += nv;
  it->i = i + 1;
  return 1;
}
