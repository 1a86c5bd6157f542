/* dlh_batch.h — one thread's open ApiBatch and the encoder of its columns: shared by
 * format/encoder.c (dlh_enc_api) and the recorder's drain loop (preload/writer.c), which
 * writes the common events straight from the ring's records into the columns: no event struct,
 * no call per event. Not part of the public API (dlh_format.h).
 *
 * The ApiBatch columns are encoded as events arrive, straight into the bytes of their packed
 * fields (varints, zigzag for the signed ones): emitting the batch is then a few headers and one
 * copy per column, with no per-event message and no second pass. */
#ifndef DLH_BATCH_H
#define DLH_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dlh_format.h"

typedef struct dlh_buf {
  uint8_t *p;
  size_t len, cap;
} dlh_buf;

enum { DLH_COL_START, DLH_COL_DUR, DLH_COL_FN, DLH_COL_RET, DLH_COL_CORR, DLH_COL_STACK,
       DLH_COL_NARGS, DLH_COL_ARGS, DLH_COL_DEPTH, DLH_COL_COUNT, DLH_COL_SPAN, DLH_NCOLS };
/* Columns that are mostly their default (stack 0, depth 0, no correlation id, count 1, span 0)
 * are left empty until an event needs them: then the events before get the default. */
#define DLH_LAZY_COLS                                                                          \
  (1u << DLH_COL_CORR | 1u << DLH_COL_STACK | 1u << DLH_COL_DEPTH | 1u << DLH_COL_COUNT |      \
   1u << DLH_COL_SPAN)
#define DLH_BATCH_MAX 65536u /* events per ApiBatch packet */

/* the args of the last event of a function in this batch (args_delta's base) */
struct dlh_last_args {
  uint32_t fn, stamp, nargs;
  uint64_t v[DLH_ARGS_DELTA_BASE];
};

typedef struct dlh_tbatch {
  uint32_t tid;
  size_t n;        /* events in the batch */
  uint64_t base_start, last_start, last_corr;
  unsigned active; /* bit per column holding a value per event */
  /* Events that may still be written without a check of the column buffers: every active
   * column but args has room for this many 10-byte varints, and n + room <= DLH_BATCH_MAX.
   * 0 in a batch that holds no event yet: its first event takes the slow path. */
  size_t room;
  dlh_buf col[DLH_NCOLS];
  struct dlh_last_args *last; /* open addressing by fn; entries of another stamp are free */
  struct dlh_last_args *la;   /* the entry of the last event's function, or NULL */
  uint32_t last_cap, last_used, stamp;
} dlh_tbatch;

/* The open batch of thread tid (made when there is none), or NULL when memory is short. The
 * pointer stays valid until a batch of another tid is made (dlh_enc_api, dlh_enc_tbatch)
 * or dlh_enc_free. */
dlh_tbatch *dlh_enc_tbatch(dlh_encoder *enc, uint32_t tid);

