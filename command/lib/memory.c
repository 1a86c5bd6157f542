/* memory.c — the GPU memory ledger: every device allocation and free a trace recorded, replayed
 * in time order. `dlhook stats --memory [--json]` prints per process the peak of live device
 * bytes (per device and in all), what is still allocated at exit (leaks, with the stack that
 * allocated them) and, at each out-of-memory error (cudaErrorMemoryAllocation), the live
 * allocations of that moment with their stacks. Exporters draw the live-bytes counter track
 * with rd_memory_counter().
 *
 * Allocations: cudaMalloc, cudaMallocAsync, cudaMallocFromPoolAsync, cudaMallocManaged,
 * cudaMallocPitch, cudaMalloc3D (the wrappers record the returned pointer as `ptr` and the size)
 * and, called by the program itself (CUPTI driver callbacks), cuMemAlloc*, cuMemCreate (physical
 * memory of the virtual memory API, by handle). Frees: cudaFree, cudaFreeAsync, cuMemFree*,
 * cuMemRelease. cuMemMap/cuMemUnmap are recorded with (ptr, size) but do not change the ledger:
 * the memory is counted when it is created. Library workspaces count when the library allocates
 * them through these calls (cuBLAS/cuDNN workspaces the program passes in are its own
 * allocations). The device is the thread's last cudaSetDevice (0 before any). Host allocations
 * (cudaMallocHost, cudaHostAlloc) are not device memory and are left out. A free of a pointer
 * the trace never saw allocated (before a capture window) is counted as unmatched. A folded
 * event (count identical calls recorded once: in practice a failing allocation retried) counts
 * count failures and keeps one out-of-memory snapshot, at the end of its last call.
 *
 * In PyTorch's terms (traces of a program that loaded libtorch, with stacks): every allocation
 * counts for the innermost aten operator, the module path and the user's line of its stack
 * (rd_torch_of), in three tables of bytes and allocations, the bytes of it live at the peak and
 * the bytes still live at exit. PyTorch's caching allocator asks CUDA for large segments only:
 * `dlhook record --torch-memory` makes it allocate every tensor through cudaMallocAsync. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_fmt.h"
#include "rd.h"
#include "rd_scan.h"

enum { OP_ALLOC = 1, OP_FREE = 2, OP_SETDEV = 3 };

typedef struct mem_ev {
  uint64_t ts;          /* end of the call (of the last call of a folded event) */
  uint64_t count;       /* calls (> 1: a folded event) */
  uint64_t ptr, bytes, stream;
  uint32_t tid, stack, fn;
  int op;
  int64_t ret;
  int device;           /* OP_SETDEV: the device */
} mem_ev;

typedef struct fn_kind {
  int op;               /* 0 = not a memory call */
  int ptr, size, stream, pitch, height, depth, dev; /* argument indexes, -1 = absent */
} fn_kind;

