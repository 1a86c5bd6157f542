/* ncclev.c — NCCL's profiler plugin events (rd_ncclev.h): the NcclEvent packets a trace holds
 * (one per startEvent, recordEventState and stopEvent NCCL made, dlhook.proto) are kept as read
 * in the first pass and assembled at the first question: every Coll and P2p event with its host
 * times, the GPU times of its KernelCh children (earliest start, latest KernelChStop) and its
 * ProxyOp / ProxyStep children. Events of other threads may come before their parent in the
 * file (each thread has its ring), so parents are taken first, children after, then states
 * and stops.
 *
 * `dlhook stats` tables: per kind of collective (function, size, datatype, ranks, algorithm,
 * protocol, channels) the calls and the GPU time from the kernel channels, and busbw from it;
 * the collectives of a kernel that runs several of them (a group) share its time in proportion
 * to their bytes. Across ranks: the collectives with the same communicator and seq on every
 * trace, which rank enqueued last and which rank's kernel ended last. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rd_ncclev.h"

enum { T_COLL = 2, T_P2P = 4, T_PROXY_OP = 8, T_PROXY_STEP = 16, T_KERNEL_CH = 64,
       T_COMM = 1024 };
enum { PH_START = 0, PH_STATE = 1, PH_STOP = 2 };
#define KERNEL_CH_STOP 22

typedef struct raw {
  uint8_t phase, is_send;
  uint16_t type, channel;
  int32_t peer;
  uint32_t tid, state, steps;
  uint64_t id, parent, ts, gpu, value;
  uint32_t op; /* Coll/P2p START: its index in ops */
} raw;

struct rd_ncclev {
  raw *r;
  size_t n, cap;
  rd_nccl_op *ops;
  size_t nops, capops;
  int built;
  rd_u64map cursor;     /* rd_nccl_take: per thread, its next operation (index + 1) */
  rd_nccl_part *parts;  /* KernelCh and ProxyOp, by start */
  size_t nparts;
  rd_u64map group;      /* rd_nccl_call: per thread, the collective calls of its open group */
};

static void copy_s(char *dst, size_t cap, const char *s) {
  size_t n = s ? strnlen(s, cap - 1) : 0;
  memcpy(dst, s ? s : "", n);
  dst[n] = 0;
}

void rd_ncclev_define(rd_trace *t, const Dlh__NcclEventBatch *b) {
  if (!b) return;
  if (!t->ncclev) t->ncclev = rd_xcalloc(1, sizeof *t->ncclev);
  struct rd_ncclev *v = t->ncclev;
  for (size_t i = 0; i < b->n_events; i++) {
    const Dlh__NcclEvent *e = b->events[i];
    if (!e) continue;
    if (v->n == v->cap) {
      v->cap = v->cap ? 2 * v->cap : 256;
      v->r = rd_xrealloc(v->r, v->cap * sizeof *v->r);
    }
    raw *r = &v->r[v->n++];
    memset(r, 0, sizeof *r);
    r->phase = (uint8_t)e->phase;
    r->type = (uint16_t)e->type;
    r->tid = e->tid;
    r->state = e->state;
    r->id = e->id;
    r->parent = e->parent;
    r->ts = e->ts_ns;
    r->gpu = e->gpu_ns;
    r->value = e->value;
    r->channel = (uint16_t)e->channel;
    r->peer = e->peer;
    r->is_send = e->is_send ? 1 : 0;
    r->steps = e->steps;
    r->op = UINT32_MAX;
    if (e->phase != PH_START || (e->type != T_COLL && e->type != T_P2P)) continue;
    if (v->nops == v->capops) {
      v->capops = v->capops ? 2 * v->capops : 64;
      v->ops = rd_xrealloc(v->ops, v->capops * sizeof *v->ops);
    }
    rd_nccl_op *o = &v->ops[v->nops];
    memset(o, 0, sizeof *o);
    r->op = (uint32_t)v->nops++;
    o->id = e->id;
    o->type = e->type;
    o->tid = e->tid;
    o->comm = e->comm;
    o->rank = e->rank;
    o->nranks = e->nranks;
    o->seq = e->seq;
    copy_s(o->func, sizeof o->func, e->func);
    copy_s(o->dtype, sizeof o->dtype, e->dtype);
    copy_s(o->algo, sizeof o->algo, e->algo);
    copy_s(o->proto, sizeof o->proto, e->proto);
    o->count = e->count;
    o->peer = e->peer;
    o->channels = e->channels;
    o->warps = e->warps;
    o->start_ns = e->ts_ns;
  }
}

void rd_ncclev_free(rd_trace *t) {
  if (!t->ncclev) return;
  free(t->ncclev->r);
  free(t->ncclev->ops);
  free(t->ncclev->parts);
  rd_m_free(&t->ncclev->cursor);
  rd_m_free(&t->ncclev->group);
  free(t->ncclev);
  t->ncclev = NULL;
}

static int op_cmp(const void *a, const void *b) {
  const rd_nccl_op *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id; /* ids count the plugin's calls in order */
}

static void lo_hi(uint64_t *lo, uint64_t *hi, uint64_t v) {
  if (!v) return;
  if (!*lo || v < *lo) *lo = v;
  if (v > *hi) *hi = v;
}

static uint64_t coll_bytes(const rd_nccl_op *o);

