/* ranks.c — straggler-rank: several rank traces, the rank the others wait for. A rank is a
 * straggler when, at the collectives of the steps, the others waited for it at least twice as
 * long as for any other rank (ranks.c of command/lib: rd_ranks_straggler_in) and it arrived
 * last at two thirds of them at least, >= 5 % of its step; its cost is that wait per step. Its
 * place is what that rank ran on the host before its collectives (its samples, compared with
 * the other ranks'), else the collective's own place: each trace's part (before_collectives)
 * runs after the trace, the finding (straggler) after every trace. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

static void before_collectives(rd_advise *x, actx *a);
static size_t straggler(rd_advise *x);
static const rd_finding_family ranks_family = {"ranks", before_collectives, straggler};

const rd_finding_class rdf_straggler_rank = {
    .id = "straggler-rank",
    .summary = "several ranks: the rank the others wait for.",
    .what = "several rank traces: the rank that arrived last at most collectives (as in `dlhook "
            "stats`)",
    .threshold = "last at >= 2/3 of them, >= 5% of its step",
    .cost = "the others' wait for it, per step; the place is where that rank ran on the host in "
            "the widest gap between calls before its collectives (its on-CPU samples), else its "
            "collective call",
    .estimate = "the other ranks' wait for this rank at the collectives it arrived last at, "
                "divided by its steps",
    .evidence = "calls",
    .fix = "balance the ranks: even out data sharding and per-rank host work (logging, "
           "checkpointing, evaluation on rank 0), and check that rank's input pipeline and node",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &ranks_family,
};

/* ---------------------------------------------------------------- detection */

static int by_sample_time(const void *a, const void *b, void *ctx) {
  const asample *v = ctx;
  uint64_t p = v[*(const uint32_t *)a].time, q = v[*(const uint32_t *)b].time;
  return p < q ? -1 : p > q;
}

/* 1 when time t lies inside one of the calls o[0..no) (top-level calls of one thread, sorted by
 * start: they do not overlap) */
static int in_calls(const rd_advise *x, const uint32_t *o, size_t no, uint64_t t) {
  size_t lo = 0, hi = no;
  while (lo < hi) { /* the first call that starts after t */
    size_t mid = (lo + hi) / 2;
    if (x->xc[o[mid]].start <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && t < x->xc[o[lo - 1]].end;
}

/* What this rank did on the host before its collectives (for straggler-rank). */
static void before_collectives(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  uint32_t main_tid = a->main_tid;
  tally pre = {0};
  const xcall *prev = NULL, *widest = NULL;
  uint64_t wgap = 0;
  uint32_t *o = rd_xmalloc((x->nxc ? x->nxc : 1) * sizeof *o);
  size_t no = 0, nms = 0;
  uint32_t *msi = rd_xmalloc((x->nsm ? x->nsm : 1) * sizeof *msi);
  for (size_t i = 0; i < x->nsm; i++)
    if (x->sm[i].tid == main_tid && x->sm[i].kind == RD_SAMPLE_CPU) msi[nms++] = (uint32_t)i;
  if (nms) qsort_r(msi, nms, sizeof *msi, by_sample_time, x->sm);
  for (size_t i = 0; i < x->nxc; i++)
    if (!x->xc[i].depth && x->xc[i].tid == main_tid) o[no++] = (uint32_t)i;
  if (no) qsort_r(o, no, sizeof *o, adv_by_tid_start, x->xc);
  /* before each collective: the widest host gap between two calls since the previous one
   * (where the rank was busy on the host without calling CUDA), and the samples in it */
  uint64_t ga = 0, gb = 0;
  for (size_t j = 0; j < no; j++) {
    const xcall *c = &x->xc[o[j]];
    const rd_func *f = rd_trace_func(t, c->fn);
    if (prev && c->start > prev->end && c->start - prev->end > gb - ga) ga = prev->end, gb = c->start;
    if (f && f->domain == DLH__DOMAIN__DOMAIN_NCCL && adv_collective_fn(f->name) && gb > ga &&
        adv_in_win(c->start, a->in_lo, a->in_hi)) {
      if (gb - ga > wgap) wgap = gb - ga, widest = c;
      size_t lo = 0, hi = nms;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->sm[msi[mid]].time < ga) lo = mid + 1;
        else hi = mid;
      }
      for (size_t i = lo; i < nms && x->sm[msi[i]].time <= gb; i++) {
        const asample *s = &x->sm[msi[i]];
        char *p = adv_place_of(t, s->stack);
        adv_tally_add(&pre, p, s->weight);
        free(p);
      }
      ga = gb = 0;
    }
    prev = c;
  }
  /* collectives issued by another thread (DDP's reducer runs on the autograd thread): the main
   * thread's own place, where its samples inside the steps are: on the CPU, or waiting outside
   * CUDA (blocking I/O: a log written or sent synchronously; a wait inside a CUDA call is the
   * GPU's pace, not the rank's own work) */
  if (!pre.n && !widest)
    for (size_t i = 0; i < x->nsm; i++) {
      const asample *s = &x->sm[i];
      if (s->tid != main_tid || !adv_in_win(s->time, a->in_lo, a->in_hi)) continue;
      if (s->kind != RD_SAMPLE_CPU && (s->kind != RD_SAMPLE_WAIT || in_calls(x, o, no, s->time)))
        continue;
      char *p = adv_place_of(t, s->stack);
      adv_tally_add(&pre, p, s->weight);
      free(p);
    }
  free(o);
  free(msi);
  if (pre.n || widest) {
    x->pc = rd_xrealloc(x->pc, (x->npc + 1) * sizeof *x->pc);
    precoll *pc = &x->pc[x->npc++];
    pc->path = rd_xstrdup(t->path);
    pc->place = pre.n ? rd_xstrdup(pre.k[adv_tally_top(&pre)]) : adv_place_of(t, widest->stack);
    pc->t = pre; /* kept: rd_advise_ranks compares the ranks' places */
    pc->nsteps = a->nsteps ? a->nsteps : 1;
    memset(&pre, 0, sizeof pre);
  }
  adv_tally_free(&pre);
}