static int arg_index(const rd_func *f, const char *name) {
  for (size_t i = 0; i < f->nargs; i++)
    if (f->argname[i] && !strcmp(f->argname[i], name)) return (int)i;
  return -1;
}

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static fn_kind classify(const rd_func *f) {
  fn_kind k = {0, -1, -1, -1, -1, -1, -1, -1};
  if (!f || !f->name) return k;
  const char *n = f->name;
  if (starts(n, "cudaMallocHost") || starts(n, "cudaHostAlloc") || starts(n, "cudaFreeHost") ||
      starts(n, "cudaMallocArray") || starts(n, "cudaMalloc3DArray") ||
      starts(n, "cudaMallocMipmapped") || starts(n, "cudaFreeArray") ||
      starts(n, "cudaFreeMipmapped") || starts(n, "cuMemAllocHost") || starts(n, "cuMemFreeHost"))
    return k;
  if (starts(n, "cu") && !starts(n, "cuda") && f->nargs == 0) {
    /* driver calls seen only by CUPTI: no argument names, the order of preload/cupti.c
     * (allocations: ptr, size, stream; frees: ptr, stream; cuMemCreate/Release: the handle) */
    if (starts(n, "cuMemAlloc") || starts(n, "cuMemCreate")) {
      k.op = OP_ALLOC; k.ptr = 0; k.size = 1; k.stream = 2;
    } else if (starts(n, "cuMemFree") || starts(n, "cuMemRelease")) {
      k.op = OP_FREE; k.ptr = 0; k.stream = 1;
    }
    return k;
  }
  if (starts(n, "cudaMalloc") || starts(n, "cuMemAlloc")) {
    k.op = OP_ALLOC;
    k.ptr = arg_index(f, "ptr");
    if (k.ptr < 0) k.ptr = arg_index(f, "dptr");
    k.size = arg_index(f, "size");
    if (k.size < 0) k.size = arg_index(f, "bytesize");
    k.stream = arg_index(f, "hStream");
    if (k.stream < 0) k.stream = arg_index(f, "stream");
    k.pitch = arg_index(f, "pitch");
    k.height = arg_index(f, "extent_height");
    k.depth = arg_index(f, "extent_depth");
    if (k.ptr < 0 || (k.size < 0 && (k.pitch < 0 || k.height < 0))) k.op = 0;
  } else if (starts(n, "cudaFree") || starts(n, "cuMemFree")) {
    k.op = OP_FREE;
    k.ptr = arg_index(f, "devPtr");
    if (k.ptr < 0) k.ptr = arg_index(f, "dptr");
    k.stream = arg_index(f, "hStream");
    if (k.stream < 0) k.stream = arg_index(f, "stream");
    if (k.ptr < 0) k.op = 0;
  } else if (!strcmp(n, "cudaSetDevice")) {
    k.op = OP_SETDEV;
    k.dev = arg_index(f, "device");
    if (k.dev < 0) k.op = 0;
  }
  return k;
}

