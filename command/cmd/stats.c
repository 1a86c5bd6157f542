/* stats.c — `dlhook stats`: per-function API call statistics and kernel totals over traces. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_fmt.h"
#include "rd.h"
#include "rd_ncclev.h"
#include "rd_opts.h"
#include "rd_scan.h"
#include "rd_selfcost.h"

typedef struct agg {
  char *name;
  int domain;
  uint64_t calls, errors, total, max;
} agg;

typedef struct aggs {
  agg *v;
  size_t n, cap;
  uint32_t *ix;    /* open addressing on (name, domain): index + 1, 0 = empty */
  size_t ixcap;
} aggs;

static size_t agg_slot(const char *name, int domain, size_t cap) {
  return (size_t)(rd_hash_str(name) ^ rd_hash64((uint64_t)(unsigned)domain)) & (cap - 1);
}

/* Finds or adds (name, domain); returns its index. Called once per function id per trace
 * (per-event lookups go through a per-trace id -> index map), through a hash index: a trace may
 * hold any number of distinct names. */
static size_t agg_find(aggs *a, const char *name, int domain) {
  size_t i = a->ixcap ? agg_slot(name, domain, a->ixcap) : 0;
  for (; a->ixcap && a->ix[i]; i = (i + 1) & (a->ixcap - 1)) {
    const agg *g = &a->v[a->ix[i] - 1];
    if (g->domain == domain && !strcmp(g->name, name)) return a->ix[i] - 1;
  }
  if ((a->n + 1) * 2 > a->ixcap) { /* grow the index, then find the free slot again */
    size_t nc = a->ixcap ? a->ixcap * 2 : 128;
    uint32_t *nx = calloc(nc, sizeof *nx);
    if (!nx) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
    for (size_t k = 0; k < a->n; k++) {
      size_t j = agg_slot(a->v[k].name, a->v[k].domain, nc);
      while (nx[j]) j = (j + 1) & (nc - 1);
      nx[j] = (uint32_t)k + 1;
    }
    free(a->ix);
    a->ix = nx;
    a->ixcap = nc;
    for (i = agg_slot(name, domain, nc); a->ix[i]; i = (i + 1) & (nc - 1)) {}
  }
  a->ix[i] = (uint32_t)a->n + 1;
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->v = rd_xrealloc(a->v, a->cap * sizeof *a->v);
  }
  agg *g = &a->v[a->n];
  memset(g, 0, sizeof *g);
  g->name = rd_xstrdup(name);
  g->domain = domain;
  return a->n++;
}

static int by_total(const void *x, const void *y) {
  const agg *a = x, *b = y;
  if (a->total != b->total) return a->total < b->total ? 1 : -1;
  if (a->calls != b->calls) return a->calls < b->calls ? 1 : -1;
  return strcmp(a->name, b->name);
}

typedef struct pid_tid {
  uint32_t pid, tid;
} pid_tid;

/* GPU totals: busy time per (process, device) as the union of its records' intervals. */
typedef struct ival { uint64_t a, b; } ival;
typedef struct devbusy {
  uint32_t pid, device;
  uint64_t busy, first, last, kernel_ns, kernels;
} devbusy;
#define NCOPYKIND 11
static const char *const copy_kind_name[NCOPYKIND] = {
    "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
typedef struct copystat { uint64_t count, bytes, ns; } copystat;

typedef struct stats {
  aggs api, kernels;
  devbusy *dev;
  size_t ndev, capdev;
  copystat copies[NCOPYKIND], memsets;
  uint64_t kernel_ns;
  uint64_t traces, processes, dropped, records, api_calls, api_errors, api_ns;
  uint64_t api_events;   /* API events read: a folded event is one event for many calls */
  uint64_t folded;       /* calls folded into an earlier call (rd_trace_folded) */
  uint64_t unsymbolized; /* stack addresses the recording left without a name */
  pid_tid *threads;
  size_t nthreads, capthreads;
  rd_libstats *lib;      /* GEMM, convolution, collective tables (libcalls.c) */
  rd_ncclstats *nccl;    /* collectives as NCCL ran them: its profiler plugin (ncclev.c) */
  rd_gstats *gs;         /* CUDA graphs and torch.compile kernels (graphstats.c) */
  struct attached {      /* traces written by `dlhook attach` */
    char *file;
    uint32_t pid;
    int detached;        /* Trailer.exit_reason 2 (else the process ended while attached) */
    size_t n;
    char **not_hooked;
  } *att;
  size_t natt;
  struct memfig {        /* dlhook's own memory in each traced process (Trailer.mem_*) */
    char *file;
    uint32_t pid;
    rd_mem *m;
  } *mem;
  size_t nmem;
  rd_selfcost *cost;     /* what dlhook cost or lost (selfcost.c) */
} stats;

static void add_thread(stats *s, uint32_t pid, uint32_t tid) {
  for (size_t i = s->nthreads; i > 0; i--)
    if (s->threads[i - 1].pid == pid && s->threads[i - 1].tid == tid) return;
  if (s->nthreads == s->capthreads) {
    s->capthreads = s->capthreads ? s->capthreads * 2 : 64;
    s->threads = rd_xrealloc(s->threads, s->capthreads * sizeof *s->threads);
  }
  s->threads[s->nthreads++] = (pid_tid){pid, tid};
}

/* the per-trace maps store index+1 */
static size_t api_index(stats *s, rd_map *m, const rd_trace *t, uint32_t fn) {
  uintptr_t v = (uintptr_t)rd_map_get(m, fn);
  if (v) return v - 1;
  const rd_func *f = rd_trace_func(t, fn);
  size_t i = agg_find(&s->api, rd_func_name(t, fn), f ? f->domain : 0);
  rd_map_put(m, fn, (void *)(uintptr_t)(i + 1));
  return i;
}

static size_t kernel_index(stats *s, rd_map *m, const rd_trace *t, uint32_t name) {
  uintptr_t v = (uintptr_t)rd_map_get(m, name);
  if (v) return v - 1;
  const char *str = rd_trace_string(t, name);
  char tmp[32];
  if (!str) {
    snprintf(tmp, sizeof tmp, name ? "#%u" : "(unnamed)", name);
    str = tmp;
  }
  size_t i = agg_find(&s->kernels, str, 0);
  rd_map_put(m, name, (void *)(uintptr_t)(i + 1));
  return i;
}

/* Adds `count` calls that took `dur` ns together (count > 1: a folded event, whose dur is the
 * sum of its calls' own durations). Each folded call counts; for the max, a folded event only
 * tells the sum, so its calls count with their average duration. */
static void account(agg *g, uint64_t dur, int err, uint64_t count) {
  if (count < 1) count = 1;
  g->calls += count;
  g->errors += err ? count : 0;
  g->total += dur;
  uint64_t each = dur / count;
  if (each > g->max) g->max = each;
}

/* Sorts intervals and merges those that overlap or touch: the same union in fewer intervals.
 * Returns how many are left. */
static size_t merge_ivals(ival *v, size_t n) {
  if (!n) return 0;
  _Static_assert(sizeof(ival) == sizeof(rd_pair), "ival is an rd_pair keyed by its start");
  rd_sort_pairs((rd_pair *)v, n);
  size_t w = 0;
  for (size_t i = 1; i < n; i++) {
    if (v[i].a <= v[w].b) {
      if (v[i].b > v[w].b) v[w].b = v[i].b;
    } else {
      v[++w] = v[i];
    }
  }
  return w + 1;
}

/* Adds one trace's intervals of one device to the totals. over: more intervals than its budget
 * (the busy time is not known: UINT64_MAX); first/last then from first_a/last_b. */
static void add_busy(stats *s, uint32_t pid, uint32_t device, ival *v, size_t n, uint64_t kns,
                     uint64_t nk, int over, uint64_t first_a, uint64_t last_b) {
  if (!n && !over) return;
  uint64_t busy = UINT64_MAX, first = first_a, last = last_b;
  if (!over) {
    n = merge_ivals(v, n);
    busy = 0;
    first = v[0].a;
    last = 0;
    for (size_t i = 0; i < n; i++) {
      busy += v[i].b - v[i].a;
      if (v[i].b > last) last = v[i].b;
    }
  }
  if (s->ndev == s->capdev) {
    s->capdev = s->capdev ? s->capdev * 2 : 8;
    s->dev = rd_xrealloc(s->dev, s->capdev * sizeof *s->dev);
  }
  s->dev[s->ndev++] = (devbusy){pid, device, busy, first, last, kns, nk};
}

typedef struct devivals {
  uint32_t device;
  ival *v;
  size_t n, cap;
  uint64_t kernel_ns, kernels;
  /* over: more disjoint intervals than the trace's budget (rd_default_event_limit): v is
   * freed and the busy time left unknown; first/last: the span all the same */
  int over;
  uint64_t first, last;
} devivals;

static devivals *dev_of(devivals **d, size_t *nd, uint32_t device) {
  for (size_t i = 0; i < *nd; i++)
    if ((*d)[i].device == device) return &(*d)[i];
  *d = rd_xrealloc(*d, (*nd + 1) * sizeof **d);
  devivals *x = &(*d)[(*nd)++];
  memset(x, 0, sizeof *x);
  x->device = device;
  return x;
}

/* One trace's pass: the per-trace maps and device intervals. */
typedef struct one {
  stats *s;
  const char *path;
  rd_map fnmap, kmap;
  uint32_t last_fn;  /* the last function id seen, and its index + 1 (0: none) */
  size_t last_gi;
  devivals *dv;
  size_t ndv;
  size_t budget;     /* GPU records kept per device and for the library join (0: not known yet) */
} one;

static void s_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  one *o = ctx;
  stats *s = o->s;
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS:
      s->processes++;
      if (p->process->has_attached && p->process->attached) {
        s->att = rd_xrealloc(s->att, (s->natt + 1) * sizeof *s->att);
        struct attached *a = &s->att[s->natt++];
        a->file = rd_xstrdup(o->path);
        a->pid = p->process->pid;
        a->detached = 0;
        a->n = p->process->n_not_hooked;
        a->not_hooked = rd_xmalloc((a->n + 1) * sizeof *a->not_hooked);
        for (size_t k = 0; k < a->n; k++) a->not_hooked[k] = rd_xstrdup(p->process->not_hooked[k]);
      }
      break;
    case DLH__PACKET__DATA_TRAILER:
      if (p->trailer->exit_reason == 2 && s->natt && !strcmp(s->att[s->natt - 1].file, o->path))
        s->att[s->natt - 1].detached = 1;
      break;
    case DLH__PACKET__DATA_FUNCTION: {
      /* a redefinition of an id may change its name: resolve it again */
      uint32_t id = p->function->id;
      if (!rd_map_get(&o->fnmap, id)) break;
      const rd_func *f = rd_trace_func(t, id);
      size_t i = agg_find(&s->api, rd_func_name(t, id), f ? f->domain : 0);
      rd_map_put(&o->fnmap, id, (void *)(uintptr_t)(i + 1));
      o->last_gi = 0;
      break;
    }
    case DLH__PACKET__DATA_THREAD:
      add_thread(s, t->pid, p->thread->tid);
      break;
    default:
      break;
  }
}