/* The operations of one kernel (same thread, same GPU span: a group's) share its time: each
 * op's bytes, and how many shared the kernel and their bytes together (busbw from GPU time). */
static void kernel_shares(struct rd_ncclev *v) {
  rd_nccl_op *ops = v->ops;
  for (size_t i = 0; i < v->nops; i++) ops[i].bytes = coll_bytes(&ops[i]);
  for (size_t i = 0; i < v->nops;) {
    size_t j = i + 1;
    if (ops[i].gpu_end_ns)
      while (j < v->nops && ops[j].tid == ops[i].tid && ops[j].gpu_start_ns == ops[i].gpu_start_ns &&
             ops[j].gpu_end_ns == ops[i].gpu_end_ns)
        j++;
    uint64_t total = 0;
    for (size_t k = i; k < j; k++) total += ops[k].bytes;
    for (size_t k = i; k < j && ops[i].gpu_end_ns; k++) {
      ops[k].kernel_ops = (uint32_t)(j - i);
      ops[k].kernel_bytes = total;
    }
    i = j;
  }
}

static int part_cmp(const void *a, const void *b) {
  const rd_nccl_part *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  if (x->type != y->type) return x->type < y->type ? -1 : 1;
  return x->channel < y->channel ? -1 : x->channel > y->channel;
}

/* The KernelCh and ProxyOp events of the (sorted) operations, with their ends. */
static void build_parts(struct rd_ncclev *v) {
  rd_u64map op_of, part_of;
  memset(&op_of, 0, sizeof op_of);
  memset(&part_of, 0, sizeof part_of);
  for (size_t i = 0; i < v->nops; i++) rd_m_put(&op_of, v->ops[i].id, (uint32_t)i);
  size_t cap = 0;
  for (size_t i = 0; i < v->n; i++) {
    const raw *r = &v->r[i];
    uint32_t k;
    if (r->phase != PH_START || (r->type != T_KERNEL_CH && r->type != T_PROXY_OP) ||
        !rd_m_get(&op_of, r->parent, &k))
      continue;
    if (v->nparts == cap) {
      cap = cap ? 2 * cap : 256;
      v->parts = rd_xrealloc(v->parts, cap * sizeof *v->parts);
    }
    rd_nccl_part *p = &v->parts[v->nparts];
    memset(p, 0, sizeof *p);
    p->op = k;
    p->type = r->type;
    p->channel = r->channel;
    p->start_ns = r->type == T_KERNEL_CH ? r->gpu : r->ts;
    if (r->type == T_PROXY_OP) { p->peer = r->peer; p->steps = r->steps; p->is_send = r->is_send; }
    rd_m_put(&part_of, r->id, (uint32_t)v->nparts++);
  }
  for (size_t i = 0; i < v->n; i++) {
    const raw *r = &v->r[i];
    uint32_t k;
    if (r->phase == PH_START || !rd_m_get(&part_of, r->id, &k)) continue;
    rd_nccl_part *p = &v->parts[k];
    if (p->type == T_KERNEL_CH && r->phase == PH_STATE && r->state == KERNEL_CH_STOP) p->end_ns = r->gpu;
    else if (p->type == T_PROXY_OP && r->phase == PH_STOP) p->end_ns = r->ts;
  }
  rd_qsort(v->parts, v->nparts, sizeof *v->parts, part_cmp);
  rd_m_free(&op_of);
  rd_m_free(&part_of);
}

/* Children to their operation: id -> op index (ops) and id -> ProxyOp's op (children). */
static void build(struct rd_ncclev *v) {
  rd_u64map op_of;
  memset(&op_of, 0, sizeof op_of);
  for (size_t i = 0; i < v->n; i++)
    if (v->r[i].op != UINT32_MAX) rd_m_put(&op_of, v->r[i].id, v->r[i].op);
  /* KernelCh and ProxyOp (parent: a Coll or P2p), then ProxyStep (parent: a ProxyOp) */
  for (int round = 0; round < 2; round++)
    for (size_t i = 0; i < v->n; i++) {
      raw *r = &v->r[i];
      uint32_t k;
      if (r->phase != PH_START || !r->parent) continue;
      int want = round == 0 ? (r->type == T_KERNEL_CH || r->type == T_PROXY_OP)
                            : r->type == T_PROXY_STEP;
      if (!want || !rd_m_get(&op_of, r->parent, &k)) continue;
      rd_m_put(&op_of, r->id, k);
      rd_nccl_op *o = &v->ops[k];
      if (r->type == T_KERNEL_CH) { o->kch++; lo_hi(&o->gpu_start_ns, &o->gpu_end_ns, r->gpu); }
      else if (r->type == T_PROXY_OP) { o->proxy_ops++; lo_hi(&o->proxy_start_ns, &o->proxy_end_ns, r->ts); }
      else o->proxy_steps++;
    }
  for (size_t i = 0; i < v->n; i++) {
    raw *r = &v->r[i];
    uint32_t k;
    if (r->phase == PH_START || !rd_m_get(&op_of, r->id, &k)) continue;
    rd_nccl_op *o = &v->ops[k];
    if (r->phase == PH_STATE && r->state == KERNEL_CH_STOP) {
      lo_hi(&o->gpu_start_ns, &o->gpu_end_ns, r->gpu);
    } else if (r->phase == PH_STATE && r->state >= 8 && r->state <= 12) {
      if (r->state == 9 || r->state == 10) o->proxy_bytes += r->value; /* SendWait, RecvWait */
    } else if (r->phase == PH_STOP) {
      if (o->id == r->id) o->stop_ns = r->ts;
      else if (o->proxy_ops) lo_hi(&o->proxy_start_ns, &o->proxy_end_ns, r->ts);
    }
  }
  rd_qsort(v->ops, v->nops, sizeof *v->ops, op_cmp);
  rd_m_free(&op_of);
  kernel_shares(v);
  build_parts(v);
  v->built = 1;
}