static int by_ts(const void *x, const void *y) {
  const mem_ev *a = x, *b = y;
  return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* ---------------------------------------------------------------- the ledger of one trace */

typedef struct live_alloc {
  uint64_t ptr, bytes, stream, ts;
  uint32_t stack, fn;
  int device;
  size_t rec;           /* its entry in ledger.recs */
} live_alloc;

/* Every successful allocation, for the tables by operator, module and line. */
typedef struct alloc_rec {
  uint64_t bytes;
  uint32_t stack;
  size_t at, freed;     /* event indexes of the allocation and its free (SIZE_MAX: never) */
} alloc_rec;

typedef struct oom {
  uint64_t ts, requested, live_bytes;
  uint64_t calls;       /* failed calls (> 1: a folded event of retries) */
  uint64_t stream;
  int device;
  uint32_t fn, stack, tid;
  live_alloc *live;
  size_t nlive;
} oom;

#define MAXDEV 64
typedef struct ledger {
  uint32_t pid;
  uint64_t allocs, frees, alloc_bytes, unmatched_frees, failed;
  uint64_t live, peak, peak_ts;
  uint64_t dev_live[MAXDEV], dev_peak[MAXDEV];
  live_alloc *v;        /* live allocations (open addressing would be faster; traces hold few) */
  size_t n, cap;
  oom *ooms;
  size_t nooms;
  rd_mem_sample *samples;
  size_t nsamples, capsamples;
  alloc_rec *recs;
  size_t nrecs, caprecs;
  size_t peak_at;       /* event index of the allocation that reached the peak */
} ledger;

static void sample(ledger *l, const mem_ev *e, int dev, uint64_t ptr, int64_t bytes) {
  if (l->nsamples == l->capsamples) {
    l->capsamples = l->capsamples ? l->capsamples * 2 : 256;
    l->samples = rd_xrealloc(l->samples, l->capsamples * sizeof *l->samples);
  }
  l->samples[l->nsamples++] = (rd_mem_sample){e->ts, (uint32_t)dev, l->dev_live[dev], l->live, ptr,
                                              bytes, e->tid, e->stack, e->fn, e->stream};
}

static void replay(ledger *l, mem_ev *ev, size_t n) {
  int tdev_tid[256] = {0}, tdev_dev[256] = {0}; /* cudaSetDevice per thread (last 256 threads) */
  if (n) rd_qsort(ev, n, sizeof *ev, by_ts); /* ev may be NULL when there is nothing */
  for (size_t i = 0; i < n; i++) {
    mem_ev *e = &ev[i];
    int dev = 0;
    unsigned slot = e->tid & 255;
    if (tdev_tid[slot] == (int)e->tid) dev = tdev_dev[slot];
    if (e->op == OP_SETDEV) {
      if (e->ret == 0) { tdev_tid[slot] = (int)e->tid; tdev_dev[slot] = e->device; }
      continue;
    }
    if (dev < 0 || dev >= MAXDEV) dev = 0;
    if (e->op == OP_ALLOC) {
      if (e->ret != 0 || !e->ptr) {
        l->failed += e->count;
        if (e->ret == 2) { /* cudaErrorMemoryAllocation (CUDA_ERROR_OUT_OF_MEMORY is 2 too) */
          l->ooms = rd_xrealloc(l->ooms, (l->nooms + 1) * sizeof *l->ooms);
          oom *o = &l->ooms[l->nooms++];
          o->ts = e->ts;
          o->requested = e->bytes;
          o->calls = e->count;
          o->live_bytes = l->live;
          o->fn = e->fn;
          o->stack = e->stack;
          o->tid = e->tid;
          o->stream = e->stream;
          o->device = dev;
          o->nlive = l->n;
          o->live = rd_xmalloc((l->n ? l->n : 1) * sizeof *o->live);
          if (l->n) memcpy(o->live, l->v, l->n * sizeof *l->v);
        }
        continue;
      }
      if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = rd_xrealloc(l->v, l->cap * sizeof *l->v);
      }
      if (l->nrecs == l->caprecs) {
        l->caprecs = l->caprecs ? l->caprecs * 2 : 64;
        l->recs = rd_xrealloc(l->recs, l->caprecs * sizeof *l->recs);
      }
      l->recs[l->nrecs] = (alloc_rec){e->bytes, e->stack, i, SIZE_MAX};
      l->v[l->n++] = (live_alloc){e->ptr, e->bytes, e->stream, e->ts, e->stack, e->fn, dev, l->nrecs++};
      l->allocs++;
      l->alloc_bytes += e->bytes;
      l->live += e->bytes;
      l->dev_live[dev] += e->bytes;
      if (l->live > l->peak) { l->peak = l->live; l->peak_ts = e->ts; l->peak_at = i; }
      if (l->dev_live[dev] > l->dev_peak[dev]) l->dev_peak[dev] = l->dev_live[dev];
      sample(l, e, dev, e->ptr, (int64_t)e->bytes);
    } else if (e->op == OP_FREE) {
      if (!e->ptr || e->ret != 0) continue;
      size_t j = l->n;
      while (j > 0 && l->v[j - 1].ptr != e->ptr) j--;
      if (!j) { l->unmatched_frees++; continue; }
      live_alloc a = l->v[j - 1];
      memmove(&l->v[j - 1], &l->v[j], (l->n - j) * sizeof *l->v);
      l->n--;
      l->frees++;
      l->recs[a.rec].freed = i;
      l->live -= a.bytes;
      l->dev_live[a.device] -= a.bytes;
      sample(l, e, a.device, a.ptr, -(int64_t)a.bytes);
    }
  }
}

/* The memory calls of one trace, gathered by a sink (rd_memory_sink). */
struct rd_memcol {
  rd_map kinds;   /* fn id -> fn_kind* */
  fn_kind *last;  /* that of the last call's function (calls come in runs), last_fn's */
  uint32_t last_fn;
  mem_ev *ev;
  size_t n, cap;
};

static void m_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  rd_memcol *c = ctx;
  if (p->data_case != DLH__PACKET__DATA_FUNCTION) return;
  /* redefined: classify again (a NULL value would break the map's probe chains) */
  fn_kind *old = rd_map_get(&c->kinds, p->function->id);
  if (old) *old = classify(rd_trace_func(t, p->function->id));
}

static void m_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  rd_memcol *c = ctx;
  fn_kind *k = c->last && c->last_fn == e->fn ? c->last : rd_map_get(&c->kinds, e->fn);
  if (!k) {
    k = rd_xmalloc(sizeof *k);
    *k = classify(rd_trace_func(t, e->fn));
    rd_map_put(&c->kinds, e->fn, k);
  }
  c->last = k, c->last_fn = e->fn; /* stays valid: a redefinition updates it in place */
  if (!k->op) return;