static void s_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  one *o = ctx;
  stats *s = o->s;
  if (!s->nthreads || s->threads[s->nthreads - 1].tid != tid || s->threads[s->nthreads - 1].pid != t->pid)
    add_thread(s, t->pid, tid);
  size_t gi; /* api_index may move s->api.v */
  if (o->last_gi && o->last_fn == ev->fn) gi = o->last_gi - 1;
  else {
    gi = api_index(s, &o->fnmap, t, ev->fn);
    o->last_fn = ev->fn;
    o->last_gi = gi + 1;
  }
  uint64_t calls = dlh_api_calls(ev);
  account(&s->api.v[gi], ev->dur_ns, ev->ret != 0, calls);
  rd_waits_api(t, tid, ev->start_ns, ev->start_ns + dlh_api_span(ev)); /* a waiting thread's time */
  rd_libstats_api(s->lib, t, tid, ev);
  s->api_calls += calls;
  s->api_events++;
  s->api_errors += ev->ret != 0 ? calls : 0;
  s->api_ns += ev->dur_ns;
}

static void s_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  one *o = ctx;
  stats *s = o->s;
  dlh_gpu_event ev = {g->kind, g->start, g->dur, g->corr, g->device, g->context, g->stream,
                      g->name, g->nvals, g->vals, g->graph, g->graph_node};
  rd_libstats_gpu(s->lib, &ev);
  rd_gstats_gpu(s->gs, t, g);
  if (!rd_gpu_busy(ev.kind)) return; /* kernels, copies, memsets occupy the GPU */
  devivals *d = dev_of(&o->dv, &o->ndv, ev.device);
  if (!d->first || ev.start_ns < d->first) d->first = ev.start_ns;
  if (ev.start_ns + ev.dur_ns > d->last) d->last = ev.start_ns + ev.dur_ns;
  if (d->n == o->budget && !d->over) { /* the union in fewer intervals, or none kept */
    d->n = merge_ivals(d->v, d->n);
    if (d->n > o->budget / 2) {
      d->over = 1;
      free(d->v);
      d->v = NULL;
      d->n = d->cap = 0;
    }
  }
  if (!d->over) {
    if (d->n == d->cap) {
      d->cap = d->cap ? d->cap * 2 : 1024;
      if (d->cap > o->budget) d->cap = o->budget;
      d->v = rd_xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = (ival){ev.start_ns, ev.start_ns + ev.dur_ns};
  }
  if (ev.kind == RD_KERNEL) {
    size_t gi = kernel_index(s, &o->kmap, t, ev.name);
    account(&s->kernels.v[gi], ev.dur_ns, 0, 1);
    s->kernel_ns += ev.dur_ns;
    d->kernel_ns += ev.dur_ns;
    d->kernels++;
  } else {
    copystat *c = ev.kind == RD_MEMSET ? &s->memsets
                  : &s->copies[ev.nvals > 1 && ev.vals[1] < NCOPYKIND ? ev.vals[1] : 0];
    c->count++;
    c->bytes += ev.nvals ? ev.vals[0] : 0;
    c->ns += ev.dur_ns;
  }
}

/* A run of dlhook stats over traces, for cmd_stats and dlhook report (rd_stats_run in rd.h):
 * the totals, the step analysis (JSON only), the collectives of several ranks, and the sinks
 * of the trace being read. */
struct rd_stats_run {
  stats s;
  rd_steps *steps;
  rd_ranks_in **ranks;
  size_t n;
  one o;
  rd_sink own, st, rk, sm, all;
  rd_tee tee;
  rd_ops *ops;  /* the PyTorch tables */
  rd_samples *samples; /* host time from the samples */
  rd_advise *advise;   /* --json: the findings of dlhook advise */
  rd_sink ad;
};

