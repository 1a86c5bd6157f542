/* links.c — what the exporters must know about a trace before they write any of it.
 *
 * A trace holds API calls and GPU records in separate batches, written when each ring or CUPTI
 * buffer is flushed: a kernel may come before or after the call that launched it in the file.
 * Formats that link the two in both directions (the Kineto JSON writes a flow only from calls
 * that launched GPU work, a launch per kernel of a library call; xprof groups kernels by the
 * step of their launch) read the trace once more first: ex_links_scan collects, with the same
 * time window,
 *   - per correlation id that caused GPU work: how many kernels, copies and memsets, and when
 *     the first began (the call side is filled in by the exporter as it writes the calls);
 *   - the NVTX ranges of every thread, sorted, nested (innermost enclosing range), steps
 *     numbered ("ProfilerStep#N", "step N", or --step-range NAME);
 *   - the CUDA event records (which stream and which cudaEventRecord a wait waits on);
 *   - the process: pid, host, rank, world size, clock anchors.
 * Memory: a few dozen bytes per GPU record and per NVTX range, nothing per API call. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "rd.h"

/* ---------------------------------------------------------------- CUPTI callback ids */

static long find_cbid(const ex_cbid *tab, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(tab[mid].name, name);
    if (!c) return tab[mid].cbid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

long ex_cupti_cbid(const rd_trace *t, uint32_t fn) {
  const rd_func *f = rd_trace_func(t, fn);
  int dom = f ? f->domain : (int)(fn >> 16);
  /* calls seen only by CUPTI carry their callback id: DLH_FN_ID(domain, 0x8000 | cbid) */
  if ((fn & 0x8000) && (dom == DLH__DOMAIN__DOMAIN_CUDART || dom == DLH__DOMAIN__DOMAIN_DRIVER))
    return (long)(fn & 0x7fff);
  if (!f || !f->name) return -1;
  if (dom == DLH__DOMAIN__DOMAIN_CUDART) return find_cbid(ex_cbids_runtime, ex_ncbids_runtime, f->name);
  if (dom == DLH__DOMAIN__DOMAIN_DRIVER) return find_cbid(ex_cbids_driver, ex_ncbids_driver, f->name);
  return -1;
}

/* ---------------------------------------------------------------- steps */

/* Step number of an NVTX range name: with step_range set, a range named exactly step_range gives
 * `counter`; else the number in "ProfilerStep#N", "step N" ... (rd_step_number); -1 when none. */
static long step_of(const char *step_range, const char *name, long counter) {
  if (step_range) return strcmp(name, step_range) ? -1 : counter;
  return rd_step_number(name);
}

/* ---------------------------------------------------------------- the scan */

static void dense_put(ex_dense *d, uint64_t k, uint32_t v);
static inline int dense_get(const ex_dense *d, const rd_u64map *m, uint64_t k, uint32_t *v);

typedef struct lscan {
  ex_links *L;
  const rd_opts *o;
  uint32_t fn;     /* the last call's function (calls come in runs) */
  uint64_t gen;    /* rd_trace.fn_gen + 1 when fn was looked up (0: none) */
  int nvtx;        /* whether fn is NVTX's */
} lscan;

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  *cap = *cap ? *cap * 2 : 256;
  return rd_xrealloc(p, *cap * size);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static const char *intern_label(ex_links *L, const char *s) {
  uint64_t h = hash_str(s);
  uint32_t i;
  /* a hash collision between two labels only merges them for display: accept it */
  if (rd_m_get(&L->label_ix, h, &i)) return L->labels[i];
  L->labels = rd_xrealloc(L->labels, (L->nlabels + 1) * sizeof *L->labels);
  L->labels[L->nlabels] = rd_xstrdup(s);
  rd_m_put(&L->label_ix, h, (uint32_t)L->nlabels);
  return L->labels[L->nlabels++];
}

static void l_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  ex_links *L = ((lscan *)ctx)->L;
  if (p->data_case == DLH__PACKET__DATA_PROCESS && !L->have_process) {
    const Dlh__ProcessInfo *pi = p->process;
    L->have_process = 1;
    L->pid = pi->pid;
    if (pi->has_rank && pi->rank >= 0) L->rank = pi->rank;
    if (pi->has_local_rank && pi->local_rank >= 0) L->local_rank = pi->local_rank;
    if (pi->has_world_size && pi->world_size > 0) L->world = pi->world_size;
    if (pi->has_start_ns) L->start_ns = pi->start_ns;
    snprintf(L->host, sizeof L->host, "%s", pi->host && *pi->host ? pi->host : "host");
  } else if (p->data_case == DLH__PACKET__DATA_ANCHOR && !L->real_ns &&
             p->anchor->has_realtime_ns && p->anchor->realtime_ns) {
    L->real_ns = p->anchor->realtime_ns;
    L->anchor_trace_ns = p->anchor->trace_ns;
  }
  (void)t;
}

