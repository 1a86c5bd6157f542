/* xplane.c — `dlhook export --format tensorboard`: an xprof run that TensorBoard's
 * profile plugin (and xprof) open: OUT/plugins/profile/<run>/<host>.xplane.pb, one XSpace per
 * trace (proto/xplane.proto, a subset with xprof's field numbers).
 *
 * Planes:
 *   /host:CPU         a line per thread (id = tid, name = thread name); API calls as events with
 *                     stat correlation_id (and result when not 0);
 *   /device:GPU:N     a line per stream ("Stream #S"); kernels, copies and memsets as events
 *                     with stats correlation_id, device_id, context_id, stream, kernel_details
 *                     ("regs:R static_shared:S dynamic_shared:D grid:X,Y,Z block:X,Y,Z"),
 *                     memcpy_details / Memset_details; plane stats for the device properties
 *                     (core_count, memory_size, compute_cap_major, compute_cap_minor).
 * What xprof's analyses need (read from openxla/xprof and the grouping code of XLA's tsl
 * profiler, group_events.cc):
 *   - steps: NVTX ranges named like steps (links.c) carry the stats `_r` = 1 (a root
 *     event: xprof groups every event nested in it on its thread, and through correlation_id
 *     the GPU work those calls launched, into one step) and `step_num`; an "NVTX steps" line of
 *     each GPU spans each step (so that the device step is the NVTX range). The Overview's step
 *     times and breakdown come from these groups;
 *   - `tf_op` = "NAME:TYPE" on every kernel, copy and memset: NAME is the NVTX path of the call
 *     that launched it (steps left out) and the library call or kernel, TYPE its kind (MatMul,
 *     Conv2D, Conv2DBackpropInput/Filter, Nccl<Collective>, Kernel, Memcpy...), so Framework
 *     Op Stats has a row per op and Kernel Stats an op name per kernel; work launched inside
 *     a PyTorch operator (rd_torch_op) is NAME = its module path (else its operator path)
 *     and the operator, TYPE = the aten operator ("Sequential.forward/Linear.forward/
 *     aten::addmm:aten::addmm"), so Framework Op Stats lists aten operators;
 *   - copies are named MemcpyHToD / MemcpyDToH / ... as xprof classifies them;
 *   - a folded event (count identical calls of a thread recorded once) is one event from the
 *     first call's start to the last call's end, named "NAME ×COUNT" (name and display name:
 *     what the trace viewer shows; xprof's analyses do not group host CUDA calls by name, and a
 *     folded call launched no GPU work), with stats calls and calls_dur_ns (summed durations).
 * Hosts (files) are named by rank: OUT/plugins/profile/<run>/rank<R>.xplane.pb (<host>[_<pid>]
 * without a rank); processes without GPU work are left out (--keep-gpuless keeps them): xprof
 * takes its tool list from one of the hosts, and a GPU-less one has no Kernel Stats.
 * Three passes: links.c's scan, the calls, the GPU records. Events are packed one by one
 * (protobuf-c) into a spill file per line as the trace streams past; the XSpace is then
 * assembled from the pieces (a message is the concatenation of its fields), so memory holds only
 * the metadata tables and the links. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "xplane.pb-c.h"

enum { S_CORR = 1, S_KERNEL, S_MEMCPY, S_MEMSET, S_DEVICE, S_CONTEXT, S_STREAM, S_CLOCK,
       S_CORES, S_BANDWIDTH, S_MEMSIZE, S_CC_MAJOR, S_CC_MINOR, S_RESULT, S_IS_ROOT, S_STEP_NUM,
       S_TF_OP, S_PRODUCER_TYPE, S_PRODUCER_ID, S_CONSUMER_TYPE, S_CONSUMER_ID, S_VENDOR,
       S_CALLS, S_CALLS_DUR, S_NSTATS };
static const char *const stat_names[S_NSTATS] = {
  NULL, "correlation_id", "kernel_details", "memcpy_details", "Memset_details", "device_id",
  "context_id", "stream", "clock_rate", "core_count", "memory_bandwidth", "memory_size",
  "compute_cap_major", "compute_cap_minor", "result", "_r", "step_num", "tf_op", "_pt", "_p",
  "_ct", "_c", "device_vendor", "calls", "calls_dur_ns"};

/* The context type of the producer/consumer stats that tie a step's host range to its span on
 * the device's "Steps" line (any number: it only has to match on both sides). */
#define STEP_CONTEXT 7301
/* line id of the "Steps" line of a device plane (not a stream id, not an xprof derived id) */
#define STEPS_LINE 0x7ffffff0u

typedef struct xl {
  int64_t id;
  char *name;
  FILE *spill;
  FILE *times;           /* (start, duration) of each event, in spill order */
  uint64_t bytes, n;
  uint64_t last_ts, last_dur;
  int unsorted;          /* events did not arrive in (start, longest first) order */
} xl;

