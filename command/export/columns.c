/* columns.c — `dlhook export --format columns`: one trace as a stream of fixed-width binary
 * columns and string dictionaries in Arrow's memory layout, which the Parquet writer
 * (command/python/dlhook/tables.py) hands to Arrow as they are (pyarrow.Array.from_buffers over
 * the received bytes: no copy, no pass over the values) and writes with pyarrow. `dlhook export --format parquet` runs that writer, which runs this exporter once per
 * trace, one process per core.
 *
 * The stream (little-endian, every length in bytes):
 *   "DLHCOLS2"                                   magic
 *   then messages, each a 16-byte head {u8 type, u8 table, u16 0, u32 nrows, u64 size} and
 *   `size` bytes of payload:
 *     type 1 META     a JSON object: the trace's process, clock and counts
 *     type 2 SCHEMA   table `table`: u16 name length, name, u16 column count, and per column
 *                     {u8 type, u8 nullable, u16 name length, name}
 *     type 3 STRINGS  `nrows` strings, each u32 length and its bytes; they are numbered on from
 *                     1 in the order sent (one numbering per stream)
 *     type 4 BATCH    `nrows` rows of table `table`: a byte per column (0: the column is null
 *                     in every row of the batch and sends nothing), then per column sent nrows
 *                     values (int64, int32, float64, a byte per bool, or for a string its int32
 *                     index into the strings sent so far: number - 1, 0 when null), then for a
 *                     nullable or string column Arrow's validity bitmap (bit r of byte r / 8:
 *                     row r is not null); each piece padded to 8 bytes
 *     type 5 END      the stream is complete
 * Types: 'l' int64, 'i' int32, 'd' float64, 's' string, 'b' bool (a byte).
 *
 * Times are nanoseconds on the job's clock: trace clock + (realtime - trace clock) of the
 * trace's first clock anchor, i.e. UTC nanoseconds since the epoch, the clock that ranks.c
 * aligns traces on before it refines them by their collectives. Unsigned values are written as
 * int64 (Spark has no unsigned type; no recorded value reaches 2^63). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "rd.h"
#include "rd_ncclev.h"
#include "rd_scan.h"

enum { M_META = 1, M_SCHEMA = 2, M_STRINGS = 3, M_BATCH = 4, M_END = 5 };
#define BATCH_ROWS 65536

typedef struct col {
  const char *name;
  char type;
  int nullable;
} col;

/* The tables and their columns: the schemas docs/tables.md documents. */
enum { T_PROCESSES, T_THREADS, T_CALLS, T_NVTX, T_GPU, T_MEMORY, T_STACKS, T_SAMPLES,
       T_OPERATORS, T_ANCHORS, T_STEPS, T_COLLECTIVES, NTABLES };
static const col c_processes[] = {
    {"pid", 'l', 0}, {"host_name", 's', 0}, {"local_rank", 'i', 1},
    {"world_size", 'i', 1}, {"exe", 's', 1}, {"start_ns", 'l', 1}, {"clock_offset_ns", 'l', 0},
    {"sample_hz", 'i', 0}, {"records", 'l', 0}, {"dropped", 'l', 0}, {"calls", 'l', 0},
    {"folded", 'l', 0}, {"api_events", 'l', 0}, {"gpu_events", 'l', 0}, {"samples", 'l', 0},
    {"samples_lost", 'l', 0}, {"trace", 's', 0}, {NULL, 0, 0}};
static const col c_threads[] = {{"pid", 'l', 0}, {"tid", 'l', 0}, {"name", 's', 1}, {NULL, 0, 0}};
static const col c_calls[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"function", 's', 0}, {"domain", 's', 0},
    {"start_ns", 'l', 0}, {"dur_ns", 'l', 0}, {"end_ns", 'l', 0}, {"ret", 'l', 0},
    {"count", 'l', 0}, {"corr", 'l', 1}, {"stack_id", 'l', 1}, {"depth", 'i', 0},
    {"op", 's', 1}, {"op_id", 'l', 1},
    /* typed library arguments (null where the function has none) */
    {"m", 'l', 1}, {"n", 'l', 1}, {"k", 'l', 1}, {"batch", 'l', 1}, {"dtype", 'l', 1},
    {"flops", 'd', 1}, {"bytes", 'l', 1}, {"datatype", 'l', 1}, {"nranks", 'l', 1},
    {"comm_hash", 'l', 1}, {"seq", 'l', 1}, {"group_depth", 'l', 1}, {NULL, 0, 0}};
/* the argument names behind the typed columns, in their order from "m" on */
static const char *const arg_cols[] = {"m", "n", "k", "batch", "dtype", "flops", "bytes",
                                       "datatype", "nranks", "comm_hash", "seq", "group"};
#define NARGCOLS (sizeof arg_cols / sizeof *arg_cols)
#define ARGCOL0 14
#define FLOPS_COL 5 /* arg_cols[5], the one float64 column */
static const col c_nvtx[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"function", 's', 0}, {"name", 's', 1},
    {"start_ns", 'l', 0}, {"dur_ns", 'l', 0}, {"end_ns", 'l', 0}, {"count", 'l', 0},
    {"depth", 'i', 0}, {"step", 'l', 1}, {NULL, 0, 0}};