rd_stats_run *rd_stats_run_new(size_t nfiles, int json) {
  rd_stats_run *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  x->s.lib = rd_libstats_new();
  x->s.nccl = rd_ncclstats_new();
  x->s.gs = rd_gstats_new();
  x->s.cost = rd_selfcost_new();
  x->ops = rd_ops_new();
  x->samples = rd_samples_new();
  x->steps = json ? rd_steps_new() : NULL;
  x->advise = json ? rd_advise_new() : NULL;
  x->n = nfiles;
  x->ranks = calloc(nfiles ? nfiles : 1, sizeof *x->ranks);
  if (!x->ranks) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return x;
}

rd_sink *rd_stats_run_begin(rd_stats_run *x, size_t i, const char *path) {
  x->s.traces++;
  /* every GPU record of a recorded trace is kept: the budget grows with the file */
  x->o = (one){&x->s, path, {0}, {0}, 0, 0, NULL, 0, (size_t)rd_default_event_limit(path, 1)};
  rd_libstats_budget(x->s.lib, x->o.budget);
  x->own = (rd_sink){&x->o, s_packet, s_api, s_gpu, 0, NULL};
  x->sm = rd_samples_sink(x->samples);
  x->tee = (rd_tee){{&x->own, &x->sm}, 2};
  if (x->steps) { x->st = rd_steps_sink(x->steps); x->tee.s[x->tee.n++] = &x->st; }
  if (x->advise) { x->ad = rd_advise_sink(x->advise); x->tee.s[x->tee.n++] = &x->ad; }
  if (x->n > 1 && i < x->n) {
    x->ranks[i] = rd_ranks_in_new(path);
    x->rk = rd_ranks_in_sink(x->ranks[i]);
    x->tee.s[x->tee.n++] = &x->rk;
  }
  x->all = rd_tee_sink(&x->tee);
  return &x->all;
}

rd_ops *rd_stats_run_ops(rd_stats_run *x) { return x->ops; }
rd_gstats *rd_stats_run_gstats(rd_stats_run *x) { return x->s.gs; }

/* The trace just begun could not be opened: it does not count. */
void rd_stats_run_drop(rd_stats_run *x) { x->s.traces--; }

void rd_stats_run_end(rd_stats_run *x, size_t i, rd_trace *t) {
  stats *s = &x->s;
  one *o = &x->o;
  if (x->steps) rd_steps_end(x->steps);
  if (x->advise) rd_advise_trace_end(x->advise, t);
  rd_samples_trace_end(x->samples, t);
  if (x->n > 1 && i < x->n && x->ranks[i]) rd_ranks_in_end(x->ranks[i], t);
  for (size_t k = 0; k < o->ndv; k++) {
    add_busy(s, t->pid, o->dv[k].device, o->dv[k].v, o->dv[k].n, o->dv[k].kernel_ns, o->dv[k].kernels,
             o->dv[k].over, o->dv[k].first, o->dv[k].last);
    free(o->dv[k].v);
  }
  for (size_t k = 0; k < o->ndv; k++)
    if (o->dv[k].over)
      rd_error("%s: stats: more than %zu disjoint GPU intervals on device %u for a file of this "
               "size (the limit of dlhook export --help): its busy time is not computed",
               o->path, o->budget, o->dv[k].device);
  if (rd_libstats_over(s->lib))
    rd_error("%s: stats: more than %zu kernels for a file of this size: the library calls "
             "launching the later ones count their own time, not their kernels'", o->path,
             o->budget);
  free(o->dv);
  o->dv = NULL;
  o->ndv = 0;
  rd_libstats_trace_end(s->lib);
  rd_ncclstats_trace(s->nccl, t);
  s->dropped += rd_trace_dropped(t);
  rd_selfcost_trace_end(s->cost, t);
  s->records += rd_trace_records(t);
  s->folded += rd_trace_folded(t);
  if (t->mem) { /* kept: the trace's copy goes with it */
    s->mem = rd_xrealloc(s->mem, (s->nmem + 1) * sizeof *s->mem);
    s->mem[s->nmem++] = (struct memfig){rd_xstrdup(o->path), t->pid, t->mem};
    t->mem = NULL;
  }
  s->unsymbolized += t->pcs_unsymbolized;
  rd_map_free(&o->fnmap, NULL);
  rd_map_free(&o->kmap, NULL);
}

static void json_aggs(FILE *f, const aggs *a, int with_domain) {
  putc('[', f);
  for (size_t i = 0; i < a->n; i++) {
    const agg *g = &a->v[i];
    fputs(i ? ",\n  {\"name\":" : "\n  {\"name\":", f);
    rd_json_str(f, g->name);
    if (!with_domain) { /* a kernel: its short name too (names.c) */
      char *sh = rd_kernel_short(g->name);
      fputs(",\"short_name\":", f);
      rd_json_str(f, sh);
      free(sh);
    }
    if (with_domain) fprintf(f, ",\"domain\":\"%s\"", rd_domain_name(g->domain));
    if (with_domain) fprintf(f, ",\"calls\":%" PRIu64 ",\"errors\":%" PRIu64, g->calls, g->errors);
    else fprintf(f, ",\"count\":%" PRIu64, g->calls);
    fprintf(f, ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
            g->total, g->calls ? g->total / g->calls : 0, g->max);
  }
  fputs(a->n ? "\n]" : "]", f);
}

static double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }
static double gbps(uint64_t bytes, uint64_t ns) { return ns ? (double)bytes / (double)ns : 0; }

/* {"peak_bytes":P,"bytes":B} of a part (bytes: at the end of the trace, when recorded). */
static void json_part(FILE *f, const rd_mem_part *p) {
  fprintf(f, "{\"peak_bytes\":%" PRIu64, p->peak_bytes);
  if (p->has_bytes) fprintf(f, ",\"bytes\":%" PRIu64, p->bytes);
  putc('}', f);
}

/* `,"dlhook_memory":{...}`: the memory dlhook itself held in the traced processes (not the
 * GPU memory of `stats --memory`): the largest budget and peak over the traces, each part's
 * largest peak, and per trace its own figures. Left out when no trace recorded them. */
static void json_dlhook_memory(FILE *f, const stats *s) {
  if (!s->nmem) return;
  uint64_t budget = 0, peak = 0;
  int has_budget = 0, has_peak = 0;
  for (size_t i = 0; i < s->nmem; i++) {
    const rd_mem *m = s->mem[i].m;
    if (m->has_budget) { has_budget = 1; if (m->budget_bytes > budget) budget = m->budget_bytes; }
    if (m->has_peak) { has_peak = 1; if (m->peak_bytes > peak) peak = m->peak_bytes; }
  }
  fputs(",\n\"dlhook_memory\":{", f);
  if (has_budget) fprintf(f, "\"budget_bytes\":%" PRIu64 ",", budget);
  if (has_peak) fprintf(f, "\"peak_bytes\":%" PRIu64 ",", peak);
  /* each part once, with its largest peak over the traces (first-seen order) */
  size_t nall = 0;
  for (size_t i = 0; i < s->nmem; i++) nall += s->mem[i].m->nparts;
  const rd_mem_part **all = rd_xmalloc((nall ? nall : 1) * sizeof *all);
  uint64_t *pk = rd_xmalloc((nall ? nall : 1) * sizeof *pk);
  size_t nu = 0;
  for (size_t i = 0; i < s->nmem; i++)
    for (size_t k = 0; k < s->mem[i].m->nparts; k++) {
      const rd_mem_part *p = &s->mem[i].m->parts[k];
      size_t u = 0;
      while (u < nu && strcmp(all[u]->name, p->name)) u++;
      if (u == nu) { all[nu] = p; pk[nu++] = 0; }
      if (p->peak_bytes > pk[u]) pk[u] = p->peak_bytes;
    }
  fputs("\"parts\":{", f);
  for (size_t u = 0; u < nu; u++) {
    if (u) putc(',', f);
    rd_json_str(f, all[u]->name);
    fprintf(f, ":%" PRIu64, pk[u]);
  }
  free(all);
  free(pk);
  fputs("},\"traces\":[", f);
  for (size_t i = 0; i < s->nmem; i++) {
    const rd_mem *m = s->mem[i].m;
    fputs(i ? ",{\"file\":" : "{\"file\":", f);
    rd_json_str(f, s->mem[i].file);
    fprintf(f, ",\"pid\":%u", s->mem[i].pid);
    if (m->has_budget) fprintf(f, ",\"budget_bytes\":%" PRIu64, m->budget_bytes);
    if (m->has_peak) fprintf(f, ",\"peak_bytes\":%" PRIu64, m->peak_bytes);
    fputs(",\"parts\":{", f);
    for (size_t k = 0; k < m->nparts; k++) {
      if (k) putc(',', f);
      rd_json_str(f, m->parts[k].name);
      putc(':', f);
      json_part(f, &m->parts[k]);
    }
    fputs("}}", f);
  }
  fputs("]}", f);
}