typedef struct xp {
  int64_t id;
  char name[48];
  int have_dev;
  uint32_t device;
  Dlh__DeviceInfo props;
  xl *lines;
  size_t nlines;
  rd_u64map line_ix;     /* key -> line index */
  rd_u64map meta_ix;     /* key -> metadata id */
  char **meta;           /* metadata id - 1 -> name */
  size_t nmeta;
} xp;

typedef struct xop {     /* what a call's GPU work is, for tf_op */
  char *name;            /* NVTX path / library call (or the path alone: + kernel name) */
  const char *type;
  int kernel_named;      /* append the kernel's short name to name */
  int aten;              /* type is a PyTorch operator (malloc'd) */
} xop;

typedef struct xctx {
  const rd_opts *o;
  ex_links *L;
  xop *ops;
  size_t nops;
  rd_u64map op_ix;       /* hash of name and type -> index in ops */
  xp *planes;            /* [0] = host */
  size_t nplanes;
  rd_map plane_ix;       /* device id -> index into planes (as a pointer-sized value) */
  uint64_t base;         /* line timestamp_ns */
  int have_base;
  uint64_t real_ns;
  char host[128];
  uint32_t pid;
  uint8_t *buf;
  size_t cap;
  int io_error;
} xctx;

static size_t vlen(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

static xp *plane_for_device(xctx *c, uint32_t dev) {
  uintptr_t ix = (uintptr_t)rd_map_get(&c->plane_ix, dev); /* device ids come from the trace */
  if (ix) return &c->planes[ix];
  rd_map_put(&c->plane_ix, dev, (void *)(uintptr_t)c->nplanes);
  c->planes = rd_xrealloc(c->planes, (c->nplanes + 1) * sizeof *c->planes);
  xp *p = &c->planes[c->nplanes++];
  memset(p, 0, sizeof *p);
  p->id = (int64_t)c->nplanes;
  p->device = dev;
  snprintf(p->name, sizeof p->name, "/device:GPU:%u", dev);
  return p;
}

static xl *line_for(xctx *c, xp *p, uint64_t key, const char *name) {
  uint32_t i;
  if (rd_m_get(&p->line_ix, key, &i)) return &p->lines[i];
  p->lines = rd_xrealloc(p->lines, (p->nlines + 1) * sizeof *p->lines);
  xl *l = &p->lines[p->nlines];
  l->id = (int64_t)key;
  l->name = rd_utf8_dup(name); /* xplane.proto is proto3 upstream: strings must be UTF-8 */
  l->spill = tmpfile();
  l->times = tmpfile();
  l->bytes = l->n = l->last_ts = l->last_dur = 0;
  l->unsorted = 0;
  if (!l->spill || !l->times) {
    rd_error("export: cannot create a temporary file: %s", strerror(errno));
    exit(RD_BAD_INPUT);
  }
  rd_m_put(&p->line_ix, key, (uint32_t)p->nlines++);
  return l;
}

static int64_t meta_for(xp *p, uint64_t key, const char *name) {
  uint32_t id;
  if (rd_m_get(&p->meta_ix, key, &id)) return id;
  p->meta = rd_xrealloc(p->meta, (p->nmeta + 1) * sizeof *p->meta);
  p->meta[p->nmeta++] = rd_utf8_dup(name);
  rd_m_put(&p->meta_ix, key, (uint32_t)p->nmeta);
  return (int64_t)p->nmeta;
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void put_event(xctx *c, xl *l, int64_t meta, uint64_t ts, uint64_t dur, Dlhxplane__XStat **st,
                      size_t nst) {
  Dlhxplane__XEvent e = DLHXPLANE__XEVENT__INIT;
  e.has_metadata_id = 1;
  e.metadata_id = meta;
  e.data_case = DLHXPLANE__XEVENT__DATA_OFFSET_PS;
  e.offset_ps = ts > c->base ? (int64_t)(ts - c->base) * 1000 : 0;
  e.has_duration_ps = 1;
  e.duration_ps = (int64_t)dur * 1000;
  e.n_stats = nst;
  e.stats = st;
  size_t n = dlhxplane__xevent__get_packed_size(&e);
  if (n > c->cap) { c->cap = n * 2; c->buf = rd_xrealloc(c->buf, c->cap); }
  dlhxplane__xevent__pack(&e, c->buf);
  putc(0x22, l->spill); /* XLine.events, field 4 */
  rd_put_varint(l->spill, n);
  fwrite(c->buf, 1, n, l->spill);
  l->bytes += 1 + vlen(n) + n;
  /* xprof nests events by walking each line in order (parents first): keep the times to sort
   * a line whose events came out of order (a call is recorded when it ends, after its children) */
  uint64_t tt[2] = {(uint64_t)e.offset_ps, (uint64_t)e.duration_ps};
  fwrite(tt, sizeof tt, 1, l->times);
  if (l->n && (tt[0] < l->last_ts || (tt[0] == l->last_ts && tt[1] > l->last_dur))) l->unsorted = 1;
  l->last_ts = tt[0];
  l->last_dur = tt[1];
  l->n++;
}

typedef struct xent { uint64_t ts, dur, pos, len; } xent;

static int xent_cmp(const void *a, const void *b) {
  const xent *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1; /* the enclosing one first */
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Copies the events of a line to out, sorted by start when they came out of order. */
static void copy_line_events(xctx *c, xl *l, FILE *out) {
  if (fflush(l->spill) != 0 || ferror(l->spill) || fflush(l->times) != 0) c->io_error = 1;
  rewind(l->spill);
  rewind(l->times);
  if (!l->unsorted) {
    char cp[1 << 16];
    size_t k;
    uint64_t copied = 0;
    while ((k = fread(cp, 1, sizeof cp, l->spill)) > 0) {
      fwrite(cp, 1, k, out);
      copied += k;
    }
    if (copied != l->bytes) c->io_error = 1;
    return;
  }
  uint8_t *b = rd_xmalloc(l->bytes ? l->bytes : 1);
  xent *e = rd_xmalloc((l->n ? l->n : 1) * sizeof *e);
  if (fread(b, 1, l->bytes, l->spill) != l->bytes) { c->io_error = 1; l->n = 0; }
  uint64_t pos = 0;
  for (uint64_t i = 0; i < l->n; i++) {
    uint64_t tt[2], len = 0;
    if (fread(tt, sizeof tt, 1, l->times) != 1 || pos >= l->bytes) { c->io_error = 1; l->n = i; break; }
    uint64_t p = pos + 1; /* tag, then the varint length */
    for (int shift = 0; p < l->bytes; shift += 7) {
      len |= (uint64_t)(b[p] & 0x7f) << shift;
      if (!(b[p++] & 0x80)) break;
    }
    e[i] = (xent){tt[0], tt[1], pos, p - pos + len};
    pos = p + len;
  }
  rd_qsort(e, l->n, sizeof *e, xent_cmp);
  for (uint64_t i = 0; i < l->n; i++) fwrite(b + e[i].pos, 1, e[i].len, out);
  free(b);
  free(e);
}

static Dlhxplane__XStat *ustat(Dlhxplane__XStat *s, int64_t id, uint64_t v) {
  dlhxplane__xstat__init(s);
  s->has_metadata_id = 1;
  s->metadata_id = id;
  s->value_case = DLHXPLANE__XSTAT__VALUE_UINT64_VALUE;
  s->uint64_value = v;
  return s;
}

static Dlhxplane__XStat *sstat(Dlhxplane__XStat *s, int64_t id, char *v) {
  dlhxplane__xstat__init(s);
  s->has_metadata_id = 1;
  s->metadata_id = id;
  s->value_case = DLHXPLANE__XSTAT__VALUE_STR_VALUE;
  s->str_value = v;
  return s;
}

static void x_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  xctx *c = ctx;
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS:
      if (!c->have_base && p->process->has_start_ns) {
        c->base = p->process->start_ns > 1000000000ull ? p->process->start_ns - 1000000000ull : 0;
        c->have_base = 1;
      }
      break;
    case DLH__PACKET__DATA_THREAD: {
      xl *l = line_for(c, &c->planes[0], p->thread->tid, "");
      free(l->name);
      l->name = rd_utf8_dup(p->thread->name && *p->thread->name ? p->thread->name : "thread");
      break;
    }
    case DLH__PACKET__DATA_ANCHOR:
      if (!c->real_ns && p->anchor->has_realtime_ns) c->real_ns = p->anchor->realtime_ns;
      break;
    case DLH__PACKET__DATA_DEVICE: {
      xp *d = plane_for_device(c, p->device->id);
      d->have_dev = 1;
      d->props = *p->device;
      d->props.name = NULL;
      break;
    }
    default:
      break;
  }
  (void)t;
}

/* Keeps the characters xprof accepts in an op name ([A-Za-z0-9_./>-]); others become '_'. */
static void op_append(char *buf, size_t n, size_t *len, const char *s) {
  for (; *s && *len + 1 < n; s++) {
    char ch = *s;
    buf[(*len)++] = isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-' || ch == '/' ||
                    ch == '>' ? ch : '_';
  }
  buf[*len] = 0;
}

/* The op (tf_op) of the GPU work of a call: its NVTX path (steps left out) and, for a library
 * call, the call; the type from the call. Returns its index in c->ops. */
static uint32_t op_of(xctx *c, const rd_trace *t, uint32_t tid, const dlh_api_event *ev,
                      const rd_func *fn) {
  char name[512];
  size_t len = 0;
  name[0] = 0;
  long chain[32];
  int depth = 0;
  for (long r = ex_links_range_at(c->L, tid, ev->start_ns); r >= 0 && depth < 32; r = c->L->range[r].parent)
    if (c->L->range[r].step < 0) chain[depth++] = r;
  while (depth-- > 0) {
    if (len) op_append(name, sizeof name, &len, "/");
    op_append(name, sizeof name, &len, c->L->range[chain[depth]].label);
  }
  const char *fname = rd_func_name(t, ev->fn), *type = "Kernel";
  int kernel_named = 1;
  if (fn->domain == DLH__DOMAIN__DOMAIN_CUBLAS || fn->domain == DLH__DOMAIN__DOMAIN_CUBLASLT) {
    type = "MatMul";
    kernel_named = 0;
  } else if (fn->domain == DLH__DOMAIN__DOMAIN_CUDNN) {
    type = strstr(fname, "BackwardData") ? "Conv2DBackpropInput" :
           strstr(fname, "BackwardFilter") ? "Conv2DBackpropFilter" :
           strstr(fname, "Convolution") ? "Conv2D" : "Cudnn";
    kernel_named = 0;
  } else if (fn->domain == DLH__DOMAIN__DOMAIN_NCCL) {
    type = !strcmp(fname, "ncclAllReduce") ? "NcclAllReduce" :
           !strcmp(fname, "ncclAllGather") ? "NcclAllGather" :
           !strcmp(fname, "ncclReduceScatter") ? "NcclReduceScatter" :
           !strcmp(fname, "ncclBroadcast") || !strcmp(fname, "ncclBcast") ? "NcclBroadcast" :
           !strcmp(fname, "ncclGroupEnd") ? "NcclGroup" : "Nccl";
    kernel_named = 0;
  } else if (strstr(fname, "Memcpy") || strstr(fname, "memcpy") || strstr(fname, "Memset") ||
             strstr(fname, "memset")) {
    kernel_named = 0; /* copies and memsets: typed by the record's kind */
    type = "";
  }
  const rd_torch *tx = ev->stack ? rd_torch_of((rd_trace *)t, ev->stack) : NULL;
  const char *aten = tx ? rd_torch_op(tx) : NULL;
  if (aten) {
    /* a PyTorch operator launched it: NAME the module path (else the operator path), TYPE the
     * aten operator, as xprof shows TensorFlow's op name and op type */
    const char *path = tx->module ? tx->module : tx->op_path;
    if (len) op_append(name, sizeof name, &len, "/");
    for (const char *p = path; *p;) {
      const char *e = strstr(p, " > ");
      char part[256];
      size_t k = e ? (size_t)(e - p) : strlen(p);
      if (k >= sizeof part) k = sizeof part - 1;
      memcpy(part, p, k);
      part[k] = 0;
      op_append(name, sizeof name, &len, part);
      if (!e) break;
      op_append(name, sizeof name, &len, "/");
      p = e + 3;
    }
    if (tx->module) {
      op_append(name, sizeof name, &len, "/");
      op_append(name, sizeof name, &len, aten);
    }
    kernel_named = 0;
  } else if (!kernel_named) {
    if (len) op_append(name, sizeof name, &len, "/");
    op_append(name, sizeof name, &len, fname);
  }
  uint64_t h = hash_name(name) ^ hash_name(aten ? aten : type) * 31 ^ (uint64_t)kernel_named;
  uint32_t i;
  if (rd_m_get(&c->op_ix, h, &i)) return i;
  c->ops = rd_xrealloc(c->ops, (c->nops + 1) * sizeof *c->ops);

  if (aten) { /* xprof takes a TYPE of letters, digits and '_' only */
    char tb[256];
    size_t tl = 0;
    tb[0] = 0;
    op_append(tb, sizeof tb, &tl, aten);
    type = rd_xstrdup(tb);
  }
  c->ops[c->nops] = (xop){rd_xstrdup(name), type, kernel_named, aten != NULL};
  rd_m_put(&c->op_ix, h, (uint32_t)c->nops);
  return (uint32_t)c->nops++;
}

static void x_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  xctx *c = ctx;
  if (!c->have_base) { c->base = ev->start_ns; c->have_base = 1; }
  char nm[32];
  snprintf(nm, sizeof nm, "Thread %u", tid);
  xl *l = line_for(c, &c->planes[0], tid, nm);
  const rd_func *fn = rd_trace_func(t, ev->fn);
  uint64_t msg;
  const char *label = NULL;
  if (fn && fn->domain == DLH__DOMAIN__DOMAIN_NVTX && rd_arg(t, ev, "message|name", &msg))
    label = rd_trace_string(t, (uint32_t)msg);
  uint64_t calls = dlh_api_calls(ev);
  int64_t meta;
  if (calls > 1) {
    char *folded = rd_folded_name(label ? label : rd_func_name(t, ev->fn), calls);
    meta = meta_for(&c->planes[0], 3ull << 62 | hash_name(folded) >> 2, folded);
    free(folded);
  } else {
    meta = label ? meta_for(&c->planes[0], 1ull << 62 | hash_name(label) >> 2, label)
                 : meta_for(&c->planes[0], ev->fn, rd_func_name(t, ev->fn));
  }
  Dlhxplane__XStat s[8], *sp[8];
  size_t ns = 0;
  if (label) { /* a step: the root of a group */
    long r = ex_links_range_at(c->L, tid, ev->start_ns);
    while (r >= 0 && !(c->L->range[r].start == ev->start_ns &&
                       c->L->range[r].end == ev->start_ns + dlh_api_span(ev)))
      r = c->L->range[r].parent;
    /* the steps of one thread (the loop's): steps of other threads would count again */
    if (r >= 0 && c->L->range[r].step >= 0 && tid == c->L->step_tid) {
      sp[ns] = &s[ns];
      dlhxplane__xstat__init(&s[ns]);
      s[ns].has_metadata_id = 1;
      s[ns].metadata_id = S_IS_ROOT;
      s[ns].value_case = DLHXPLANE__XSTAT__VALUE_INT64_VALUE;
      s[ns].int64_value = 1;
      ns++;
      sp[ns] = &s[ns];
      dlhxplane__xstat__init(&s[ns]);
      s[ns].has_metadata_id = 1;
      s[ns].metadata_id = S_STEP_NUM;
      s[ns].value_case = DLHXPLANE__XSTAT__VALUE_INT64_VALUE;
      s[ns].int64_value = c->L->range[r].step;
      ns++;
      /* producer of the step's event on the devices' "Steps" lines (see add_step_spans) */
      sp[ns] = ustat(&s[ns], S_PRODUCER_TYPE, STEP_CONTEXT); ns++;
      sp[ns] = ustat(&s[ns], S_PRODUCER_ID, (uint64_t)r + 1); ns++;
    }
  }
  ex_link *lk = fn && fn->domain != DLH__DOMAIN__DOMAIN_NVTX ? ex_links_get(c->L, ev->corr) : NULL;
  if (lk && !lk->fn) {
    lk->fn = ev->fn;
    lk->tid = tid;
    lk->launch = ev->start_ns ? ev->start_ns : 1;
    lk->op = op_of(c, t, tid, ev, fn) + 1;
  }
  if (ev->corr) { sp[ns] = ustat(&s[ns], S_CORR, ev->corr); ns++; }
  if (ev->ret) {
    sp[ns] = &s[ns];
    dlhxplane__xstat__init(&s[ns]);
    s[ns].has_metadata_id = 1;
    s[ns].metadata_id = S_RESULT;
    s[ns].value_case = DLHXPLANE__XSTAT__VALUE_INT64_VALUE;
    s[ns].int64_value = ev->ret;
    ns++;
  }
  if (calls > 1) {
    sp[ns] = ustat(&s[ns], S_CALLS, calls); ns++;
    sp[ns] = ustat(&s[ns], S_CALLS_DUR, ev->dur_ns); ns++;
  }
  put_event(c, l, meta, ev->start_ns, dlh_api_span(ev), sp, ns);
}