static void l_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  lscan *ls = ctx;
  ex_links *L = ls->L;
  if (ls->fn != ev->fn || ls->gen != t->fn_gen + 1) {
    const rd_func *fn = rd_trace_func(t, ev->fn);
    ls->fn = ev->fn;
    ls->gen = t->fn_gen + 1;
    ls->nvtx = fn && fn->domain == DLH__DOMAIN__DOMAIN_NVTX;
  }
  uint64_t msg;
  if (!ls->nvtx || !rd_arg(t, ev, "message|name", &msg)) return;
  const char *label = rd_trace_string(t, (uint32_t)msg);
  if (!label) return;
  L->range = grow(L->range, &L->caprange, L->nrange, sizeof *L->range);
  ex_range *r = &L->range[L->nrange++];
  r->start = ev->start_ns;
  r->end = ev->start_ns + dlh_api_span(ev); /* a folded mark or range: all its calls */
  r->tid = tid;
  r->parent = -1;
  r->step = -1;
  r->label = intern_label(L, label);
}

static void l_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  ex_links *L = ((lscan *)ctx)->L;
  if (g->kind == RD_EXTCORR) { /* external correlation: vals = kind, the library call's id */
    uint32_t i;
    if (g->nvals < 2 || !g->corr || !g->vals[1]) return;
    if (!rd_m_get(&L->ext_ix, g->corr, &i)) {
      L->ext = grow(L->ext, &L->capext, L->next, sizeof *L->ext);
      i = (uint32_t)L->next++;
      rd_m_put(&L->ext_ix, g->corr, i);
    }
    L->ext[i] = g->vals[1];
    return;
  }
  if (g->kind == RD_EVENT && g->nvals >= 1) {
    L->evrec = grow(L->evrec, &L->capevrec, L->nevrec, sizeof *L->evrec);
    L->evrec[L->nevrec++] = (ex_evrec){g->vals[0], g->start, g->corr, g->stream};
    return;
  }
  if (!rd_gpu_work(g->kind)) return;
  L->gpu_records++;
  if (g->kind == RD_SYNC || !g->corr) return;
  uint32_t i;
  if (!dense_get(&L->ixd, &L->ix, g->corr, &i)) {
    L->link = grow(L->link, &L->caplink, L->nlink, sizeof *L->link);
    i = (uint32_t)L->nlink++;
    memset(&L->link[i], 0, sizeof L->link[i]);
    L->link[i].first_gpu = g->start;
    dense_put(&L->ixd, g->corr, i);
  }
  ex_link *k = &L->link[i];
  if (g->launch_corr) return; /* a graph replay of the call's work: no launch of its own */
  k->ngpu++;
  if (g->start < k->first_gpu) k->first_gpu = g->start;
  (void)t;
}

static int range_cmp(const void *a, const void *b) {
  const ex_range *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->end > y->end ? -1 : x->end < y->end; /* the enclosing one first */
}

