/* steps.c — the step breakdown of `dlhook stats --json` ("steps") and of `dlhook report`: for
 * every training step of every rank (stepfind.c: NVTX ranges named like a step, else PyTorch's
 * Optimizer.step / backward / training_step, else the repeating calls of a program without
 * Python), how its wall time divides between
 *   compute   a kernel other than a collective runs on the process's GPU(s)
 *   comm      no compute kernel, an NCCL collective kernel runs (waiting for the others included)
 *   copy      no kernel, a memcpy or memset runs
 *   host      the GPU is idle while a host thread is inside a CUDA/library call (launch, sync,
 *             allocation overhead)
 *   idle      the GPU is idle and no thread is inside a CUDA call (Python, data loading, sleep)
 * The five are exclusive, by that priority, and add up to the step's duration. Beside them, the
 * host samples taken during the step (all threads of the process): their on-CPU and wait time. The slowest step
 * is the longest (step, rank); the slowest rank the one whose own work (the step minus its
 * communication, which includes waiting for the other ranks) takes longest on average. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_scan.h"
#include "rd.h"

enum { C_COMPUTE, C_COMM, C_COPY, C_HOST, C_NCAT };

/* sev, ssamp and edge begin with the key they are sorted by (rd_sort_by_key) */
typedef struct sev { uint64_t s, e; int cat; } sev;

typedef struct ssamp { uint64_t t, ns; int wait; } ssamp;

typedef struct sctx {
  sev *ev;
  size_t n, cap;
  ssamp *sm;             /* the samples, for their time per step */
  size_t nsm, capsm;
  rd_stepfind *sf;       /* where the steps are (stepfind.c) */
  int rank;
  uint32_t pid;
  int too_many;
  size_t max;            /* events kept at most (budget) */
} sctx;

/* Events kept per trace (24 bytes each): past this the trace's steps are left out, so that
 * `dlhook stats` stays within a few hundred MB on any trace; and past the event limit of the
 * trace's size (rd_event_limit), so that a few KB that expand into millions of alike events
 * cannot take more (no recorded trace reaches it). */
#define MAX_EVENTS (16u << 20)

/* The trace's steps are left out: what was kept goes. */
static void give_up(sctx *c) {
  c->too_many = 1;
  free(c->ev);
  free(c->sm);
  c->ev = NULL;
  c->sm = NULL;
  c->n = c->cap = c->nsm = c->capsm = 0;
}

static size_t budget(sctx *c, const rd_trace *t) {
  if (!c->max) {
    uint64_t lim = rd_default_event_limit(t->path, 1);
    c->max = lim < MAX_EVENTS ? (size_t)lim : MAX_EVENTS;
  }
  return c->max;
}

static void push(sctx *c, const rd_trace *t, uint64_t s, uint64_t e, int cat) {
  if (c->too_many) return;
  if (c->n >= budget(c, t)) { give_up(c); return; }
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap / 2 * 3 : 4096;
    c->ev = rd_xrealloc(c->ev, c->cap * sizeof *c->ev);
  }
  c->ev[c->n++] = (sev){s, e, cat};
}

static void on_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  sctx *c = ctx;
  (void)t;
  if (p->data_case == DLH__PACKET__DATA_PROCESS) {
    c->rank = p->process->has_rank ? p->process->rank : -1;
    c->pid = p->process->pid;
  }
}

static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  sctx *c = ctx;
  rd_stepfind_api(c->sf, t, tid, e);
  const rd_func *f = rd_trace_func(t, e->fn);
  if (f && f->domain == DLH__DOMAIN__DOMAIN_NVTX) return;
  /* A folded event tells only the summed duration of its calls, not where each lies in its
   * span: that time is counted from its start (inside the span, the right amount). */
  if (e->depth == 0 && e->dur_ns) push(c, t, e->start_ns, e->start_ns + e->dur_ns, C_HOST);
}