static const col c_gpu[] = {
    {"pid", 'l', 0}, {"kind", 's', 0}, {"name", 's', 1}, {"device", 'l', 0},
    {"stream", 'l', 0}, {"context", 'l', 0}, {"start_ns", 'l', 0}, {"dur_ns", 'l', 0},
    {"end_ns", 'l', 0}, {"corr", 'l', 1}, {"bytes", 'l', 1}, {"copy_kind", 's', 1},
    {"grid_x", 'l', 1}, {"grid_y", 'l', 1}, {"grid_z", 'l', 1}, {"block_x", 'l', 1},
    {"block_y", 'l', 1}, {"block_z", 'l', 1}, {"external_id", 'l', 1}, {"graph", 'l', 1},
    {"graph_node", 'l', 1}, {"launch_corr", 'l', 1}, {NULL, 0, 0}};
static const col c_memory[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"ts_ns", 'l', 0}, {"device", 'l', 0}, {"ptr", 'l', 0},
    {"bytes", 'l', 0}, {"device_live_bytes", 'l', 0}, {"live_bytes", 'l', 0}, {NULL, 0, 0}};
static const col c_stacks[] = {
    {"pid", 'l', 0}, {"stack_id", 'l', 0}, {"level", 'i', 0}, {"pc", 'l', 0},
    {"function", 's', 1}, {"file", 's', 1}, {"line", 'i', 1}, {"module", 's', 1},
    {"python", 'b', 0}, {NULL, 0, 0}};
static const col c_samples[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"ts_ns", 'l', 0}, {"kind", 's', 0},
    {"weight_ns", 'l', 0}, {"stack_id", 'l', 1}, {"wait", 's', 1}, {"in_call", 's', 1},
    {NULL, 0, 0}};
static const col c_operators[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"id", 'l', 0}, {"parent", 'l', 1}, {"depth", 'i', 0},
    {"kind", 's', 0}, {"name", 's', 0}, {"module", 's', 1}, {"start_ns", 'l', 0},
    {"end_ns", 'l', 0}, {"dur_ns", 'l', 0}, {NULL, 0, 0}};
static const col c_anchors[] = {
    {"pid", 'l', 0}, {"kind", 'i', 0}, {"trace_ns", 'l', 0}, {"realtime_ns", 'l', 1},
    {"ticks", 'l', 1}, {NULL, 0, 0}};
/* the trace's steps (stepfind.c): steps_from = nvtx, optimizer, backward, training_step, detected */
static const col c_steps[] = {
    {"pid", 'l', 0}, {"step", 'l', 0}, {"name", 's', 1}, {"steps_from", 's', 0}, {"start_ns", 'l', 0},
    {"end_ns", 'l', 0}, {"dur_ns", 'l', 0}, {NULL, 0, 0}};
/* NCCL's collectives and sends/receives as its profiler plugin saw them (rd_ncclev.h) */
static const col c_collectives[] = {
    {"pid", 'l', 0}, {"tid", 'l', 0}, {"kind", 's', 0}, {"name", 's', 0}, {"comm", 'l', 0},
    {"comm_rank", 'i', 1}, {"comm_size", 'i', 1}, {"seq", 'l', 1}, {"algo", 's', 1},
    {"proto", 's', 1}, {"channels", 'i', 0}, {"count", 'l', 0}, {"dtype", 's', 1},
    {"bytes", 'l', 0}, {"peer", 'i', 1}, {"call_start_ns", 'l', 1}, {"call_end_ns", 'l', 1},
    {"enqueue_start_ns", 'l', 0}, {"enqueue_end_ns", 'l', 1}, {"gpu_start_ns", 'l', 1},
    {"gpu_end_ns", 'l', 1}, {"gpu_dur_ns", 'l', 1}, {"kernel_channels", 'i', 0},
    {"kernel_ops", 'i', 1}, {"proxy_ops", 'i', 0}, {"proxy_start_ns", 'l', 1},
    {"proxy_end_ns", 'l', 1}, {"proxy_dur_ns", 'l', 1}, {"algbw_gb_per_s", 'd', 1},
    {"busbw_gb_per_s", 'd', 1}, {NULL, 0, 0}};
static const struct { const char *name; const col *cols; } tables[NTABLES] = {
    {"processes", c_processes}, {"threads", c_threads}, {"calls", c_calls}, {"nvtx", c_nvtx},
    {"gpu", c_gpu}, {"memory", c_memory}, {"stacks", c_stacks}, {"samples", c_samples},
    {"operators", c_operators}, {"anchors", c_anchors}, {"steps", c_steps},
    {"collectives", c_collectives}};

/* One table's open batch: a value array per column (8 bytes a value whatever the type) and a
 * validity byte array for the nullable ones. */
typedef struct tbuf {
  size_t ncols, nrows;
  int64_t *v[32];
  uint8_t *ok[32];
  int sent_schema;
} tbuf;

/* The string numbering of the stream. */
typedef struct strtab {
  char **s;
  size_t n, sent, cap;
  uint64_t *hk;   /* open addressing: hash, and index + 1 in hv */
  uint32_t *hv;
  size_t hcap;
} strtab;