size_t rd_nccl_ops(const rd_trace *t, const rd_nccl_op **ops) {
  struct rd_ncclev *v = t->ncclev;
  *ops = NULL;
  if (!v) return 0;
  if (!v->built) build(v);
  *ops = v->ops;
  return v->nops;
}

size_t rd_nccl_parts(const rd_trace *t, const rd_nccl_part **parts) {
  const rd_nccl_op *ops;
  *parts = NULL;
  if (!rd_nccl_ops(t, &ops)) return 0;
  *parts = t->ncclev->parts;
  return t->ncclev->nparts;
}

const rd_nccl_op *rd_nccl_take(const rd_trace *t, uint32_t tid, size_t want, size_t *n) {
  const rd_nccl_op *ops;
  size_t nops = rd_nccl_ops(t, &ops), k;
  uint32_t c;
  *n = 0;
  if (!nops || !want) return NULL;
  if (rd_m_get(&t->ncclev->cursor, tid, &c)) {
    k = c - 1;
  } else { /* the thread's first operation */
    size_t lo = 0, hi = nops;
    while (lo < hi) {
      size_t m = (lo + hi) / 2;
      if (ops[m].tid < tid) lo = m + 1;
      else hi = m;
    }
    k = lo;
  }
  size_t e = k;
  while (e < nops && ops[e].tid == tid && e - k < want) e++;
  rd_m_put(&t->ncclev->cursor, tid, (uint32_t)(e + 1));
  *n = e - k;
  return e > k ? &ops[k] : NULL;
}

/* NCCL's collective and send/receive calls: each enqueues one operation (or, in a group, one at
 * the group's outermost ncclGroupEnd). */
static int enqueues(const char *fn) {
  static const char *const names[] = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
                                      "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclSend",
                                      "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(fn, names[i])) return 1;
  return 0;
}

/* The recorded argument `group` of a call (the group depth it was made at), 0 when none. */
static uint64_t group_arg(const rd_func *f, const dlh_api_event *ev) {
  for (size_t i = 0; i < f->nargs && i < ev->nargs; i++)
    if (f->argname[i] && !strcmp(f->argname[i], "group")) return ev->args[i];
  return 0;
}

void rd_nccl_call(const rd_trace *t, uint32_t tid, const rd_func *f, const dlh_api_event *ev) {
  struct rd_ncclev *v = t->ncclev;
  uint64_t want;
  uint32_t pending = 0;
  if (!v || !f || f->domain != DLH__DOMAIN__DOMAIN_NCCL || !f->name) return;
  if (enqueues(f->name)) {
    if (ev->ret) return; /* a failed call enqueued nothing */
    if (group_arg(f, ev) > 0) { /* launched by the group's ncclGroupEnd */
      rd_m_get(&v->group, tid, &pending);
      rd_m_put(&v->group, tid, pending + (uint32_t)dlh_api_calls(ev));
      return;
    }
    want = dlh_api_calls(ev);
  } else if (!strcmp(f->name, "ncclGroupEnd") && rd_m_get(&v->group, tid, &pending) && pending) {
    rd_m_put(&v->group, tid, 0);
    want = pending;
  } else {
    return;
  }
  size_t n;
  rd_nccl_op *o = (rd_nccl_op *)rd_nccl_take(t, tid, (size_t)want, &n);
  for (size_t i = 0; i < n; i++) {
    o[i].call_start_ns = ev->start_ns;
    o[i].call_end_ns = ev->start_ns + dlh_api_span(ev);
  }
}

size_t rd_nccl_dtype_size(const char *d) {
  if (!d || strncmp(d, "nccl", 4)) return 0;
  d += 4;
  if (!strcmp(d, "Int8") || !strcmp(d, "Uint8") || !strncmp(d, "Float8", 6)) return 1;
  if (!strcmp(d, "Float16") || !strcmp(d, "Bfloat16")) return 2;
  if (!strcmp(d, "Int32") || !strcmp(d, "Uint32") || !strcmp(d, "Float32")) return 4;
  if (!strcmp(d, "Int64") || !strcmp(d, "Uint64") || !strcmp(d, "Float64")) return 8;
  return 0;
}

/* ---------------------------------------------------------------- dump */