static int evrec_cmp(const void *a, const void *b) {
  const ex_evrec *x = a, *y = b;
  if (x->event != y->event) return x->event < y->event ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* ---------------------------------------------------------------- correlation id tables */

/* A lookup in a table is one load, where a hash probe misses the cache twice (keys, values) on
 * a trace of a million GPU records. The first pass puts keys into one table that grows from the
 * first key (CUPTI's ids come nearly in order) while it holds at least a key per 8 slots, the
 * others into the hash map; dense_runs then makes tables of what the map holds in dense runs. */
static void dense_put(ex_dense *d, uint64_t k, uint32_t v) {
  d->on = 1;
  if (!d->nt) d->nt = 1, d->t[0].base = k;
  uint64_t off = k - d->t[0].base;
  if (k >= d->t[0].base && off < 8 * ((uint64_t)d->n0 + 4096)) {
    if (off >= d->t[0].n) {
      size_t n = d->t[0].n * 2 > off + 1 ? d->t[0].n * 2 : (size_t)off + 4096;
      d->t[0].v = rd_xrealloc(d->t[0].v, n * sizeof *d->t[0].v);
      memset(d->t[0].v + d->t[0].n, 0, (n - d->t[0].n) * sizeof *d->t[0].v);
      d->t[0].n = n;
    }
    if (!d->t[0].v[off]) d->n0++;
    d->t[0].v[off] = v + 1;
    return;
  }
  rd_m_put(&d->rest, k, v);
}

/* The value of key k in m (d: m as tables, when on); 1 when found. */
static inline int dense_get(const ex_dense *d, const rd_u64map *m, uint64_t k, uint32_t *v) {
  if (!d->on) return rd_m_get(m, k, v);
  for (size_t r = 0; r < d->nt; r++)
    if (k - d->t[r].base < d->t[r].n) {
      if (!d->t[r].v[k - d->t[r].base]) continue; /* tables may overlap: each key is in one */
      *v = d->t[r].v[k - d->t[r].base] - 1;
      return 1;
    }
  return rd_m_get(&d->rest, k, v);
}

static void dense_del(ex_dense *d, uint64_t k) {
  for (size_t r = 0; r < d->nt; r++)
    if (k - d->t[r].base < d->t[r].n && d->t[r].v[k - d->t[r].base]) {
      d->t[r].v[k - d->t[r].base] = 0;
      if (r == 0) d->n0--;
      return;
    }
  rd_m_del(&d->rest, k);
}

/* The keys of m (d's rest, or a map to be replaced by d, then emptied) into d: tables for the
 * largest runs (keys at most 64 apart, at least 1024 of them, at most 8 slots per key) while d
 * has fewer than 4, the others into d's rest. Keys outside every table of d, only. */
static void dense_runs(ex_dense *d, rd_u64map *m) {
  if (m != &d->rest && m->n < 1024) return; /* the map stays, d off */
  d->on = 1;
  rd_pair *p = rd_xmalloc((m->n + 1) * sizeof *p);
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i]) p[n++] = (rd_pair){m->keys[i], m->vals[i]};
  rd_m_free(m);
  rd_sort_pairs(p, n);
  size_t free_t = 4 - d->nt;
  struct { size_t from, to; } run[4] = {{0, 0}}; /* the largest runs, [from, to) of p */
  for (size_t i = 0, j; i < n && free_t; i = j) {
    for (j = i + 1; j < n && p[j].key - p[j - 1].key <= 64; j++) {}
    if (j - i < 1024 || p[j - 1].key - p[i].key >= 8 * (uint64_t)(j - i)) continue;
    size_t r = free_t;
    while (r > 0 && run[r - 1].to - run[r - 1].from < j - i) r--;
    if (r == free_t) continue;
    memmove(&run[r + 1], &run[r], (free_t - 1 - r) * sizeof *run);
    run[r].from = i, run[r].to = j;
  }
  for (size_t r = 0; r < free_t && run[r].to > run[r].from; r++) {
    uint64_t base = p[run[r].from].key;
    size_t t = d->nt++;
    d->t[t].base = base;
    d->t[t].n = (size_t)(p[run[r].to - 1].key - base) + 1;
    d->t[t].v = rd_xcalloc(d->t[t].n, sizeof *d->t[t].v);
    for (size_t i = run[r].from; i < run[r].to; i++) {
      d->t[t].v[p[i].key - base] = (uint32_t)p[i].val; /* value + 1, as in the map */
      p[i].val = 0; /* in a table */
    }
  }
  for (size_t i = 0; i < n; i++)
    if (p[i].val) rd_m_put(&d->rest, p[i].key, (uint32_t)p[i].val - 1);
  free(p);
}

