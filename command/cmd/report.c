/* report.c — `dlhook report -o report.html TRACE...`: one self-contained HTML page (inline CSS,
 * JS and SVG; nothing loaded from the network) to read or share: the headline numbers, the
 * GPU-time flame graph (flame_svg.c's interactive SVG, inlined) and, for traces with host samples,
 * the on-CPU and the wait flame graphs beside it, a timeline overview (one lane per thread, per
 * thread's host samples, per NVTX thread, per GPU stream, the live device memory of each
 * process, capture windows shaded), top kernels and top calls as HTML tables, and the terminal
 * summaries of `dlhook stats` (GEMM/convolution/collective tables and host time included) and
 * `dlhook stats --memory`. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlh_fmt.h"
#include "export.h"
#include "flame.h"
#include "rd.h"
#include "rd_memtl.h"
#include "rd_opts.h"

int cmd_stats(int argc, char **argv);

#define MAX_LANES 4096
#define MAX_DETAIL 300000  /* events embedded with their details; see detail_threshold() */

/* lanes: a thread's calls, its NVTX ranges, a GPU stream, a thread's PyTorch modules and
 * operators (torch.c), a thread's host samples */
enum { L_API = 0, L_NVTX = 1, L_GPU = 2, L_OPS = 3, L_SAMPLES = 4 };

typedef struct lane {
  uint32_t pid, kind, a, b;  /* L_API/L_NVTX: a = tid; L_GPU: a = device, b = stream */
  uint32_t group;
} lane;

/* One timeline event: start/end in trace ns (aligned), name/info/stack as string indexes. */
typedef struct ev {
  uint64_t s, e, link;
  uint32_t lane, name, info, stack;
} ev;

typedef struct agg { char *name; uint64_t count, total, max; int domain; } agg;
typedef struct aggs {
  agg *v;
  size_t n, cap;
  rd_u64map ix; /* keyed hash of (name, domain) -> index: a trace may hold any number of names */
} aggs;

/* interned strings of the page */
typedef struct strtab { char **v; size_t n, cap; uint32_t *slot; size_t nslot; } strtab;

typedef struct group { uint32_t pid; int rank; char *label; } group;

typedef struct report {
  lane *lanes[MAX_LANES];
  size_t nlanes;
  ev *evs;
  size_t nevs, capevs;
  size_t seen;               /* events added, kept or not (compact_evs) */
  uint64_t floor_th[2];      /* compact_evs: shorter events of budget [samples] are left out */
  uint64_t t0, t1;
  aggs kernels, calls;
  uint64_t api_calls, kernels_n, kernel_ns, gpu_records, dropped;
  struct { uint64_t s, e; } win[256];
  size_t nwin;
  uint64_t open_at;          /* capture window open since (0 = none) */
  uint32_t pid;
  uint32_t group;            /* group of the trace being read */
  group *groups;
  size_t ngroups;
  struct { uint32_t group; rd_mem_sample *v; long n; char *tl; size_t tllen; } mem[64];
  size_t nmem;
  char **procs;              /* one line per process */
  size_t nprocs;
  strtab st;
  rd_map threads;            /* tid -> thread name (of the trace being read) */
  rd_map stackstr;           /* stack id -> string index + 1 (of the trace being read) */
  rd_map last_sample;        /* tid -> time of its last host sample + 1 (the trace being read) */
  uint64_t samples[2];       /* host samples: on-CPU, wait */
  rd_u64map ext;             /* CUPTI correlation id -> external id (kind 7), this trace */
  rd_trace *cur;             /* the trace being read */
  rd_spans *sp;              /* its modules and operators (the PyTorch lanes) */
  size_t first_ev;           /* first event of the trace being read */
} report;