void rd_ncclev_dump(FILE *f, const Dlh__NcclEventBatch *b, uint32_t pid, int64_t off) {
  static const char *const phases[] = {"start", "state", "stop"};
  for (size_t i = 0; b && i < b->n_events; i++) {
    const Dlh__NcclEvent *e = b->events[i];
    if (!e) continue;
    fprintf(f, "{\"type\":\"nccl\",\"phase\":\"%s\",\"id\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,"
               "\"ts_ns\":%" PRIu64, e->phase < 3 ? phases[e->phase] : "?", e->id, pid, e->tid,
            (uint64_t)((int64_t)e->ts_ns + off));
    if (e->has_type) {
      const ProtobufCEnumValue *ev =
          protobuf_c_enum_descriptor_get_value(&dlh__nccl_event_type__descriptor, (int)e->type);
      fputs(",\"event\":", f);
      rd_json_str(f, ev ? ev->name : "unknown");
    }
    if (e->has_parent) fprintf(f, ",\"parent\":%" PRIu64, e->parent);
    if (e->has_comm) fprintf(f, ",\"comm\":\"%016" PRIx64 "\"", e->comm);
    if (e->has_rank) fprintf(f, ",\"rank\":%d", e->rank);
    if (e->has_nranks) fprintf(f, ",\"nranks\":%u", e->nranks);
    if (e->has_seq) fprintf(f, ",\"seq\":%" PRIu64, e->seq);
    if (e->func && *e->func) { fputs(",\"func\":", f); rd_json_str(f, e->func); }
    if (e->has_count) fprintf(f, ",\"count\":%" PRIu64, e->count);
    if (e->dtype && *e->dtype) { fputs(",\"dtype\":", f); rd_json_str(f, e->dtype); }
    if (e->algo && *e->algo) { fputs(",\"algo\":", f); rd_json_str(f, e->algo); }
    if (e->proto && *e->proto) { fputs(",\"proto\":", f); rd_json_str(f, e->proto); }
    if (e->has_channels) fprintf(f, ",\"channels\":%u", e->channels);
    if (e->has_warps) fprintf(f, ",\"warps\":%u", e->warps);
    if (e->has_peer) fprintf(f, ",\"peer\":%d", e->peer);
    if (e->has_channel) fprintf(f, ",\"channel\":%u", e->channel);
    if (e->has_steps) fprintf(f, ",\"steps\":%u", e->steps);
    if (e->has_chunk) fprintf(f, ",\"chunk\":%" PRIu64, e->chunk);
    if (e->has_is_send) fprintf(f, ",\"is_send\":%s", e->is_send ? "true" : "false");
    if (e->has_gpu_ns && e->gpu_ns) fprintf(f, ",\"gpu_ns\":%" PRIu64, (uint64_t)((int64_t)e->gpu_ns + off));
    if (e->has_state) fprintf(f, ",\"state\":%u", e->state);
    if (e->has_value) fprintf(f, ",\"value\":%" PRIu64, e->value);
    if (e->name && *e->name) { fputs(",\"name\":", f); rd_json_str(f, e->name); }
    fputs("}\n", f);
  }
}

/* ---------------------------------------------------------------- stats */

typedef struct row {
  char func[24], dtype[24], algo[24], proto[16];
  uint64_t bytes;
  uint32_t nranks, channels;
  uint64_t calls, gpu_calls;
  double gpu_ns; /* shared kernel channel time of the calls with GPU times */
} row;

/* one rank's view of a collective */
typedef struct xrank { int32_t rank; uint32_t tr; uint64_t enq, gs, ge, proxy; } xrank;
typedef struct xseq { uint64_t comm, seq, bytes; uint32_t nranks; int last_rank, slow_rank;
                      uint64_t first_start, last_start, first_end, last_end; char func[24];
                      uint32_t seen; xrank *r; uint32_t capr; } xseq;

struct rd_ncclstats {
  row *rows;
  size_t nrows, caprows;
  xseq *xs;                 /* across ranks: (comm, seq) */
  size_t nxs, capxs;
  rd_u64map xs_ix;
  uint32_t traces;          /* traces with collectives */
  int32_t *trank;           /* per trace: its rank (the trace's, else its first op's) */
};

static void views_json(const rd_ncclstats *s, FILE *f);
static void views_table(const rd_ncclstats *s, FILE *f);

rd_ncclstats *rd_ncclstats_new(void) { return rd_xcalloc(1, sizeof(rd_ncclstats)); }

/* Bytes of a collective as nccl-tests counts its size, and busbw's factor. */
static uint64_t coll_bytes(const rd_nccl_op *o) {
  uint64_t b = o->count * rd_nccl_dtype_size(o->dtype);
  if (!strcmp(o->func, "AllGather") || !strcmp(o->func, "ReduceScatter") ||
      !strcmp(o->func, "AlltoAll"))
    b *= o->nranks ? o->nranks : 1;
  return b;
}
double rd_nccl_busbw_factor(const char *fn, uint32_t n) {
  if (n < 1) n = 1;
  if (!strcmp(fn, "AllReduce")) return 2.0 * (n - 1) / n;
  if (!strcmp(fn, "AllGather") || !strcmp(fn, "ReduceScatter") || !strcmp(fn, "AlltoAll"))
    return (double)(n - 1) / n;
  return 1.0;
}

static row *row_of(rd_ncclstats *s, const rd_nccl_op *o, uint64_t bytes) {
  for (size_t i = 0; i < s->nrows; i++) {
    row *r = &s->rows[i];
    if (r->bytes == bytes && r->nranks == o->nranks && r->channels == o->channels &&
        !strcmp(r->func, o->func) && !strcmp(r->dtype, o->dtype) && !strcmp(r->algo, o->algo) &&
        !strcmp(r->proto, o->proto))
      return r;
  }
  if (s->nrows == s->caprows) {
    s->caprows = s->caprows ? 2 * s->caprows : 16;
    s->rows = rd_xrealloc(s->rows, s->caprows * sizeof *s->rows);
  }
  row *r = &s->rows[s->nrows++];
  memset(r, 0, sizeof *r);
  copy_s(r->func, sizeof r->func, o->func);
  copy_s(r->dtype, sizeof r->dtype, o->dtype);
  copy_s(r->algo, sizeof r->algo, o->algo);
  copy_s(r->proto, sizeof r->proto, o->proto);
  r->bytes = bytes;
  r->nranks = o->nranks;
  r->channels = o->channels;
  return r;
}