static void dense_free(ex_dense *d) {
  for (size_t r = 0; r < d->nt; r++) free(d->t[r].v);
  rd_m_free(&d->rest);
  memset(d, 0, sizeof *d);
}

/* Ends the first pass of L: library work re-keyed, ranges sorted and nested, steps numbered. */
static void links_finish(ex_links *L, const rd_opts *o) {
  /* GPU work launched inside a library call belongs to the library call's id: re-key those
   * links in place (no copy of the tables: they are the largest part of an export's memory) */
  for (size_t i = 0; i < L->ext_ix.cap; i++) {
    if (!L->ext_ix.vals[i]) continue;
    uint64_t c = L->ext_ix.keys[i], e = L->ext[L->ext_ix.vals[i] - 1];
    uint32_t from, to;
    if (c == e || !dense_get(&L->ixd, &L->ix, c, &from)) continue;
    dense_del(&L->ixd, c);
    if (dense_get(&L->ixd, &L->ix, e, &to)) { /* several CUPTI ids of one library call: merge */
      L->link[to].ngpu += L->link[from].ngpu;
      if (L->link[from].first_gpu < L->link[to].first_gpu) L->link[to].first_gpu = L->link[from].first_gpu;
      L->link[from].ngpu = 0;
    } else {
      dense_put(&L->ixd, e, from);
    }
  }
  if (L->ixd.on) dense_runs(&L->ixd, &L->ixd.rest); /* the library calls' ids, mostly */
  dense_runs(&L->extd, &L->ext_ix);
  if (L->nrange) rd_qsort(L->range, L->nrange, sizeof *L->range, range_cmp);
  if (L->nevrec) rd_qsort(L->evrec, L->nevrec, sizeof *L->evrec, evrec_cmp);
  /* nesting: the innermost earlier range of the thread that still covers this one */
  int32_t *stack = rd_xmalloc((L->nrange + 1) * sizeof *stack);
  size_t sp = 0;
  for (size_t i = 0; i < L->nrange; i++) {
    ex_range *r = &L->range[i];
    if (i && L->range[i - 1].tid != r->tid) sp = 0;
    while (sp && L->range[stack[sp - 1]].end < r->end) sp--;
    r->parent = sp ? stack[sp - 1] : -1;
    stack[sp++] = (int32_t)i;
  }
  free(stack);
  /* steps, in time order (with --step-range: numbered by occurrence) */
  ex_range **order = rd_xmalloc((L->nrange + 1) * sizeof *order);
  size_t ns = 0;
  for (size_t i = 0; i < L->nrange; i++)
    if (step_of(o->step_range, L->range[i].label, 0) >= 0) order[ns++] = &L->range[i];
  for (size_t i = 1; i < ns; i++) /* insertion sort by start: steps are nearly sorted */
    for (size_t j = i; j > 0 && order[j - 1]->start > order[j]->start; j--) {
      ex_range *x = order[j]; order[j] = order[j - 1]; order[j - 1] = x;
    }
  for (size_t i = 0; i < ns; i++) order[i]->step = step_of(o->step_range, order[i]->label, (long)i);
  if (ns) L->step_tid = order[0]->tid;
  L->nsteps = ns;
  free(order);
}

uint64_t ex_links_corr(const ex_links *L, uint64_t corr) {
  uint32_t i;
  return L->next && corr && dense_get(&L->extd, &L->ext_ix, corr, &i) ? L->ext[i] : corr;
}