static void on_sample(void *ctx, const rd_trace *t, const rd_sample *x) {
  sctx *c = ctx;
  (void)t;
  if (c->too_many) return;
  if (c->nsm >= budget(c, t)) { give_up(c); return; }
  if (c->nsm == c->capsm) {
    c->capsm = c->capsm ? c->capsm * 2 : 4096;
    c->sm = rd_xrealloc(c->sm, c->capsm * sizeof *c->sm);
  }
  c->sm[c->nsm++] = (ssamp){x->time, x->weight, x->kind == RD_SAMPLE_WAIT};
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  sctx *c = ctx;
  if (!g->dur) return;
  if (g->kind == RD_KERNEL) {
    unsigned f = g->kname ? rd_gpu_kflags(g) : rd_kernel_flags(rd_trace_string(t, g->name));
    push(c, t, g->start, g->start + g->dur, f & RD_KF_COMM ? C_COMM : C_COMPUTE);
  } else if (g->kind == RD_MEMCPY || g->kind == RD_MEMSET) {
    push(c, t, g->start, g->start + g->dur, C_COPY);
  }
}

static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct rd_step_row {
  int rank;
  uint32_t pid;
  long num;
  char *name;
  int from;                             /* RD_STEPS_* */
  uint64_t start, dur, cat[C_NCAT + 1]; /* cat[C_NCAT] = idle */
  uint64_t sample_ns[2];                /* on-CPU, wait: the samples taken in [start, end) */
} rd_step_row;

/* The ends of the events that cover the sweep's point: a binary min-heap by end. */
typedef struct open_ev { uint64_t e; int cat; } open_ev;
typedef struct sweep {
  open_ev *h;
  size_t n, cap;
  long active[C_NCAT];
  uint64_t t, *out;
} sweep;

/* The time from the sweep's point to x goes to the first category active (idle when none). */
static void advance(sweep *w, uint64_t x) {
  if (x <= w->t) return;
  int k = C_NCAT;
  for (int q = 0; q < C_NCAT; q++)
    if (w->active[q] > 0) { k = q; break; }
  w->out[k] += x - w->t;
  w->t = x;
}

static void close_until(sweep *w, uint64_t x) { /* the events that end at or before x */
  while (w->n && w->h[0].e <= x) {
    open_ev top = w->h[0], last = w->h[--w->n];
    advance(w, top.e);
    w->active[top.cat]--;
    size_t i = 0;
    for (;;) { /* sift the last entry down from the root */
      size_t c = 2 * i + 1;
      if (c >= w->n) break;
      if (c + 1 < w->n && w->h[c + 1].e < w->h[c].e) c++;
      if (last.e <= w->h[c].e) break;
      w->h[i] = w->h[c];
      i = c;
    }
    if (w->n) w->h[i] = last;
  }
}

/* Event v, cut to [s, e), opens at the sweep's point (events come by start). */
static void open_event(sweep *w, const sev *v, uint64_t s, uint64_t e) {
  if (v->e <= s || v->s >= e) return;
  uint64_t a = v->s > s ? v->s : s, b = v->e < e ? v->e : e;
  close_until(w, a);
  advance(w, a);
  w->active[v->cat]++;
  if (w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 64;
    w->h = rd_xrealloc(w->h, w->cap * sizeof *w->h);
  }
  size_t i = w->n++;
  while (i && w->h[(i - 1) / 2].e > b) { /* sift up */
    w->h[i] = w->h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  w->h[i] = (open_ev){b, v->cat};
}

/* Splits the step [s, e) of one process into the categories: each instant goes to the first
 * category (in enum order) with an event covering it, else to idle. c->ev are the events no
 * longer than maxdur, sorted by start; lng[0..nl) the few longer ones, sorted by start. One
 * sweep over the starts with the open events' ends in a heap (a sort of every start and end
 * per step was a tenth of `dlhook stats` on a 16-rank trace). */
static void breakdown(const sctx *c, uint64_t maxdur, const sev *lng, size_t nl, uint64_t s,
                      uint64_t e, uint64_t *out) {
  /* the first event that can overlap: start >= s - maxdur */
  size_t lo = 0, hi = c->n;
  uint64_t from = s > maxdur ? s - maxdur : 0;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->ev[mid].s < from) lo = mid + 1; else hi = mid;
  }
  static sweep w; /* its heap is reused from step to step */
  memset(w.active, 0, sizeof w.active);
  w.n = 0;
  w.t = s;
  w.out = out;
  size_t i = lo, j = 0;
  for (;;) { /* the two lists merged by start */
    int more_i = i < c->n && c->ev[i].s < e, more_j = j < nl;
    if (!more_i && !more_j) break;
    if (more_i && (!more_j || c->ev[i].s <= lng[j].s)) open_event(&w, &c->ev[i++], s, e);
    else open_event(&w, &lng[j++], s, e);
  }
  close_until(&w, UINT64_MAX);
  advance(&w, e);
}