static void print_json(FILE *f, const stats *s, rd_steps *steps, rd_ops *ops, rd_samples *sm,
                       rd_advise *adv) {
  fputs("{\"api\":", f);
  json_aggs(f, &s->api, 1);
  fputs(",\n\"kernels\":", f);
  json_aggs(f, &s->kernels, 0);
  fprintf(f, ",\n\"gpu\":{\"kernel_ns\":%" PRIu64 ",\"devices\":[", s->kernel_ns);
  for (size_t i = 0; i < s->ndev; i++) {
    const devbusy *d = &s->dev[i];
    fprintf(f, "%s{\"pid\":%u,\"device\":%u,\"kernels\":%" PRIu64 ",\"kernel_ns\":%" PRIu64,
            i ? "," : "", d->pid, d->device, d->kernels, d->kernel_ns);
    if (d->busy == UINT64_MAX) /* over its budget: not known */
      fprintf(f, ",\"busy_ns\":null,\"span_ns\":%" PRIu64 ",\"busy_pct\":null}", d->last - d->first);
    else {
      fprintf(f, ",\"busy_ns\":%" PRIu64 ",\"span_ns\":%" PRIu64 ",\"busy_pct\":", d->busy,
              d->last - d->first);
      rd_json_double(f, pct(d->busy, d->last - d->first));
      putc('}', f);
    }
  }
  fputs("],\"memcpy\":[", f);
  int first = 1;
  for (int k = 0; k < NCOPYKIND; k++) {
    const copystat *c = &s->copies[k];
    if (!c->count) continue;
    fprintf(f, "%s{\"kind\":\"%s\",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"total_ns\":%" PRIu64 ",\"gb_per_s\":",
            first ? "" : ",", copy_kind_name[k], c->count, c->bytes, c->ns);
    rd_json_double(f, gbps(c->bytes, c->ns));
    putc('}', f);
    first = 0;
  }
  fprintf(f, "],\"memset\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64
             "}}", s->memsets.count, s->memsets.bytes, s->memsets.ns);
  fprintf(f, ",\n\"calls\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"total_ns\":%" PRIu64
             ",\"dropped\":%" PRIu64 ",\"records\":%" PRIu64 ",\"traces\":%" PRIu64
             ",\"processes\":%" PRIu64 ",\"threads\":%zu,\"unsymbolized\":%" PRIu64
             ",\"api_events\":%" PRIu64 ",\"folded\":%" PRIu64,
          s->api_calls, s->api_errors, s->api_ns, s->dropped, s->records, s->traces,
          s->processes, s->nthreads, s->unsymbolized, s->api_events, s->folded);
  json_dlhook_memory(f, s);
  rd_selfcost_json(f, s->cost); /* waits for the writer, drops, lost samples */
  rd_libstats_json(s->lib, f); /* gemms, convs, collectives */
  rd_ncclstats_json(s->nccl, f); /* the same as NCCL ran them, across ranks */
  rd_ranks_json(f); /* several ranks: arrival skew and the straggler */
  rd_steps_json(f, steps); /* per step and rank: compute, comm, copy, host, idle */
  if (ops) rd_ops_json(f, ops); /* operators, modules, source lines (PyTorch) */
  rd_gstats_json(f, s->gs); /* CUDA graphs, graph nodes, torch.compile kernels */
  rd_samples_json(f, sm); /* host time from the samples */
  if (adv) { /* dlhook advise's findings */
    fputs(",\n\"findings\":", f);
    rd_advise_json(f, adv);
  }
  if (s->natt) { /* dlhook attach */
    fputs(",\n\"attached\":[", f);
    for (size_t i = 0; i < s->natt; i++) {
      fprintf(f, "%s{\"file\":", i ? "," : "");
      rd_json_str(f, s->att[i].file);
      fprintf(f, ",\"pid\":%u,\"detached\":%s,\"not_hooked\":[", s->att[i].pid,
              s->att[i].detached ? "true" : "false");
      for (size_t k = 0; k < s->att[i].n; k++) {
        if (k) fputc(',', f);
        rd_json_str(f, s->att[i].not_hooked[k]);
      }
      fputs("]}", f);
    }
    fputc(']', f);
  }
  fputs("}\n", f);
}

/* Durations for the table: ns, us, ms or s with 3 significant-ish digits. */
static const char *fmt_ns(char *buf, size_t n, double ns) {
  if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f s", ns / 1e9);
  return buf;
}

/* dst (4 * width + 4 bytes): src fitted to width columns, safe for a terminal (names come from
 * the trace: control sequences are shown escaped, never sent). */
static void fit(char *dst, size_t width, const char *src) { rd_term_fit(dst, 4 * width + 4, width, src); }

/* The table cells of the first n kernels of a: their short names, distinct where a longer
 * form tells them apart (names.c); each malloc'd, as the array. */
static char **kernel_cells(const aggs *a, size_t n, size_t width) {
  const char **nm = rd_xmalloc((n ? n : 1) * sizeof *nm);
  char **cell = rd_xmalloc((n ? n : 1) * sizeof *cell);
  for (size_t i = 0; i < n; i++) nm[i] = a->v[i].name;
  rd_names_kernels(nm, n, width, cell);
  free(nm);
  return cell;
}

static void print_totals(FILE *f, const stats *s);
static void print_notes(FILE *f, const stats *s);

/* The API table: per function, sorted by total time. */
static void print_api(FILE *f, const stats *s) {
  char name[4 * 57 + 4], b1[32], b2[32], b3[32];
  /* 40 + 9 + 10 + 7 + 11 + 11 + 11 = 99 columns */
  fprintf(f, "%-40s %-8s %9s %6s %10s %10s %10s\n", "Function", "Domain", "Calls", "Errors",
          "Total", "Mean", "Max");
  for (size_t i = 0; i < s->api.n; i++) {
    const agg *g = &s->api.v[i];
    fit(name, 40, g->name);
    fprintf(f, "%-40s %-8s %9" PRIu64 " %6" PRIu64 " %10s %10s %10s\n", name,
            rd_domain_name(g->domain), g->calls, g->errors, fmt_ns(b1, sizeof b1, (double)g->total),
            fmt_ns(b2, sizeof b2, g->calls ? (double)g->total / (double)g->calls : 0),
            fmt_ns(b3, sizeof b3, (double)g->max));
  }
  if (s->api.n == 0) fprintf(f, "(no API calls)\n");
  fprintf(f, "%-40s %-8s %9" PRIu64 " %6" PRIu64 " %10s\n", "total", "", s->api_calls,
          s->api_errors, fmt_ns(b1, sizeof b1, (double)s->api_ns));
}