static uint32_t intern(strtab *t, const char *s) {
  if (!s) s = "";
  if (t->n * 2 >= t->nslot) {
    size_t ns = t->nslot ? t->nslot * 2 : 4096;
    uint32_t *slot = calloc(ns, sizeof *slot);
    if (!slot) abort();
    for (size_t i = 0; i < t->nslot; i++)
      if (t->slot[i]) {
        uint64_t h = 1469598103934665603ull;
        for (const char *p = t->v[t->slot[i] - 1]; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
        size_t k = h & (ns - 1);
        while (slot[k]) k = (k + 1) & (ns - 1);
        slot[k] = t->slot[i];
      }
    free(t->slot);
    t->slot = slot;
    t->nslot = ns;
  }
  uint64_t h = 1469598103934665603ull;
  for (const char *p = s; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  size_t k = h & (t->nslot - 1);
  while (t->slot[k]) {
    if (!strcmp(t->v[t->slot[k] - 1], s)) return t->slot[k] - 1;
    k = (k + 1) & (t->nslot - 1);
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 1024;
    t->v = rd_xrealloc(t->v, t->cap * sizeof *t->v);
  }
  t->v[t->n] = rd_xstrdup(s);
  t->slot[k] = (uint32_t)t->n + 1;
  return (uint32_t)t->n++;
}

static uint32_t lane_of(report *r, uint32_t kind, uint32_t a, uint32_t b) {
  for (size_t i = r->nlanes; i-- > 0;) {
    lane *l = r->lanes[i];
    if (l->pid != r->pid || l->group != r->group) break; /* lanes of this trace are at the end */
    if (l->kind == kind && l->a == a && l->b == b) return (uint32_t)i;
  }
  if (r->nlanes == MAX_LANES) return MAX_LANES; /* too many: not drawn */
  lane *l = calloc(1, sizeof *l);
  if (!l) return MAX_LANES;
  l->pid = r->pid;
  l->group = r->group;
  l->kind = kind;
  l->a = a;
  l->b = b;
  r->lanes[r->nlanes] = l;
  return (uint32_t)r->nlanes++;
}

static int by_u64(const void *x, const void *y);

/* Only the MAX_DETAIL longest events of each budget (in_budget) are embedded in the end, so
 * once the events kept reach COMPACT_AT, those that can no longer be among them are dropped:
 * an event not longer than the MAX_DETAIL-th longest so far never will be. Memory stays
 * bounded by what the page shows, whatever the trace's length. */
#define COMPACT_AT (4 * (size_t)MAX_DETAIL)
static void compact_evs(report *r) {
  for (int q = 0; q < 2; q++) {
    size_t n = 0;
    for (size_t i = 0; i < r->nevs; i++) {
      uint32_t k = r->lanes[r->evs[i].lane]->kind;
      n += k != L_NVTX && (k == L_SAMPLES) == q;
    }
    if (n <= MAX_DETAIL) continue;
    uint64_t *d = rd_xmalloc(n * sizeof *d);
    size_t j = 0;
    for (size_t i = 0; i < r->nevs; i++) {
      uint32_t k = r->lanes[r->evs[i].lane]->kind;
      if (k != L_NVTX && (k == L_SAMPLES) == q) d[j++] = r->evs[i].e - r->evs[i].s;
    }
    rd_qsort(d, n, sizeof *d, by_u64);
    uint64_t th = d[n - MAX_DETAIL] + 1; /* detail_threshold's rule */
    free(d);
    if (th > r->floor_th[q]) r->floor_th[q] = th;
  }
  size_t w = 0, first = r->first_ev;
  for (size_t i = 0; i < r->nevs; i++) {
    const ev *v = &r->evs[i];
    uint32_t k = r->lanes[v->lane]->kind;
    if (k != L_NVTX && v->e - v->s < r->floor_th[k == L_SAMPLES]) {
      if (i < r->first_ev) first--;
      continue;
    }
    r->evs[w++] = *v;
  }
  r->nevs = w;
  r->first_ev = first;
}

static void add_ev(report *r, uint32_t lane_i, uint64_t s, uint64_t e, uint32_t name, uint32_t info,
                   uint32_t stack, uint64_t link) {
  if (lane_i >= MAX_LANES) return;
  r->seen++;
  if (!r->t0 || s < r->t0) r->t0 = s;
  if (e > r->t1) r->t1 = e;
  uint32_t kind = r->lanes[lane_i]->kind;
  if (kind != L_NVTX && e - s < r->floor_th[kind == L_SAMPLES]) return; /* never shown */
  if (r->nevs == r->capevs && r->capevs >= COMPACT_AT) compact_evs(r);
  if (r->nevs >= r->capevs / 4 * 3 && r->capevs >= COMPACT_AT) { /* mostly NVTX, or ties */
    r->capevs = r->capevs / 2 * 3;
    r->evs = rd_xrealloc(r->evs, r->capevs * sizeof *r->evs);
  }
  if (r->nevs == r->capevs) {
    r->capevs = r->capevs ? r->capevs / 2 * 3 : 4096;
    r->evs = rd_xrealloc(r->evs, r->capevs * sizeof *r->evs);
  }
  r->evs[r->nevs++] = (ev){s, e, link, lane_i, name, info, stack};
}

/* Adds `count` calls that took dur ns together (a folded event: dur is their sum; the max
 * counts them with their average duration, all a folded event tells). */
static void agg_add(aggs *a, const char *name, int domain, uint64_t dur, uint64_t count) {
  uint64_t each = count > 1 ? dur / count : dur;
  uint64_t h = rd_hash_str(name) ^ rd_hash64((uint64_t)(unsigned)domain);
  uint32_t k;
  size_t i = a->n;
  if (rd_m_get(&a->ix, h, &k)) {
    i = k;
    if (a->v[i].domain != domain || strcmp(a->v[i].name, name)) /* a true collision */
      for (i = 0; i < a->n; i++)
        if (a->v[i].domain == domain && !strcmp(a->v[i].name, name)) break;
  }
  if (i < a->n) {
    a->v[i].count += count;
    a->v[i].total += dur;
    if (each > a->v[i].max) a->v[i].max = each;
    return;
  }
  if (!rd_m_get(&a->ix, h, &k)) rd_m_put(&a->ix, h, (uint32_t)a->n);
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->v = rd_xrealloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n++] = (agg){rd_xstrdup(name), count, dur, each, domain};
}

static int by_total(const void *x, const void *y) {
  const agg *a = x, *b = y;
  return a->total < b->total ? 1 : a->total > b->total ? -1 : strcmp(a->name, b->name);
}

/* ---------------------------------------------------------------- reading */

static void on_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  report *r = ctx;
  (void)t;
  if (p->data_case == DLH__PACKET__DATA_ANCHOR && p->anchor->has_kind) {
    if (p->anchor->kind == DLH__CLOCK_ANCHOR_KIND__CAPTURE_OPEN) r->open_at = p->anchor->trace_ns;
    else if (p->anchor->kind == DLH__CLOCK_ANCHOR_KIND__CAPTURE_CLOSE && r->open_at && r->nwin < 256) {
      r->win[r->nwin].s = r->open_at;
      r->win[r->nwin++].e = p->anchor->trace_ns;
      r->open_at = 0;
    }
  } else if (p->data_case == DLH__PACKET__DATA_PROCESS) {
    const Dlh__ProcessInfo *pi = p->process;
    char *line;
    int ranked = pi->has_rank && pi->rank >= 0;
    char rk[32] = "";
    if (ranked) snprintf(rk, sizeof rk, ", rank %d", pi->rank);
    if (asprintf(&line, "pid %u%s%s%s: %s", pi->pid, pi->host ? " on " : "",
                 pi->host ? pi->host : "", rk, pi->exe ? pi->exe : "?") < 0)
      return;
    r->procs = rd_xrealloc(r->procs, (r->nprocs + 1) * sizeof *r->procs);
    r->procs[r->nprocs++] = line;
  } else if (p->data_case == DLH__PACKET__DATA_THREAD && p->thread->has_tid && p->thread->name) {
    free(rd_map_put(&r->threads, p->thread->tid, rd_xstrdup(p->thread->name)));
    } else if (p->data_case == DLH__PACKET__DATA_RING_WAITS) { /* dlhook's own cost (selfcost.c) */
    const Dlh__RingWaitBatch *b = p->ring_waits; /* drawn on the waiting thread's lane */
    int ok = b->n_start_ns == b->n_tid && b->n_span_ns == b->n_tid;
    for (size_t i = 0; ok && i < b->n_tid; i++)
      add_ev(r, lane_of(r, L_API, b->tid[i], 0), b->start_ns[i], b->start_ns[i] + b->span_ns[i],
             intern(&r->st, "[dlhook: waiting for its writer]"), 0, 0, 0);
  }
}

/* The stack of an API event as text (innermost frame first, 16 frames at most), interned. */
static uint32_t stack_str(report *r, const rd_trace *t, uint32_t id) {
  if (!id) return 0;
  uintptr_t v = (uintptr_t)rd_map_get(&r->stackstr, id);
  if (v) return (uint32_t)(v - 1);
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, id, &fr);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return 0;
  for (size_t i = 0; i < n && i < 16; i++) {
    char b[160];
    fprintf(m, "%s%s", i ? "\n" : "", rd_frame_name(&fr[i], b, sizeof b));
    if (fr[i].file && fr[i].line) {
      const char *base = strrchr(fr[i].file, '/');
      fprintf(m, "  %s:%u", base ? base + 1 : fr[i].file, fr[i].line);
    }
  }
  if (n > 16) fprintf(m, "\n... %zu more frames", n - 16);
  fclose(m);
  uint32_t k = n ? intern(&r->st, buf) : 0;
  free(buf);
  rd_map_put(&r->stackstr, id, (void *)(uintptr_t)(k + 1));
  return k;
}

static size_t nccl_type_size(uint64_t dt) {
  static const unsigned char sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dt < sizeof sz ? sz[dt] : 0;
}

/* "name=value ..." of the integer and string arguments (pointers left out; NCCL calls get
 * their bytes), interned; 0 when there is nothing to show. */
static uint32_t args_str(report *r, const rd_trace *t, const rd_func *f, const dlh_api_event *e) {
  if (!f || !e->nargs) return 0;
  char buf[512];
  size_t len = 0;
  buf[0] = 0;
  uint64_t count = 0, dtype = UINT64_MAX;
  for (uint32_t i = 0; i < e->nargs && i < f->nargs; i++) /* a recorded "bytes" wins */
    if (f->argname[i] && !strcmp(f->argname[i], "bytes")) dtype = UINT64_MAX - 1;
  for (uint32_t i = 0; i < e->nargs && i < f->nargs && len < sizeof buf - 80; i++) {
    const char *nm = f->argname[i] ? f->argname[i] : "?";
    uint32_t ty = f->argtype[i];
    if (!strcmp(nm, "count")) count = e->args[i];
    if (!strcmp(nm, "datatype") && dtype != UINT64_MAX - 1) dtype = e->args[i];
    int w;
    if (ty == 2) continue; /* pointers: not useful to read, and they make every call unique */
    if (ty == 4) {
      const char *sv = rd_trace_string(t, (uint32_t)e->args[i]);
      w = snprintf(buf + len, sizeof buf - len, "%s%s=%.60s", len ? " " : "", nm, sv ? sv : "?");
    } else if (ty == 3) {
      double d;
      memcpy(&d, &e->args[i], sizeof d);
      w = snprintf(buf + len, sizeof buf - len, "%s%s=%.6g", len ? " " : "", nm, d);
    } else if (ty == 5) {
      w = snprintf(buf + len, sizeof buf - len, "%s%s=%s", len ? " " : "", nm, e->args[i] ? "true" : "false");
    } else if (ty == 0) {
      w = snprintf(buf + len, sizeof buf - len, "%s%s=%" PRId64, len ? " " : "", nm, (int64_t)e->args[i]);
    } else {
      w = snprintf(buf + len, sizeof buf - len, "%s%s=%" PRIu64, len ? " " : "", nm, e->args[i]);
    }
    if (w > 0) len += (size_t)w;
  }
  if (!strncmp(f->name, "nccl", 4) && count && dtype != UINT64_MAX && nccl_type_size(dtype) &&
      len < sizeof buf - 40)
    snprintf(buf + len, sizeof buf - len, "%sbytes=%" PRIu64, len ? " " : "",
             count * nccl_type_size(dtype));
  return buf[0] ? intern(&r->st, buf) : 0;
}