static void cross_rank(rd_ncclstats *s, const rd_nccl_op *o) {
  uint64_t key = o->comm * 1000003u ^ o->seq;
  uint32_t i;
  if (!rd_m_get(&s->xs_ix, key, &i)) {
    if (s->nxs == s->capxs) {
      s->capxs = s->capxs ? 2 * s->capxs : 256;
      s->xs = rd_xrealloc(s->xs, s->capxs * sizeof *s->xs);
    }
    i = (uint32_t)s->nxs++;
    rd_m_put(&s->xs_ix, key, i);
    xseq *x = &s->xs[i];
    memset(x, 0, sizeof *x);
    x->comm = o->comm;
    x->seq = o->seq;
    x->nranks = o->nranks;
    x->last_rank = x->slow_rank = -1;
    x->bytes = o->bytes;
    copy_s(x->func, sizeof x->func, o->func);
  }
  xseq *x = &s->xs[i];
  if (x->seen == x->capr) {
    x->capr = x->capr ? 2 * x->capr : 4;
    x->r = rd_xrealloc(x->r, x->capr * sizeof *x->r);
  }
  x->r[x->seen] = (xrank){o->rank, s->traces - 1, o->start_ns, o->gpu_start_ns, o->gpu_end_ns,
                          o->proxy_end_ns > o->proxy_start_ns ? o->proxy_end_ns - o->proxy_start_ns : 0};
  x->seen++;
  if (!x->first_start || o->start_ns < x->first_start) x->first_start = o->start_ns;
  if (o->start_ns >= x->last_start) { x->last_start = o->start_ns; x->last_rank = o->rank; }
  if (o->gpu_end_ns) {
    if (!x->first_end || o->gpu_end_ns < x->first_end) x->first_end = o->gpu_end_ns;
    if (o->gpu_end_ns >= x->last_end) { x->last_end = o->gpu_end_ns; x->slow_rank = o->rank; }
  }
}

void rd_ncclstats_trace(rd_ncclstats *s, const rd_trace *t) {
  const rd_nccl_op *ops;
  size_t n = rd_nccl_ops(t, &ops);
  if (!n) return;
  s->trank = rd_xrealloc(s->trank, (s->traces + 1) * sizeof *s->trank);
  s->trank[s->traces++] = t->rank >= 0 ? t->rank : ops[0].rank;
  for (size_t i = 0; i < n;) {
    /* the collectives one kernel ran: same thread, same GPU span */
    size_t j = i + 1;
    if (ops[i].gpu_end_ns)
      while (j < n && ops[j].tid == ops[i].tid && ops[j].gpu_start_ns == ops[i].gpu_start_ns &&
             ops[j].gpu_end_ns == ops[i].gpu_end_ns)
        j++;
    double total = 0, span = ops[i].gpu_end_ns ? (double)(ops[i].gpu_end_ns - ops[i].gpu_start_ns) : 0;
    for (size_t k = i; k < j; k++) total += (double)ops[k].bytes; /* coll_bytes (build) */
    for (size_t k = i; k < j; k++) {
      const rd_nccl_op *o = &ops[k];
      if (o->type == T_COLL) cross_rank(s, o);
      row *r = row_of(s, o, o->bytes);
      r->calls++;
      if (span > 0) {
        r->gpu_calls++;
        r->gpu_ns += total > 0 ? span * (double)o->bytes / total : span / (double)(j - i);
      }
    }
    i = j;
  }
}

static int row_cmp(const void *a, const void *b) {
  const row *x = a, *y = b;
  return x->gpu_ns < y->gpu_ns ? 1 : x->gpu_ns > y->gpu_ns ? -1 : 0;
}

/* Across ranks: the collectives every rank had, and the ranks that were last. */
typedef struct xsum { size_t matched, ranks; int last_rank, slow_rank; size_t last_n, slow_n;
                      double late_ns; } xsum;
static void cross_summary(const rd_ncclstats *s, xsum *out) {
  memset(out, 0, sizeof *out);
  out->last_rank = out->slow_rank = -1;
  size_t cnt_last[256] = {0}, cnt_slow[256] = {0};
  for (size_t i = 0; i < s->nxs; i++) {
    const xseq *x = &s->xs[i];
    if (x->nranks < 2 || x->seen < x->nranks) continue;
    out->matched++;
    if (x->nranks > out->ranks) out->ranks = x->nranks;
    out->late_ns += (double)(x->last_start - x->first_start);
    if (x->last_rank >= 0 && x->last_rank < 256) cnt_last[x->last_rank]++;
    if (x->slow_rank >= 0 && x->slow_rank < 256) cnt_slow[x->slow_rank]++;
  }
  for (int r = 0; r < 256; r++) {
    if (cnt_last[r] > out->last_n) { out->last_n = cnt_last[r]; out->last_rank = r; }
    if (cnt_slow[r] > out->slow_n) { out->slow_n = cnt_slow[r]; out->slow_rank = r; }
  }
  if (out->matched) out->late_ns /= (double)out->matched;
}