/* The sections of the full tables (--table NAME), in the order they are printed. */
enum { T_API, T_KERNELS, T_GPU, T_LIBRARIES, T_GRAPHS, T_RANKS, T_SAMPLES, T_TOTALS, T_PYTORCH,
       T_FINDINGS, T_NTABLES };
static const char *const table_names[T_NTABLES] = {
    "api", "kernels", "gpu", "libraries", "graphs", "ranks", "samples", "totals", "pytorch",
    "findings"};
#define T_ALL ((1u << T_FINDINGS) - 1) /* what the full tables hold (findings: dlhook advise) */

static void print_table(FILE *f, const stats *s, rd_ops *ops, rd_samples *sm, unsigned want) {
  char b1[32], b2[32], b3[32];
  if (want & 1u << T_API) print_api(f, s);
  if ((want & 1u << T_KERNELS) && s->kernels.n) {
    fprintf(f, "\n%-57s %9s %10s %10s %10s\n", "Kernel", "Count", "Total", "Mean", "Max");
    char **cell = kernel_cells(&s->kernels, s->kernels.n, 57); /* short names (names.c) */
    for (size_t i = 0; i < s->kernels.n; i++) {
      const agg *g = &s->kernels.v[i];
      fprintf(f, "%s %9" PRIu64 " %10s %10s %10s\n", cell[i], g->calls,
              fmt_ns(b1, sizeof b1, (double)g->total),
              fmt_ns(b2, sizeof b2, g->calls ? (double)g->total / (double)g->calls : 0),
              fmt_ns(b3, sizeof b3, (double)g->max));
      free(cell[i]);
    }
    free(cell);
  }
  if ((want & 1u << T_GPU) && s->ndev) {
    fprintf(f, "\n%-10s %7s %9s %12s %12s %12s %8s\n", "GPU", "pid", "kernels", "kernel time",
            "busy", "span", "busy %");
    for (size_t i = 0; i < s->ndev; i++) {
      const devbusy *d = &s->dev[i];
      char nm[16];
      snprintf(nm, sizeof nm, "device %u", d->device);
      if (d->busy == UINT64_MAX) /* over its budget: not known */
        fprintf(f, "%-10s %7u %9" PRIu64 " %12s %12s %12s %8s\n", nm, d->pid, d->kernels,
                fmt_ns(b1, sizeof b1, (double)d->kernel_ns), "-",
                fmt_ns(b3, sizeof b3, (double)(d->last - d->first)), "-");
      else
        fprintf(f, "%-10s %7u %9" PRIu64 " %12s %12s %12s %7.1f%%\n", nm, d->pid, d->kernels,
                fmt_ns(b1, sizeof b1, (double)d->kernel_ns), fmt_ns(b2, sizeof b2, (double)d->busy),
                fmt_ns(b3, sizeof b3, (double)(d->last - d->first)), pct(d->busy, d->last - d->first));
    }
    int any = s->memsets.count > 0;
    for (int k = 0; k < NCOPYKIND; k++) any |= s->copies[k].count > 0;
    if (any) {
      fprintf(f, "\n%-10s %9s %14s %12s %10s\n", "Copy", "Count", "Bytes", "Time", "GB/s");
      for (int k = 0; k <= NCOPYKIND; k++) {
        const copystat *c = k < NCOPYKIND ? &s->copies[k] : &s->memsets;
        if (!c->count) continue;
        fprintf(f, "%-10s %9" PRIu64 " %14" PRIu64 " %12s %10.2f\n",
                k < NCOPYKIND ? copy_kind_name[k] : "memset", c->count, c->bytes,
                fmt_ns(b1, sizeof b1, (double)c->ns), gbps(c->bytes, c->ns));
      }
    }
  }
  if (want & 1u << T_LIBRARIES) rd_libstats_table(s->lib, f);
  if (want & 1u << T_LIBRARIES) rd_ncclstats_table(s->nccl, f);
  if (want & 1u << T_GRAPHS) rd_gstats_table(f, s->gs); /* CUDA graphs, torch.compile kernels */
  if (want & 1u << T_RANKS) rd_ranks_table(f);
  if (want & 1u << T_SAMPLES) rd_samples_table(f, sm); /* host time from the samples */
  if (want & 1u << T_TOTALS) print_totals(f, s);
  if (want & 1u << T_TOTALS) rd_selfcost_table(f, s->cost); /* what dlhook cost or lost */
  if ((want & 1u << T_PYTORCH) && ops) rd_ops_table(f, ops);
  if (want & 1u << T_TOTALS) print_notes(f, s);
}

/* The totals: traces, processes, threads, records; dlhook's own memory. */
static void print_totals(FILE *f, const stats *s) {
  fprintf(f, "\n%" PRIu64 " trace%s, %" PRIu64 " process%s, %zu thread%s, %" PRIu64
             " records, %" PRIu64 " dropped\n",
          s->traces, s->traces == 1 ? "" : "s", s->processes, s->processes == 1 ? "" : "es",
          s->nthreads, s->nthreads == 1 ? "" : "s", s->records, s->dropped);
  if (s->folded)
    fprintf(f, "%" PRIu64 " folded repeat%s (identical calls recorded once): %" PRIu64
               " calls in %" PRIu64 " events\n",
            s->folded, s->folded == 1 ? "" : "s", s->api_calls, s->api_events);
  for (size_t i = 0; i < s->nmem; i++) { /* dlhook's own memory in the traced process */
    const rd_mem *m = s->mem[i].m;
    char b1[32], b2[32];
    fprintf(f, "dlhook memory");
    if (s->nmem > 1 || s->traces > 1) {
      char nm[4 * 40 + 4];
      rd_term_fit(nm, sizeof nm, 40, s->mem[i].file);
      for (size_t k = strlen(nm); k > 0 && nm[k - 1] == ' '; k--) nm[k - 1] = 0;
      fprintf(f, " of %s (pid %u)", nm, s->mem[i].pid);
    }
    fprintf(f, ": peak %s", m->has_peak ? dlh_fmt_bytes(b1, sizeof b1, m->peak_bytes) : "?");
    if (m->has_budget) fprintf(f, " of a %s budget", dlh_fmt_bytes(b2, sizeof b2, m->budget_bytes));
    putc('\n', f);
    for (size_t k = 0; k < m->nparts; k++) {
      char nm[4 * 24 + 4];
      rd_term_fit(nm, sizeof nm, 24, m->parts[k].name);
      fprintf(f, "  %s peak %12s", nm, dlh_fmt_bytes(b1, sizeof b1, m->parts[k].peak_bytes));
      if (m->parts[k].has_bytes)
        fprintf(f, ", at the end %12s", dlh_fmt_bytes(b2, sizeof b2, m->parts[k].bytes));
      putc('\n', f);
    }
  }
}

/* What the reader should know of the traces themselves: unnamed addresses, dlhook attach. */
static void print_notes(FILE *f, const stats *s) {
  if (s->unsymbolized)
    fprintf(f, "%" PRIu64 " stack addresses without a name (recording ended first): "
               "dlhook symbolize TRACE names them\n", s->unsymbolized);
  for (size_t i = 0; i < s->natt; i++) {
    fprintf(f, "\n%s: recorded by dlhook attach (pid %u, %s); not hooked:\n", s->att[i].file,
            s->att[i].pid, s->att[i].detached ? "until detach" : "until the process ended");
    for (size_t k = 0; k < s->att[i].n; k++) fprintf(f, "  - %s\n", s->att[i].not_hooked[k]);
  }
}

/* What the text output shows: the first screen, then the tables in want (cmd_stats sets it). */
static struct { int summary; unsigned want; } view = {1, T_ALL};

