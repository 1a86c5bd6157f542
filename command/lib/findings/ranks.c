/* ranks.c — straggler-rank and slow-network-rank: several rank traces, the rank the others
 * wait for, and why.
 *
 * A rank is a straggler when, at the collectives of the steps, the others waited for it at
 * least four times as long as for any other rank (ranks.c of command/lib: rd_ranks_straggler_in)
 * and it arrived last at 90 % of them at least, >= 5 % of its step; its cost is that wait per
 * step. Its place is what that rank ran on the host before its collectives (its samples,
 * compared with the other ranks'), else the collective's own place.
 *
 * With NCCL's profiler plugin events (rd_ncclev.h) the same collectives say why: a rank that
 * enqueued last was slow to arrive (its host); a rank whose kernels end after the others' once
 * every rank has started ran its transfers longer (its network: a degraded NIC or link), and
 * its GPU is then late for its next work, so the others wait for it at the next collective
 * although its host was on time. slow-network-rank is that rank when it ran longest at two
 * thirds of the collectives, twice the excess of any other rank, >= 5 % of its step; the
 * straggler-rank finding of the same rank is then left out when it did not enqueue last at
 * most of the collectives it held up or its transfers' excess is half the wait it caused (the
 * network explains them), and otherwise says what NCCL saw. Each trace's part (before_collectives) runs after the trace, the findings (ranked)
 * after every trace. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"
#include "rd_ncclev.h"

static void before_collectives(rd_advise *x, actx *a);
static size_t ranked(rd_advise *x);
static const rd_finding_family ranks_family = {"ranks", before_collectives, ranked};

const rd_finding_class rdf_straggler_rank = {
    .id = "straggler-rank",
    .summary = "several ranks: the rank the others wait for.",
    .what = "several rank traces: the rank that arrived last at most collectives (as in `dlhook "
            "stats`)",
    .threshold = "last at >= 90% of them, waited for >= 4x any other rank, >= 5% of its step",
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

const rd_finding_class rdf_slow_network_rank = {
    .id = "slow-network-rank",
    .summary = "several ranks: the rank whose collectives' transfers run longer than the others'.",
    .what = "several rank traces with NCCL's profiler events (docs/nccl-profiler.md): the rank "
            "whose collective kernels end last once every rank has started them",
    .threshold = "the longest transfer at >= 2/3 of the collectives, twice any other rank's "
                 "excess, >= 5% of its step",
    .cost = "its transfers' time beyond the other ranks' (the median of theirs), per step; the "
            "place is its collective call",
    .estimate = "the time its collectives' transfers ran beyond the other ranks', divided by its "
                "steps (its GPU is that much later for its next work, and the others wait for it)",
    .evidence = "kernels",
    .fix = "check that rank's network, not its code: its NIC and links (ibstat and the port "
           "counters, nvidia-smi nvlink -e), the transport and topology NCCL chose there "
           "(NCCL_DEBUG=INFO); run the job without that node",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &ranks_family,
};

/* ---------------------------------------------------------------- detection */

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

/* NCCL's events of the trace, and the place of its first collective call in the steps. */
static void nccl_trace(rd_advise *x, actx *a) {
  const rd_nccl_op *ops;
  if (!rd_nccl_ops(a->t, &ops)) return;
  if (!x->nccl) x->nccl = rd_ncclstats_new();
  rd_ncclstats_trace(x->nccl, a->t); /* the trace's index there: x->nnr */
  char *place = NULL;
  for (size_t i = 0; i < x->nxc && !place; i++) {
    const xcall *c = &x->xc[i];
    const rd_func *f = rd_trace_func(a->t, c->fn);
    if (f && f->domain == DLH__DOMAIN__DOMAIN_NCCL && adv_collective_fn(f->name) &&
        adv_in_win(c->start, a->in_lo, a->in_hi))
      place = adv_place_of(a->t, c->stack);
  }
  PUSH(x->nr, x->nnr, x->capnr, 8);
  x->nr[x->nnr].ts = x->ntraces - 1;
  x->nr[x->nnr++].place = place;
}