/* A direct-mapped cache in front of intern() for strings that a key names for the whole pass
 * (a function id, a StringDef id, a kind): a hit skips hashing and comparing the string. The
 * pointer is part of the key, so a string made anew (a redefined StringDef) is interned again. */
#define ICACHE_BITS 12
typedef struct icache {
  uint64_t key;
  const char *ptr;
  uint32_t num;
} icache;
enum { K_FUNC = 1, K_DOMAIN, K_GPUKIND, K_KNAME, K_COPYKIND, K_LAYER };
#define IKEY(kind, v) (((uint64_t)(kind) << 56) | ((uint64_t)(v) & ((1ull << 56) - 1)))

typedef struct cx {
  icache ic[1 << ICACHE_BITS];
  FILE *f;
  rd_trace *t;
  int64_t off;
  int64_t pid;
  tbuf tb[NTABLES];
  strtab st;
  rd_map argix;     /* FunctionDesc id -> int8[NARGCOLS] argument indexes + 1 */
  rd_u64map stacks; /* stack ids used */
  uint32_t *stack_ids;
  size_t nstack, capstack;
  rd_spans *spans;
  rd_span_at at;
  int torch;
  rd_stepfind *sf; /* the trace's steps */
  unsigned char *narrow; /* a batch's column narrowed to 4 or 1 bytes, or its validity bitmap */
} cx;

static void put_head(FILE *f, int type, int table, uint32_t nrows, uint64_t size) {
  unsigned char h[16] = {(unsigned char)type, (unsigned char)table, 0, 0};
  memcpy(h + 4, &nrows, 4);
  memcpy(h + 8, &size, 8);
  fwrite(h, 1, 16, f);
}

static uint32_t intern(cx *c, const char *s) {
  if (!s) return 0;
  strtab *t = &c->st;
  if (t->n * 2 >= t->hcap) {
    size_t cap = t->hcap ? t->hcap * 2 : 4096;
    uint64_t *hk = calloc(cap, sizeof *hk);
    uint32_t *hv = calloc(cap, sizeof *hv);
    if (!hk || !hv) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
    for (size_t i = 0; i < t->hcap; i++) {
      if (!t->hv[i]) continue;
      size_t j = t->hk[i] & (cap - 1);
      while (hv[j]) j = (j + 1) & (cap - 1);
      hk[j] = t->hk[i];
      hv[j] = t->hv[i];
    }
    free(t->hk);
    free(t->hv);
    t->hk = hk, t->hv = hv, t->hcap = cap;
  }
  uint64_t h = rd_hash_str(s);
  size_t j = h & (t->hcap - 1);
  for (; t->hv[j]; j = (j + 1) & (t->hcap - 1))
    if (t->hk[j] == h && !strcmp(t->s[t->hv[j] - 1], s)) return t->hv[j];
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 1024;
    t->s = rd_xrealloc(t->s, t->cap * sizeof *t->s);
  }
  t->s[t->n++] = rd_utf8_dup(s);
  t->hk[j] = h;
  t->hv[j] = (uint32_t)t->n;
  return (uint32_t)t->n;
}

static uint32_t intern_keyed(cx *c, uint64_t key, const char *s) {
  if (!s) return 0;
  icache *e = &c->ic[(key * 0x9E3779B97F4A7C15ull) >> (64 - ICACHE_BITS)];
  if (e->num && e->key == key && e->ptr == s) return e->num;
  e->num = intern(c, s);
  e->key = key;
  e->ptr = s;
  return e->num;
}

static void send_strings(cx *c) {
  strtab *t = &c->st;
  if (t->sent == t->n) return;
  uint64_t size = 0;
  for (size_t i = t->sent; i < t->n; i++) size += 4 + strlen(t->s[i]);
  put_head(c->f, M_STRINGS, 0, (uint32_t)(t->n - t->sent), size);
  for (size_t i = t->sent; i < t->n; i++) {
    uint32_t len = (uint32_t)strlen(t->s[i]);
    fwrite(&len, 4, 1, c->f);
    fwrite(t->s[i], 1, len, c->f);
  }
  t->sent = t->n;
}

static void send_schema(cx *c, int ti) {
  const col *cols = tables[ti].cols;
  uint64_t size = 2 + strlen(tables[ti].name) + 2;
  uint16_t n = 0;
  for (; cols[n].name; n++) size += 4 + strlen(cols[n].name);
  put_head(c->f, M_SCHEMA, ti, 0, size);
  uint16_t len = (uint16_t)strlen(tables[ti].name);
  fwrite(&len, 2, 1, c->f);
  fwrite(tables[ti].name, 1, len, c->f);
  fwrite(&n, 2, 1, c->f);
  for (uint16_t i = 0; i < n; i++) {
    unsigned char tn[2] = {(unsigned char)cols[i].type, (unsigned char)cols[i].nullable};
    fwrite(tn, 1, 2, c->f);
    len = (uint16_t)strlen(cols[i].name);
    fwrite(&len, 2, 1, c->f);
    fwrite(cols[i].name, 1, len, c->f);
  }
}

static const unsigned char zeros[8];
static size_t width(char type) { return type == 'l' || type == 'd' ? 8 : type == 'b' ? 1 : 4; }
static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Arrow's validity bitmap of column i of b into bits (pad8(n / 8 + 1) bytes, cleared here):
 * ok[r], and for a string a number other than 0. */