void rd_ncclstats_json(const rd_ncclstats *s, FILE *f) {
  if (!s || !s->nrows) return;
  row *rows = rd_xmalloc(s->nrows * sizeof *rows);
  memcpy(rows, s->rows, s->nrows * sizeof *rows);
  rd_qsort(rows, s->nrows, sizeof *rows, row_cmp);
  fputs(",\"nccl_ops\":[", f);
  for (size_t i = 0; i < s->nrows; i++) {
    const row *r = &rows[i];
    fputs(i ? ",{\"func\":" : "{\"func\":", f);
    rd_json_str(f, r->func);
    fputs(",\"dtype\":", f);
    rd_json_str(f, r->dtype);
    fputs(",\"algo\":", f);
    rd_json_str(f, r->algo);
    fputs(",\"proto\":", f);
    rd_json_str(f, r->proto);
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"nranks\":%u,\"channels\":%u,\"calls\":%" PRIu64
               ",\"gpu_calls\":%" PRIu64 ",\"gpu_ns\":%.0f",
            r->bytes, r->nranks, r->channels, r->calls, r->gpu_calls, r->gpu_ns);
    if (r->gpu_calls && r->gpu_ns > 0) {
      double algbw = (double)r->bytes * (double)r->gpu_calls / r->gpu_ns; /* bytes/ns = GB/s */
      fputs(",\"algbw_gb_per_s\":", f);
      rd_json_double(f, algbw);
      fputs(",\"gpu_busbw_gb_per_s\":", f);
      rd_json_double(f, algbw * rd_nccl_busbw_factor(r->func, r->nranks));
    }
    fputc('}', f);
  }
  fputc(']', f);
  free(rows);
  xsum x;
  cross_summary(s, &x);
  if (x.matched)
    fprintf(f, ",\"nccl_ranks\":{\"matched\":%zu,\"ranks\":%zu,\"last_to_enqueue\":%d,"
               "\"last_to_enqueue_count\":%zu,\"mean_enqueue_spread_ns\":%.0f,"
               "\"last_gpu_end\":%d,\"last_gpu_end_count\":%zu}",
            x.matched, x.ranks, x.last_rank, x.last_n, x.late_ns, x.slow_rank, x.slow_n);
  views_json(s, f);
}

/* ---------------------------------------------------------------- one collective across ranks */

/* A collective every rank had, as the ranks saw it: its kernel cannot end before the last rank
 * started it, so the others waited (wait_ns: the spread of the kernels' starts) for that rank
 * (last). Why it was last: it enqueued last and that explains most of the wait ("arrival": the
 * host was late); else its GPU was still busy with earlier work between the enqueue and the
 * kernel's start ("compute"); when the ranks started together but the transfer after the last
 * start took most of the kernels' time, the collective was bound by the links ("network"). */
typedef struct view { uint64_t wait_ns, xfer_ns; int last; const char *cause; size_t ix; } view;
enum { VIEW_MIN_WAIT_NS = 1000 };
static int seq_view(const xseq *x, view *v) {
  memset(v, 0, sizeof *v);
  v->last = -1;
  if (x->nranks < 2 || x->seen < x->nranks) return 0;
  uint64_t gmin = UINT64_MAX, gmax = 0, emin = UINT64_MAX, amin = UINT64_MAX, amax = 0;
  const xrank *lr = NULL;
  for (uint32_t i = 0; i < x->seen; i++) {
    const xrank *r = &x->r[i];
    if (!r->gs || !r->ge) return 0; /* no kernel channel times: nothing to say */
    if (r->gs < gmin) gmin = r->gs;
    if (r->gs >= gmax) { gmax = r->gs; lr = r; }
    if (r->ge < emin) emin = r->ge;
    if (r->enq < amin) amin = r->enq;
    if (r->enq > amax) amax = r->enq;
  }
  v->wait_ns = gmax - gmin;
  v->xfer_ns = emin > gmax ? emin - gmax : 0;
  v->last = lr->rank;
  if (v->wait_ns < VIEW_MIN_WAIT_NS || v->xfer_ns > v->wait_ns) v->cause = "network";
  else if (lr->enq == amax && 2 * (lr->enq - amin) >= v->wait_ns) v->cause = "arrival";
  else v->cause = "compute";
  return 1;
}

static int view_cmp(const void *a, const void *b) {
  const view *x = a, *y = b;
  return x->wait_ns < y->wait_ns ? 1 : x->wait_ns > y->wait_ns ? -1 : 0;
}