static const char *mem_kind(uint64_t k) {
  static const char *const n[] = {"unknown", "pageable", "pinned", "device", "array", "managed",
                                  "device_static", "managed_static"};
  return k < sizeof n / sizeof *n ? n[k] : "unknown";
}

static void x_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  xctx *c = ctx;
  if (!rd_gpu_busy(g->kind)) return;
  if (!c->have_base) { c->base = g->start; c->have_base = 1; }
  xp *p = plane_for_device(c, g->device);
  char nm[64], det[192];
  snprintf(nm, sizeof nm, "Stream #%u", g->stream);
  xl *l = line_for(c, p, g->stream, nm);
  const char *name = rd_gpu_name(t, g, nm, sizeof nm);
  char mc[32];
  if (g->kind == RD_MEMCPY) { /* as xprof names (and classifies) copies: MemcpyHToD, MemcpyDToH, ... */
    const char *kind = rd_memcpy_kind(g->nvals > 1 ? g->vals[1] : 0);
    snprintf(mc, sizeof mc, "Memcpy%c%s%c", kind[0], kind[1] == 't' ? "To" : "", kind[strlen(kind) - 1]);
    if (strlen(kind) != 4) snprintf(mc, sizeof mc, "Memcpy%s", kind);
    name = mc;
  }
  int64_t meta = meta_for(p, g->name ? g->name : 1ull << 62 | hash_name(name) >> 2, name);
  Dlhxplane__XStat s[7], *sp[7];
  size_t ns = 0;
  char tfop[768];
  ex_link *lk = ex_links_get(c->L, ex_links_corr(c->L, g->corr));
  if (lk && lk->op) {
    const xop *op = &c->ops[lk->op - 1];
    size_t len = strlen(op->name);
    snprintf(tfop, sizeof tfop, "%s", op->name);
    if (op->kernel_named && g->kind == RD_KERNEL) {
      /* the kernel's short name: no return type, template arguments, parameters or scope */
      char sh[256];
      const char *k = name;
      if (!strncmp(k, "void ", 5)) k += 5;
      size_t n = 0;
      int angle = 0;
      for (; *k && *k != '(' && n + 1 < sizeof sh; k++) {
        if (*k == '<') angle++;
        else if (*k == '>') angle--;
        else if (!angle) sh[n++] = *k;
      }
      sh[n] = 0;
      const char *b = strrchr(sh, ':');
      if (len) op_append(tfop, sizeof tfop, &len, "/");
      op_append(tfop, sizeof tfop, &len, b ? b + 1 : sh);
    } else if (op->kernel_named || !*op->name) {
      if (len) op_append(tfop, sizeof tfop, &len, "/");
      op_append(tfop, sizeof tfop, &len, g->kind == RD_MEMCPY ? "memcpy" : g->kind == RD_MEMSET ? "memset" : "kernel");
    }
    const char *type = op->aten ? op->type : g->kind == RD_MEMCPY ? mc :
                       g->kind == RD_MEMSET ? "Memset" : *op->type ? op->type : "Kernel";
    snprintf(tfop + len, sizeof tfop - len, ":%s", type);
    sp[ns] = sstat(&s[ns], S_TF_OP, tfop); ns++;
  }
  sp[ns] = ustat(&s[ns], S_CORR, g->corr); ns++;
  sp[ns] = ustat(&s[ns], S_DEVICE, g->device); ns++;
  sp[ns] = ustat(&s[ns], S_CONTEXT, g->context); ns++;
  sp[ns] = ustat(&s[ns], S_STREAM, g->stream); ns++;
  const uint64_t *v = g->vals;
  det[0] = 0;
  if (g->kind == RD_KERNEL && g->nvals >= 9) {
    double bps, wps, occ = 0;
    if (!rd_occupancy(p->have_dev ? &p->props : NULL, v, g->nvals, &bps, &wps, &occ)) occ = 0;
    snprintf(det, sizeof det, "regs:%" PRIu64 " static_shared:%" PRIu64 " dynamic_shared:%"
             PRIu64 " grid:%" PRIu64 ",%" PRIu64 ",%" PRIu64 " block:%" PRIu64 ",%" PRIu64 ",%"
             PRIu64 " occ_pct:%.1f", v[6], v[7], v[8], v[0], v[1], v[2], v[3], v[4], v[5], occ);
    sp[ns] = sstat(&s[ns], S_KERNEL, det); ns++;
  } else if (g->kind == RD_MEMCPY && g->nvals >= 4) {
    snprintf(det, sizeof det, "kind_src:%s kind_dst:%s size:%" PRIu64 " dest:%u async:%u",
             mem_kind(v[2]), mem_kind(v[3]), v[0], g->device,
             g->nvals >= 5 ? (unsigned)(v[4] & 1) : 0);
    sp[ns] = sstat(&s[ns], S_MEMCPY, det); ns++;
  } else if (g->kind == RD_MEMSET && g->nvals >= 1) {
    snprintf(det, sizeof det, "num_bytes:%" PRIu64 " async:%u", v[0],
             g->nvals >= 4 ? (unsigned)(v[3] & 1) : 0);
    sp[ns] = sstat(&s[ns], S_MEMSET, det); ns++;
  }
  put_event(c, l, meta, g->start, g->dur, sp, ns);
}