/* A module (forward() frame) or an operator instance: one event of its thread's PyTorch lane
 * (nested by time, like NVTX ranges). */
static void on_span(void *ctx, const rd_span *sp) {
  report *r = ctx;
  const rd_layer *l = sp->layer;
  char buf[512];
  const char *nm = l->kind == RD_LAYER_OP ? l->name
                   : l->kind == RD_LAYER_NODE ? (snprintf(buf, sizeof buf,
                                                          "autograd::engine::evaluate_function: %s",
                                                          l->name), buf)
                   : l->module ? l->name : NULL;
  if (nm) add_ev(r, lane_of(r, L_OPS, sp->tid, 0), sp->start, sp->end, intern(&r->st, nm), 0, 0, 0);
}

/* A host sample: an event of its thread's samples lane that ends at the sample and lasts its
 * weight, cut at the thread's previous sample (they never overlap); named by rd_sample_label,
 * its info "on-CPU 1.00 ms" or "wait 2.00 ms". */
static void on_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  report *r = ctx;
  uintptr_t prev = (uintptr_t)rd_map_get(&r->last_sample, s->tid);
  if (prev && prev - 1 > s->time) return; /* out of order (a hostile file): left out */
  rd_map_put(&r->last_sample, s->tid, (void *)(uintptr_t)(s->time + 1));
  uint64_t dur = s->weight;
  if (prev && s->time - (prev - 1) < dur) dur = s->time - (prev - 1);
  /* nor before the process's start (the page's time origin is its first event) */
  uint64_t floor = t->have_start ? t->start_ns + (uint64_t)rd_offset_of(t->path) : s->time;
  if (floor > s->time) floor = s->time;
  if (dur > s->time - floor) dur = s->time - floor;
  char label[512], info[64], b[32];
  snprintf(info, sizeof info, "%s %s", s->kind == RD_SAMPLE_WAIT ? "wait" : "on-CPU",
           dlh_fmt_ns(b, sizeof b, s->weight));
  r->samples[s->kind == RD_SAMPLE_WAIT]++;
  add_ev(r, lane_of(r, L_SAMPLES, s->tid, 0), s->time - dur, s->time,
         intern(&r->st, rd_sample_label(t, s, label, sizeof label)), intern(&r->st, info),
         stack_str(r, t, s->stack), 0);
}

/* A folded event (count identical calls recorded once) is one timeline event over its span,
 * named "NAME ×COUNT"; the tables count each of its calls. */
static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  report *r = ctx;
  if (r->sp && e->stack) {
    const rd_torch *c = rd_torch_of(r->cur, e->stack);
    if (c->n) rd_spans_add(r->sp, tid, e->start_ns, e->start_ns + dlh_api_span(e), c, NULL);
  }
  const rd_func *f = rd_trace_func(t, e->fn);
  int domain = f ? f->domain : 0;
  uint64_t calls = dlh_api_calls(e), end = e->start_ns + dlh_api_span(e);
  if (domain == DLH__DOMAIN__DOMAIN_NVTX) {
    const char *msg = e->nargs ? rd_trace_string(t, (uint32_t)e->args[0]) : NULL;
    char *nm = rd_folded_name(msg ? msg : rd_func_name(t, e->fn), calls);
    add_ev(r, lane_of(r, L_NVTX, tid, 0), e->start_ns, end, intern(&r->st, nm), 0, 0, 0);
    free(nm);
    return;
  }
  r->api_calls += calls;
  agg_add(&r->calls, rd_func_name(t, e->fn), domain, e->dur_ns, calls);
  if (e->depth == 0) {
    char *nm = rd_folded_name(rd_func_name(t, e->fn), calls);
    add_ev(r, lane_of(r, L_API, tid, 0), e->start_ns, end, intern(&r->st, nm),
           args_str(r, t, f, e), stack_str(r, t, e->stack), e->corr);
    free(nm);
  }
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  report *r = ctx;
  if (g->kind == RD_EXTCORR) { /* a launch inside a library call: CUPTI id -> the call's external id */
    if (g->nvals > 1 && g->corr && g->vals[1] <= UINT32_MAX) rd_m_put(&r->ext, g->corr, (uint32_t)g->vals[1]);
    return;
  }
  if (!rd_gpu_busy(g->kind)) return;
  r->gpu_records++;
  char nb[64], info[128];
  const char *name = rd_gpu_name(t, g, nb, sizeof nb);
  info[0] = 0;
  if (g->kind == RD_KERNEL && g->nvals >= 6)
    snprintf(info, sizeof info, "grid=(%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") block=(%" PRIu64
             ",%" PRIu64 ",%" PRIu64 ")", g->vals[0], g->vals[1], g->vals[2], g->vals[3],
             g->vals[4], g->vals[5]);
  else if ((g->kind == RD_MEMCPY || g->kind == RD_MEMSET) && g->nvals >= 1)
    snprintf(info, sizeof info, "bytes=%" PRIu64, g->vals[0]);
  add_ev(r, lane_of(r, L_GPU, g->device, g->stream), g->start, g->start + g->dur,
         intern(&r->st, name), info[0] ? intern(&r->st, info) : 0, 0, g->corr);
  if (g->kind == RD_KERNEL) {
    agg_add(&r->kernels, name, 0, g->dur, 1);
    r->kernels_n++;
    r->kernel_ns += g->dur;
  }
}

/* ---------------------------------------------------------------- writing */

static void html_str(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      default: putc(*s, f);
    }
  }
}

/* A JSON string safe inside <script>: '<' is written as \u003c. */
static void js_str(FILE *f, const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) { fputs("\"\"", f); return; }
  rd_json_str(m, s);
  fclose(m);
  for (size_t i = 0; i < len; i++) {
    if (buf[i] == '<') fputs("\\u003c", f); /* only inside strings in JSON */
    else putc(buf[i], f);
  }
  free(buf);
}

static const char *fmt_ns(char *buf, size_t n, double ns) {
  if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f s", ns / 1e9);
  return buf;
}