static void validity(const tbuf *b, size_t i, int str, size_t n, uint8_t *bits) {
  memset(bits, 0, pad8((n + 7) / 8));
  const int64_t *v = b->v[i];
  const uint8_t *ok = b->ok[i];
  size_t r = 0;
  if (!str && ok) /* 8 validity bytes (0 or 1) at a time: byte k's bit 0 to bit k */
    for (; r + 8 <= n; r += 8) {
      uint64_t x;
      memcpy(&x, ok + r, 8);
      bits[r >> 3] = (uint8_t)((x * 0x0102040810204080ull) >> 56);
    }
  for (; r < n; r++) {
    int set = (!ok || ok[r]) && (!str || v[r]);
    bits[r >> 3] |= (uint8_t)(set << (r & 7));
  }
}

static void flush_table(cx *c, int ti) {
  tbuf *b = &c->tb[ti];
  if (!b->sent_schema) { send_schema(c, ti); b->sent_schema = 1; }
  if (!b->nrows) return;
  send_strings(c);
  const col *cols = tables[ti].cols;
  size_t n = b->nrows;
  unsigned char present[32];
  for (size_t i = 0; i < b->ncols; i++) {
    present[i] = 1;
    if (cols[i].nullable && !memchr(b->ok[i], 1, n)) present[i] = 0;
  }
  uint64_t size = pad8(b->ncols);
  for (size_t i = 0; i < b->ncols; i++)
    if (present[i])
      size += pad8(n * width(cols[i].type)) +
              (cols[i].nullable || cols[i].type == 's' ? pad8((n + 7) / 8) : 0);
  put_head(c->f, M_BATCH, ti, (uint32_t)n, size);
  fwrite(present, 1, b->ncols, c->f);
  fwrite(zeros, 1, pad8(b->ncols) - b->ncols, c->f);
  for (size_t i = 0; i < b->ncols; i++) {
    if (!present[i]) continue;
    size_t w = width(cols[i].type);
    if (w == 8) {
      fwrite(b->v[i], 8, n, c->f);
    } else { /* narrow the 8-byte slots into the spare buffer (strings: number - 1) */
      int str = cols[i].type == 's';
      unsigned char *d = c->narrow;
      for (size_t r = 0; r < n; r++) {
        int64_t x = b->v[i][r];
        if (w == 4) { int32_t y = (int32_t)(str && x ? x - 1 : x); memcpy(d + r * 4, &y, 4); }
        else d[r] = (unsigned char)x;
      }
      fwrite(d, w, n, c->f);
    }
    fwrite(zeros, 1, pad8(n * w) - n * w, c->f);
    if (cols[i].nullable || cols[i].type == 's') {
      validity(b, i, cols[i].type == 's', n, c->narrow);
      fwrite(c->narrow, 1, pad8((n + 7) / 8), c->f);
    }
  }
  /* the next batch starts with every value 0 and every nullable value null (row() relies on it) */
  for (size_t i = 0; i < b->ncols; i++) {
    memset(b->v[i], 0, n * sizeof *b->v[i]);
    if (b->ok[i]) memset(b->ok[i], 0, n);
  }
  b->nrows = 0;
}

/* A new row of table ti (every value 0, every nullable value null: the columns are cleared
 * when made and after each batch is sent); returns its index. */
static size_t row(cx *c, int ti) {
  tbuf *b = &c->tb[ti];
  if (b->nrows == BATCH_ROWS) flush_table(c, ti);
  return b->nrows++;
}
static inline void setl(cx *c, int ti, size_t r, size_t col, int64_t v) {
  tbuf *b = &c->tb[ti];
  b->v[col][r] = v;
  if (b->ok[col]) b->ok[col][r] = 1;
}
static inline void sets(cx *c, int ti, size_t r, size_t col, const char *s) {
  if (s) setl(c, ti, r, col, intern(c, s));
}
static inline void setk(cx *c, int ti, size_t r, size_t col, uint64_t key, const char *s) {
  if (s) setl(c, ti, r, col, intern_keyed(c, key, s));
}
static inline void setd(cx *c, int ti, size_t r, size_t col, double d) {
  int64_t v;
  memcpy(&v, &d, 8);
  setl(c, ti, r, col, v);
}

static void use_stack(cx *c, uint32_t id) {
  uint32_t v;
  if (!id || rd_m_get(&c->stacks, id, &v)) return;
  rd_m_put(&c->stacks, id, 1);
  if (c->nstack == c->capstack) {
    c->capstack = c->capstack ? c->capstack * 2 : 1024;
    c->stack_ids = rd_xrealloc(c->stack_ids, c->capstack * sizeof *c->stack_ids);
  }
  c->stack_ids[c->nstack++] = id;
}

/* ---------------------------------------------------------------- the sink */