/* An "NVTX steps" line on each GPU plane with an event per step spanning its NVTX range, consumer of
 * the host step (stats _ct/_c): xprof groups it into the step, so the step's span on the device
 * (its Overview step time) is the NVTX range, not only the span of its kernels. It has no
 * correlation_id or kernel_details: it adds no device time or kernel. */
static void add_step_spans(xctx *c) {
  for (size_t i = 1; i < c->nplanes; i++) {
    xp *p = &c->planes[i];
    for (size_t r = 0; r < c->L->nrange; r++) {
      const ex_range *R = &c->L->range[r];
      if (R->step < 0 || R->tid != c->L->step_tid) continue;
      char nm[48];
      snprintf(nm, sizeof nm, "ProfilerStep#%ld", R->step);
      xl *l = line_for(c, p, STEPS_LINE, "NVTX steps");
      int64_t meta = meta_for(p, 2ull << 62 | (uint64_t)R->step, nm);
      Dlhxplane__XStat s[2], *sp[2];
      sp[0] = ustat(&s[0], S_CONSUMER_TYPE, STEP_CONTEXT);
      sp[1] = ustat(&s[1], S_CONSUMER_ID, (uint64_t)r + 1);
      put_event(c, l, meta, R->start, R->end - R->start, sp, 2);
    }
  }
}