static void table(FILE *f, const char *id, const char *title, aggs *a, int calls, size_t top) {
  char b1[32], b2[32], b3[32];
  fprintf(f, "<h3>%s</h3>\n<table id=\"%s\" class=\"sortable\"><thead><tr><th>%s</th>%s<th>%s</th>"
             "<th>Total</th><th>Mean</th><th>Max</th></tr></thead><tbody>\n",
          title, id, calls ? "Function" : "Kernel", calls ? "<th>Domain</th>" : "",
          calls ? "Calls" : "Count");
  if (a->n) rd_qsort(a->v, a->n, sizeof *a->v, by_total);
  size_t shown = a->n < top ? a->n : top;
  char **cell = NULL; /* kernels: short names (names.c), the full name in the tooltip */
  if (!calls && shown) {
    const char **nm = rd_xmalloc(shown * sizeof *nm);
    for (size_t i = 0; i < shown; i++) nm[i] = a->v[i].name;
    cell = rd_xmalloc(shown * sizeof *cell);
    rd_names_kernels(nm, shown, 72, cell); /* td.n: 560 px of 13 px monospace */
    free(nm);
  }
  for (size_t i = 0; i < shown; i++) {
    const agg *g = &a->v[i];
    fputs("<tr><td class=\"n\" title=\"", f);
    html_str(f, g->name);
    fputs("\">", f);
    if (cell) {
      for (size_t k = strlen(cell[i]); k > 0 && cell[i][k - 1] == ' '; k--) cell[i][k - 1] = 0;
      html_str(f, cell[i]);
      free(cell[i]);
    } else {
      html_str(f, g->name);
    }
    fputs("</td>", f);
    if (calls) fprintf(f, "<td>%s</td>", rd_domain_name(g->domain));
    double mean = g->count ? (double)g->total / (double)g->count : 0;
    fprintf(f, "<td data-v=\"%" PRIu64 "\">%" PRIu64 "</td><td data-v=\"%" PRIu64 "\">%s</td>"
               "<td data-v=\"%.0f\">%s</td><td data-v=\"%" PRIu64 "\">%s</td></tr>\n",
            g->count, g->count, g->total, fmt_ns(b1, sizeof b1, (double)g->total), mean,
            fmt_ns(b2, sizeof b2, mean), g->max, fmt_ns(b3, sizeof b3, (double)g->max));
  }
  free(cell);
  fputs("</tbody></table>\n", f);
  if (!a->n) fputs("<p class=\"muted\">(none)</p>\n", f);
}

static int by_lane(const void *x, const void *y) {
  static const int order[] = {[L_API] = 0, [L_SAMPLES] = 1, [L_OPS] = 2, [L_NVTX] = 3, [L_GPU] = 4};
  const lane *a = *(lane *const *)x, *b = *(lane *const *)y;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->kind != b->kind) return order[a->kind] < order[b->kind] ? -1 : 1;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : a->b > b->b;
}

static int by_ev(const void *x, const void *y) {
  const ev *a = x, *b = y;
  if (a->lane != b->lane) return a->lane < b->lane ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return a->e > b->e ? -1 : a->e < b->e; /* enclosing NVTX ranges first */
}
static int by_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Past MAX_DETAIL events of a budget, only its events at least this long are embedded; NVTX
 * ranges always. Calls and GPU work share one budget, host samples (samples = 1) have their
 * own, so that a long sampled run keeps its calls on the timeline. *kept: the events embedded
 * of that budget (all of them when it returns 0). */
static int in_budget(const report *r, const ev *v, int samples) {
  uint32_t k = r->lanes[v->lane]->kind;
  return k != L_NVTX && (k == L_SAMPLES) == samples;
}
static uint64_t detail_threshold(report *r, int samples, size_t *kept) {
  size_t n = 0;
  for (size_t i = 0; i < r->nevs; i++) n += in_budget(r, &r->evs[i], samples);
  *kept = n;
  if (n <= MAX_DETAIL) return r->floor_th[samples]; /* 0 unless compact_evs left some out */
  uint64_t *d = rd_xmalloc(n * sizeof *d);
  size_t k = 0;
  for (size_t i = 0; i < r->nevs; i++)
    if (in_budget(r, &r->evs[i], samples)) d[k++] = r->evs[i].e - r->evs[i].s;
  rd_qsort(d, n, sizeof *d, by_u64);
  uint64_t th = d[n - MAX_DETAIL] + 1;
  free(d);
  k = 0;
  for (size_t i = 0; i < r->nevs; i++)
    k += in_budget(r, &r->evs[i], samples) && r->evs[i].e - r->evs[i].s >= th;
  *kept = k;
  return th;
}

/* The data block of the page: lanes with their events (delta-coded starts), strings, groups,
 * memory counters, capture windows. */
static void data_json(FILE *f, report *r, size_t *shown, uint64_t *threshold) {
  /* lanes in display order; events renumbered to it */
  lane **order = rd_xmalloc((r->nlanes ? r->nlanes : 1) * sizeof *order);
  if (r->nlanes) {
    memcpy(order, r->lanes, r->nlanes * sizeof *order);
    rd_qsort(order, r->nlanes, sizeof *order, by_lane);
  }
  uint32_t *pos = rd_xmalloc((r->nlanes ? r->nlanes : 1) * sizeof *pos);
  for (size_t i = 0; i < r->nlanes; i++)
    for (size_t j = 0; j < r->nlanes; j++)
      if (r->lanes[j] == order[i]) pos[j] = (uint32_t)i;
  for (size_t i = 0; i < r->nevs; i++) r->evs[i].lane = pos[r->evs[i].lane];
  if (r->nlanes) memcpy(r->lanes, order, r->nlanes * sizeof *order);
  free(order);
  free(pos);
  if (r->nevs) rd_qsort(r->evs, r->nevs, sizeof *r->evs, by_ev);
  size_t kept[2], nvtx = 0;
  uint64_t th[2];
  for (int q = 0; q < 2; q++) th[q] = detail_threshold(r, q, &kept[q]);
  for (size_t i = 0; i < r->nevs; i++) nvtx += r->lanes[r->evs[i].lane]->kind == L_NVTX;
  *shown = kept[0] + kept[1] + nvtx;
  *threshold = th[0];

  fprintf(f, "\"t0\":%" PRIu64 ",\"span\":%" PRIu64 ",\n\"groups\":[", r->t0,
          r->t1 > r->t0 ? r->t1 - r->t0 : 0);
  for (size_t g = 0; g < r->ngroups; g++) {
    fprintf(f, "%s{\"pid\":%u,\"rank\":%d,\"label\":", g ? "," : "", r->groups[g].pid, r->groups[g].rank);
    js_str(f, r->groups[g].label);
    putc('}', f);
  }
  fputs("],\n\"lanes\":[", f);
  size_t e = 0;
  for (size_t li = 0; li < r->nlanes; li++) {
    const lane *l = r->lanes[li];
    char label[160];
    if (l->kind == L_GPU) snprintf(label, sizeof label, "GPU %u stream %u", l->a, l->b);
    else if (l->kind == L_OPS) snprintf(label, sizeof label, "PyTorch thread %u", l->a);
    else {
      const char *tn = l->b > 1 ? r->st.v[l->b - 1] : NULL;
      snprintf(label, sizeof label, "%s%.40s%sthread %u",
               l->kind == L_NVTX ? "NVTX " : l->kind == L_SAMPLES ? "samples " : "", tn ? tn : "",
               tn ? " " : "", l->a);
    }
    fprintf(f, "%s\n{\"g\":%u,\"kind\":%u,\"label\":", li ? "," : "", l->group, l->kind);
    js_str(f, label);
    size_t from = e;
    while (e < r->nevs && r->evs[e].lane == li) e++;
    for (int col = 0; col < 6; col++) {
      fprintf(f, ",\"%c\":[", "sdnikc"[col]);
      int first = 1;
      uint64_t prev = r->t0;
      for (size_t q = from; q < e; q++) {
        const ev *v = &r->evs[q];
        uint64_t lth = l->kind == L_NVTX ? 0 : th[l->kind == L_SAMPLES];
        if (lth && v->e - v->s < lth) continue;
        uint64_t x;
        switch (col) {
          case 0: x = v->s - prev; prev = v->s; break; /* starts: deltas */
          case 1: x = v->e - v->s; break;
          case 2: x = v->name; break;
          case 3: x = v->info; break;
          case 4: x = v->stack; break;
          default: x = v->link; break;
        }
        fprintf(f, first ? "%" PRIu64 : ",%" PRIu64, x);
        first = 0;
      }
      putc(']', f);
    }
    putc('}', f);
  }
  fputs("],\n\"mem\":[", f);
  for (size_t m = 0; m < r->nmem; m++) {
    uint64_t peak = 0;
    for (long k = 0; k < r->mem[m].n; k++)
      if (r->mem[m].v[k].live_bytes > peak) peak = r->mem[m].v[k].live_bytes;
    fprintf(f, "%s{\"g\":%u,\"peak\":%" PRIu64 ",\"t\":[", m ? "," : "", r->mem[m].group, peak);
    /* millions of samples: per bin its first, lowest, highest and last (rd_memtl_pick) */
    long *pick = rd_xmalloc((size_t)(r->mem[m].n ? r->mem[m].n : 1) * sizeof *pick);
    long np = rd_memtl_pick(r->mem[m].v, r->mem[m].n, pick);
    for (long k = 0; k < np; k++)
      fprintf(f, "%s%" PRId64, k ? "," : "", (int64_t)(r->mem[m].v[pick[k]].ts_ns - r->t0));
    fputs("],\"v\":[", f);
    for (long k = 0; k < np; k++)
      fprintf(f, "%s%" PRIu64, k ? "," : "", r->mem[m].v[pick[k]].live_bytes);
    free(pick);
    fputs("]}", f);
  }
  fputs("],\n\"win\":[", f);
  for (size_t w = 0; w < r->nwin; w++)
    fprintf(f, "%s[%" PRId64 ",%" PRId64 "]", w ? "," : "", (int64_t)(r->win[w].s - r->t0),
            (int64_t)(r->win[w].e - r->t0));
  fputs("],\n\"str\":[", f);
  for (size_t i = 0; i < r->st.n; i++) {
    if (i) putc(',', f);
    js_str(f, r->st.v[i]);
  }
  /* the short names of the GPU work (names.c) where they differ: the timeline draws them, its
   * tooltip shows both */
  fputs("],\n\"short\":{", f);
  char *gpu_name = calloc(r->st.n ? r->st.n : 1, 1);
  for (size_t i = 0; gpu_name && i < r->nevs; i++)
    if (r->lanes[r->evs[i].lane]->kind == L_GPU && r->evs[i].name < r->st.n) gpu_name[r->evs[i].name] = 1;
  int first = 1;
  for (size_t i = 0; gpu_name && i < r->st.n; i++) {
    if (!gpu_name[i]) continue;
    char *sh = rd_kernel_short(r->st.v[i]);
    if (strcmp(sh, r->st.v[i])) {
      fprintf(f, "%s\"%zu\":", first ? "" : ",", i);
      js_str(f, sh);
      first = 0;
    }
    free(sh);
  }
  free(gpu_name);
  fputs("}", f);
}