static void on_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  cx *c = ctx;
  (void)t;
  if (p->data_case == DLH__PACKET__DATA_THREAD && p->thread) {
    size_t r = row(c, T_THREADS);
    setl(c, T_THREADS, r, 0, c->pid);
    setl(c, T_THREADS, r, 1, p->thread->tid);
    sets(c, T_THREADS, r, 2, p->thread->name);
  } else if (p->data_case == DLH__PACKET__DATA_ANCHOR && p->anchor) {
    const Dlh__ClockAnchor *a = p->anchor;
    size_t r = row(c, T_ANCHORS);
    setl(c, T_ANCHORS, r, 0, c->pid);
    setl(c, T_ANCHORS, r, 1, a->kind);
    setl(c, T_ANCHORS, r, 2, (int64_t)a->trace_ns);
    if (a->has_realtime_ns) setl(c, T_ANCHORS, r, 3, (int64_t)a->realtime_ns);
    if (a->has_ticks) setl(c, T_ANCHORS, r, 4, (int64_t)a->ticks);
  }
}

/* The argument indexes (+1, 0 = none) of the typed columns for function f. */
static const int8_t *arg_index(cx *c, const rd_func *f) {
  int8_t *ix = rd_map_get(&c->argix, f->id);
  if (ix) return ix;
  ix = rd_map_get_new(&c->argix, f->id, NARGCOLS);
  for (size_t k = 0; k < NARGCOLS; k++)
    for (size_t i = 0; i < f->nargs && i < 127; i++)
      if (f->argname[i] && !strcmp(f->argname[i], arg_cols[k])) { ix[k] = (int8_t)(i + 1); break; }
  return ix;
}

static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  cx *c = ctx;
  rd_stepfind_api(c->sf, t, tid, ev);
  const rd_func *f = rd_trace_func(t, ev->fn);
  if (t->ncclev) rd_nccl_call(t, tid, f, ev); /* the collectives' calls */
  int64_t start = (int64_t)ev->start_ns + c->off, span = (int64_t)dlh_api_span(ev);
  if (f && f->domain == DLH__DOMAIN__DOMAIN_NVTX) {
    size_t r = row(c, T_NVTX);
    const char *msg = ev->nargs ? rd_trace_string(t, (uint32_t)ev->args[0]) : NULL;
    setl(c, T_NVTX, r, 0, c->pid);
    setl(c, T_NVTX, r, 1, tid);
    setk(c, T_NVTX, r, 2, IKEY(K_FUNC, ev->fn), f->name);
    sets(c, T_NVTX, r, 3, msg);
    setl(c, T_NVTX, r, 4, start);
    setl(c, T_NVTX, r, 5, span);
    setl(c, T_NVTX, r, 6, start + span);
    setl(c, T_NVTX, r, 7, (int64_t)dlh_api_calls(ev));
    setl(c, T_NVTX, r, 8, ev->depth);
    long step = msg ? rd_step_number(msg) : -1;
    if (step >= 0) setl(c, T_NVTX, r, 9, step);
    return;
  }
  size_t r = row(c, T_CALLS);
  setl(c, T_CALLS, r, 0, c->pid);
  setl(c, T_CALLS, r, 1, tid);
  setk(c, T_CALLS, r, 2, IKEY(K_FUNC, ev->fn), rd_func_name(t, ev->fn));
  setk(c, T_CALLS, r, 3, IKEY(K_DOMAIN, f ? f->domain : 0), rd_domain_name(f ? f->domain : 0));
  setl(c, T_CALLS, r, 4, start);
  setl(c, T_CALLS, r, 5, (int64_t)ev->dur_ns);
  setl(c, T_CALLS, r, 6, start + span);
  setl(c, T_CALLS, r, 7, ev->ret);
  setl(c, T_CALLS, r, 8, (int64_t)dlh_api_calls(ev));
  if (ev->corr) setl(c, T_CALLS, r, 9, (int64_t)ev->corr);
  if (ev->stack) { setl(c, T_CALLS, r, 10, ev->stack); use_stack(c, ev->stack); }
  setl(c, T_CALLS, r, 11, ev->depth);
  if (c->spans) {
    const rd_torch *tc = rd_torch_of(c->t, ev->stack);
    rd_spans_add(c->spans, tid, ev->start_ns, ev->start_ns + (uint64_t)span, tc, &c->at);
    const rd_layer *l = c->at.op ? c->at.op : c->at.node;
    if (l) {
      setk(c, T_CALLS, r, 12, IKEY(K_LAYER, (uintptr_t)l), l->name);
      if (c->at.op_id) setl(c, T_CALLS, r, 13, c->at.op_id);
    }
  }
  if (f && f->nargs) {
    const int8_t *ix = arg_index(c, f);
    for (size_t k = 0; k < NARGCOLS; k++) {
      int i = ix[k] - 1;
      if (i < 0 || (uint32_t)i >= ev->nargs) continue;
      uint64_t v = ev->args[i];
      if (k == FLOPS_COL) {
        double d;
        if (f->argtype[i] == 3) memcpy(&d, &v, 8);
        else d = (double)(int64_t)v;
        setd(c, T_CALLS, r, ARGCOL0 + k, d);
      } else {
        if (f->argtype[i] == 3) { double d; memcpy(&d, &v, 8); v = (uint64_t)(int64_t)d; }
        setl(c, T_CALLS, r, ARGCOL0 + k, (int64_t)v);
      }
    }
  }
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  cx *c = ctx;
  (void)t;
  size_t r = row(c, T_GPU);
  int64_t start = g->kind == RD_EXTCORR ? 0 : (int64_t)g->start + c->off;
  setl(c, T_GPU, r, 0, c->pid);
  setk(c, T_GPU, r, 1, IKEY(K_GPUKIND, g->kind),
       g->kind == RD_EXTCORR ? "external_correlation" : rd_gpu_kind_name(g->kind));
  setk(c, T_GPU, r, 2, IKEY(K_KNAME, g->name), g->kname);
  setl(c, T_GPU, r, 3, g->device);
  setl(c, T_GPU, r, 4, g->stream);
  setl(c, T_GPU, r, 5, g->context);
  setl(c, T_GPU, r, 6, start);
  setl(c, T_GPU, r, 7, (int64_t)g->dur);
  setl(c, T_GPU, r, 8, start + (int64_t)g->dur);
  if (g->corr) setl(c, T_GPU, r, 9, (int64_t)g->corr);
  const uint64_t *v = g->vals;
  uint32_t n = g->nvals;
  if ((g->kind == RD_MEMCPY || g->kind == RD_MEMSET) && n >= 1) setl(c, T_GPU, r, 10, (int64_t)v[0]);
  if (g->kind == RD_MEMCPY && n >= 2) setk(c, T_GPU, r, 11, IKEY(K_COPYKIND, v[1]), rd_memcpy_kind(v[1]));
  if (g->kind == RD_KERNEL)
    for (uint32_t i = 0; i < 6 && i < n; i++) setl(c, T_GPU, r, 12 + i, (int64_t)v[i]);
  if (g->kind == RD_EXTCORR && n >= 2) setl(c, T_GPU, r, 18, (int64_t)v[1]);
  if (g->graph_node) { /* a CUDA graph's replay: corr is the call that made the node */
    setl(c, T_GPU, r, 19, (int64_t)g->graph);
    setl(c, T_GPU, r, 20, (int64_t)g->graph_node);
    if (g->launch_corr) setl(c, T_GPU, r, 21, (int64_t)g->launch_corr);
  }
}