/* The collectives with a view, slowest (longest wait) first (free *out). */
static size_t views(const rd_ncclstats *s, view **out) {
  view *v = rd_xmalloc((s->nxs ? s->nxs : 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < s->nxs; i++)
    if (seq_view(&s->xs[i], &v[n])) v[n++].ix = i;
  rd_qsort(v, n, sizeof *v, view_cmp);
  *out = v;
  return n;
}

#define MAX_JSON_VIEWS 1000
/* `,"nccl_collectives":[...]`: the slowest collectives every rank had, each rank's times. */
static void views_json(const rd_ncclstats *s, FILE *f) {
  view *v;
  size_t n = views(s, &v);
  if (!n) { free(v); return; }
  fputs(",\"nccl_collectives\":[", f);
  for (size_t i = 0; i < n && i < MAX_JSON_VIEWS; i++) {
    const xseq *x = &s->xs[v[i].ix];
    fprintf(f, "%s{\"comm\":\"%016" PRIx64 "\",\"seq\":%" PRIu64 ",\"func\":", i ? "," : "",
            x->comm, x->seq);
    rd_json_str(f, x->func);
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"wait_ns\":%" PRIu64 ",\"transfer_ns\":%" PRIu64
               ",\"last_rank\":%d,\"cause\":\"%s\",\"ranks\":[",
            x->bytes, v[i].wait_ns, v[i].xfer_ns, v[i].last, v[i].cause);
    for (uint32_t k = 0; k < x->seen; k++) {
      const xrank *r = &x->r[k];
      fprintf(f, "%s{\"rank\":%d,\"enqueue_ns\":%" PRIu64 ",\"gpu_start_ns\":%" PRIu64
                 ",\"gpu_end_ns\":%" PRIu64 ",\"proxy_ns\":%" PRIu64 "}",
              k ? "," : "", r->rank, r->enq, r->gs, r->ge, r->proxy);
    }
    fputs("]}", f);
  }
  fputc(']', f);
  if (n > MAX_JSON_VIEWS) fprintf(f, ",\"nccl_collectives_left_out\":%zu", n - MAX_JSON_VIEWS);
  free(v);
}

static void fmt_ns(char *b, size_t cap, double ns);
/* The slowest few collectives across ranks, and how often each cause was the reason. */
static void views_table(const rd_ncclstats *s, FILE *f) {
  view *v;
  size_t n = views(s, &v), causes[3] = {0};
  static const char *const names[3] = {"arrival", "compute", "network"};
  if (!n) { free(v); return; }
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) causes[c] += !strcmp(v[i].cause, names[c]);
  fprintf(f, "slowest collectives across ranks (%zu: late arrival %zu, GPU busy before %zu, "
             "transfer-bound %zu)\n", n, causes[0], causes[1], causes[2]);
  fprintf(f, "%6s %-14s %10s %10s %9s %-8s\n", "seq", "Collective", "wait", "transfer",
          "last rank", "cause");
  for (size_t i = 0; i < n && i < 5; i++) {
    const xseq *x = &s->xs[v[i].ix];
    char w[24], t[24];
    fmt_ns(w, sizeof w, (double)v[i].wait_ns);
    fmt_ns(t, sizeof t, (double)v[i].xfer_ns);
    fprintf(f, "%6" PRIu64 " %-14.14s %10s %10s %9d %-8s\n", x->seq, x->func, w, t, v[i].last,
            v[i].cause);
  }
  free(v);
}

static void fmt_bytes(char *b, size_t cap, uint64_t v) {
  if (v >= (1ull << 30)) snprintf(b, cap, "%.1f GiB", (double)v / (1ull << 30));
  else if (v >= (1ull << 20)) snprintf(b, cap, "%.1f MiB", (double)v / (1ull << 20));
  else if (v >= 1024) snprintf(b, cap, "%.1f KiB", (double)v / 1024);
  else snprintf(b, cap, "%" PRIu64 " B", v);
}
static void fmt_ns(char *b, size_t cap, double ns) {
  if (ns >= 1e9) snprintf(b, cap, "%.2f s", ns / 1e9);
  else if (ns >= 1e6) snprintf(b, cap, "%.2f ms", ns / 1e6);
  else snprintf(b, cap, "%.1f us", ns / 1e3);
}

void rd_ncclstats_table(const rd_ncclstats *s, FILE *f) {
  if (!s || !s->nrows) return;
  row *rows = rd_xmalloc(s->nrows * sizeof *rows);
  memcpy(rows, s->rows, s->nrows * sizeof *rows);
  rd_qsort(rows, s->nrows, sizeof *rows, row_cmp);
  fprintf(f, "\nNCCL as it ran (profiler plugin: docs/nccl-profiler.md)\n");
  fprintf(f, "%-14s %10s %-9s %5s %-6s %-6s %3s %7s %10s %10s %10s\n", "Collective", "Size",
          "dtype", "Ranks", "Algo", "Proto", "Ch", "Calls", "GPU time", "algbw GB/s",
          "busbw GB/s");
  for (size_t i = 0; i < s->nrows; i++) {
    const row *r = &rows[i];
    char sz[24], tm[24], ab[16] = "-", bb[16] = "-";
    fmt_bytes(sz, sizeof sz, r->bytes);
    fmt_ns(tm, sizeof tm, r->gpu_ns);
    if (r->gpu_calls && r->gpu_ns > 0) {
      double algbw = (double)r->bytes * (double)r->gpu_calls / r->gpu_ns;
      snprintf(ab, sizeof ab, "%.3g", algbw);
      snprintf(bb, sizeof bb, "%.3g", algbw * rd_nccl_busbw_factor(r->func, r->nranks));
    }
    const char *dt = !strncmp(r->dtype, "nccl", 4) ? r->dtype + 4 : r->dtype;
    fprintf(f, "%-14.14s %10s %-9.9s %5u %-6.6s %-6.6s %3u %7" PRIu64 " %10s %10s %10s\n",
            r->func, sz, dt, r->nranks, r->algo, r->proto, r->channels, r->calls, tm, ab, bb);
  }
  free(rows);
  xsum x;
  cross_summary(s, &x);
  if (x.matched) {
    char late[24];
    fmt_ns(late, sizeof late, x.late_ns);
    fprintf(f, "across %zu ranks: %zu collectives matched by seq\n  last to enqueue: rank %d "
               "(%zu times, mean spread %s); last kernel end: rank %d (%zu times)\n",
            x.ranks, x.matched, x.last_rank, x.last_n, late, x.slow_rank, x.slow_n);
    views_table(s, f);
  }
}