/* ---------------------------------------------------------------- assembling the XSpace */

static void put_bytes(FILE *f, int tag, const uint8_t *b, size_t n) {
  putc(tag, f);
  rd_put_varint(f, n);
  fwrite(b, 1, n, f);
}

static uint8_t *pack_line_header(const xl *l, uint64_t base, size_t *n) {
  Dlhxplane__XLine h = DLHXPLANE__XLINE__INIT;
  h.has_id = h.has_display_id = 1;
  h.id = h.display_id = l->id;
  h.name = h.display_name = l->name;
  h.has_timestamp_ns = 1;
  h.timestamp_ns = (int64_t)base;
  *n = dlhxplane__xline__get_packed_size(&h);
  uint8_t *b = rd_xmalloc(*n ? *n : 1);
  dlhxplane__xline__pack(&h, b);
  return b;
}

static void write_plane(xctx *c, FILE *out, xp *p) {
  /* header: id, name, plane stats */
  Dlhxplane__XPlane h = DLHXPLANE__XPLANE__INIT;
  h.has_id = 1;
  h.id = p->id;
  h.name = p->name;
  Dlhxplane__XStat st[5], *stp[5];
  if (p->have_dev) {
    stp[0] = ustat(&st[0], S_CORES, p->props.sm_count);
    stp[1] = ustat(&st[1], S_MEMSIZE, p->props.total_mem);
    stp[2] = ustat(&st[2], S_CC_MAJOR, p->props.cc_major);
    stp[3] = ustat(&st[3], S_CC_MINOR, p->props.cc_minor);
    stp[4] = sstat(&st[4], S_VENDOR, (char *)"Nvidia"); /* CUDA devices */
    h.n_stats = 5;
    h.stats = stp;
  }
  size_t hn = dlhxplane__xplane__get_packed_size(&h);
  uint8_t *hb = rd_xmalloc(hn ? hn : 1);
  dlhxplane__xplane__pack(&h, hb);
  /* metadata entries */
  size_t total = hn, nent = p->nmeta + S_NSTATS - 1;
  uint8_t **eb = rd_xmalloc(nent * sizeof *eb);
  size_t *en = rd_xmalloc(nent * sizeof *en);
  for (size_t i = 0; i < nent; i++) {
    if (i < p->nmeta) {
      Dlhxplane__XEventMetadata m = DLHXPLANE__XEVENT_METADATA__INIT;
      m.has_id = 1;
      m.id = (int64_t)i + 1;
      m.name = m.display_name = p->meta[i];
      Dlhxplane__EventMetadataEntry e = DLHXPLANE__EVENT_METADATA_ENTRY__INIT;
      e.has_key = 1;
      e.key = m.id;
      e.value = &m;
      en[i] = dlhxplane__event_metadata_entry__get_packed_size(&e);
      eb[i] = rd_xmalloc(en[i]);
      dlhxplane__event_metadata_entry__pack(&e, eb[i]);
    } else {
      Dlhxplane__XStatMetadata m = DLHXPLANE__XSTAT_METADATA__INIT;
      m.has_id = 1;
      m.id = (int64_t)(i - p->nmeta) + 1;
      m.name = (char *)stat_names[m.id];
      Dlhxplane__StatMetadataEntry e = DLHXPLANE__STAT_METADATA_ENTRY__INIT;
      e.has_key = 1;
      e.key = m.id;
      e.value = &m;
      en[i] = dlhxplane__stat_metadata_entry__get_packed_size(&e);
      eb[i] = rd_xmalloc(en[i]);
      dlhxplane__stat_metadata_entry__pack(&e, eb[i]);
    }
    total += 1 + vlen(en[i]) + en[i];
  }
  /* lines */
  uint8_t **lb = rd_xmalloc((p->nlines ? p->nlines : 1) * sizeof *lb);
  size_t *ln = rd_xmalloc((p->nlines ? p->nlines : 1) * sizeof *ln);
  for (size_t i = 0; i < p->nlines; i++) {
    lb[i] = pack_line_header(&p->lines[i], c->base, &ln[i]);
    uint64_t len = ln[i] + p->lines[i].bytes;
    total += 1 + vlen(len) + len;
  }
  putc(0x0a, out); /* XSpace.planes */
  rd_put_varint(out, total);
  fwrite(hb, 1, hn, out);
  for (size_t i = 0; i < p->nlines; i++) {
    xl *l = &p->lines[i];
    putc(0x1a, out); /* XPlane.lines */
    rd_put_varint(out, ln[i] + l->bytes);
    fwrite(lb[i], 1, ln[i], out);
    copy_line_events(c, l, out);
    free(lb[i]);
  }
  for (size_t i = 0; i < nent; i++) {
    put_bytes(out, i < p->nmeta ? 0x22 : 0x2a, eb[i], en[i]); /* event_metadata / stat_metadata */
    free(eb[i]);
  }
  free(eb);
  free(en);
  free(lb);
  free(ln);
  free(hb);
}