/* The straggler's place: where its host time per step exceeds the other ranks' the most (a
 * wait or a computation only it has: the rank-0 logging, the checkpoint), else its own top
 * place. */
static const char *straggler_place(const rd_advise *x, const char *path) {
  const precoll *me = NULL;
  for (size_t i = 0; i < x->npc; i++)
    if (!strcmp(x->pc[i].path, path)) me = &x->pc[i];
  if (!me) return "[unknown]";
  double best = 0;
  const char *pl = me->place;
  for (size_t k = 0; k < me->t.n; k++) {
    double mine = (double)me->t.w[k] / (double)me->nsteps, others = 0;
    size_t n = 0;
    for (size_t i = 0; i < x->npc; i++) {
      const precoll *o = &x->pc[i];
      if (o == me) continue;
      n++;
      for (size_t j = 0; j < o->t.n; j++)
        if (!strcmp(o->t.k[j], me->t.k[k])) { others += (double)o->t.w[j] / (double)o->nsteps; break; }
    }
    double excess = mine - (n ? others / (double)n : 0);
    if (excess > best) best = excess, pl = me->t.k[k];
  }
  return pl;
}

/* 1 when a trace-clock time of the trace at `path` lies inside its steps (rd_ranks_straggler_in) */
static int in_trace_steps(void *ctx, const char *path, int64_t t) {
  const rd_advise *x = ctx;
  for (size_t i = 0; i < x->ntraces; i++)
    if (!strcmp(x->ts[i].path, path))
      return x->ts[i].nsteps && t >= 0 && adv_in_win((uint64_t)t, x->ts[i].lo, x->ts[i].hi);
  return 0;
}

/* Several ranks (after rd_ranks_finish): the straggler, as a finding of its trace. A rank is a
 * straggler when, at the collectives of the steps, the others waited for it at least twice as
 * long as for any other rank and it arrived last at two thirds of them at least (ranks that
 * take turns arriving last are noise, not a straggler); its cost is that wait per step. */
static size_t straggler(rd_advise *x) {
  rd_straggler_wait s;
  if (!rd_ranks_straggler_in(&s, in_trace_steps, x) || !s.path || s.last_count == 0) return 0;
  if (s.caused_ns < 2 * s.other_ns || 3 * s.last_count < 2 * s.ncoll || s.delay_ns <= 0) return 0;
  const asteps *ts = NULL;
  for (size_t i = 0; i < x->ntraces; i++)
    if (!strcmp(x->ts[i].path, s.path)) ts = &x->ts[i];
  if (!ts || !ts->nsteps) return 0;
  uint64_t ns = (uint64_t)s.caused_ns;
  double pct = ts->step_ns ? 100.0 * (double)ns / (double)ts->step_ns : 0;
  if (pct < rdf_straggler_rank.min_pct) return 0;
  const char *pl = straggler_place(x, s.path);
  PUSH(x->f, x->nf, x->capf, 16);
  afinding *f = &x->f[x->nf++];
  memset(f, 0, sizeof *f);
  f->cls = &rdf_straggler_rank;
  f->steps_from = ts->from;
  f->place = rd_xstrdup(pl);
  f->trace = rd_xstrdup(s.path);
  f->nsteps = ts->nsteps;
  f->step_ns = ts->step_ns;
  f->ns = ns;
  f->calls = s.last_count;
  f->fns = rd_xstrdup("collectives");
  adv_detail(f, "rank %d arrived last at %" PRIu64 " of the %zu collectives of the steps (%zu ranks), "
            "%.3f ms after the others; the others waited %.3f ms for it in all, %.3f ms at most "
            "for another rank",
         s.rank, s.last_count, s.ncoll, s.nranks, s.delay_ns / 1e6, s.caused_ns / 1e6,
         s.other_ns / 1e6);
  return 1;
}