ex_link *ex_links_get(ex_links *L, uint64_t corr) {
  uint32_t i;
  return corr && dense_get(&L->ixd, &L->ix, corr, &i) ? &L->link[i] : NULL;
}

long ex_links_range_at(const ex_links *L, uint32_t tid, uint64_t ts) {
  /* the last range of the thread that starts at or before ts, then out through its parents */
  size_t lo = 0, hi = L->nrange;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const ex_range *r = &L->range[mid];
    if (r->tid < tid || (r->tid == tid && r->start <= ts)) lo = mid + 1;
    else hi = mid;
  }
  if (!lo || L->range[lo - 1].tid != tid) return -1;
  long i = (long)lo - 1;
  while (i >= 0 && L->range[i].end < ts) i = L->range[i].parent;
  return i;
}

const ex_evrec *ex_links_evrec(const ex_links *L, uint64_t event, uint64_t ts) {
  size_t lo = 0, hi = L->nevrec;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const ex_evrec *e = &L->evrec[mid];
    if (e->event < event || (e->event == event && e->start <= ts)) lo = mid + 1;
    else hi = mid;
  }
  return lo && L->evrec[lo - 1].event == event ? &L->evrec[lo - 1] : NULL;
}

void ex_links_free(ex_links *L) {
  rd_m_free(&L->ix);
  rd_m_free(&L->label_ix);
  rd_m_free(&L->ext_ix);
  dense_free(&L->ixd);
  dense_free(&L->extd);
  free(L->ext);
  for (size_t i = 0; i < L->nlabels; i++) free(L->labels[i]);
  free(L->labels);
  free(L->link);
  free(L->range);
  free(L->evrec);
  memset(L, 0, sizeof *L);
}

/* ---------------------------------------------------------------- the two passes of an export */

typedef struct held { rd_gpu g; size_t vals; ex_link *l; } held;

/* Records held at most: past this the oldest goes out even without its call (memory stays
 * bounded; only a trace whose GPU records come this far ahead of their calls loses links). */
#define HELD_MAX (128u << 10)

/* Gives s the held records from the oldest on, while the oldest's call has been seen (or force
 * is set), so that records go out in file order. */
static void release(ex_input *in, const rd_trace *t, int force) {
  held *hv = in->held;
  while (in->head < in->nheld) {
    held *h = &hv[in->head];
    if (!force && h->l && !h->l->fn) break;
    in->head++;
    h->g.vals = h->g.nvals ? in->vals + h->vals : NULL;
    if (h->g.name) h->g.kname = rd_map_get(&t->knames, h->g.name);
    if (in->out->gpu) in->out->gpu(in->out->ctx, t, &h->g);
    if (force) force--;
  }
  if (in->head == in->nheld) { /* empty: start over */
    in->head = in->nheld = in->nvals = 0;
  } else if (in->head > 4096 && in->head * 2 > in->nheld) { /* move the rest to the front */
    size_t v0 = hv[in->head].vals;
    if (in->nvals > v0) memmove(in->vals, in->vals + v0, (in->nvals - v0) * sizeof *in->vals);
    in->nvals -= v0;
    for (size_t i = in->head; i < in->nheld; i++) hv[i].vals -= v0;
    memmove(hv, hv + in->head, (in->nheld - in->head) * sizeof *hv);
    in->nheld -= in->head;
    in->head = 0;
  }
}

/* The exporter's GPU records in the second pass: a record whose call comes later in the file
 * (its link has no call yet) is held, and every record after it, until that call has been seen:
 * the exporter always writes a call before its GPU work, and GPU records in file order. */