static inline uint64_t dlh_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline size_t dlh_put_varint(uint8_t *p, uint64_t v) {
  size_t i = 0;
  while (v >= 0x80) {
    p[i++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[i++] = (uint8_t)v;
  return i;
}

/* The same for the columns, which always have room for a 10-byte varint: one to three bytes
 * (deltas, ids, function ids, small values) without a loop. */
static inline size_t dlh_put_varint_col(uint8_t *p, uint64_t v) {
  if (v < 0x80) { p[0] = (uint8_t)v; return 1; }
  if (v < 0x4000) { p[0] = (uint8_t)(v | 0x80); p[1] = (uint8_t)(v >> 7); return 2; }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (v < 0x200000) {
    uint32_t x = (uint32_t)((v & 0x7f) | (v << 1 & 0x7f00) | (v << 2 & 0x7f0000) | 0x8080);
    memcpy(p, &x, 4); /* little-endian hosts: the fourth byte is beyond the varint (room) */
    return 3;
  }
#endif
  return dlh_put_varint(p, v);
}

/* Writes an event into the batch's columns. The caller made sure that it fits: room > 0, the
 * args column has room for na varints, every lazy column the event needs is active, and e is
 * the entry of fn in the last-args table (NULL only when na is 0 and fn has none). */
static inline void dlh_tbatch_write(dlh_tbatch *t, struct dlh_last_args *e, uint64_t start,
                                    uint64_t dur, uint32_t fn, int64_t ret, uint64_t corr,
                                    uint32_t stack, uint32_t depth, uint32_t na,
                                    const uint64_t *args, uint64_t count, uint64_t span) {
  int64_t d = 0;
  if (corr) {
    d = (int64_t)(corr - t->last_corr);
    if (d == 0) d = INT64_MIN;
    t->last_corr = corr;
  }
  const uint64_t sdelta = dlh_zigzag((int64_t)(start - t->last_start));
  t->last_start = start;
  const unsigned act = t->active;
#define DLH_PUT(c, v)                                                     \
  do {                                                                    \
    dlh_buf *b_ = &t->col[c];                                             \
    b_->len += dlh_put_varint_col(b_->p + b_->len, (v));                  \
  } while (0)
  DLH_PUT(DLH_COL_START, sdelta);
  DLH_PUT(DLH_COL_DUR, dur);
  DLH_PUT(DLH_COL_FN, fn);
  DLH_PUT(DLH_COL_RET, dlh_zigzag(ret));
  DLH_PUT(DLH_COL_NARGS, na);
  if (na) { /* as differences from the same function's last args (args_delta) */
    dlh_buf *b = &t->col[DLH_COL_ARGS];
    uint8_t *p0 = b->p + b->len, *p = p0;
    uint32_t nb = e->nargs, i = 0;
    uint32_t nd = na < DLH_ARGS_DELTA_BASE ? na : DLH_ARGS_DELTA_BASE;
    for (; i < nd; i++) {
      uint64_t base = i < nb ? e->v[i] : 0;
      p += dlh_put_varint_col(p, dlh_zigzag((int64_t)(args[i] - base)));
      e->v[i] = args[i];
    }
    for (; i < na; i++) p += dlh_put_varint_col(p, dlh_zigzag((int64_t)args[i]));
    b->len += (size_t)(p - p0);
  }
  if (e) e->nargs = na < DLH_ARGS_DELTA_BASE ? na : DLH_ARGS_DELTA_BASE;
  t->la = e;
  if (act & DLH_LAZY_COLS) {
    if (act & (1u << DLH_COL_CORR)) DLH_PUT(DLH_COL_CORR, dlh_zigzag(d));
    if (act & (1u << DLH_COL_STACK)) DLH_PUT(DLH_COL_STACK, stack);
    if (act & (1u << DLH_COL_DEPTH)) DLH_PUT(DLH_COL_DEPTH, depth);
    if (act & (1u << DLH_COL_COUNT)) {
      DLH_PUT(DLH_COL_COUNT, count);
      DLH_PUT(DLH_COL_SPAN, count > 1 ? span : 0);
    }
  }
#undef DLH_PUT
  t->room--;
  t->n++;
}

/* The entry of fn in the batch's last-args table, or NULL when it has none (yet). */
static inline struct dlh_last_args *dlh_tbatch_last_find(const dlh_tbatch *t, uint32_t fn) {
  if (!t->last_cap) return NULL;
  uint32_t mask = t->last_cap - 1, h = (fn * 2654435761u) & mask;
  for (;; h = (h + 1) & mask) {
    struct dlh_last_args *e = &t->last[h];
    if (e->stamp != t->stamp) return NULL;
    if (e->fn == fn) return e;
  }
}

/* The last-args entry of an event of fn with na args: *e, NULL when fn has none (an event
 * without args needs none: no entry and an entry of no args are the same base). Returns -1
 * when one has to be made (dlh_enc_api does that). */
static inline int dlh_tbatch_last(const dlh_tbatch *t, uint32_t fn, uint32_t na,
                                  struct dlh_last_args **e) {
  struct dlh_last_args *x = t->la;
  if (x && x->fn == fn) { *e = x; return 0; }
  *e = dlh_tbatch_last_find(t, fn);
  return *e || !na ? 0 : -1;
}

/* The fast path: an event of one call written into the batch when that needs nothing but
 * stores. Returns 0, or -1 when it needs dlh_enc_api (the batch's first event, columns to
 * grow or to start, a function other than the last one's with args): nothing was written then. */
static inline int dlh_tbatch_put(dlh_tbatch *t, uint64_t start, uint64_t dur, uint32_t fn,
                                 int64_t ret, uint64_t corr, uint32_t stack, uint32_t depth,
                                 uint32_t na, const uint64_t *args) {
  struct dlh_last_args *e;
  unsigned need = (corr ? 1u << DLH_COL_CORR : 0) | (stack ? 1u << DLH_COL_STACK : 0) |
                  (depth ? 1u << DLH_COL_DEPTH : 0);
  const dlh_buf *a = &t->col[DLH_COL_ARGS];
  if (!t->room || (need & ~t->active) || a->cap - a->len < (size_t)na * 10 ||
      dlh_tbatch_last(t, fn, na, &e) != 0)
    return -1;
  dlh_tbatch_write(t, e, start, dur, fn, ret, corr, stack, depth, na, args, 1, 0);
  return 0;
}

/* A run of events that differ only in their times and args: the same function, number of args
 * (at most DLH_ARGS_DELTA_BASE), return value, stack and depth, no correlation id, one call
 * each: a thread calling one function over and over. The drain loop writes their start, dur and
 * args with the ends of those columns in registers (its own loop: the args_delta base of an
 * event is the args of the one before), and dlh_run_close repeats the function, the return
 * value, nargs, stack, depth and the defaults of the other lazy columns in use k times at the
 * end. dlh_run_open
 * (when it returns 0), then at most r->max events, then dlh_run_close; nothing else may touch
 * the batch in between (any packet written may emit it). */
typedef struct dlh_run {
  uint8_t *start, *dur, *args;       /* ends of those columns */
  uint64_t last_start;
  size_t max;                        /* events that fit (room, room of the args column) */
  uint64_t base[DLH_ARGS_DELTA_BASE]; /* args_delta's base of the run's first event */
  struct dlh_last_args *e;           /* the function's entry in the last-args table, or NULL */
} dlh_run;

static inline int dlh_run_open(dlh_tbatch *t, dlh_run *r, uint32_t fn, uint32_t na,
                               uint32_t stack, uint32_t depth) {
  struct dlh_last_args *e;
  unsigned need = (stack ? 1u << DLH_COL_STACK : 0) | (depth ? 1u << DLH_COL_DEPTH : 0);
  if (!t->room || na > DLH_ARGS_DELTA_BASE || (need & ~t->active) ||
      dlh_tbatch_last(t, fn, na, &e) != 0)
    return -1;
  size_t max = t->room;
  const dlh_buf *a = &t->col[DLH_COL_ARGS];
  if (na) {
    size_t fit = (a->cap - a->len) / ((size_t)na * 10);
    if (fit < max) max = fit;
    if (!max) return -1;
    for (uint32_t i = 0; i < na; i++) r->base[i] = i < e->nargs ? e->v[i] : 0;
  }
  r->max = max;
  r->e = e;
  r->start = t->col[DLH_COL_START].p + t->col[DLH_COL_START].len;
  r->dur = t->col[DLH_COL_DUR].p + t->col[DLH_COL_DUR].len;
  r->args = a->p + a->len;
  r->last_start = t->last_start;
  return 0;
}

/* Appends k copies of the len bytes at pat to b (room: checked by the caller). */
static inline void dlh_buf_repeat(dlh_buf *b, const uint8_t *pat, size_t len, size_t k) {
  uint8_t *d = b->p + b->len;
  size_t total = len * k, done = len;
  memcpy(d, pat, len);
  while (done < total) { /* doubling: log2(k) copies */
    size_t c = done < total - done ? done : total - done;
    memcpy(d + done, d, c);
    done += c;
  }
  b->len += total;
}

/* Ends a run of k > 0 events of function fn, na args, return value ret, stack and depth;
 * last_args: the args of its last event. */
static inline void dlh_run_close(dlh_tbatch *t, const dlh_run *r, size_t k, uint32_t fn,
                                 int64_t ret, uint32_t na, uint32_t stack, uint32_t depth,
                                 const uint64_t *last_args) {
  uint8_t v[10];
  dlh_buf_repeat(&t->col[DLH_COL_FN], v, dlh_put_varint(v, fn), k);
  dlh_buf_repeat(&t->col[DLH_COL_RET], v, dlh_put_varint(v, dlh_zigzag(ret)), k);
  v[0] = (uint8_t)na;
  dlh_buf_repeat(&t->col[DLH_COL_NARGS], v, 1, k);
  if (t->active & DLH_LAZY_COLS) { /* no correlation id, 1 call (span 0) */
    if (t->active & (1u << DLH_COL_STACK))
      dlh_buf_repeat(&t->col[DLH_COL_STACK], v, dlh_put_varint(v, stack), k);
    if (t->active & (1u << DLH_COL_DEPTH))
      dlh_buf_repeat(&t->col[DLH_COL_DEPTH], v, dlh_put_varint(v, depth), k);
    v[0] = 0;
    v[1] = 1;
    if (t->active & (1u << DLH_COL_CORR)) dlh_buf_repeat(&t->col[DLH_COL_CORR], v, 1, k);
    if (t->active & (1u << DLH_COL_COUNT)) dlh_buf_repeat(&t->col[DLH_COL_COUNT], v + 1, 1, k);
    if (t->active & (1u << DLH_COL_SPAN)) dlh_buf_repeat(&t->col[DLH_COL_SPAN], v, 1, k);
  }
  t->col[DLH_COL_START].len = (size_t)(r->start - t->col[DLH_COL_START].p);
  t->col[DLH_COL_DUR].len = (size_t)(r->dur - t->col[DLH_COL_DUR].p);
  t->col[DLH_COL_ARGS].len = (size_t)(r->args - t->col[DLH_COL_ARGS].p);
  if (r->e) {
    memcpy(r->e->v, last_args, na * sizeof *last_args);
    r->e->nargs = na;
  }
  t->la = r->e;
  t->n += k;
  t->room -= k;
  t->last_start = r->last_start;
}

#endif