static const char *steps_from_words(int from) {
  switch (from) {
  case RD_STEPS_NVTX: return "NVTX ranges";
  case RD_STEPS_OPTIMIZER: return "one per Optimizer.step";
  case RD_STEPS_BACKWARD: return "one per backward()";
  case RD_STEPS_TRAINING_STEP: return "one per training_step";
  case RD_STEPS_DETECTED: return "detected from the repeating calls";
  default: return "the whole trace";
  }
}

/* The first screen's head: what was traced, the steps and their breakdown, GPU busy. */
static void summary_head(FILE *f, const stats *s, int torch) {
  char b1[32], b2[32];
  fprintf(f, "Summary of %" PRIu64 " trace%s (%" PRIu64 " process%s, %zu thread%s)%s: %" PRIu64
             " API calls, %zu distinct kernels\n",
          s->traces, s->traces == 1 ? "" : "s", s->processes, s->processes == 1 ? "" : "es",
          s->nthreads, s->nthreads == 1 ? "" : "s", torch ? ", PyTorch" : "", s->api_calls,
          s->kernels.n);
  uint64_t busy = 0, span = 0;
  for (size_t i = 0; i < s->ndev; i++)
    if (s->dev[i].busy != UINT64_MAX) busy += s->dev[i].busy, span += s->dev[i].last - s->dev[i].first;
  rd_steps_sum st;
  if (!rd_steps_brief(&st)) {
    fprintf(f, "Steps: none found (docs/steps.md); GPU busy %.1f%% of %s\n", pct(busy, span),
            fmt_ns(b1, sizeof b1, (double)span));
    return;
  }
  uint64_t gpu = st.cat[0] + st.cat[1] + st.cat[2];
  fprintf(f, "Steps: %zu (%s%s), median %s; GPU busy %.1f%% of the steps\n", st.steps,
          steps_from_words(st.from), st.processes > 1 ? ", all processes" : "",
          fmt_ns(b2, sizeof b2, (double)st.median_ns), pct(gpu, st.total_ns));
  fprintf(f, "  compute %.1f%%  communication %.1f%%  copies %.1f%%  host %.1f%%  idle %.1f%%\n",
          pct(st.cat[0], st.total_ns), pct(st.cat[1], st.total_ns), pct(st.cat[2], st.total_ns),
          pct(st.cat[3], st.total_ns), pct(st.cat[4], st.total_ns));
}

/* The first screen's tail: the top kernels (short names), dlhook's own cost. */
static void summary_tail(FILE *f, const stats *s, rd_samples *sm, size_t nk) {
  char b1[32], b2[32];
  if (nk > s->kernels.n) nk = s->kernels.n;
  if (nk) {
    char **cell = kernel_cells(&s->kernels, nk, 52);
    fprintf(f, "%-54s %7s %10s %10s\n", "Kernels by GPU time", "count", "GPU", "share");
    for (size_t i = 0; i < nk; i++) {
      char sh[16];
      snprintf(sh, sizeof sh, "%.1f%%", pct(s->kernels.v[i].total, s->kernel_ns));
      fprintf(f, "  %s %7" PRIu64 " %10s %10s\n", cell[i], s->kernels.v[i].calls,
              fmt_ns(b1, sizeof b1, (double)s->kernels.v[i].total), sh);
      free(cell[i]);
    }
    free(cell);
  }
  uint64_t lost, cost, peak = 0, budget = 0;
  rd_samples_cost(sm, &lost, &cost);
  for (size_t i = 0; i < s->nmem; i++) {
    if (s->mem[i].m->has_peak && s->mem[i].m->peak_bytes > peak) peak = s->mem[i].m->peak_bytes;
    if (s->mem[i].m->has_budget && s->mem[i].m->budget_bytes > budget) budget = s->mem[i].m->budget_bytes;
  }
  char line[160], more[80] = "";
  int n = snprintf(line, sizeof line, "dlhook itself: %" PRIu64 " records (%" PRIu64 " dropped)",
                   s->records, s->dropped);
  if (peak && n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, ", memory peak %s",
                  dlh_fmt_bytes(b1, sizeof b1, peak));
  if (peak && budget && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, " of %s", dlh_fmt_bytes(b2, sizeof b2, budget));
  /* dlhook's threads and its sample handler against every thread of the process */
  uint64_t own, proc;
  if (rd_selfcost_cpu(s->cost, &own, &proc))
    snprintf(more, sizeof more, "CPU %.1f%%", pct(own, proc));
  if (more[0] && (cost || lost))
    snprintf(more + strlen(more), sizeof more - strlen(more), ", %" PRIu64 " samples lost", lost);
  else if (cost || lost)
    snprintf(more, sizeof more, "sampler %s CPU, %" PRIu64 " samples lost",
             fmt_ns(b1, sizeof b1, (double)cost), lost);
  if (more[0] && strlen(line) + strlen(more) + 2 <= 100) fprintf(f, "%s, %s\n", line, more);
  else if (more[0]) fprintf(f, "%s\n  %s\n", line, more);
  else fprintf(f, "%s\n", line);
  if (rd_selfcost_wait_line(s->cost, line, sizeof line)[0]) fprintf(f, "  %s\n", line);
}

/* The first screen (at most 40 lines of 100 columns): steps, findings, operators, modules,
 * kernels, dlhook's cost; a trace without PyTorch shows its top API functions instead. */
static void print_summary(FILE *f, const stats *s, rd_ops *ops, rd_samples *sm, rd_advise *adv) {
  char b1[32], b2[32], cell[4 * 52 + 4];
  int torch = ops && !rd_ops_none(ops);
  summary_head(f, s, torch);
  size_t nf = rd_advise_count(adv);
  if (!nf) fprintf(f, "Findings: none above the thresholds (dlhook advise)\n");
  else fprintf(f, "Findings: %zu, by cost (dlhook advise: evidence and fixes)\n", nf);
  rd_advise_headlines(f, adv, 3);
  if (nf > 3) fprintf(f, "  ... %zu more\n", nf - 3);
  if (!torch || !rd_ops_summary(f, ops, 5, 4)) {
    size_t n = s->api.n < 5 ? s->api.n : 5;
    if (n) fprintf(f, "%-54s %7s %10s %10s\n", "API functions by host time", "calls", "total", "mean");
    for (size_t i = 0; i < n; i++) {
      const agg *g = &s->api.v[i];
      fit(cell, 52, g->name);
      fprintf(f, "  %s %7" PRIu64 " %10s %10s\n", cell, g->calls,
              fmt_ns(b1, sizeof b1, (double)g->total),
              fmt_ns(b2, sizeof b2, g->calls ? (double)g->total / (double)g->calls : 0));
    }
  }
  summary_tail(f, s, sm, 5);
  if (view.want == T_ALL)
    fprintf(f, "(the full tables follow; dlhook stats --summary: this screen only, "
               "--table NAME: one table)\n\n");
}