/* Copies a JSON object into f, '<' written as \u003c so that it stays inside the <script>
 * element; "null" when it is not one. */
static void json_inline(FILE *f, const char *buf, size_t len) {
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) len--;
  if (!buf || !len || buf[0] != '{' || buf[len - 1] != '}') {
    fputs("null", f);
    return;
  }
  for (size_t i = 0; i < len; i++) {
    if (buf[i] == '<') fputs("\\u003c", f); /* only inside strings in JSON */
    else putc(buf[i], f);
  }
}


static const char css[] =
    "body{font-family:system-ui,sans-serif;margin:20px;color:#222;background:#fff}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}"
    "h3{font-size:14px;margin:16px 0 6px}"
    ".kpi{display:inline-block;margin:8px 22px 8px 0}.kpi b{display:block;font-size:20px}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;border-bottom:1px solid #eee;"
    "text-align:right}th{background:#f1f3f7;cursor:pointer;user-select:none}"
    "th[data-dir=desc]:after{content:' \\25BC'}th[data-dir=asc]:after{content:' \\25B2'}"
    "td.n{text-align:left;max-width:560px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;"
    "font-family:monospace}pre{font-size:11px;margin:4px 0 0;white-space:pre-wrap}"
    ".scroll{overflow-x:auto}.muted{color:#777;font-size:13px}"
    "#tl{position:relative;border:1px solid #ddd}#tl-canvas{display:block;cursor:crosshair}"
    "#tl-tip{position:absolute;display:none;z-index:10;max-width:440px;background:#fffef5;"
    "border:1px solid #bbb;padding:6px 8px;font-size:12px;box-shadow:2px 2px 6px rgba(0,0,0,.2);"
    "pointer-events:none}#tl-selection{font-size:12px;margin:6px 0;min-height:20px}"
    "#step-table tbody tr{cursor:pointer}#step-table tbody tr:hover{background:#f6f8fc}"
    "td.bar{width:260px;padding:3px 4px}td.bar i{display:inline-block;height:12px}"
    ".legend span{margin-right:14px;font-size:13px}.legend i{display:inline-block;width:12px;"
    "height:12px;margin-right:4px;vertical-align:middle}button{font-size:12px}"
    ".steps-scroll{max-height:330px;overflow-y:auto;display:inline-block;border:1px solid #eee}"
    "#step-table thead th{position:sticky;top:0}"
    /* the first screen: findings beside the step breakdown and the top operators */
    "#overview{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:0 32px}"
    "#overview h2{margin-top:16px}#findings ol{margin:0;padding-left:22px}"
    "#findings li{margin-bottom:8px;font-size:14px}#findings .fix{font-size:13px}"
    "#findings details{font-size:12px;color:#555}#findings summary{cursor:pointer}"
    "#step-bar{display:flex;height:18px;margin:6px 0;border:1px solid #ddd}"
    "#step-bar i{display:block;height:100%}#step-breakdown .legend span{white-space:nowrap}"
    "#top-ops table{width:100%}#top-ops td.n{max-width:300px}#top-ops th:first-child{text-align:left}"
    ".procs summary{cursor:pointer}#tl-tip .full{font:11px monospace;color:#555;word-break:break-all}";

static const char report_js[] =
#include "report_js.h"
    ;
static const char report_mem_js[] =
#include "report_mem_js.h"
    ;