/* What this rank did on the host before its collectives (for straggler-rank). */
static void before_collectives(rd_advise *x, actx *a) {
  nccl_trace(x, a);
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
  if (nms > 1) { /* by time, stable (as qsort_r's merge sort) */
    rd_pair *v = rd_xmalloc(nms * sizeof *v);
    for (size_t i = 0; i < nms; i++) v[i] = (rd_pair){x->sm[msi[i]].time, msi[i]};
    rd_sort_pairs(v, nms);
    for (size_t i = 0; i < nms; i++) msi[i] = (uint32_t)v[i].val;
    free(v);
  }
  for (size_t i = 0; i < x->nxc; i++)
    if (!x->xc[i].depth && x->xc[i].tid == main_tid) o[no++] = (uint32_t)i;
  adv_sort_tid_start(o, no, x->xc);
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
 * straggler when, at the collectives of the steps, the others waited for it at least four times
 * as long as for any other rank and it arrived last at 90 % of them at least: ranks that take
 * turns arriving last are noise, not a straggler (two balanced DDP ranks sharing two loaded
 * cores: one was last at 21 of 28, waited for 3.6x the other; a rank that sleeps in its tracker
 * every step: 28 of 28); its cost is that wait per step. */
static size_t straggler(rd_advise *x, const rd_nccl_blame *b, size_t nb, size_t ncoll,
                        int net_trace) {
  rd_straggler_wait s;
  if (!rd_ranks_straggler_in(&s, in_trace_steps, x) || !s.path || s.last_count == 0) return 0;
  if (s.caused_ns < 4 * s.other_ns || 10 * s.last_count < 9 * s.ncoll || s.delay_ns <= 0) return 0;
  const asteps *ts = NULL;
  for (size_t i = 0; i < x->ntraces; i++)
    if (!strcmp(x->ts[i].path, s.path)) ts = &x->ts[i];
  if (!ts || !ts->nsteps) return 0;
  uint64_t ns = (uint64_t)s.caused_ns;
  double pct = ts->step_ns ? 100.0 * (double)ns / (double)ts->step_ns : 0;
  if (pct < rdf_straggler_rank.min_pct) return 0;
  char why[400] = "";
  const rd_nccl_blame *nb_s = NULL;
  for (size_t i = 0; i < nb; i++)
    if (!strcmp(x->ts[x->nr[b[i].trace].ts].path, s.path)) nb_s = &b[i];
  if (nb_s && nb_s->last_n) {
    /* the network explains the waits: slow-network-rank says so, with its own fix */
    if ((int)nb_s->trace == net_trace &&
        (2 * nb_s->late_enqueue_n < nb_s->last_n || 2 * nb_s->net_excess_ns >= s.caused_ns))
      return 0;
    snprintf(why, sizeof why, "; NCCL's events: it started the kernel last at %zu of %zu "
             "collectives and enqueued last at %zu of those (%s), its transfers ran %.3f ms "
             "beyond the other ranks' in all",
             nb_s->last_n, ncoll, nb_s->late_enqueue_n,
             2 * nb_s->late_enqueue_n >= nb_s->last_n ? "slow to arrive: its host was late"
                                                     : "its GPU was busy before them",
             nb_s->net_excess_ns / 1e6);
  }
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
            "for another rank%s",
         s.rank, s.last_count, s.ncoll, s.nranks, s.delay_ns / 1e6, s.caused_ns / 1e6,
         s.other_ns / 1e6, why);
  return 1;
}

/* The rank whose transfers ran longest (slow-network-rank): its trace's index in b, else -1. */
static int slow_network(rd_advise *x, const rd_nccl_blame *b, size_t nb, size_t ncoll) {
  if (nb < 2 || !ncoll) return -1;
  size_t s = 0;
  for (size_t i = 1; i < nb; i++)
    if (b[i].net_excess_ns > b[s].net_excess_ns) s = i;
  double other = 0, oxfer = 0, oproxy = 0;
  for (size_t i = 0; i < nb; i++)
    if (i != s) {
      if (b[i].net_excess_ns > other) other = b[i].net_excess_ns;
      oxfer += b[i].xfer_ns / (double)(nb - 1);
      oproxy += b[i].proxy_ns / (double)(nb - 1);
    }
  if (b[s].net_excess_ns <= 0 || b[s].net_excess_ns < 2 * other || 3 * b[s].net_n < 2 * ncoll)
    return -1;
  const asteps *ts = &x->ts[x->nr[b[s].trace].ts];
  if (!ts->nsteps || !ts->step_ns) return -1;
  if (100.0 * b[s].net_excess_ns / (double)ts->step_ns < rdf_slow_network_rank.min_pct) return -1;
  PUSH(x->f, x->nf, x->capf, 16);
  afinding *f = &x->f[x->nf++];
  memset(f, 0, sizeof *f);
  f->cls = &rdf_slow_network_rank;
  f->steps_from = ts->from;
  f->place = rd_xstrdup(x->nr[b[s].trace].place ? x->nr[b[s].trace].place : "[unknown]");
  f->trace = rd_xstrdup(ts->path);
  f->nsteps = ts->nsteps;
  f->step_ns = ts->step_ns;
  f->ns = (uint64_t)b[s].net_excess_ns;
  f->calls = b[s].net_n;
  f->fns = rd_xstrdup("collectives");
  double n = (double)ncoll;
  adv_detail(f, "rank %d's transfers ran longest at %zu of the %zu collectives every rank had "
             "(%zu ranks): %.3f ms beyond the other ranks' in all. After the last rank started, "
             "its kernels ran %.3f ms on average, the others' %.3f ms; its proxy operations "
             "%.3f ms, the others' %.3f ms; it was the last to enqueue at %zu (a host that waits "
             "for its GPU is late too)",
             b[s].rank, b[s].net_n, ncoll, nb, b[s].net_excess_ns / 1e6, b[s].xfer_ns / n / 1e6,
             oxfer / n / 1e6, b[s].proxy_ns / n / 1e6, oproxy / n / 1e6, b[s].late_enqueue_n);
  return (int)b[s].trace;
}

/* 1 when the enqueue time t of the trace of NCCL index tr lies inside its steps */
static int in_nccl_steps(void *ctx, uint32_t tr, uint64_t t) {
  const rd_advise *x = ctx;
  if (tr >= x->nnr) return 0;
  const asteps *ts = &x->ts[x->nr[tr].ts];
  return ts->nsteps && adv_in_win(t, ts->lo, ts->hi);
}

/* Several ranks: slow-network-rank, then straggler-rank (which it may explain). */
static size_t ranked(rd_advise *x) {
  rd_nccl_blame *b = NULL;
  size_t ncoll = 0, nb = x->nccl ? rd_ncclstats_blame(x->nccl, in_nccl_steps, x, &b, &ncoll) : 0;
  int net = slow_network(x, b, nb, ncoll);
  size_t n = (net >= 0) + straggler(x, b, nb, ncoll, net);
  free(b);
  return n;
}