static void on_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  cx *c = ctx;
  size_t r = row(c, T_SAMPLES);
  char buf[64];
  setl(c, T_SAMPLES, r, 0, c->pid);
  setl(c, T_SAMPLES, r, 1, s->tid);
  setl(c, T_SAMPLES, r, 2, (int64_t)s->time + c->off);
  sets(c, T_SAMPLES, r, 3, s->kind == RD_SAMPLE_CPU ? "cpu" : "wait");
  setl(c, T_SAMPLES, r, 4, (int64_t)s->weight);
  if (s->stack) { setl(c, T_SAMPLES, r, 5, s->stack); use_stack(c, s->stack); }
  if (s->kind == RD_SAMPLE_WAIT && s->state) sets(c, T_SAMPLES, r, 6, rd_wait_state_label(s->state, buf, sizeof buf));
  if (s->api_fn) setk(c, T_SAMPLES, r, 7, IKEY(K_FUNC, s->api_fn), rd_func_name(t, s->api_fn));
}

static void on_span(void *ctx, const rd_span *s) {
  cx *c = ctx;
  size_t r = row(c, T_OPERATORS);
  static const char *const kinds[] = {[RD_LAYER_PY] = "python", [RD_LAYER_NODE] = "autograd",
                                      [RD_LAYER_OP] = "op"};
  setl(c, T_OPERATORS, r, 0, c->pid);
  setl(c, T_OPERATORS, r, 1, s->tid);
  setl(c, T_OPERATORS, r, 2, s->id);
  if (s->parent) setl(c, T_OPERATORS, r, 3, s->parent);
  setl(c, T_OPERATORS, r, 4, s->depth);
  int k = s->layer->kind;
  sets(c, T_OPERATORS, r, 5, k >= RD_LAYER_PY && k <= RD_LAYER_OP ? kinds[k] : "layer");
  sets(c, T_OPERATORS, r, 6, s->layer->name ? s->layer->name : "?");
  sets(c, T_OPERATORS, r, 7, s->layer->module);
  setl(c, T_OPERATORS, r, 8, (int64_t)s->start + c->off);
  setl(c, T_OPERATORS, r, 9, (int64_t)s->end + c->off);
  setl(c, T_OPERATORS, r, 10, (int64_t)(s->end - s->start));
}

/* ---------------------------------------------------------------- the trace */

static void put_meta(cx *c, const char *path) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  rd_trace *t = c->t;
  fprintf(m, "{\"trace\":");
  rd_json_str(m, path);
  fprintf(m, ",\"host\":");
  rd_json_str(m, t->host);
  fprintf(m, ",\"pid\":%u,\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"clock_offset_ns\":%" PRId64
             ",\"have_anchor\":%d}",
          t->pid, t->rank, t->local_rank, t->world, c->off, t->have_anchor);
  fclose(m);
  put_head(c->f, M_META, 0, 0, len);
  fwrite(buf, 1, len, c->f);
  free(buf);
}