#define ARG(i) ((i) >= 0 && (uint32_t)(i) < e->nargs ? e->args[i] : 0)
  mem_ev m = {0};
  m.ts = e->start_ns + dlh_api_span(e) - (uint64_t)rd_offset_of(t->path); /* trace clock */
  m.count = dlh_api_calls(e);
  m.op = k->op;
  m.ret = e->ret;
  m.tid = tid;
  m.stack = e->stack;
  m.fn = e->fn;
  m.ptr = ARG(k->ptr);
  m.stream = ARG(k->stream);
  if (k->op == OP_SETDEV) m.device = (int)ARG(k->dev);
  if (k->op == OP_ALLOC) {
    if (k->size >= 0) m.bytes = ARG(k->size);
    else m.bytes = ARG(k->pitch) * ARG(k->height) * (ARG(k->depth) ? ARG(k->depth) : 1);
  }
#undef ARG
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 1024;
    c->ev = rd_xrealloc(c->ev, c->cap * sizeof *c->ev);
  }
  c->ev[c->n++] = m;
}

rd_memcol *rd_memcol_new(void) {
  rd_memcol *c = rd_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  return c;
}

/* Every memory call counts, whatever the window: the live bytes at the window's start include
 * what was allocated before it. */
rd_sink rd_memory_sink(rd_memcol *c) { return (rd_sink){c, m_packet, m_api, NULL, 1, NULL}; }

/* Reads the memory calls of an open trace (its second pass) into *out; returns the count. */
static size_t read_events(rd_trace *t, mem_ev **out, int *rc) {
  rd_memcol c = {0};
  rd_opts o;
  memset(&o, 0, sizeof o);
  o.quiet = 1;
  rd_sink s = rd_memory_sink(&c);
  if (rd_pass(t, &o, NULL, &s) != RD_OK) *rc = RD_BAD_INPUT;
  rd_map_free(&c.kinds, free);
  *out = c.ev;
  return c.n;
}

static void ledger_free(ledger *l) {
  for (size_t i = 0; i < l->nooms; i++) free(l->ooms[i].live);
  free(l->ooms);
  free(l->v);
  free(l->samples);
  free(l->recs);
}

void rd_memcol_free(rd_memcol *c) {
  if (!c) return;
  rd_map_free(&c->kinds, free);
  free(c->ev);
  free(c);
}

long rd_memcol_replay(rd_memcol *c, rd_mem_sample **out, rd_mem_fail **fails, size_t *nfails,
                      int keep) {
  ledger l = {0};
  replay(&l, c->ev, c->n);
  if (fails) {
    *fails = rd_xmalloc((l.nooms ? l.nooms : 1) * sizeof **fails);
    for (size_t i = 0; i < l.nooms; i++) {
      const oom *o = &l.ooms[i];
      (*fails)[i] = (rd_mem_fail){o->ts, o->requested, o->calls, o->stream, o->live_bytes,
                                  (uint32_t)o->device, o->tid, o->stack, o->fn};
    }
    *nfails = l.nooms;
  }
  if (!keep) rd_memcol_free(c);
  *out = l.samples;
  l.samples = NULL;
  long ns = (long)l.nsamples;
  ledger_free(&l);
  return ns;
}

long rd_memcol_samples(rd_memcol *c, rd_mem_sample **out, int keep) {
  return rd_memcol_replay(c, out, NULL, NULL, keep);
}

/* ---------------------------------------------------------------- output */

/* The first frame of a stack that is not inside dlhook or the CUDA libraries: "where". */
static const char *frame_label(const rd_frame *f, char *buf, size_t cap) {
  if (f->function && f->file && f->line)
    snprintf(buf, cap, "%s (%s:%u)", f->function, strrchr(f->file, '/') ? strrchr(f->file, '/') + 1 : f->file, f->line);
  else if (f->function) snprintf(buf, cap, "%s", f->function);
  else snprintf(buf, cap, "0x%" PRIx64 "%s%s", f->pc, f->module ? " in " : "", f->module ? f->module : "");
  return buf;
}

static int ours(const rd_frame *f) {
  const char *m = f->module;
  if (!m) return 0;
  const char *b = strrchr(m, '/') ? strrchr(m, '/') + 1 : m;
  return !strncmp(b, "libdlhook", 9) || !strncmp(b, "libcudart", 9) || !strncmp(b, "libcuda.", 8);
}