static void in_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  ex_input *in = ctx;
  ex_link *l = rd_gpu_busy(g->kind) ? ex_links_get(&in->L, ex_links_corr(&in->L, g->corr)) : NULL;
  if (in->head == in->nheld && !(l && !l->fn)) {
    if (in->out->gpu) in->out->gpu(in->out->ctx, t, g);
    return;
  }
  if (in->nheld - in->head >= HELD_MAX) release(in, t, 1);
  if (in->nheld == in->capheld) {
    in->capheld = in->capheld ? in->capheld * 2 : 256;
    in->held = rd_xrealloc(in->held, in->capheld * sizeof(held));
  }
  held *h = &((held *)in->held)[in->nheld++];
  h->g = *g;
  h->vals = in->nvals;
  h->l = l;
  if (in->nvals + g->nvals > in->capvals) {
    while (in->nvals + g->nvals > in->capvals) in->capvals = in->capvals ? in->capvals * 2 : 1024;
    in->vals = rd_xrealloc(in->vals, in->capvals * sizeof *in->vals);
  }
  if (g->nvals) memcpy(in->vals + in->nvals, g->vals, g->nvals * sizeof *g->vals);
  in->nvals += g->nvals;
}

static void in_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  ex_input *in = ctx;
  if (in->out->api) in->out->api(in->out->ctx, t, tid, ev);
  /* the call of the oldest held record: it and what follows it go out */
  if (in->head < in->nheld) {
    held *h = &((held *)in->held)[in->head];
    if (!h->l || h->l->fn) release(in, t, 0);
  }
}
static void in_sample(void *ctx, const rd_trace *t, const rd_sample *sm) {
  ex_input *in = ctx;
  if (in->out->sample) in->out->sample(in->out->ctx, t, sm);
}
static void in_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  ex_input *in = ctx;
  if (in->out->packet) in->out->packet(in->out->ctx, t, p);
}

int ex_input_open(ex_input *in, const char *path, const rd_opts *o, int ranks) {
  memset(in, 0, sizeof *in);
  in->path = path;
  ex_links *L = &in->L;
  L->rank = L->local_rank = L->world = -1;
  snprintf(L->host, sizeof L->host, "host");
  lscan c = {.L = L, .o = o};
  rd_sink links = {&c, l_packet, l_api, l_gpu, 0, NULL}, mem, rk;
  in->mem = rd_memcol_new();
  mem = rd_memory_sink(in->mem);
  rd_tee tee = {{&links, &mem}, 2};
  if (ranks) {
    in->ranks = rd_ranks_in_new(path);
    rk = rd_ranks_in_sink(in->ranks);
    tee.s[tee.n++] = &rk;
  }
  rd_sink all = rd_tee_sink(&tee);
  rd_opts q = *o;
  q.quiet = 1;
  int rc = rd_open(&in->t, path, &q, &all);
  in->opened = in->t.opens > 0;
  links_finish(L, o);
  in->nmem = rd_memcol_samples(in->mem, &in->samples, 0);
  in->mem = NULL;
  if (ranks) rd_ranks_in_end(in->ranks, &in->t);
  in->has_gpu = in->t.devices > 0 || L->gpu_records > 0;
  return rc;
}

void ex_input_shift(ex_input *in, int64_t off) {
  ex_links *L = &in->L;
  for (size_t i = 0; i < L->nlink; i++) L->link[i].first_gpu += (uint64_t)off;
  for (size_t i = 0; i < L->nrange; i++) {
    L->range[i].start += (uint64_t)off;
    L->range[i].end += (uint64_t)off;
  }
  for (size_t i = 0; i < L->nevrec; i++) L->evrec[i].start += (uint64_t)off;
}

int ex_input_pass(ex_input *in, const rd_opts *o, rd_sink *s) {
  in->out = s;
  rd_sink mine = {in, in_packet, in_api, in_gpu, 0, in_sample};
  int rc = rd_pass(&in->t, o, "exporting", &mine);
  /* what is still held: its calls never came (written without them) */
  release(in, &in->t, (int)(in->nheld - in->head));
  free(in->held);
  free(in->vals);
  in->held = NULL;
  in->vals = NULL;
  in->nheld = in->capheld = in->nvals = in->capvals = in->head = 0;
  return rc;
}