enum { OPT_JSON = RD_KEY(0), OPT_MEMORY, OPT_SUMMARY, OPT_ALL, OPT_TABLE };
static const rd_option options[] = {
    {"json", OPT_JSON, NULL, "print one JSON object instead of the tables (its fields: below)", NULL, 0},
    {"memory", OPT_MEMORY, NULL, "the GPU memory ledger instead (below)", NULL, 0},
    {"summary", OPT_SUMMARY, NULL, "the first screen only: steps, findings, top operators, "
     "modules and kernels, dlhook's cost", NULL, 0},
    {"all", OPT_ALL, NULL, "the full tables only, without the first screen", NULL, 0},
    {"table", OPT_TABLE, "NAME", "only the table NAME (repeatable, or NAME,NAME): api, kernels, "
     "gpu, libraries, graphs, ranks, samples, totals, pytorch, findings", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_stats_spec = {
    .name = "stats",
    .synopsis = "[--json] [--memory] TRACE...",
    .summary = "summarise API calls and kernels of traces",
    .about = "Summarises the traces: per API function (name, domain) the calls, errors (result "
             "not 0), total, mean and max duration, sorted by total time; kernels by name; "
             "records and dropped records; number of traces, processes and threads; repeated "
             "calls folded and the memory dlhook itself held, when the traces recorded them; "
             "with host samples (DLHOOK_SAMPLE_HZ), \"Host time (samples)\": on-CPU and wait time "
             "per thread, by function and line, by operator and by what the threads waited in "
             "(the first 15 rows of each).\n\n"
             "Folded repeats (consecutive identical calls of a thread recorded as one event) "
             "count every call: calls and errors add the event's count, the total its summed "
             "duration; their max is the folded calls' average duration (the event tells only "
             "their sum).",
    .notes = "--json prints one object:\n\n"
             " {\"api\":[{name,domain,calls,errors,total_ns,mean_ns,max_ns}...],\n"
             "  \"kernels\":[{name,short_name,count,total_ns,mean_ns,max_ns}...],\n"
             "  \"gpu\":{kernel_ns,devices:[{pid,device,kernels,kernel_ns,busy_ns,span_ns,\n"
             "         busy_pct}],memcpy:[{kind,count,bytes,total_ns,gb_per_s}],\n"
             "         memset:{count,bytes,total_ns}},\n"
             "  \"calls\",\"dropped\",\"records\",\"traces\",...,\"api_events\",\n"
             "  \"folded\" (calls folded into an earlier call),\n"
             "  \"dlhook_memory\":{budget_bytes,peak_bytes,parts:{NAME:peak_bytes},\n"
             "         traces:[{file,pid,budget_bytes,peak_bytes,parts:{NAME:{peak_bytes,\n"
             "         bytes}}}]} (when recorded: dlhook's own memory, not the GPU's),\n"
             "  \"dlhook_cost\":{ring_waits,ring_wait_ns,waiting_threads,waiting_threads_ns,\n"
             "         ring_wait_pct,dropped,calls_dropped,gpu_dropped,samples,samples_lost,\n"
             "         sample_cost_ns,cpu:{writer_ns,sampler_ns,handler_ns,symbols_ns,\n"
             "         dlhook_ns,process_ns,pct},threads:[{pid,tid,waits,wait_ns,time_ns,pct}]}\n"
             "         (what dlhook cost or lost: threads' waits for its writer, drops, lost\n"
             "         samples, the CPU time of its threads against the whole process's),\n"
             "  \"gemms\":[{function,m,n,k,batch,transa,transb,dtype,calls,total_ns,\n"
             "         mean_ns,time,flops,tflops_per_s}],\n"
             "  \"convs\":[{function,direction,N,C,H,W,K,R,S,pad,stride,dilation,groups,\n"
             "         dtype,calls,total_ns,...,tflops_per_s}],\n"
             "  \"collectives\":[{function,op,bytes,nranks,dtype,calls,total_ns,mean_ns,\n"
             "         time,algbw_gb_per_s,busbw_gb_per_s}],\n"
             "  \"steps\":{rows:[{rank,pid,step,name,steps_from,start_ns,dur_ns,compute_ns,comm_ns,\n"
             "         copy_ns,host_ns,idle_ns,sample_cpu_ns,sample_wait_ns}],slowest_step,\n"
             "         slowest_rank},\n"
             "  \"samples\":{hz,cpu,wait,cpu_ns,wait_ns,lost,written,traces,\n"
             "         by_thread:[{pid,tid,name,cpu,wait,cpu_ns,wait_ns,share}],\n"
             "         by_line:[{function,file,line,cpu,wait,cpu_ns,wait_ns,share}],\n"
             "         by_op:[{name,...}],by_wait:[{name,...}]},\n"
             "  \"graphs\":[{pid,graph,nodes,replays,kernels,copies,memsets,gpu_ns}],\n"
             "  \"graph_nodes\":[{pid,graph,node,work,runs,gpu_ns,made_by,op,where}],\n"
             "  \"inductor_kernels\":[{kernel,aten_ops,source_nodes,line,launches,gpu_ns}],\n"
             "  \"findings\":[...] (those of dlhook advise --json, ranked)}\n\n"
             "(graphs: CUDA graph launches; a node's work is attributed to the call that made it "
             "at capture (made_by, its innermost operator and the user's line or the program's "
             "function: where); inductor_kernels: torch.compile's Triton kernels with the aten "
             "ops Inductor fused into each, per line that ran them)\n\n"
             "(steps: NVTX ranges named like steps, else in PyTorch from the end of one "
             "Optimizer.step (else backward, training_step) to the end of the next, else "
             "detected from the repeating calls of a program without Python: steps_from says "
             "which (docs/steps.md); the five parts are exclusive and add up to "
             "dur_ns; sample_cpu_ns and sample_wait_ns are the host samples taken in the step)\n\n"
             "samples: the host samples of traces recorded with sampling (DLHOOK_SAMPLE_HZ): cpu "
             "and wait count on-CPU and wait samples, cpu_ns and wait_ns the time they stand for "
             "(an on-CPU sample: its thread's CPU time since the previous one; a wait sample: the "
             "wall time), lost the samples the recorder could not take or keep. by_line puts each "
             "sample at the innermost frame of the user's own Python code (else the innermost "
             "Python frame, else the innermost native function), by_op at the innermost aten "
             "operator or autograd node (PyTorch traces with native stacks), by_wait at what a "
             "waiting thread was in (\"[in cudaStreamSynchronize]\", \"[wait: futex]\"); share is "
             "the row's part of all sampled time, 0 to 1. The table shows the first 15 rows "
             "(JSON: 200).\n\n"
             "GEMM, convolution and collective tables: outermost library calls grouped by shape; "
             "time is the GPU time of the kernels linked to the call (\"time\":\"gpu\") or else "
             "the call's duration (\"call\", marked * in the table). Grouped NCCL operations "
             "share the GPU time of their ncclGroupEnd in proportion to their bytes.\n\n"
             "--memory: the GPU memory ledger instead: per process the allocations, frees, peak "
             "live device bytes, what is still allocated at exit (leaks, with the stack that "
             "allocated them) and the live allocations at each out-of-memory error. With --json:\n\n"
             " {\"traces\":[{path,pid,allocations,frees,peak_bytes,live_at_exit_bytes,devices,\n"
             "   leaks:[{ptr,bytes,device,stream,function,stack}],ooms:[{function,\n"
             "   requested_bytes,live_bytes,calls,stack,live:[...]}],\n"
             "   by_operator:[{name,allocations,bytes,peak_live_bytes,leaked_bytes}],\n"
             "   by_module:[...],by_line:[...]}],\n"
             "  \"peak_bytes\",\"leaked_bytes\",\"leaks\":[...]}\n\n"
             "by_operator, by_module and by_line (the operator, module and user line tables): the "
             "allocations of a PyTorch program by the innermost aten operator, the module path "
             "(its forward() frames) and the line of the user's own code on the allocating call's "
             "stack; bytes are what they allocated in all, peak_live_bytes what of it was live at "
             "the trace's peak, leaked_bytes what was still live at exit. Empty for a trace "
             "without PyTorch or without stacks. PyTorch's caching allocator asks CUDA for large "
             "segments only, so these name the operators that grew the cache; record with "
             "`dlhook record --torch-memory` to see every tensor.\n\n"
             "A damaged trace counts everything readable, then reports an error (exit 1).",
    .examples = " dlhook stats traces/*.dlh\n"
                " dlhook stats --json traces/*.dlh | jq '.kernels[:5]'\n"
                " dlhook stats --memory traces/*.dlh",
    .options = options,
};

/* --table's argument: table names separated by commas, added to *mask. Returns 0, or the
 * usage error's status. */
static int parse_tables(const char *arg, unsigned *mask) {
  char one[32];
  for (const char *p = arg; *p;) {
    size_t n = strcspn(p, ",");
    int k = T_NTABLES;
    if (n < sizeof one) {
      memcpy(one, p, n);
      one[n] = 0;
      for (k = 0; k < T_NTABLES && strcmp(one, table_names[k]); k++) {}
    }
    if (k == T_NTABLES) {
      return rd_usage_error("stats", "--table %.*s: no such table (api, kernels, gpu, libraries, "
                            "graphs, ranks, samples, totals, pytorch, findings)",
                            (int)(n < 40 ? n : 40), p);
    }
    *mask |= 1u << k;
    p += n + (p[n] == ',');
  }
  return *mask ? 0 : rd_usage_error("stats", "--table: no table named");
}

int cmd_stats(int argc, char **argv) {
  int json = 0, memory = 0, opt;
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t nfiles = 0;
  rd_getopt g;
  rd_opts ro; /* no event limit: every event is read (steps and findings have their budgets) */
  memset(&ro, 0, sizeof ro);
  ro.quiet = 1;
  rd_getopt_init(&g, &cmd_stats_spec, argc, argv);
  unsigned tables = 0;
  int summary_only = 0, all = 0;
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == OPT_JSON) json = 1;
    else if (opt == OPT_MEMORY) memory = 1;
    else if (opt == OPT_SUMMARY) summary_only = 1;
    else if (opt == OPT_ALL) all = 1;
    else if (opt == OPT_TABLE) {
      int r = parse_tables(g.arg, &tables);
      if (r) { free(files); return r; }
    } else files[nfiles++] = (char *)g.arg;
  }
  if (opt < 0) { free(files); return g.status; }
  if (summary_only + all + !!tables > 1) {
    free(files);
    return rd_usage_error("stats", "--summary, --all and --table choose one view: give one");
  }
  view.summary = !all && !tables;
  view.want = summary_only ? 0 : tables ? tables : T_ALL;
  if (nfiles == 0) {
    free(files);
    return rd_usage_error("stats", "no trace file given");
  }
  if (memory) { /* the GPU memory ledger (memory.c) */
    int mrc = rd_memory_stats(files, nfiles, json, stdout);
    if (fflush(stdout) != 0) mrc = RD_BAD_INPUT;
    free(files);
    return mrc;
  }
  /* the steps and the findings: for --json, the first screen and --table findings */
  rd_stats_run *x = rd_stats_run_new(nfiles, json || view.summary || (view.want & 1u << T_FINDINGS));
  int rc = RD_OK;
  rd_read_ahead(files, NULL, nfiles); /* the next traces decoded while one is counted */
  for (size_t i = 0; i < nfiles; i++) {
    /* stats uses no stack: one pass, definitions as they come */
    rd_trace t;
    int r1 = rd_read_once(&t, files[i], &ro, NULL, rd_stats_run_begin(x, i, files[i]));
    if (r1 != RD_OK) rc = RD_BAD_INPUT;
    if (t.opens == 0) { rd_stats_run_drop(x); rd_trace_close(&t); continue; }
    rd_stats_run_end(x, i, &t);
    /* a PyTorch trace with stacks: its operators need every definition (symbols may follow
     * the calls), so a second pass; so do the calls that made CUDA graph nodes or launched
     * torch.compile's kernels (graphstats.c) */
    int want_ops = rd_ops_wanted(rd_stats_run_ops(x), &t);
    int want_gs = rd_gstats_wanted(rd_stats_run_gstats(x));
    if (want_ops || want_gs) {
      rd_sink os, gs = rd_gstats_sink(rd_stats_run_gstats(x));
      rd_tee tee = {{NULL}, 0};
      if (want_ops) { os = rd_ops_sink(rd_stats_run_ops(x), &t); tee.s[tee.n++] = &os; }
      if (want_gs) tee.s[tee.n++] = &gs;
      rd_sink all = rd_tee_sink(&tee);
      if (rd_read_again(&t, &ro, NULL, &all) != RD_OK) rc = RD_BAD_INPUT;
      if (want_ops) rd_ops_trace_end(rd_stats_run_ops(x));
    }
    rd_gstats_trace_end(rd_stats_run_gstats(x));
    rd_trace_close(&t);
  }
  rd_read_ahead(NULL, NULL, 0);
  rd_stats_run_finish(x, json, stdout);
  if (fflush(stdout) != 0) {
    rd_error("stats: write error on standard output");
    rc = RD_BAD_INPUT;
  }
  free(files);
  return rc;
}