static void json_stack(FILE *f, const rd_trace *t, uint32_t stack) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  char buf[512];
  putc('[', f);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (ours(&fr[i])) continue;
    if (!first) putc(',', f);
    rd_json_str(f, frame_label(&fr[i], buf, sizeof buf));
    first = 0;
  }
  putc(']', f);
}

static const char *where(const rd_trace *t, uint32_t stack, char *buf, size_t cap) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  for (size_t i = 0; i < n; i++)
    if (!ours(&fr[i])) return frame_label(&fr[i], buf, cap);
  snprintf(buf, cap, "%s", stack ? "(stack outside the program)" : "(no stack recorded)");
  return buf;
}

static const char *fmt_bytes(char *buf, size_t n, uint64_t b) { return dlh_fmt_bytes(buf, n, b); }

static void json_alloc(FILE *f, const rd_trace *t, const live_alloc *a) {
  fprintf(f, "{\"ptr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"device\":%d,\"stream\":\"0x%" PRIx64
             "\",\"ts_ns\":%" PRIu64 ",\"function\":",
          a->ptr, a->bytes, a->device, a->stream, a->ts);
  rd_json_str(f, rd_func_name(t, a->fn));
  fputs(",\"stack\":", f);
  json_stack(f, t, a->stack);
  putc('}', f);
}

/* s fitted to a terminal cell of width columns in buf (4 * width + 4 bytes), returned; the
 * padding is taken off again for the last field of a line. */
static const char *term(char *buf, size_t width, const char *s) {
  rd_term_fit(buf, 4 * width + 4, width, s);
  return buf;
}
static const char *term_end(char *buf, size_t width, const char *s) {
  rd_term_fit(buf, 4 * width + 4, width, s);
  size_t n = strlen(buf), w = strlen(s);
  while (n > w && buf[n - 1] == ' ') buf[--n] = 0; /* only padding: s itself is longer */
  return buf;
}

/* ---------------------------------------------------------------- by operator, module, line */

typedef struct by_row {
  const char *name;     /* interned by torch.c: equal names, equal pointers */
  uint64_t allocs, bytes, peak_live, leaked;
} by_row;
typedef struct by_tab {
  by_row *v;
  size_t n, cap;
} by_tab;
enum { BY_OP, BY_MODULE, BY_LINE, NBY };
static const char *const by_key[NBY] = {"by_operator", "by_module", "by_line"};
static const char *const by_title[NBY] = {"operator", "module", "user line"};

static void by_add(by_tab *tb, const char *name, const alloc_rec *r, int at_peak) {
  if (!name) return;
  size_t k = 0;
  while (k < tb->n && tb->v[k].name != name) k++;
  if (k == tb->n) {
    if (tb->n == tb->cap) {
      tb->cap = tb->cap ? tb->cap * 2 : 32;
      tb->v = rd_xrealloc(tb->v, tb->cap * sizeof *tb->v);
    }
    tb->v[tb->n++] = (by_row){name, 0, 0, 0, 0};
  }
  by_row *w = &tb->v[k];
  w->allocs++;
  w->bytes += r->bytes;
  if (at_peak) w->peak_live += r->bytes;
  if (r->freed == SIZE_MAX) w->leaked += r->bytes;
}

static int by_bytes(const void *x, const void *y) {
  const by_row *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
  return strcmp(a->name, b->name);
}

/* The three tables of trace t's ledger l (empty without PyTorch); returns whether t loaded
 * libtorch. */
static int by_tables(rd_trace *t, const ledger *l, by_tab tb[NBY]) {
  memset(tb, 0, NBY * sizeof *tb);
  if (!rd_stacks_have_module(t, "libtorch_cpu.")) return 0;
  uint32_t last_stack = 0;
  const rd_torch *c = NULL;
  for (size_t k = 0; k < l->nrecs; k++) {
    const alloc_rec *r = &l->recs[k];
    if (!r->stack) continue;
    if (!c || r->stack != last_stack) { c = rd_torch_of(t, r->stack); last_stack = r->stack; }
    int at_peak = l->peak && r->at <= l->peak_at && (r->freed == SIZE_MAX || r->freed > l->peak_at);
    by_add(&tb[BY_OP], rd_torch_op(c), r, at_peak);
    by_add(&tb[BY_MODULE], c->module, r, at_peak);
    by_add(&tb[BY_LINE], c->user, r, at_peak);
  }
  for (int b = 0; b < NBY; b++)
    if (tb[b].n) rd_qsort(tb[b].v, tb[b].n, sizeof *tb[b].v, by_bytes);
  return 1;
}