static const rd_option options[] = {
    {"output", 'o', "FILE.html", "the page to write (required)", NULL, 0},
    {"max-events", RD_KEY(0), "N",
     "read at most N events of a trace (API calls, GPU records, host samples) into the page "
     "(its timeline, flame graphs and tables), say so and exit 1; 0: no limit. Default: 1 Mi, "
     "or 2 per byte of the trace file when more (the page keeps ~150 bytes per event while it "
     "is built; dlhook export --help)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_report_spec = {
    .name = "report",
    .synopsis = "-o FILE.html TRACE...",
    .summary = "one self-contained HTML page: flame graph, timeline, tables",
    .about = "Writes one self-contained HTML page (inline CSS, JavaScript and SVG; it loads "
             "nothing from the network) about the traces: headline numbers; a first screen that "
             "fits 1280x800 (the findings of dlhook advise, each with its cost, place and fix; "
             "the step breakdown of all steps: count, median, compute, communication, copies, "
             "host, idle; the five operators with the most GPU time, or the API functions with "
             "the most host time without PyTorch); the step view (per "
             "step and rank: compute, communication, copies, host overhead, idle; the slowest "
             "step, the slowest rank, the straggler); the timeline (lanes grouped by rank, then "
             "threads, NVTX ranges, GPU streams and live device memory; time axis, wheel and box "
             "zoom, pan, tooltips with arguments and stacks, kernels by their short names with the "
             "full name in the tooltip, click a call to highlight the GPU "
             "work it launched); the GPU-time flame graph; sortable tables of kernels (short "
             "names, the full name in the tooltip), calls, "
             "GEMMs, convolutions, collectives and memory (from dlhook stats --json).\n\n"
             "Past 300,000 events the timeline keeps the longest 300,000 (NVTX ranges always).",
    .examples = " dlhook report -o report.html traces/*.dlh",
    .options = options,
};

static void count_kernel(void *ctx, const rd_trace *t, const rd_gpu *g) {
  (void)t;
  if (g->kind == RD_KERNEL) ++*(uint64_t *)ctx;
}

static int by_rank_pid(const void *x, const void *y) {
  const group *a = x, *b = y;
  if ((a->rank < 0) != (b->rank < 0)) return a->rank < 0 ? -1 : 1; /* launchers first */
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* Frees the report and everything it holds. */
static void report_free(report *r) {
  for (size_t i = 0; i < r->nlanes; i++) free(r->lanes[i]);
  for (size_t i = 0; i < r->nmem; i++) free(r->mem[i].v), free(r->mem[i].tl);
  for (size_t i = 0; i < r->kernels.n; i++) free(r->kernels.v[i].name);
  for (size_t i = 0; i < r->calls.n; i++) free(r->calls.v[i].name);
  for (size_t i = 0; i < r->nprocs; i++) free(r->procs[i]);
  for (size_t i = 0; i < r->ngroups; i++) free(r->groups[i].label);
  for (size_t i = 0; i < r->st.n; i++) free(r->st.v[i]);
  free(r->st.v);
  free(r->st.slot);
  free(r->groups);
  rd_map_free(&r->threads, free);
  free(r->procs);
  free(r->kernels.v);
  rd_m_free(&r->kernels.ix);
  rd_m_free(&r->calls.ix);
  free(r->calls.v);
  free(r->evs);
  free(r);
}

/* A flame graph of the page (flame_svg.c's SVG inlined: its script works inside its own <svg>). */
static void put_flame(FILE *f, const char *id, const char *title, const char *svg) {
  fprintf(f, "<h2>Flame graph: %s</h2>\n<div id=\"%s\" class=\"scroll\">\n", title, id);
  if (svg) {
    const char *body = strstr(svg, "<svg");
    fputs(body ? body : svg, f);
  } else {
    fputs("<p>(no flame graph could be drawn)</p>\n", f);
  }
  fputs("</div>\n", f);
}

/* The memory section's data block and script (memtl.c's timelines, report_mem.js), right after
 * its place: it draws before the page's larger data block is parsed. */
static void memtl_block(FILE *f, report *r) {
  fprintf(f, "<script type=\"application/json\" id=\"dlh-memtl\">{\"t0\":%" PRIu64 ",\"span\":%" PRIu64
             ",\"traces\":[", r->t0, r->t1 > r->t0 ? r->t1 - r->t0 : 0);
  for (size_t m = 0, k = 0; m < r->nmem; m++)
    if (r->mem[m].tl) {
      fputs(k++ ? ",{\"label\":" : "{\"label\":", f);
      js_str(f, r->mem[m].group < r->ngroups ? r->groups[r->mem[m].group].label : "");
      fputs(",\"tl\":", f);
      json_inline(f, r->mem[m].tl, r->mem[m].tllen);
      putc('}', f);
    }
  fputs("]}</script>\n<script>", f);
  fputs(report_mem_js, f);
  fputs("</script>\n", f);
}

/* Writes the page: head, KPIs, the steps, timeline, flame graph and tables (data_json and
 * report.js draw them in the browser), with the stats and memory JSON of the same traces. */
static void write_page(FILE *f, report *r, size_t n, const char *svg, const char *svg_cpu,
                       const char *svg_wait, const char *sjson, size_t sjlen, const char *mjson,
                       size_t mjlen) {
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<title>dlhook report</title>\n<style>%s</style></head>\n<body>\n", css);
  fputs("<h1>dlhook report</h1>\n<div class=\"muted procs\">", f);
  for (size_t i = 0; i < r->nprocs; i++) { /* past two, the others fold: the first screen */
    if (i == 1 && r->nprocs > 2)
      fprintf(f, "<details><summary>and %zu more processes</summary>", r->nprocs - 1);
    html_str(f, r->procs[i]);
    fputs("<br>", f);
  }
  if (r->nprocs > 2) fputs("</details>", f);
  fputs("</div>\n", f);
  char b1[32], b2[32];
  fprintf(f, "<div id=\"kpis\"><span class=\"kpi\"><b>%zu</b>trace%s</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>API calls</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>kernels</span>"
             "<span class=\"kpi\"><b>%s</b>kernel time</span>"
             "<span class=\"kpi\"><b>%s</b>traced span</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>dropped records</span></div>\n",
          n, n == 1 ? "" : "s", r->api_calls, r->kernels_n, fmt_ns(b1, sizeof b1, (double)r->kernel_ns),
          fmt_ns(b2, sizeof b2, (double)(r->t1 > r->t0 ? r->t1 - r->t0 : 0)), r->dropped);

  /* the first screen (1280x800): findings beside the step breakdown and the top operators
   * (report.js fills them from the stats) */
  fputs("<div id=\"overview\"><div>\n<h2>Findings</h2>\n<div id=\"findings\"><p class=\"muted\">"
        "(needs JavaScript)</p></div>\n</div><div>\n<h2>Step breakdown</h2>\n<div id=\"step-breakdown\">"
        "</div>\n<h2 id=\"top-ops-title\">Top operators</h2>\n<div id=\"top-ops\"></div>\n</div></div>\n", f);
  fputs("<h2>Steps</h2>\n<div id=\"steps\"><p class=\"muted\">(needs JavaScript)</p></div>\n", f);

  size_t shown = 0;
  uint64_t threshold = 0;
  char *data = NULL;
  size_t datalen = 0;
  FILE *dm = open_memstream(&data, &datalen);
  if (dm) {
    data_json(dm, r, &shown, &threshold);
    fclose(dm);
  }
  fputs("<h2>Timeline</h2>\n<div class=\"muted\">Wheel: zoom; drag: pan; shift+drag or drag on "
        "the time axis: zoom to the box; click a call: highlight the GPU work it launched "
        "(orange). Lanes: blue API calls per thread, teal host samples per thread (grey: waiting), "
        "purple NVTX ranges, green GPU work per stream, red live device memory, yellow capture "
        "windows. Events under a pixel are "
        "merged (darker: more of them).", f);
  if (threshold)
    fprintf(f, " This trace has %zu events: the timeline shows the %zu longest (%s and more) "
               "and every NVTX range; the tables count everything.",
            r->seen, shown, fmt_ns(b1, sizeof b1, (double)threshold));
  else if (shown < r->seen)
    fprintf(f, " The timeline shows the longest %d host samples of %" PRIu64 "; the tables and "
               "flame graphs count them all.", MAX_DETAIL, r->samples[0] + r->samples[1]);
  fputs("</div>\n<div><button id=\"tl-reset\">reset zoom</button></div>\n"
        "<div id=\"tl\"><canvas id=\"tl-canvas\"></canvas><div id=\"tl-tip\"></div></div>\n"
        "<div id=\"tl-selection\"></div>\n", f);

  put_flame(f, "flamegraph", r->kernels_n ? "GPU time by launching stack"
                                          : "API time by stack (no GPU activity)", svg);
  if (r->samples[0] || r->samples[1]) { /* host sampling: where the threads ran and waited */
    fprintf(f, "<div class=\"muted\">Host samples: %" PRIu64 " on-CPU, %" PRIu64 " wait "
               "(host time by thread, function and operator: the tables below).</div>\n",
            r->samples[0], r->samples[1]);
    put_flame(f, "flame-cpu", "on-CPU time (host samples)", svg_cpu);
    put_flame(f, "flame-wait", "wait time (host samples; leaves: the CUDA call in flight, the "
                               "system call)", svg_wait);
  }

  fputs("<h2>Tables</h2>\n<div class=\"muted\">Click a column to sort.</div>\n", f);
  table(f, "top-kernels", "Top kernels", &r->kernels, 0, 50);
  table(f, "top-calls", "Top calls", &r->calls, 1, 50);
  fputs("<div id=\"stats\"></div>\n<h2>GPU memory</h2>\n<div id=\"memtl\"></div>\n", f);
  memtl_block(f, r);
  fputs("<div id=\"memory\"></div>\n", f);
  fputs("<script type=\"application/json\" id=\"dlh-data\">{", f);
  if (data) fwrite(data, 1, datalen, f);
  free(data);
  fputs(",\n\"stats\":", f);
  json_inline(f, sjson, sjlen);
  fputs(",\n\"memory\":", f);
  fflush(f);
  json_inline(f, mjson, mjlen);
  fputs("}</script>\n<script>", f);
  fputs(report_js, f);
  fputs("</script>\n<div class=\"muted\">written by dlhook " DLHOOK_VERSION "</div>\n</body></html>\n", f);
}

/* The first pass over each trace (definitions; the collectives of the clock alignment, the
 * memory ledger and the kernel count, through rk, mc and *kernels), and the page's group of
 * each process. A trace that cannot be read is left out (files, T and n close up; *rc set).
 * Returns the number of traces kept. */
static size_t first_pass(report *r, char **files, size_t n, rd_trace *T, rd_memcol **mc,
                         rd_ranks_in **rk, rd_opts *o, uint64_t *kernels, int *rc) {
  rd_read_ahead(files, NULL, n); /* the next traces decoded while one is read */
  for (size_t i = 0; i < n; i++) {
    mc[i] = rd_memcol_new();
    rk[i] = rd_ranks_in_new(files[i]);
    rd_sink ms = rd_memory_sink(mc[i]), rs = rd_ranks_in_sink(rk[i]), ks = {kernels, NULL, NULL, count_kernel, 0, NULL};
    rd_tee tee = {{&ms, &rs, &ks}, 3};
    rd_sink all = rd_tee_sink(&tee);
    if (rd_open(&T[i], files[i], o, &all) != RD_OK && T[i].opens == 0) { /* said why; left out */
      *rc = RD_BAD_INPUT;
      rd_trace_close(&T[i]);
      rd_memcol_free(mc[i]);
      free(rk[i]);
      memmove(files + i, files + i + 1, (n - i - 1) * sizeof *files);
      memmove(T + i, T + i + 1, (n - i - 1) * sizeof *T);
      n--;
      i--;
      continue;
    }
    rd_ranks_in_end(rk[i], &T[i]);
    group *g = &r->groups[r->ngroups];
    g->pid = T[i].pid;
    g->rank = T[i].rank;
    char label[128];
    if (g->rank >= 0) snprintf(label, sizeof label, "rank %d (pid %u)", g->rank, g->pid);
    else snprintf(label, sizeof label, "%s pid %u%s", T[i].exe[0] ? T[i].exe : "process", g->pid,
                  n > 1 ? " (no rank)" : "");
    g->label = rd_xstrdup(label);
    r->ngroups++;
  }
  return n;
}

/* The second pass over trace i (T[i], files[i]; rel[i]: its offset on the common timeline):
 * its events into the page, the flame graphs (fl; the host samples' sfl, on-CPU and wait; a
 * flag cleared when one cannot be drawn) and the stats run sr; then its lanes named, its memory
 * ledger (mc[i]) kept for the page. Returns RD_OK, or RD_BAD_INPUT when the trace is damaged. */
static int second_pass(report *r, rd_trace *T, char **files, rd_memcol **mc, const int64_t *rel,
                       size_t i, rd_opts *o, rd_stats_run *sr, flame *fl, flame sfl[2],
                       int *flame_ok, int sfl_ok[2]) {
  rd_sink s = {r, on_packet, on_api, on_gpu, 0, on_sample}, fs = flame_sink(fl), os,
          fc = flame_sink(&sfl[0]), fw = flame_sink(&sfl[1]);
  rd_tee tee = {{&s, &fs, rd_stats_run_begin(sr, i, files[i]), &fc, &fw}, 5};
  int torch = rd_ops_wanted(rd_stats_run_ops(sr), &T[i]);
  if (torch) { /* the operator tables and the PyTorch lanes */
    os = rd_ops_sink(rd_stats_run_ops(sr), &T[i]);
    tee.s[tee.n++] = &os;
  }
  rd_sink all = rd_tee_sink(&tee);
  r->cur = &T[i];
  r->pid = T[i].pid;
  r->group = 0;
  for (size_t g = 0; g < r->ngroups; g++)
    if (r->groups[g].pid == r->pid) r->group = (uint32_t)g;
  r->open_at = 0;
  r->first_ev = r->nevs;
  rd_map_free(&r->threads, free);
  memset(&r->threads, 0, sizeof r->threads);
  r->sp = torch ? rd_spans_new(on_span, r, NULL) : NULL;
  int prc = rd_pass(&T[i], o, "report", &all);
  int rc = prc != RD_OK ? RD_BAD_INPUT : RD_OK;
  rd_spans_free(r->sp); /* the instances still open go to this trace's lanes */
  r->sp = NULL;
  if (torch) rd_ops_trace_end(rd_stats_run_ops(sr));
  if (flame_trace_end(fl, &T[i], prc) != RD_OK) *flame_ok = 0;
  for (int k = 0; k < 2; k++)
    if (flame_trace_end(&sfl[k], &T[i], prc) != RD_OK) sfl_ok[k] = 0;
  rd_stats_run_end(sr, i, &T[i]);
  rd_gstats_trace_end(rd_stats_run_gstats(sr)); /* graph makers are named by dlhook stats only */
  /* kernels launched inside library calls link to the call's external id; lane names */
  for (size_t k = r->first_ev; k < r->nevs; k++) {
    uint32_t x;
    if (r->lanes[r->evs[k].lane]->kind == L_GPU && r->evs[k].link && rd_m_get(&r->ext, r->evs[k].link, &x))
      r->evs[k].link = x;
  }
  for (size_t l = 0; l < r->nlanes; l++) { /* thread names are per trace: bake them in now */
    lane *ln = r->lanes[l];
    if (ln->group != r->group || ln->kind == L_GPU || ln->b) continue;
    const char *tn = rd_map_get(&r->threads, ln->a);
    ln->b = 1 + (tn ? intern(&r->st, tn) : 0);
  }
  rd_m_free(&r->ext);
  memset(&r->ext, 0, sizeof r->ext);
  rd_map_free(&r->stackstr, NULL);
  memset(&r->stackstr, 0, sizeof r->stackstr);
  rd_map_free(&r->last_sample, NULL);
  memset(&r->last_sample, 0, sizeof r->last_sample);
  if (r->open_at && r->nwin < 256) { r->win[r->nwin].s = r->open_at; r->win[r->nwin++].e = UINT64_MAX; }
  r->dropped += rd_trace_dropped(&T[i]);
  rd_mem_sample *v = NULL;
  long k = rd_memcol_samples(mc[i], &v, 1);
  if (k > 0 && r->nmem < 64) {
    for (long q = 0; q < k; q++) v[q].ts_ns += (uint64_t)rel[i];
    r->mem[r->nmem].group = r->group;
    r->mem[r->nmem].v = v;
    r->mem[r->nmem].tl = rd_memtl_json(&T[i], v, k, r->group, &r->mem[r->nmem].tllen);
    r->mem[r->nmem++].n = k;
  } else {
    free(v);
  }
  return rc;
}

/* The options and operands of `dlhook report`: -o into *out, the traces into files (*n of them),
 * --max-events into lim. Returns -1 when all is well, else the exit status (after a message). */
static int report_options(int argc, char **argv, const char **out, char **files, size_t *n,
                          rd_opts *lim) {
  rd_getopt g;
  int opt;
  memset(lim, 0, sizeof *lim);
  rd_getopt_init(&g, &cmd_report_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == 'o') *out = g.arg;
    else if (opt == RD_KEY(0)) {
      if (rd_parse_max_events("report", g.arg, lim) != RD_OK) return RD_USAGE;
    } else files[(*n)++] = (char *)g.arg;
  }
  if (opt < 0) return g.status;
  if (!*out) return rd_usage_error("report", "no output file given (-o FILE.html)");
  if (!*n) return rd_usage_error("report", "no trace file given");
  return -1;
}

/* The flame graphs' SVGs (flame_svg.c), inlined into the page: *svg of fl (weight: what it
 * weighs) when flame_ok, svgs[k] of the host samples' sfl[k] when they have any; NULL where
 * there is none. Frees the flame graphs. */
static void render_svgs(flame *fl, int flame_ok, int weight, flame sfl[2], const int sfl_ok[2],
                        char **svg, char *svgs[2]) {
  *svg = NULL;
  size_t svglen = 0;
  if (flame_ok) {
    flame_totals(fl);
    FILE *sf = open_memstream(svg, &svglen);
    if (sf) {
      flame_write_svg(fl, sf, 0, weight == RD_W_GPU ? "GPU time by launching stack" : "Time in API calls");
      if (fclose(sf) != 0 || !svglen) { free(*svg); *svg = NULL; svglen = 0; }
    }
  }
  flame_free(fl);
  for (int k = 0; k < 2; k++) {
    flame_totals(&sfl[k]);
    size_t len = 0;
    FILE *sf = sfl_ok[k] && sfl[k].nodes[0].total[0] ? open_memstream(&svgs[k], &len) : NULL;
    if (sf) {
      flame_write_svg(&sfl[k], sf, 0, k ? "Wait time (host samples)" : "On-CPU time (host samples)");
      if (fclose(sf) != 0 || !len) { free(svgs[k]); svgs[k] = NULL; }
    }
    flame_free(&sfl[k]);
  }
}

int cmd_report(int argc, char **argv) {
  const char *out = NULL;
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  rd_opts lim;
  int orc = report_options(argc, argv, &out, files, &n, &lim);
  if (orc >= 0) { free(files); return orc; }

  report *r = calloc(1, sizeof *r);
  if (!r) { free(files); return RD_BAD_INPUT; }
  intern(&r->st, ""); /* index 0: none */
  int rc = RD_OK;
  rd_opts o;
  memset(&o, 0, sizeof o); /* progress on a terminal: the second passes ("report") */
  o.events_limited = 2; /* ~150 bytes per event: half the limit */
  o.have_max_events = lim.have_max_events;
  o.max_events = lim.max_events;
  int64_t *abs_off = rd_xmalloc(n * sizeof *abs_off), *rel = rd_xmalloc(n * sizeof *rel);
  /* Each trace is read twice: the first pass (definitions, and the collectives of the clock
   * alignment, the memory ledger and whether there are kernels), then the second into the page
   * and the flame graph. */
  rd_trace *T = rd_xmalloc(n * sizeof *T);
  rd_memcol **mc = rd_xmalloc(n * sizeof *mc);
  rd_ranks_in **rk = rd_xmalloc(n * sizeof *rk);
  uint64_t kernels = 0;
  /* groups: one per trace (process), ordered launchers first, then by rank */
  r->groups = rd_xmalloc(n * sizeof *r->groups);
  n = first_pass(r, files, n, T, mc, rk, &o, &kernels, &rc);
  if (!n) {
    rd_error("report: no trace could be read; nothing written");
    free(r->groups);
    free(r->st.v[0]);
    free(r->st.v);
    free(r->st.slot);
    free(r);
    free(abs_off);
    free(rel);
    free(files);
    free(T);
    free(mc);
    free(rk);
    return RD_BAD_INPUT;
  }
  rd_qsort(r->groups, r->ngroups, sizeof *r->groups, by_rank_pid);
  rd_progress_plan(files, n);
  /* one timeline: the clock offsets of dlhook merge (anchors, refined on collectives) */
  rd_ranks_finish(rk, n);
  for (size_t i = 0; i < n; i++) {
    abs_off[i] = 0;
    if (!rd_ranks_offset(files[i], &abs_off[i]) && T[i].have_anchor)
      abs_off[i] = (int64_t)T[i].anchor_real_ns - (int64_t)T[i].anchor_trace_ns;
    rel[i] = abs_off[i] - abs_off[0];
  }
  rd_ranks_free();
  free(rk);
  rd_set_offsets(files, rel, n);

  /* the flame graph (export/flame.c's tree) is fed by the same pass */
  rd_opts fo;
  memset(&fo, 0, sizeof fo);
  fo.format = "svg";
  fo.weight = kernels ? RD_W_GPU : RD_W_CPU;
  fo.quiet = 1;
  flame fl;
  flame_init(&fl, &fo);
  int flame_ok = 1;
  /* and the on-CPU and wait flame graphs of the host samples */
  rd_opts so[2];
  flame sfl[2];
  int sfl_ok[2] = {1, 1};
  for (int k = 0; k < 2; k++) {
    so[k] = fo;
    so[k].weight = k ? RD_W_WAIT : RD_W_SAMPLES;
    flame_init(&sfl[k], &so[k]);
  }
  /* the stats of the page (dlhook stats --json), from the same pass, on the common timeline */
  rd_stats_run *sr = rd_stats_run_new(n, 1);
  uint64_t *skips = rd_xmalloc(n * sizeof *skips);
  for (size_t i = 0; i < n; i++) skips[i] = rd_pass2_skip(&T[i]);
  rd_read_ahead(files, skips, n);
  free(skips);
  for (size_t i = 0; i < n; i++)
    if (second_pass(r, T, files, mc, rel, i, &o, sr, &fl, sfl, &flame_ok, sfl_ok) != RD_OK)
      rc = RD_BAD_INPUT;
  rd_read_ahead(NULL, NULL, 0);
  for (size_t w = 0; w < r->nwin; w++)
    if (r->win[w].e == UINT64_MAX) r->win[w].e = r->t1;

  char *svg, *svgs[2] = {NULL, NULL};
  render_svgs(&fl, flame_ok, fo.weight, sfl, sfl_ok, &svg, svgs);
  /* the memory ledger of the page (dlhook stats --memory --json), from what was read */
  char *mjson = NULL;
  size_t mjlen = 0;
  FILE *mj = open_memstream(&mjson, &mjlen);
  if (mj) {
    rd_memory_stats_of(files, T, mc, n, 1, mj);
    if (fclose(mj) != 0) mjlen = 0;
  } else {
    for (size_t i = 0; i < n; i++) { rd_trace_close(&T[i]); rd_memcol_free(mc[i]); }
  }
  free(T);
  free(mc);
  char *sjson = NULL;
  size_t sjlen = 0;
  FILE *sj = open_memstream(&sjson, &sjlen);
  if (sj) {
    rd_stats_run_finish(sr, 1, sj);
    if (fclose(sj) != 0) sjlen = 0;
  } else {
    rd_stats_run_finish(sr, 1, NULL);
  }

  FILE *f = rd_create(out, 0);
  if (!f) { rc = RD_BAD_INPUT; goto done; }
  write_page(f, r, n, svg, svgs[0], svgs[1], sjson, sjlen, mjson, mjlen);
  if (rd_close(f, out) < 0) rc = RD_BAD_INPUT;
done:
  rd_set_offsets(NULL, NULL, 0);
  free(svg);
  free(svgs[0]);
  free(svgs[1]);
  free(sjson);
  free(mjson);
  free(abs_off);
  free(rel);
  report_free(r);
  free(files);
  return rc;
}