void ex_input_close(ex_input *in) {
  free(in->samples);
  free(in->held);
  free(in->vals);
  ex_links_free(&in->L);
  rd_trace_close(&in->t);
  memset(in, 0, sizeof *in);
}

int ex_each(const rd_opts *o, char **files, size_t n, ex_one_fn fn, void *ctx) {
  int rc = RD_OK;
  int merging = o->merge && n > 1;
  ex_input *in = calloc(n ? n : 1, sizeof *in);
  rd_ranks_in **rk = calloc(n ? n : 1, sizeof *rk);
  if (!in || !rk) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  /* every trace's first pass first: which traces have GPU work, and for dlhook merge the
   * common timeline, are known before anything is written */
  size_t ngpu = 0;
  rd_read_ahead(files, NULL, n); /* the next traces decoded while one is read */
  for (size_t i = 0; i < n; i++) {
    if (ex_input_open(&in[i], files[i], o, merging) != RD_OK) rc = RD_BAD_INPUT;
    rk[i] = in[i].ranks;
    in[i].ranks = NULL;
    ngpu += in[i].opened && in[i].has_gpu;
  }
  if (merging) { /* clock anchors, refined on the collectives (rd_ranks) */
    rd_ranks_finish(rk, n);
    int64_t *abs = rd_xmalloc(n * sizeof *abs);
    for (size_t i = 0; i < n; i++) {
      abs[i] = 0;
      if (!rd_ranks_offset(files[i], &abs[i])) {
        if (in[i].t.have_anchor) abs[i] = (int64_t)in[i].t.anchor_real_ns - (int64_t)in[i].t.anchor_trace_ns;
        else if (in[i].opened) rd_error("merge: %s has no clock anchor; its times are taken as they are", files[i]);
      }
    }
    for (size_t i = 0; i < n; i++) {
      o->offsets[i] = abs[i] - abs[0];
      if (o->offsets[i])
        fprintf(stderr, "dlhook: merge: %s: clock offset %+.3f ms\n", files[i], (double)o->offsets[i] / 1e6);
      ex_input_shift(&in[i], o->offsets[i]);
    }
    free(abs);
    rd_ranks_free();
    rd_set_offsets(files, o->offsets, n);
  }
  free(rk);
  /* traces without GPU work (a launcher, a shell) are left out unless --keep-gpuless, or
   * every trace is one */
  int keep = o->keep_gpuless || ngpu == 0;
  if (!o->keep_gpuless && ngpu == 0 && n > 1 && !o->quiet)
    rd_error("every trace is without GPU work: exporting them all");
  size_t nout = 0;
  for (size_t i = 0; i < n; i++) nout += in[i].opened && (keep || in[i].has_gpu);
  /* the second passes, read ahead in the same way */
  char **pf = rd_xmalloc((n ? n : 1) * sizeof *pf);
  uint64_t *ps = rd_xmalloc((n ? n : 1) * sizeof *ps);
  size_t np = 0;
  for (size_t i = 0; i < n; i++)
    if (in[i].opened && (keep || in[i].has_gpu)) {
      pf[np] = files[i];
      ps[np++] = rd_pass2_skip(&in[i].t);
    }
  rd_read_ahead(pf, ps, np);
  free(pf);
  free(ps);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!in[i].opened) { rc = RD_BAD_INPUT; ex_input_close(&in[i]); continue; }
    if (!keep && !in[i].has_gpu) {
      if (!o->quiet)
        rd_error("%s: no GPU work (a launcher or shell?): left out (--keep-gpuless keeps it)", files[i]);
      ex_input_close(&in[i]);
      continue;
    }
    if (fn(ctx, &in[i], k++, nout) != RD_OK) rc = RD_BAD_INPUT;
    ex_input_close(&in[i]);
  }
  rd_read_ahead(NULL, NULL, 0);
  if (merging) rd_set_offsets(NULL, NULL, 0);
  free(in);
  return rc;
}