static void by_json(FILE *f, const by_tab tb[NBY]) {
  for (int b = 0; b < NBY; b++) {
    fprintf(f, ",\n  \"%s\":[", by_key[b]);
    for (size_t k = 0; k < tb[b].n; k++) {
      const by_row *w = &tb[b].v[k];
      fputs(k ? ",{\"name\":" : "{\"name\":", f);
      rd_json_str(f, w->name);
      fprintf(f, ",\"allocations\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
                 ",\"leaked_bytes\":%" PRIu64 "}", w->allocs, w->bytes, w->peak_live, w->leaked);
    }
    putc(']', f);
  }
}

static void by_table(FILE *f, const by_tab tb[NBY], int torch, int have_recs) {
  int any = 0;
  for (int b = 0; b < NBY; b++) any |= tb[b].n != 0;
  if (!any) {
    if (have_recs)
      fprintf(f, "  by operator, module, line: %s\n",
              torch ? "no allocation inside a PyTorch operator, module or user line (recorded "
                      "without stacks?)"
                    : "none (no PyTorch in this trace)");
    return;
  }
  char name[4 * 44 + 4], b1[32], b2[32], b3[32];
  for (int b = 0; b < NBY; b++) {
    if (!tb[b].n) continue;
    rd_term_fit(name, sizeof name, 44, by_title[b]);
    fprintf(f, "  %s %9s %11s %11s %11s\n", name, "allocs", "bytes", "at peak", "at exit");
    for (size_t k = 0; k < tb[b].n && k < 15; k++) {
      const by_row *w = &tb[b].v[k];
      rd_term_fit(name, sizeof name, 44, w->name);
      fprintf(f, "  %s %9" PRIu64 " %11s %11s %11s\n", name, w->allocs,
              fmt_bytes(b1, sizeof b1, w->bytes), fmt_bytes(b2, sizeof b2, w->peak_live),
              fmt_bytes(b3, sizeof b3, w->leaked));
    }
    if (tb[b].n > 15) fprintf(f, "  ... %zu more\n", tb[b].n - 15);
  }
}

static void by_free(by_tab tb[NBY]) {
  for (int b = 0; b < NBY; b++) free(tb[b].v);
}

/* The --json object of one trace's ledger l (t at path; lb: its bytes live at exit; tb: the
 * PyTorch tables), after a comma unless it is the first. */
static void trace_json(FILE *f, const char *path, rd_trace *t, const ledger *l, uint64_t lb,
                       const by_tab tb[NBY], int first_trace) {
  fprintf(f, "%s\n {\"path\":", first_trace ? "" : ",");
  rd_json_str(f, path);
  fprintf(f, ",\"pid\":%u,\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64
             ",\"alloc_bytes\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"unmatched_frees\":%" PRIu64
             ",\"peak_bytes\":%" PRIu64 ",\"peak_ns\":%" PRIu64 ",\"live_at_exit_bytes\":%" PRIu64
             ",\"devices\":[",
          t->pid, l->allocs, l->frees, l->alloc_bytes, l->failed, l->unmatched_frees, l->peak,
          l->peak_ts, lb);
  int first = 1;
  for (int d = 0; d < MAXDEV; d++)
    if (l->dev_peak[d]) {
      fprintf(f, "%s{\"device\":%d,\"peak_bytes\":%" PRIu64 ",\"live_at_exit_bytes\":%" PRIu64 "}",
              first ? "" : ",", d, l->dev_peak[d], l->dev_live[d]);
      first = 0;
    }
  fputs("],\n  \"leaks\":[", f);
  for (size_t k = 0; k < l->n; k++) {
    fputs(k ? ",\n   " : "\n   ", f);
    json_alloc(f, t, &l->v[k]);
  }
  fputs("],\n  \"ooms\":[", f);
  for (size_t k = 0; k < l->nooms; k++) {
    const oom *o = &l->ooms[k];
    fprintf(f, "%s{\"ts_ns\":%" PRIu64 ",\"function\":", k ? "," : "", o->ts);
    rd_json_str(f, rd_func_name(t, o->fn));
    fprintf(f, ",\"requested_bytes\":%" PRIu64 ",\"live_bytes\":%" PRIu64 ",\"calls\":%" PRIu64
               ",\"stack\":", o->requested, o->live_bytes, o->calls);
    json_stack(f, t, o->stack);
    fputs(",\"live\":[", f);
    for (size_t m = 0; m < o->nlive; m++) {
      if (m) putc(',', f);
      json_alloc(f, t, &o->live[m]);
    }
    fputs("]}", f);
  }
  putc(']', f);
  by_json(f, tb);
  putc('}', f);
}