static void free_plane(xp *p) {
  for (size_t i = 0; i < p->nlines; i++) {
    free(p->lines[i].name);
    if (p->lines[i].spill) fclose(p->lines[i].spill);
    if (p->lines[i].times) fclose(p->lines[i].times);
  }
  free(p->lines);
  for (size_t i = 0; i < p->nmeta; i++) free(p->meta[i]);
  free(p->meta);
  rd_m_free(&p->line_ix);
  rd_m_free(&p->meta_ix);
}

typedef struct xrun { const rd_opts *o; const char *run; } xrun;

static int xplane_one(void *ctx, ex_input *in, size_t index, size_t n) {
  const xrun *xr = ctx;
  const rd_opts *o = xr->o;
  const char *run = xr->run;
  int suffix = n > 1;
  (void)index;
  xctx c = {0};
  c.o = o;
  c.planes = rd_xmalloc(sizeof *c.planes);
  memset(c.planes, 0, sizeof *c.planes);
  c.nplanes = 1;
  c.planes[0].id = 1;
  snprintf(c.planes[0].name, sizeof c.planes[0].name, "/host:CPU");
  ex_links L = in->L;
  c.L = &in->L;
  int rc = RD_OK;
  c.pid = L.pid;
  /* hosts are named by rank ("rank3"); a trace without one by its host (and pid) */
  if (L.rank >= 0) snprintf(c.host, sizeof c.host, "rank%d", L.rank);
  else if (suffix) snprintf(c.host, sizeof c.host, "%.100s_%u", L.host, L.pid);
  else snprintf(c.host, sizeof c.host, "%s", L.host);
  char raw[sizeof c.host];
  snprintf(raw, sizeof raw, "%s", c.host);
  rd_safe_name(c.host, sizeof c.host, raw, "localhost"); /* a host name is the trace's word */
  for (char *h = c.host; *h; h++) /* xprof takes the host from the name up to the first '.' */
    if (*h == '/' || *h == '.' || *h == ' ') *h = '_';
  rd_sink all = {&c, x_packet, x_api, x_gpu, 0, NULL};
  if (ex_input_pass(in, o, &all) != RD_OK) rc = RD_BAD_INPUT;
  add_step_spans(&c);
  size_t dl = strlen(o->out) + strlen(run) + sizeof c.host + 64;
  char *dir = rd_xmalloc(dl), *file = rd_xmalloc(dl + 64), stem[sizeof c.host + 16], *done = NULL;
  snprintf(dir, dl, "%s/plugins/profile/%s", o->out, run);
  snprintf(stem, sizeof stem, "%s", c.host);
  snprintf(file, dl + 64, "%s/%s.xplane.pb", dir, stem);
  FILE *out = rd_mkdirs(dir) < 0 ? NULL : rd_create(file, 0);
  if (!out) {
    rc = RD_BAD_INPUT;
  } else {
    static char iobuf[1 << 20]; /* ours: setvbuf(f, NULL, ...) keeps glibc's 4 KiB */
    setvbuf(out, iobuf, _IOFBF, sizeof iobuf);
    for (size_t i = 0; i < c.nplanes; i++) write_plane(&c, out, &c.planes[i]);
    put_bytes(out, 0x22, (const uint8_t *)c.host, strlen(c.host)); /* XSpace.hostnames */
    if (c.io_error) rd_error("%s: temporary file error", file);
    /* two traces of one host and pid in one run get distinct names, nothing is replaced */
    done = rd_close_new(out, dir, stem, ".xplane.pb");
    if (!done || c.io_error) rc = RD_BAD_INPUT;
    else if (!o->quiet) fprintf(stderr, "dlhook: wrote %s\n", done);
  }
  free(done);
  for (size_t i = 0; i < c.nplanes; i++) free_plane(&c.planes[i]);
  free(c.planes);
  rd_map_free(&c.plane_ix, NULL);
  free(c.buf);
  for (size_t i = 0; i < c.nops; i++) {
    free(c.ops[i].name);
    if (c.ops[i].aten) free((char *)c.ops[i].type);
  }
  free(c.ops);
  rd_m_free(&c.op_ix);
  free(dir);
  free(file);
  return rc;
}

