/* encoder.c — the framed zstd trace encoder, dlh_enc_* (dlh_format.h has the file layout).
 *
 * Packets are packed into `raw` (varint length + protobuf bytes). API events are kept per
 * thread in growable columns and become ApiBatch packets at flush time (or when a thread's
 * batch reaches DLH_BATCH_MAX events). dlh_enc_flush() compresses `raw` into one zstd frame
 * (content size and checksum in the frame header) and writes it. Every buffer is reused across
 * flushes, so a steady-state encoder does not allocate.
 *
 * Correlation ids are stored as deltas from the previous non-zero id of the same batch;
 * a delta of 0 means "no correlation id" and INT64_MIN stands for "same id as the previous one".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "dlh_batch.h"
#include "dlh_format.h"
#include "dlh_format_int.h"

#define DLH_FRAME_AUTOFLUSH (32u << 20) /* raw bytes that force a frame out: a frame stays
                                           within DLH_MAX_FRAME_CONTENT (that + one batch) */

/* One thread's open batch: dlh_batch.h. */
enum { COL_START = DLH_COL_START, COL_DUR = DLH_COL_DUR, COL_FN = DLH_COL_FN,
       COL_RET = DLH_COL_RET, COL_CORR = DLH_COL_CORR, COL_STACK = DLH_COL_STACK,
       COL_NARGS = DLH_COL_NARGS, COL_ARGS = DLH_COL_ARGS, COL_DEPTH = DLH_COL_DEPTH,
       COL_COUNT = DLH_COL_COUNT, COL_SPAN = DLH_COL_SPAN, NCOLS = DLH_NCOLS };
static const uint8_t col_field[NCOLS] = {3, 4, 5, 6, 7, 8, 9, 14 /* args_delta */, 11, 12, 13};
#define LAZY_COLS DLH_LAZY_COLS
#define ROOM_EVENTS 1024u  /* events every active column has room for after a refill */
/* With many threads' batches open at once (hundreds of threads calling), each refill makes
 * room for fewer events, so that the columns of all batches together stay near what 32
 * threads' would hold (issue 48: 600 threads held 22 MiB of columns, 37 KiB each). */
#define ROOM_THREADS 32u
#define ROOM_MIN 64u
/* The open GpuBatch: columns reused after each emit. */
typedef struct dlh_gbatch {
  size_t n, cap, nvals_total, vals_cap;
  uint64_t base_start, last_start;
  uint32_t *kind, *stream, *name, *nvals, *context, *devices, *graph;
  int64_t *start_delta;
  uint64_t *dur, *corr, *vals, *graph_node;
  int has_graph;       /* a record of the batch came from a graph launch: graph columns written */
} dlh_gbatch;

struct dlh_encoder {
  int fd;
  dlh_gbatch gb;
  ZSTD_CCtx *cctx;
  dlh_buf raw;     /* uncompressed packets of the current frame */
  size_t raw_packets; /* packets in raw */
  dlh_buf out;     /* compressed frame */
  uint64_t bytes;  /* written to fd, header included */
  size_t held;     /* a compressed frame in `out` not written yet: its fd was closed (EBADF) */
  uint64_t lost;   /* events lost to allocation failures */
  dlh_tbatch *tb;  /* thread batches */
  size_t ntb, captb;
  uint32_t *hash;  /* open addressing: index+1 into tb, 0 = empty */
  size_t hcap;     /* power of two */
  size_t pending;  /* number of batches with n > 0 */
  size_t last_tb;  /* index+1 of the batch of the last event (events come a thread at a time) */
  /* Sink mode (dlh_enc_create_sink): frames go to sink instead of fd; packets of the cases in
   * kept_cases (and dlh_enc_packet_kept's) are packed into kraw, a frame of their own. */
  dlh_frame_sink sink;
  void *sink_ctx;
  uint64_t kept_cases;
  dlh_buf kraw;
  size_t kraw_packets;
};

/* ---------------------------------------------------------------- helpers */

static int buf_reserve(dlh_buf *b, size_t extra) {
  if (extra > SIZE_MAX - b->len) return -1;
  size_t need = b->len + extra;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) { cap = need; break; }
    cap *= 2;
  }
  uint8_t *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}