static rd_step_row *rows;
static size_t nrows, nskipped;

/* The step analysis of the traces read so far: rd_steps_sink gathers one trace's steps and
 * events during a pass, rd_steps_end turns them into rows. */
struct rd_steps { sctx c; };

rd_steps *rd_steps_new(void) {
  rd_steps *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  x->c.rank = -1;
  x->c.sf = rd_stepfind_new();
  return x;
}

rd_sink rd_steps_sink(rd_steps *x) { return (rd_sink){&x->c, on_packet, on_api, on_gpu, 0, on_sample}; }

/* The events longer than the longest 99.9 % (a long sync, a start-up call) move from c->ev to
 * *lng (malloc'd), to be checked against every step; the others are found by start from a
 * step's start minus the returned bound. c->ev must be sorted by start. */
static uint64_t split_long(sctx *c, sev **lng, size_t *nl) {
  *lng = NULL;
  *nl = 0;
  if (!c->n) return 0;
  /* the (n/1000 + 1)-th longest duration, as a sort of them all would give it: the longest
   * ones seen so far in a min-heap of that size */
  size_t m = c->n / 1000 + 1, h = 0;
  uint64_t *d = rd_xmalloc(m * sizeof *d);
  for (size_t k = 0; k < c->n; k++) {
    uint64_t v = c->ev[k].e - c->ev[k].s;
    size_t i;
    if (h < m) { /* sift up */
      for (i = h++; i && d[(i - 1) / 2] > v; i = (i - 1) / 2) d[i] = d[(i - 1) / 2];
    } else if (v > d[0]) { /* replaces the shortest kept: sift down */
      for (i = 0;;) {
        size_t ch = 2 * i + 1;
        if (ch >= m) break;
        if (ch + 1 < m && d[ch + 1] < d[ch]) ch++;
        if (v <= d[ch]) break;
        d[i] = d[ch];
        i = ch;
      }
    } else {
      continue;
    }
    d[i] = v;
  }
  uint64_t maxdur = d[0];
  free(d);
  size_t keep = 0;
  for (size_t k = 0; k < c->n; k++) {
    if (c->ev[k].e - c->ev[k].s > maxdur) {
      *lng = rd_xrealloc(*lng, (*nl + 1) * sizeof **lng);
      (*lng)[(*nl)++] = c->ev[k];
    } else {
      c->ev[keep++] = c->ev[k];
    }
  }
  c->n = keep;
  return maxdur;
}

/* The row of step st of the trace whose events c holds. */
static void step_row(const sctx *c, const rd_step_span *st, int from, uint64_t maxdur,
                     const sev *lng, size_t nl, rd_step_row *r) {
  char name[64];
  memset(r, 0, sizeof *r);
  r->rank = c->rank;
  r->pid = c->pid;
  r->num = st->num;
  r->from = from;
  snprintf(name, sizeof name, "%s step %ld", rd_steps_from_name(from), st->num);
  r->name = rd_xstrdup(st->name ? st->name : name);
  r->start = st->s;
  r->dur = st->e - st->s;
  breakdown(c, maxdur, lng, nl, st->s, st->e, r->cat);
  size_t lo = 0, hi = c->nsm; /* the first sample at or after the step's start */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->sm[mid].t < st->s) lo = mid + 1; else hi = mid;
  }
  for (size_t q = lo; q < c->nsm && c->sm[q].t < st->e; q++) r->sample_ns[c->sm[q].wait] += c->sm[q].ns;
}

void rd_steps_end(rd_steps *x) {
  sctx c = x->c;
  memset(&x->c, 0, sizeof x->c);
  x->c.rank = -1;
  x->c.sf = c.sf;
  rd_step_span *st;
  int from;
  size_t nst = rd_stepfind_end(c.sf, &from, &st);
  if (c.too_many) nskipped++;
  if (nst && !c.too_many) {
    if (c.n) rd_sort_by_key(c.ev, c.n, sizeof *c.ev); /* by start */
    if (c.nsm) rd_sort_by_key(c.sm, c.nsm, sizeof *c.sm); /* by time */
    sev *lng;
    size_t nl;
    uint64_t maxdur = split_long(&c, &lng, &nl);
    if (nl) rd_sort_by_key(lng, nl, sizeof *lng); /* by start, for breakdown's sweep */
    rows = rd_xrealloc(rows, (nrows + nst) * sizeof *rows);
    for (size_t k = 0; k < nst; k++) step_row(&c, &st[k], from, maxdur, lng, nl, &rows[nrows++]);
    free(lng);
  }
  free(c.ev);
  free(c.sm);
}