static void put_process(cx *c) {
  rd_trace *t = c->t;
  size_t r = row(c, T_PROCESSES);
  int ti = T_PROCESSES;
  setl(c, ti, r, 0, c->pid);
  sets(c, ti, r, 1, t->host);
  size_t k = 2;
  if (t->local_rank >= 0) setl(c, ti, r, k, t->local_rank);
  k++;
  if (t->world >= 0) setl(c, ti, r, k, t->world);
  k++;
  if (t->exe[0]) sets(c, ti, r, k, t->exe);
  k++;
  if (t->have_start) setl(c, ti, r, k, (int64_t)t->start_ns + c->off);
  k++;
  setl(c, ti, r, k++, c->off);
  setl(c, ti, r, k++, t->sample_hz);
  setl(c, ti, r, k++, (int64_t)rd_trace_records(t));
  setl(c, ti, r, k++, (int64_t)rd_trace_dropped(t));
  setl(c, ti, r, k++, (int64_t)rd_trace_calls(t));
  setl(c, ti, r, k++, (int64_t)rd_trace_folded(t));
  setl(c, ti, r, k++, (int64_t)t->api_events);
  setl(c, ti, r, k++, (int64_t)t->gpu_events);
  setl(c, ti, r, k++, (int64_t)rd_trace_samples(t));
  setl(c, ti, r, k++, (int64_t)rd_trace_samples_lost(t));
  sets(c, ti, r, k, t->path);
}

static void put_stacks(cx *c) {
  for (size_t i = 0; i < c->nstack; i++) {
    const rd_frame *fr;
    size_t n = rd_stack_frames(c->t, c->stack_ids[i], &fr);
    for (size_t k = 0; k < n; k++) {
      size_t r = row(c, T_STACKS);
      setl(c, T_STACKS, r, 0, c->pid);
      setl(c, T_STACKS, r, 1, c->stack_ids[i]);
      setl(c, T_STACKS, r, 2, (int64_t)k);
      setl(c, T_STACKS, r, 3, (int64_t)fr[k].pc);
      sets(c, T_STACKS, r, 4, fr[k].function);
      sets(c, T_STACKS, r, 5, fr[k].file);
      if (fr[k].line) setl(c, T_STACKS, r, 6, fr[k].line);
      sets(c, T_STACKS, r, 7, fr[k].module);
      setl(c, T_STACKS, r, 8, fr[k].python);
    }
  }
}

static void put_memory(cx *c, rd_memcol *mc) {
  rd_mem_sample *ms = NULL;
  long n = rd_memcol_samples(mc, &ms, 0);
  for (long i = 0; i < n; i++) {
    size_t r = row(c, T_MEMORY);
    setl(c, T_MEMORY, r, 0, c->pid);
    setl(c, T_MEMORY, r, 1, ms[i].tid);
    setl(c, T_MEMORY, r, 2, (int64_t)ms[i].ts_ns + c->off);
    setl(c, T_MEMORY, r, 3, ms[i].device);
    setl(c, T_MEMORY, r, 4, (int64_t)ms[i].ptr);
    setl(c, T_MEMORY, r, 5, ms[i].bytes);
    setl(c, T_MEMORY, r, 6, (int64_t)ms[i].device_live_bytes);
    setl(c, T_MEMORY, r, 7, (int64_t)ms[i].live_bytes);
  }
  free(ms);
}

static void put_steps(cx *c) {
  rd_step_span *st;
  int from;
  size_t n = rd_stepfind_end(c->sf, &from, &st);
  for (size_t i = 0; i < n; i++) {
    size_t r = row(c, T_STEPS);
    setl(c, T_STEPS, r, 0, c->pid);
    setl(c, T_STEPS, r, 1, st[i].num);
    sets(c, T_STEPS, r, 2, st[i].name);
    sets(c, T_STEPS, r, 3, rd_steps_from_name(from));
    setl(c, T_STEPS, r, 4, (int64_t)st[i].s + c->off);
    setl(c, T_STEPS, r, 5, (int64_t)st[i].e + c->off);
    setl(c, T_STEPS, r, 6, (int64_t)(st[i].e - st[i].s));
  }
}