/* The text lines of one trace's ledger l: the totals, per device, the leaks, the
 * out-of-memory errors and the PyTorch tables (torch: whether t loaded libtorch). */
static void trace_text(FILE *f, const char *path, rd_trace *t, const ledger *l, uint64_t lb,
                       const by_tab tb[NBY], int torch) {
  char b1[32], b2[32], b3[32], name[4 * 30 + 4], c1[4 * 24 + 4], c2[4 * 62 + 4];
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  rd_term_fit(name, sizeof name, 30, base);
  fprintf(f, "%-30s %8u %6s %9" PRIu64 " %9" PRIu64 " %11s %11s %7zu\n", name, t->pid, "all",
          l->allocs, l->frees, fmt_bytes(b1, sizeof b1, l->peak), fmt_bytes(b2, sizeof b2, lb), l->n);
  int ndev = 0;
  for (int d = 0; d < MAXDEV; d++) ndev += l->dev_peak[d] != 0;
  if (ndev > 1)
    for (int d = 0; d < MAXDEV; d++)
      if (l->dev_peak[d])
        fprintf(f, "%-30s %8s %6d %9s %9s %11s %11s\n", "", "", d, "", "",
                fmt_bytes(b1, sizeof b1, l->dev_peak[d]), fmt_bytes(b2, sizeof b2, l->dev_live[d]));
  if (l->n) {
    fprintf(f, "  %-12s %-22s %s\n", "leaked", "allocated by", "at");
    for (size_t k = 0; k < l->n && k < 20; k++)
      fprintf(f, "  %-12s %s %s\n", fmt_bytes(b1, sizeof b1, l->v[k].bytes),
              term(c1, 22, rd_func_name(t, l->v[k].fn)),
              term_end(c2, 62, where(t, l->v[k].stack, b3, sizeof b3)));
    if (l->n > 20) fprintf(f, "  ... %zu more\n", l->n - 20);
  }
  for (size_t k = 0; k < l->nooms; k++) {
    const oom *o = &l->ooms[k];
    fprintf(f, "  out of memory: %s of %s at %s\n", term_end(c1, 24, rd_func_name(t, o->fn)),
            fmt_bytes(b1, sizeof b1, o->requested), term_end(c2, 50, where(t, o->stack, b3, sizeof b3)));
    if (o->calls > 1) fprintf(f, "  (%" PRIu64 " calls in a row, folded)\n", o->calls);
    fprintf(f, "  live then: %zu allocation%s, %s\n", o->nlive, o->nlive == 1 ? "" : "s",
            fmt_bytes(b2, sizeof b2, o->live_bytes));
    for (size_t m = 0; m < o->nlive && m < 20; m++)
      fprintf(f, "    %-12s %s %s\n", fmt_bytes(b1, sizeof b1, o->live[m].bytes),
              term(c1, 22, rd_func_name(t, o->live[m].fn)),
              term_end(c2, 60, where(t, o->live[m].stack, b2, sizeof b2)));
  }
  if (l->unmatched_frees)
    fprintf(f, "  %" PRIu64 " frees of memory allocated before the trace (or its capture window)\n",
            l->unmatched_frees);
  by_table(f, tb, torch, l->nrecs != 0);
}

/* --json: all leaks of all traces, again at the top level (each with its pid); closes the traces
 * and ledgers kept (kok[i]) and ends the object. */