/* ---------------------------------------------------------------- who held the others up */

static rd_nccl_blame *blame_of(rd_nccl_blame **b, size_t *n, const rd_ncclstats *s, uint32_t tr) {
  for (size_t i = 0; i < *n; i++)
    if ((*b)[i].trace == tr) return &(*b)[i];
  *b = rd_xrealloc(*b, (*n + 1) * sizeof **b);
  rd_nccl_blame *e = &(*b)[(*n)++];
  memset(e, 0, sizeof *e);
  e->trace = tr;
  e->rank = s->trank[tr];
  return e;
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int blame_cmp(const void *a, const void *b) {
  const rd_nccl_blame *x = a, *y = b;
  return x->trace < y->trace ? -1 : x->trace > y->trace;
}

/* One collective every rank had (x): who started last and why, and whose transfer ran long. */
static void blame_one(const rd_ncclstats *s, const xseq *x, rd_nccl_blame **b, size_t *nb,
                      uint64_t *xf, uint64_t *tmp) {
  uint32_t n = x->seen, li = 0;
  uint64_t g1 = 0, g2 = 0, gmin = UINT64_MAX, amin = UINT64_MAX, amax = 0;
  for (uint32_t i = 0; i < n; i++) {
    const xrank *r = &x->r[i];
    if (r->gs > g1) { g2 = g1; g1 = r->gs; li = i; }
    else if (r->gs > g2) g2 = r->gs;
    if (r->gs < gmin) gmin = r->gs;
    if (r->enq < amin) amin = r->enq;
    if (r->enq > amax) amax = r->enq;
  }
  const xrank *lr = &x->r[li];
  rd_nccl_blame *L = blame_of(b, nb, s, lr->tr);
  L->last_n++;
  L->caused_ns += (double)(g1 - g2);
  if (lr->enq == amax && 2 * (lr->enq - amin) >= g1 - gmin) L->late_enqueue_n++;
  /* the transfer after the last start; each rank's beyond the median of the others' */
  for (uint32_t i = 0; i < n; i++) xf[i] = x->r[i].ge > g1 ? x->r[i].ge - g1 : 0;
  int64_t top = -1;
  uint64_t top_ex = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++)
      if (k != i) tmp[m++] = xf[k];
    rd_qsort(tmp, m, sizeof *tmp, cmp_u64);
    uint64_t med = m ? (m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2) : 0;
    uint64_t ex = xf[i] > med ? xf[i] - med : 0;
    rd_nccl_blame *e = blame_of(b, nb, s, x->r[i].tr);
    e->net_excess_ns += (double)ex;
    e->xfer_ns += (double)xf[i];
    e->proxy_ns += (double)x->r[i].proxy;
    if (ex > top_ex) { top_ex = ex; top = x->r[i].tr; }
  }
  if (top >= 0 && top_ex > VIEW_MIN_WAIT_NS) blame_of(b, nb, s, (uint32_t)top)->net_n++;
}

size_t rd_ncclstats_blame(const rd_ncclstats *s, int (*keep)(void *ctx, uint32_t trace, uint64_t t),
                          void *ctx, rd_nccl_blame **out, size_t *ncoll) {
  rd_nccl_blame *b = NULL;
  size_t nb = 0;
  uint64_t last_g = 0, last_e = 0, *xf = NULL, *tmp = NULL;
  uint32_t cap = 0;
  *out = NULL;
  *ncoll = 0;
  for (size_t i = 0; s && i < s->nxs; i++) {
    const xseq *x = &s->xs[i];
    view v;
    if (!seq_view(x, &v)) continue;
    int in = 1;
    uint64_t g1 = 0, e1 = 0;
    for (uint32_t k = 0; k < x->seen && in; k++) {
      in = !keep || keep(ctx, x->r[k].tr, x->r[k].enq);
      if (x->r[k].gs > g1) g1 = x->r[k].gs;
      if (x->r[k].ge > e1) e1 = x->r[k].ge;
    }
    /* the collectives of one kernel (a group's, in a row) count once */
    if (!in || (g1 == last_g && e1 == last_e)) continue;
    last_g = g1, last_e = e1;
    if (x->seen > cap) {
      cap = x->seen;
      xf = rd_xrealloc(xf, cap * sizeof *xf);
      tmp = rd_xrealloc(tmp, cap * sizeof *tmp);
    }
    blame_one(s, x, &b, &nb, xf, tmp);
    (*ncoll)++;
  }
  free(xf);
  free(tmp);
  if (nb < 2) { free(b); *ncoll = 0; return 0; }
  rd_qsort(b, nb, sizeof *b, blame_cmp);
  *out = b;
  return nb;
}

void rd_ncclstats_free(rd_ncclstats *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nxs; i++) free(s->xs[i].r);
  free(s->rows);
  free(s->xs);
  free(s->trank);
  rd_m_free(&s->xs_ix);
  free(s);
}