/* One row per NCCL collective or send/receive of the trace (the calls have paired them). */
static void put_collectives(cx *c) {
  const rd_nccl_op *ops;
  size_t n = rd_nccl_ops(c->t, &ops);
  for (size_t i = 0; i < n; i++) {
    const rd_nccl_op *o = &ops[i];
    int coll = o->type == DLH__NCCL_EVENT_TYPE__NCCL_COLL, T = T_COLLECTIVES;
    size_t r = row(c, T);
    setl(c, T, r, 0, c->pid);
    setl(c, T, r, 1, o->tid);
    sets(c, T, r, 2, coll ? "coll" : "p2p");
    sets(c, T, r, 3, o->func);
    setl(c, T, r, 4, (int64_t)o->comm);
    if (o->rank >= 0) setl(c, T, r, 5, o->rank);
    if (o->nranks) setl(c, T, r, 6, o->nranks);
    if (coll) setl(c, T, r, 7, (int64_t)o->seq);
    if (o->algo[0]) sets(c, T, r, 8, o->algo);
    if (o->proto[0]) sets(c, T, r, 9, o->proto);
    setl(c, T, r, 10, o->channels);
    setl(c, T, r, 11, (int64_t)o->count);
    if (o->dtype[0]) sets(c, T, r, 12, o->dtype);
    setl(c, T, r, 13, (int64_t)o->bytes);
    if (!coll || strstr("Broadcast Reduce Gather Scatter", o->func)) setl(c, T, r, 14, o->peer);
    if (o->call_end_ns) {
      setl(c, T, r, 15, (int64_t)o->call_start_ns + c->off);
      setl(c, T, r, 16, (int64_t)o->call_end_ns + c->off);
    }
    setl(c, T, r, 17, (int64_t)o->start_ns + c->off);
    if (o->stop_ns) setl(c, T, r, 18, (int64_t)o->stop_ns + c->off);
    if (o->gpu_end_ns > o->gpu_start_ns && o->gpu_start_ns) {
      uint64_t d = o->gpu_end_ns - o->gpu_start_ns;
      double algbw = (double)o->kernel_bytes / (double)d; /* bytes/ns = GB/s */
      setl(c, T, r, 19, (int64_t)o->gpu_start_ns + c->off);
      setl(c, T, r, 20, (int64_t)o->gpu_end_ns + c->off);
      setl(c, T, r, 21, (int64_t)d);
      setl(c, T, r, 23, o->kernel_ops);
      setd(c, T, r, 28, algbw);
      setd(c, T, r, 29, algbw * rd_nccl_busbw_factor(o->func, o->nranks));
    }
    setl(c, T, r, 22, o->kch);
    setl(c, T, r, 24, o->proxy_ops);
    if (o->proxy_end_ns) {
      setl(c, T, r, 25, (int64_t)o->proxy_start_ns + c->off);
      setl(c, T, r, 26, (int64_t)o->proxy_end_ns + c->off);
      setl(c, T, r, 27, (int64_t)(o->proxy_end_ns - o->proxy_start_ns));
    }
  }
}

static void cx_free(cx *c) {
  rd_stepfind_free(c->sf);
  for (int ti = 0; ti < NTABLES; ti++)
    for (size_t i = 0; i < c->tb[ti].ncols; i++) free(c->tb[ti].v[i]), free(c->tb[ti].ok[i]);
  for (size_t i = 0; i < c->st.n; i++) free(c->st.s[i]);
  free(c->st.s);
  free(c->st.hk);
  free(c->st.hv);
  rd_map_free(&c->argix, free);
  rd_m_free(&c->stacks);
  free(c->stack_ids);
  free(c->narrow);
}

int ex_columns(const rd_opts *o, char **files, size_t nfiles) {
  if (nfiles != 1) return rd_usage_error("export", "--format columns takes one trace (got %zu)", nfiles);
  if (o->have_window) return rd_usage_error("export", "--format columns takes no --window");
  rd_trace t;
  rd_opts so = *o;
  so.quiet = 1;
  if (rd_open(&t, files[0], &so, NULL) != RD_OK) { rd_trace_close(&t); return RD_BAD_INPUT; }
  FILE *f = strcmp(o->out, "-") ? rd_create(o->out, 0) : stdout;
  if (!f) { rd_trace_close(&t); return RD_BAD_INPUT; }
  cx *c = calloc(1, sizeof *c);
  if (!c) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  c->f = f;
  c->t = &t;
  c->pid = t.pid;
  c->off = t.have_anchor ? (int64_t)t.anchor_real_ns - (int64_t)t.anchor_trace_ns : 0;
  for (int ti = 0; ti < NTABLES; ti++) {
    tbuf *b = &c->tb[ti];
    while (tables[ti].cols[b->ncols].name) {
      b->v[b->ncols] = rd_xcalloc(BATCH_ROWS, sizeof(int64_t));
      b->ok[b->ncols] = tables[ti].cols[b->ncols].nullable ? rd_xcalloc(BATCH_ROWS, 1) : NULL;
      b->ncols++;
    }
  }
  c->narrow = rd_xmalloc(BATCH_ROWS * 4);
  fwrite("DLHCOLS2", 1, 8, f);
  put_meta(c, files[0]);
  /* the operators of a PyTorch trace with stacks: what `dlhook stats` derives (ops.c) */
  c->torch = rd_stacks_have_module(&t, "libtorch_cpu.") && rd_stacks_count(&t) > 0;
  if (c->torch) c->spans = rd_spans_new(on_span, c, NULL);
  c->sf = rd_stepfind_new();
  rd_memcol *mc = rd_memcol_new();
  rd_sink mine = {c, on_packet, on_api, on_gpu, 0, on_sample};
  rd_sink mem = rd_memory_sink(mc);
  rd_tee tee = {{&mine, &mem}, 2};
  rd_sink s = rd_tee_sink(&tee);
  int rc = rd_pass(&t, &so, "columns", &s);
  rd_spans_free(c->spans);
  put_memory(c, mc);
  put_steps(c);
  put_collectives(c);
  put_stacks(c);
  put_process(c);
  for (int ti = 0; ti < NTABLES; ti++) flush_table(c, ti);
  send_strings(c);
  put_head(f, M_END, 0, 0, 0);
  int wrc = f == stdout ? (fflush(f) == 0 && !ferror(f) ? 0 : -1) : rd_close(f, o->out);
  if (wrc < 0 && f == stdout) rd_error("columns: write error on standard output");
  cx_free(c);
  free(c);
  rd_trace_close(&t);
  return wrc < 0 ? RD_BAD_INPUT : rc;
}