static void all_leaks_json(FILE *f, rd_trace *kt, ledger *kl, char *kok, size_t nfiles) {
  int first = 1;
  for (size_t i = 0; i < nfiles; i++) {
    if (!kok[i]) continue;
    rd_trace t = kt[i];
    ledger l = kl[i];
    for (size_t k = 0; k < l.n; k++) {
      fprintf(f, "%s\n {\"pid\":%u,", first ? "" : ",", t.pid);
      first = 0;
      /* json_alloc without its opening brace */
      fprintf(f, "\"ptr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"device\":%d,\"function\":",
              l.v[k].ptr, l.v[k].bytes, l.v[k].device);
      rd_json_str(f, rd_func_name(&t, l.v[k].fn));
      fputs(",\"stack\":", f);
      json_stack(f, &t, l.v[k].stack);
      putc('}', f);
    }
    ledger_free(&l);
    rd_trace_close(&t);
    kok[i] = 0;
  }
  fputs("]}\n", f);
}

int rd_memory_stats(char **files, size_t nfiles, int json, FILE *f) {
  return rd_memory_stats_of(files, NULL, NULL, nfiles, json, f);
}

int rd_memory_stats_of(char **files, rd_trace *T, rd_memcol **mc, size_t nfiles, int json, FILE *f) {
  int rc = RD_OK;
  uint64_t total_peak = 0, leaked = 0, nleaks = 0;
  int ntr = 0;
  /* with --json every trace's ledger is printed twice (per trace, and all leaks at the top
   * level): kept from the first reading, not read again */
  rd_trace *kt = json ? calloc(nfiles ? nfiles : 1, sizeof *kt) : NULL;
  ledger *kl = json ? calloc(nfiles ? nfiles : 1, sizeof *kl) : NULL;
  char *kok = json ? calloc(nfiles ? nfiles : 1, 1) : NULL;
  if (json && (!kt || !kl || !kok)) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  if (json) fputs("{\"traces\":[", f);
  else fprintf(f, "%-30s %8s %6s %9s %9s %11s %11s %7s\n", "GPU memory", "pid", "device",
               "allocs", "frees", "peak", "at exit", "leaks");
  /* 30+9+7+10+10+12+12+8 = 98 columns */
  for (size_t i = 0; i < nfiles; i++) {
    rd_trace t;
    mem_ev *ev;
    size_t n;
    if (T) { /* read already: the trace and its memory calls are handed over */
      t = T[i];
      ev = mc[i]->ev;
      n = mc[i]->n;
      mc[i]->ev = NULL;
      rd_memcol_free(mc[i]);
      mc[i] = NULL;
    } else {
      if (rd_trace_open(&t, files[i]) < 0) { rc = RD_BAD_INPUT; continue; }
      n = read_events(&t, &ev, &rc);
    }
    ledger l = {0};
    replay(&l, ev, n);
    free(ev);
    total_peak += l.peak;
    uint64_t lb = 0;
    for (size_t k = 0; k < l.n; k++) lb += l.v[k].bytes;
    leaked += lb;
    nleaks += l.n;
    by_tab tb[NBY];
    int torch = by_tables(&t, &l, tb);
    if (json) trace_json(f, files[i], &t, &l, lb, tb, ntr++ == 0);
    else trace_text(f, files[i], &t, &l, lb, tb, torch);
    by_free(tb);
    if (json) {
      kt[i] = t;
      kl[i] = l;
      kok[i] = 1;
    } else {
      ledger_free(&l);
      rd_trace_close(&t);
    }
  }
  if (json)
    fprintf(f, "],\n\"peak_bytes\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64 ",\"leak_count\":%" PRIu64
               ",\"leaks\":[", total_peak, leaked, nleaks);
  if (json) {
    all_leaks_json(f, kt, kl, kok, nfiles);
  } else {
    char b1[32], b2[32];
    fprintf(f, "\npeak %s (sum of the processes' peaks), %" PRIu64 " allocation%s still live at exit (%s)\n",
            fmt_bytes(b1, sizeof b1, total_peak), nleaks, nleaks == 1 ? "" : "s",
            fmt_bytes(b2, sizeof b2, leaked));
  }
  for (size_t i = 0; json && i < nfiles; i++)
    if (kok[i]) { ledger_free(&kl[i]); rd_trace_close(&kt[i]); }
  free(kt);
  free(kl);
  free(kok);
  return rc;
}