int dlh_write_all(int fd, const void *data, size_t len) {
  const uint8_t *p = data;
  while (len > 0) {
    ssize_t k = write(fd, p, len);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) { errno = EIO; return -1; }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

#define put_varint dlh_put_varint

/* Appends varint(len) + packed message to buffer b (raw or kraw), counting it in *np. */
static int append_to(dlh_buf *b, size_t *np, const ProtobufCMessage *m) {
  size_t sz = protobuf_c_message_get_packed_size(m);
  if (buf_reserve(b, sz + 10) < 0) return -1;
  size_t n = put_varint(b->p + b->len, sz);
  size_t k = protobuf_c_message_pack(m, b->p + b->len + n);
  if (k != sz) return -1;
  b->len += n + k;
  (*np)++;
  return 0;
}

/* Appends varint(len) + packed message to the raw frame buffer. */
static int append_msg(dlh_encoder *enc, const ProtobufCMessage *m) {
  return append_to(&enc->raw, &enc->raw_packets, m);
}

/* Whether the frame being built should go out now: DLH_FRAME_AUTOFLUSH bytes, or half of
 * DLH_MAX_FRAME_PACKETS packets (a frame of tiny packets stays within the reader's limit). */
static int frame_full(const dlh_encoder *enc) {
  return enc->raw.len >= DLH_FRAME_AUTOFLUSH || enc->raw_packets >= DLH_MAX_FRAME_PACKETS / 2 ||
         enc->kraw.len >= DLH_FRAME_AUTOFLUSH || enc->kraw_packets >= DLH_MAX_FRAME_PACKETS / 2;
}

/* ---------------------------------------------------------------- thread batches */

static dlh_tbatch *tbatch_get(dlh_encoder *enc, uint32_t tid) {
  size_t mask = enc->hcap - 1;
  size_t h = (tid * 2654435761u) & mask;
  while (enc->hash[h]) {
    dlh_tbatch *t = &enc->tb[enc->hash[h] - 1];
    if (t->tid == tid) return t;
    h = (h + 1) & mask;
  }
  /* new thread */
  if (enc->ntb + 1 > enc->hcap / 2) {
    size_t nc = enc->hcap * 2;
    uint32_t *nh = calloc(nc, sizeof *nh);
    if (!nh) return NULL;
    for (size_t i = 0; i < enc->ntb; i++) {
      size_t j = (enc->tb[i].tid * 2654435761u) & (nc - 1);
      while (nh[j]) j = (j + 1) & (nc - 1);
      nh[j] = (uint32_t)(i + 1);
    }
    free(enc->hash);
    enc->hash = nh;
    enc->hcap = nc;
    mask = nc - 1;
    h = (tid * 2654435761u) & mask;
    while (enc->hash[h]) h = (h + 1) & mask;
  }
  if (grow((void **)&enc->tb, &enc->captb, enc->ntb + 1, sizeof *enc->tb) < 0) return NULL;
  dlh_tbatch *t = &enc->tb[enc->ntb];
  memset(t, 0, sizeof *t);
  t->tid = tid;
  enc->hash[h] = (uint32_t)(++enc->ntb);
  return t;
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

/* Turns a thread's batch into an ApiBatch packet in the raw buffer and resets it. The packet is
 * written by hand: Packet.api (field 4) holding tid, base_start_ns and the packed columns (a
 * column of zeros only, stack or depth, or of ones only, count and span, is left out: the
 * reader takes an empty column as all default). */
static int tbatch_emit(dlh_encoder *enc, dlh_tbatch *t) {
  if (t->n == 0) return 0;
  int keep[NCOLS];
  size_t inner = 1 + varint_len(t->tid) + 1 + varint_len(t->base_start);
  for (int c = 0; c < NCOLS; c++) {
    keep[c] = t->col[c].len > 0 && (t->active & (1u << c));
    if (keep[c]) inner += 1 + varint_len(t->col[c].len) + t->col[c].len;
  }
  size_t outer = 1 + varint_len(inner) + inner;
  int rc = 0;
  if (buf_reserve(&enc->raw, outer + 10) < 0) {
    rc = -1;
    enc->lost += t->n;
  } else {
    uint8_t *p = enc->raw.p + enc->raw.len;
    p += put_varint(p, outer);
    *p++ = (4 << 3) | 2;
    p += put_varint(p, inner);
    *p++ = (1 << 3) | 0;
    p += put_varint(p, t->tid);
    *p++ = (2 << 3) | 0;
    p += put_varint(p, t->base_start);
    for (int c = 0; c < NCOLS; c++) {
      if (!keep[c]) continue;
      *p++ = (uint8_t)(col_field[c] << 3 | 2);
      p += put_varint(p, t->col[c].len);
      memcpy(p, t->col[c].p, t->col[c].len);
      p += t->col[c].len;
    }
    enc->raw.len = (size_t)(p - enc->raw.p);
    enc->raw_packets++;
  }
  t->n = 0;
  for (int c = 0; c < NCOLS; c++) t->col[c].len = 0;
  t->active = ~LAZY_COLS & ((1u << NCOLS) - 1);
  t->room = 0;
  t->last_corr = 0;
  t->stamp++;        /* every function starts again from 0 in the next batch */
  t->last_used = 0;
  t->la = NULL;
  enc->pending--;
  return rc;
}

static int gbatch_emit(dlh_encoder *enc) {
  dlh_gbatch *g = &enc->gb;
  if (g->n == 0) return 0;
  Dlh__GpuBatch b = DLH__GPU_BATCH__INIT;
  b.has_base_start_ns = 1;
  b.base_start_ns = g->base_start;
  b.n_kind = b.n_start_delta = b.n_dur = b.n_corr = b.n_stream = b.n_name = b.n_nvals =
      b.n_context = b.n_devices = g->n;
  b.kind = g->kind;
  b.start_delta = g->start_delta;
  b.dur = g->dur;
  b.corr = g->corr;
  b.stream = g->stream;
  b.name = g->name;
  b.nvals = g->nvals;
  b.context = g->context;
  b.devices = g->devices;
  b.n_vals = g->nvals_total;
  b.vals = g->vals;
  if (g->has_graph) {
    b.n_graph = b.n_graph_node = g->n;
    b.graph = g->graph;
    b.graph_node = g->graph_node;
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_GPU;
  p.gpu = &b;
  int rc = append_msg(enc, &p.base);
  if (rc < 0) enc->lost += g->n;
  g->n = 0;
  g->nvals_total = 0;
  g->has_graph = 0;
  return rc;
}

int dlh_enc_gpu(dlh_encoder *enc, const dlh_gpu_event *ev) {
  if (!enc || !ev) return -1;
  dlh_gbatch *g = &enc->gb;
  size_t n = g->n;
  if (n + 1 > g->cap) {
    size_t nc = g->cap ? g->cap * 2 : 1024;
#define GROW_COL(col)                                        \
    do {                                                     \
      void *q = realloc(g->col, nc * sizeof *g->col);        \
      if (!q) { enc->lost++; return -1; }                      \
      g->col = q;                                            \
    } while (0)
    GROW_COL(kind); GROW_COL(stream); GROW_COL(name); GROW_COL(nvals); GROW_COL(context);
    GROW_COL(devices); GROW_COL(start_delta); GROW_COL(dur); GROW_COL(corr);
    GROW_COL(graph); GROW_COL(graph_node);
#undef GROW_COL
    g->cap = nc;
  }
  uint32_t nv = ev->vals ? ev->nvals : 0;
  if (nv && grow((void **)&g->vals, &g->vals_cap, g->nvals_total + nv, sizeof *g->vals) < 0) {
    enc->lost++;
    return -1;
  }
  if (n == 0) g->base_start = g->last_start = ev->start_ns;
  g->kind[n] = ev->kind;
  g->start_delta[n] = (int64_t)(ev->start_ns - g->last_start);
  g->last_start = ev->start_ns;
  g->dur[n] = ev->dur_ns;
  g->corr[n] = ev->corr;
  g->stream[n] = ev->stream;
  g->name[n] = ev->name;
  g->context[n] = ev->context;
  g->devices[n] = ev->device;
  g->graph[n] = ev->graph;
  g->graph_node[n] = ev->graph_node;
  if (ev->graph | ev->graph_node) g->has_graph = 1;
  g->nvals[n] = nv;
  if (nv) memcpy(g->vals + g->nvals_total, ev->vals, nv * sizeof *ev->vals);
  g->nvals_total += nv;
  g->n = n + 1;
  if (g->n >= DLH_BATCH_MAX) {
    if (gbatch_emit(enc) < 0) return -1;
    if (frame_full(enc)) return dlh_enc_flush(enc);
  }
  return 0;
}

static int write_frame(dlh_encoder *enc);

/* Emits every open batch (a batch that cannot be encoded is counted as lost); a frame is
 * written out whenever DLH_FRAME_AUTOFLUSH is reached in between, so that many threads'
 * batches never make a frame over DLH_MAX_FRAME_CONTENT. Returns 0, or -1 when writing such a
 * frame failed (errno set). */
static int emit_all(dlh_encoder *enc) {
  int rc = 0, e = 0;
  gbatch_emit(enc);
  for (size_t i = 0; i < enc->ntb && enc->pending > 0; i++) {
    if (frame_full(enc) && write_frame(enc) < 0) { rc = -1; e = errno; }
    if (enc->tb[i].n) tbatch_emit(enc, &enc->tb[i]);
  }
  if (rc) errno = e;
  return rc;
}

/* ---------------------------------------------------------------- public API */

/* An encoder with its buffers and zstd context, no file yet (fd -1). */
static dlh_encoder *enc_new(int zstd_level) {
  dlh_encoder *enc = calloc(1, sizeof *enc);
  if (!enc) return NULL;
  enc->fd = -1;
  enc->cctx = ZSTD_createCCtx();
  enc->hcap = 64;
  enc->hash = calloc(enc->hcap, sizeof *enc->hash);
  if (!enc->cctx || !enc->hash) goto fail;
  if (zstd_level <= 0) zstd_level = 3;
  if (zstd_level > ZSTD_maxCLevel()) zstd_level = ZSTD_maxCLevel();
  ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(enc->cctx, ZSTD_c_checksumFlag, 1);
  return enc;
fail:
  ZSTD_freeCCtx(enc->cctx);
  free(enc->hash);
  free(enc);
  return NULL;
}

dlh_encoder *dlh_enc_create(int fd, int zstd_level) {
  dlh_encoder *enc = enc_new(zstd_level);
  if (!enc) return NULL;
  enc->fd = fd;
  if (dlh_enc_write_header(fd) < 0) {
    ZSTD_freeCCtx(enc->cctx);
    free(enc->hash);
    free(enc);
    return NULL;
  }
  enc->bytes = DLH_HEADER_SIZE;
  return enc;
}

int dlh_enc_write_header(int fd) {
  uint8_t hdr[DLH_HEADER_SIZE];
  memcpy(hdr, DLH_MAGIC, 8);
  dlh_put_le32(hdr + 8, DLH_FORMAT_VERSION);
  dlh_put_le32(hdr + 12, 0);
  return dlh_write_all(fd, hdr, sizeof hdr);
}

dlh_encoder *dlh_enc_create_sink(dlh_frame_sink sink, void *ctx, int zstd_level,
                                 uint64_t kept_cases) {
  if (!sink) return NULL;
  dlh_encoder *enc = enc_new(zstd_level);
  if (!enc) return NULL;
  enc->sink = sink;
  enc->sink_ctx = ctx;
  enc->kept_cases = kept_cases;
  return enc;
}

int dlh_enc_packet_kept(dlh_encoder *enc, const Dlh__Packet *p) {
  if (!enc || !p) return -1;
  if (!enc->sink) return dlh_enc_packet(enc, p);
  if (append_to(&enc->kraw, &enc->kraw_packets, &p->base) < 0) return -1;
  if (frame_full(enc)) return dlh_enc_flush(enc);
  return 0;
}

int dlh_enc_packet(dlh_encoder *enc, const Dlh__Packet *p) {
  if (!enc || !p) return -1;
  if (enc->sink && (enc->kept_cases & (1ull << (unsigned)p->data_case)))
    return dlh_enc_packet_kept(enc, p);
  /* The trailer closes the file: pending events go before it. */
  if (p->data_case == DLH__PACKET__DATA_TRAILER) emit_all(enc);
  if (append_msg(enc, &p->base) < 0) return -1;
  if (frame_full(enc)) return dlh_enc_flush(enc);
  return 0;
}

static void tbatch_free_cols(dlh_tbatch *t) {
  for (int c = 0; c < NCOLS; c++) {
    free(t->col[c].p);
    t->col[c].p = NULL;
    t->col[c].len = t->col[c].cap = 0;
  }
  t->room = 0;
}

uint64_t dlh_enc_trim(dlh_encoder *enc, uint64_t max_bytes) {
  if (!enc) return 0;
  uint64_t cols = 0, freed = 0;
  for (size_t i = 0; i < enc->ntb; i++)
    for (int c = 0; c < NCOLS; c++) cols += enc->tb[i].col[c].cap;
  for (size_t i = 0; i < enc->ntb && cols > max_bytes; i++) {
    dlh_tbatch *t = &enc->tb[i];
    if (t->n) continue; /* an open batch keeps its columns */
    uint64_t b = 0;
    for (int c = 0; c < NCOLS; c++) b += t->col[c].cap;
    tbatch_free_cols(t);
    cols -= b;
    freed += b;
  }
  return freed;
}

int dlh_enc_thread_end(dlh_encoder *enc, uint32_t tid) {
  if (!enc || !enc->hcap) return 0;
  size_t mask = enc->hcap - 1, h = (tid * 2654435761u) & mask;
  dlh_tbatch *t = NULL;
  for (; enc->hash[h]; h = (h + 1) & mask)
    if (enc->tb[enc->hash[h] - 1].tid == tid) { t = &enc->tb[enc->hash[h] - 1]; break; }
  if (!t) return 0;
  int rc = t->n ? tbatch_emit(enc, t) : 0;
  tbatch_free_cols(t);
  t->active = 0;
  free(t->last);
  t->last = t->la = NULL;
  t->last_cap = t->last_used = 0;
  return rc;
}

/* The entry of function fn in the batch's table of last args (created empty), or NULL when the
 * table cannot grow (then the args are written as differences from 0). */
static struct dlh_last_args *last_args_of(dlh_tbatch *t, uint32_t fn) {
  if (t->stamp == 0) t->stamp = 1;
  if (t->last_cap) {
    uint32_t mask = t->last_cap - 1, h = (fn * 2654435761u) & mask;
    for (;; h = (h + 1) & mask) {
      struct dlh_last_args *e = &t->last[h];
      if (e->stamp != t->stamp) break;
      if (e->fn == fn) return e;
    }
  }
  if ((t->last_used + 1) * 2 > t->last_cap) { /* grow: rehash this batch's entries */
    uint32_t nc = t->last_cap ? t->last_cap * 2 : 16;
    struct dlh_last_args *n = calloc(nc, sizeof *n);
    if (!n) return NULL;
    for (uint32_t i = 0; i < t->last_cap; i++) {
      if (t->last[i].stamp != t->stamp) continue;
      uint32_t h = (t->last[i].fn * 2654435761u) & (nc - 1);
      while (n[h].stamp == t->stamp) h = (h + 1) & (nc - 1);
      n[h] = t->last[i];
    }
    free(t->last);
    t->last = n;
    t->la = NULL;
    t->last_cap = nc;
  }
  uint32_t mask = t->last_cap - 1, h = (fn * 2654435761u) & mask;
  while (t->last[h].stamp == t->stamp) h = (h + 1) & mask;
  struct dlh_last_args *e = &t->last[h];
  e->fn = fn;
  e->stamp = t->stamp;
  e->nargs = 0;
  t->last_used++;
  return e;
}

/* The events a refill makes room for: ROOM_EVENTS, less when more than ROOM_THREADS batches
 * are open (at least ROOM_MIN). */
static size_t room_events(const dlh_encoder *enc) {
  if (enc->ntb <= ROOM_THREADS) return ROOM_EVENTS;
  size_t r = (size_t)ROOM_EVENTS * ROOM_THREADS / enc->ntb;
  return r < ROOM_MIN ? ROOM_MIN : r;
}

/* Room for `ev` more events in every active column (10 bytes a varint at most); room counts
 * them, up to the batch's limit (t->n < DLH_BATCH_MAX here). */
static int tbatch_refill(dlh_tbatch *t, size_t ev) {
  for (int c = 0; c < NCOLS; c++)
    if (c != COL_ARGS && (t->active & (1u << c)) && buf_reserve(&t->col[c], ev * 10) < 0)
      return -1;
  t->room = t->n + ev <= DLH_BATCH_MAX ? ev : DLH_BATCH_MAX - t->n;
  return 0;
}

/* A lazy column gets its first non-default value: the events before it get the default (one
 * byte each: 0, or 1 for count). */
static int tbatch_activate(dlh_tbatch *t, int c) {
  if (buf_reserve(&t->col[c], t->n + (size_t)t->room * 10) < 0) return -1;
  memset(t->col[c].p, c == COL_COUNT ? 1 : 0, t->n);
  t->col[c].len = t->n;
  t->active |= 1u << c;
  return 0;
}

dlh_tbatch *dlh_enc_tbatch(dlh_encoder *enc, uint32_t tid) {
  if (enc->last_tb && enc->tb[enc->last_tb - 1].tid == tid) return &enc->tb[enc->last_tb - 1];
  dlh_tbatch *t = tbatch_get(enc, tid);
  if (t) enc->last_tb = (size_t)(t - enc->tb) + 1;
  return t;
}

/* Any event (the slow path of dlh_tbatch_put: dlh_batch.h): makes room for it, starts the
 * columns and the last-args entry it needs, then writes it with the fast path's code. */
int dlh_enc_api(dlh_encoder *enc, uint32_t tid, const dlh_api_event *ev) {
  if (!enc || !ev) return -1;
  dlh_tbatch *t = dlh_enc_tbatch(enc, tid);
  if (!t) { enc->lost++; return -1; }
  if (t->n >= DLH_BATCH_MAX) { /* filled up by dlh_tbatch_put: out first (as below) */
    tbatch_emit(enc, t);
    if (frame_full(enc)) dlh_enc_flush(enc);
  }
  if (!t->active) t->active = ~LAZY_COLS & ((1u << NCOLS) - 1); /* a new batch */
  uint32_t na = ev->args ? ev->nargs : 0;
  uint64_t count = ev->count > 1 ? ev->count : 1;
  size_t ev_room = room_events(enc);
  if ((!t->room && tbatch_refill(t, ev_room) < 0) ||
      (t->col[COL_ARGS].cap - t->col[COL_ARGS].len < (size_t)na * 10 &&
       buf_reserve(&t->col[COL_ARGS], (size_t)na * 10 + ev_room * 4) < 0) ||
      (ev->corr && !(t->active & (1u << COL_CORR)) && tbatch_activate(t, COL_CORR) < 0) ||
      (ev->stack && !(t->active & (1u << COL_STACK)) && tbatch_activate(t, COL_STACK) < 0) ||
      (ev->depth && !(t->active & (1u << COL_DEPTH)) && tbatch_activate(t, COL_DEPTH) < 0) ||
      (count > 1 && !(t->active & (1u << COL_COUNT)) &&
       (tbatch_activate(t, COL_COUNT) < 0 || tbatch_activate(t, COL_SPAN) < 0))) {
    enc->lost++;
    return -1;
  }
  /* the base of this event's args_delta: looked up (or made) before anything is written, so
   * that a failure loses the event whole and the reader's bases stay the encoder's */
  struct dlh_last_args *e = NULL;
  if (na || t->last_cap) {
    e = t->la && t->la->fn == ev->fn ? t->la : last_args_of(t, ev->fn);
    if (!e) {
      enc->lost++;
      return -1;
    }
  }
  if (t->n == 0) {
    t->base_start = t->last_start = ev->start_ns;
    enc->pending++;
  }
  dlh_tbatch_write(t, e, ev->start_ns, ev->dur_ns, ev->fn, ev->ret, ev->corr, ev->stack,
                   ev->depth, na, ev->args, count, ev->span_ns);
  if (t->n >= DLH_BATCH_MAX) {
    if (tbatch_emit(enc, t) < 0) return -1;
    if (frame_full(enc)) return dlh_enc_flush(enc);
  }
  return 0;
}

int dlh_enc_flush(dlh_encoder *enc) {
  if (!enc) return -1;
  if (enc->held) { /* the frame of a flush that found its fd closed: first, on the new fd */
    if (dlh_write_all(enc->fd, enc->out.p, enc->held) < 0) return -1;
    enc->bytes += enc->held;
    enc->held = 0;
  }
  int rc = emit_all(enc), e = errno;
  if (write_frame(enc) < 0) return -1;
  if (rc) errno = e;
  return rc;
}

/* Sink mode: compresses b into one zstd frame and hands it to the sink. Returns 0 or -1. */
static int sink_frame(dlh_encoder *enc, dlh_buf *b, size_t *np, int kept) {
  if (b->len == 0) return 0;
  size_t bound = ZSTD_compressBound(b->len);
  enc->out.len = 0;
  size_t z = 0;
  if (buf_reserve(&enc->out, bound) == 0)
    z = ZSTD_compress2(enc->cctx, enc->out.p, enc->out.cap, b->p, b->len);
  b->len = 0;
  *np = 0;
  if (!enc->out.cap || z == 0 || ZSTD_isError(z)) {
    ZSTD_CCtx_reset(enc->cctx, ZSTD_reset_session_only);
    errno = ENOMEM;
    return -1;
  }
  if (enc->sink(enc->sink_ctx, enc->out.p, z, kept) != 0) return -1;
  enc->bytes += z;
  return 0;
}

/* Compresses `raw` into one zstd frame and writes it. Returns 0 or -1 (errno set). */
static int write_frame(dlh_encoder *enc) {
  if (enc->sink) { /* the definitions first: a frame of events may use them */
    int a = sink_frame(enc, &enc->kraw, &enc->kraw_packets, 1);
    int b = sink_frame(enc, &enc->raw, &enc->raw_packets, 0);
    return a || b ? -1 : 0;
  }
  if (enc->raw.len == 0) return 0;
  size_t bound = ZSTD_compressBound(enc->raw.len);
  enc->out.len = 0;
  if (buf_reserve(&enc->out, bound) < 0) {
    enc->raw.len = 0;
    enc->raw_packets = 0;
    errno = ENOMEM;
    return -1;
  }
  size_t z = ZSTD_compress2(enc->cctx, enc->out.p, enc->out.cap, enc->raw.p, enc->raw.len);
  enc->raw.len = 0;
  enc->raw_packets = 0;
  if (ZSTD_isError(z)) {
    ZSTD_CCtx_reset(enc->cctx, ZSTD_reset_session_only);
    errno = EIO;
    return -1;
  }
  /* A frame that could not be written completely (disk full, file size limit) is cut off
   * again where possible, so the file stays readable and later frames can follow it. */
  off_t at = lseek(enc->fd, 0, SEEK_CUR);
  if (dlh_write_all(enc->fd, enc->out.p, z) < 0) {
    int e = errno;
    if (e == EBADF) { /* nothing was written: kept for the next flush (after dlh_enc_set_fd) */
      enc->held = z;
      errno = e;
      return -1;
    }
    if (at >= 0 && ftruncate(enc->fd, at) == 0) lseek(enc->fd, at, SEEK_SET);
    errno = e;
    return -1;
  }
  enc->bytes += z;
  return 0;
}

void dlh_enc_set_fd(dlh_encoder *enc, int fd) {
  if (enc) enc->fd = fd;
}

uint64_t dlh_enc_bytes(const dlh_encoder *enc) { return enc ? enc->bytes : 0; }

uint64_t dlh_enc_lost(const dlh_encoder *enc) { return enc ? enc->lost : 0; }

uint64_t dlh_enc_pending_bytes(const dlh_encoder *enc) {
  if (!enc) return 0;
  uint64_t b = enc->raw.len + enc->kraw.len;
  for (size_t i = 0; i < enc->ntb; i++)
    if (enc->tb[i].n)
      for (int c = 0; c < NCOLS; c++) b += enc->tb[i].col[c].len;
  return b + enc->gb.n * 48 + enc->gb.nvals_total * 8;
}

uint64_t dlh_enc_mem(const dlh_encoder *enc) {
  if (!enc) return 0;
  uint64_t m = sizeof *enc + enc->raw.cap + enc->kraw.cap + enc->out.cap + enc->captb * sizeof *enc->tb +
               enc->hcap * sizeof *enc->hash + ZSTD_sizeof_CCtx(enc->cctx);
  for (size_t i = 0; i < enc->ntb; i++)
    for (int c = 0; c < NCOLS; c++) m += enc->tb[i].col[c].cap;
  const dlh_gbatch *g = &enc->gb;
  m += g->cap * (6 * sizeof(uint32_t) + 3 * sizeof(uint64_t)) + g->vals_cap * sizeof(uint64_t);
  return m;
}

void dlh_enc_free(dlh_encoder *enc) {
  if (!enc) return;
  dlh_enc_flush(enc);
  for (size_t i = 0; i < enc->ntb; i++) {
    for (int c = 0; c < NCOLS; c++) free(enc->tb[i].col[c].p);
    free(enc->tb[i].last);
  }
  dlh_gbatch *g = &enc->gb;
  free(g->kind); free(g->stream); free(g->name); free(g->nvals); free(g->context);
  free(g->devices); free(g->start_delta); free(g->dur); free(g->corr); free(g->vals);
  free(g->graph); free(g->graph_node);
  free(enc->tb);
  free(enc->hash);
  free(enc->raw.p);
  free(enc->kraw.p);
  free(enc->out.p);
  ZSTD_freeCCtx(enc->cctx);
  free(enc);
}