void rd_steps_json(FILE *f, rd_steps *x) {
  static const char *const key[C_NCAT + 1] = {"compute_ns", "comm_ns", "copy_ns", "host_ns",
                                                "idle_ns"};
  rd_stepfind_free(x->c.sf);
  free(x);
  if (!f) goto out; /* only freed */
  fputs(",\n\"steps\":{\"definition\":\"NVTX ranges named ProfilerStep#N or step N, else "
        "PyTorch's loop (from the end of one Optimizer.step, backward or training_step to the "
        "end of the next), else the repeating calls of a program without Python: steps_from says "
        "which; per step and rank, exclusive by priority: compute kernels > communication (NCCL) kernels > "
        "copies and memsets > host (GPU idle, a thread inside a CUDA call) > idle\",\"rows\":[", f);
  size_t slow = 0;
  for (size_t i = 0; i < nrows; i++) {
    const rd_step_row *r = &rows[i];
    fprintf(f, "%s\n{\"rank\":%d,\"pid\":%u,\"step\":%ld,\"name\":", i ? "," : "", r->rank,
            r->pid, r->num);
    rd_json_str(f, r->name);
    fprintf(f, ",\"steps_from\":\"%s\"", rd_steps_from_name(r->from));
    fprintf(f, ",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64, r->start, r->dur);
    for (int k = 0; k <= C_NCAT; k++) fprintf(f, ",\"%s\":%" PRIu64, key[k], r->cat[k]);
    fprintf(f, ",\"sample_cpu_ns\":%" PRIu64 ",\"sample_wait_ns\":%" PRIu64, r->sample_ns[0], r->sample_ns[1]);
    putc('}', f);
    if (r->dur > rows[slow].dur) slow = i;
  }
  fputs("]", f);
  if (nskipped) fprintf(f, ",\"traces_left_out\":%zu", nskipped); /* over their budget */
  if (nrows) {
    fprintf(f, ",\n\"slowest_step\":{\"step\":%ld,\"rank\":%d,\"dur_ns\":%" PRIu64 "}",
            rows[slow].num, rows[slow].rank, rows[slow].dur);
    /* per rank: mean step, mean own work (step minus communication) */
    int best = 0;
    double best_own = -1, best_mean = 0;
    for (size_t i = 0; i < nrows; i++) {
      int seen = 0;
      for (size_t j = 0; j < i; j++) seen |= rows[j].rank == rows[i].rank && rows[j].pid == rows[i].pid;
      if (seen) continue;
      double own = 0, tot = 0;
      size_t k = 0;
      for (size_t j = i; j < nrows; j++)
        if (rows[j].rank == rows[i].rank && rows[j].pid == rows[i].pid) {
          own += (double)(rows[j].dur - rows[j].cat[C_COMM]);
          tot += (double)rows[j].dur;
          k++;
        }
      if (own / (double)k > best_own) {
        best_own = own / (double)k;
        best_mean = tot / (double)k;
        best = rows[i].rank;
      }
    }
    fprintf(f, ",\n\"slowest_rank\":{\"rank\":%d,\"mean_own_ns\":%.0f,\"mean_step_ns\":%.0f}",
            best, best_own, best_mean);
  }
  fputs("}", f);
out:
  for (size_t i = 0; i < nrows; i++) free(rows[i].name);
  free(rows);
  rows = NULL;
  nrows = 0;
  nskipped = 0;
}

/* The first screen's step line (rd_steps_brief in rd.h), from the rows made so far. */
size_t rd_steps_brief(rd_steps_sum *out) {
  memset(out, 0, sizeof *out);
  if (!nrows) return 0;
  uint64_t *d = rd_xmalloc(nrows * sizeof *d);
  for (size_t i = 0; i < nrows; i++) {
    d[i] = rows[i].dur;
    out->total_ns += rows[i].dur;
    for (int k = 0; k <= C_NCAT; k++) out->cat[k] += rows[i].cat[k];
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = rows[j].pid == rows[i].pid && rows[j].rank == rows[i].rank;
    out->processes += !seen;
  }
  rd_qsort(d, nrows, sizeof *d, by_u64);
  out->median_ns = d[nrows / 2];
  free(d);
  out->steps = nrows;
  out->from = rows[0].from;
  return nrows;
}