int ex_xplane(const rd_opts *o, char **files, size_t n) {
  /* run name: the time of the export, as TensorBoard's profiler names runs. The run directory
   * is always a new one, made by this export (a name taken, by an earlier export or by anyone,
   * moves on to NAME_2, NAME_3, ...), so nothing in it was planted. */
  char run[80], base[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(base, sizeof base, "%Y_%m_%d_%H_%M_%S", &tm);
  size_t pl = strlen(o->out) + 32;
  char *prof = rd_xmalloc(pl), *dir = rd_xmalloc(pl + sizeof run);
  snprintf(prof, pl, "%s/plugins/profile", o->out);
  if (rd_mkdirs(prof) < 0 || rd_dir_safe(prof) < 0) {
    free(prof);
    free(dir);
    return RD_BAD_INPUT;
  }
  snprintf(run, sizeof run, "%s", base);
  for (unsigned i = 2;; i++) {
    snprintf(dir, pl + sizeof run, "%s/%s", prof, run);
    if (mkdir(dir, 0777) == 0) break;
    if (errno != EEXIST || i > 100000) {
      rd_error("%s: %s", dir, strerror(errno));
      free(prof);
      free(dir);
      return RD_BAD_INPUT;
    }
    snprintf(run, sizeof run, "%s_%u", base, i);
  }
  free(prof);
  free(dir);
  xrun xr = {o, run};
  return ex_each(o, files, n, xplane_one, &xr);
}