void rd_stats_run_finish(rd_stats_run *x, int json, FILE *out) {
  stats s = x->s;
  free(s.api.ix); /* the order changes: no more lookups */
  free(s.kernels.ix);
  if (s.api.n) rd_qsort(s.api.v, s.api.n, sizeof *s.api.v, by_total);
  if (s.kernels.n) rd_qsort(s.kernels.v, s.kernels.n, sizeof *s.kernels.v, by_total);
  /* functions only ever defined, never called, are not shown */
  size_t keep = 0;
  for (size_t i = 0; i < s.api.n; i++) {
    if (s.api.v[i].calls) s.api.v[keep++] = s.api.v[i];
    else free(s.api.v[i].name);
  }
  s.api.n = keep;
  rd_ranks_finish(x->ranks, x->n);
  if (x->advise) rd_advise_ranks(x->advise);
  free(x->ranks);
  rd_steps *steps = x->steps;
  if (s.traces == 0 || !out) { /* nothing could be opened (the errors said why), or no output */
  } else if (json) {
    print_json(out, &s, steps, x->ops, x->samples, x->advise);
    steps = NULL;
  } else {
    if (view.summary) print_summary(out, &s, x->ops, x->samples, x->advise);
    print_table(out, &s, x->ops, x->samples, view.want);
    if (view.want & 1u << T_FINDINGS) {
      fputc('\n', out);
      rd_advise_table(out, x->advise);
    }
  }
  rd_ops_free(x->ops);
  rd_advise_free(x->advise);
  rd_samples_free(x->samples);
  for (size_t i = 0; i < s.api.n; i++) free(s.api.v[i].name);
  for (size_t i = 0; i < s.kernels.n; i++) free(s.kernels.v[i].name);
  free(s.api.v);
  free(s.kernels.v);
  free(s.threads);
  free(s.dev);
  rd_libstats_free(s.lib);
  rd_ncclstats_free(s.nccl);
  rd_gstats_free(s.gs);
  rd_selfcost_free(s.cost);
  for (size_t i = 0; i < s.natt; i++) {
    for (size_t k = 0; k < s.att[i].n; k++) free(s.att[i].not_hooked[k]);
    free(s.att[i].not_hooked);
    free(s.att[i].file);
  }
  free(s.att);
  for (size_t i = 0; i < s.nmem; i++) {
    for (size_t k = 0; k < s.mem[i].m->nparts; k++) free(s.mem[i].m->parts[k].name);
    free(s.mem[i].m->parts);
    free(s.mem[i].m);
    free(s.mem[i].file);
  }
  free(s.mem);
  if (steps) rd_steps_json(NULL, steps);
  rd_ranks_free();
  free(x);
}
