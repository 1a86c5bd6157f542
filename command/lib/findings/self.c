/* self.c — dlhook-overhead, dlhook's own cost: a profiler that must not lose calls makes a
 * thread that calls faster than its writer thread drains wait (DLHOOK_RING_WAIT_MS). The trace
 * has every wait (rd_selfcost.h); when they take 1 % of a step or more, the step times and every
 * finding's share are dlhook's as much as the program's, and the user should know which setting
 * trades that cost for completeness. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"
#include "rd_selfcost.h"

static void self_trace(rd_advise *x, actx *a);
static const rd_finding_family self_family = {"dlhook's own cost", self_trace, NULL};

const rd_finding_class rdf_dlhook_overhead = {
    .id = "dlhook-overhead",
    .summary = "threads waiting for dlhook's writer thread took >= 1% of the step (the "
               "settings that trade it).",
    .what = "the time dlhook itself took from the steps: threads that waited for dlhook's writer "
            "thread to drain their ring (`DLHOOK_RING_WAIT_MS`), the thread that waited most "
            "(the main thread when it waited)",
    .threshold = ">= 1%",
    .cost = "those waits inside the steps (a folded event in proportion to its overlap)",
    .estimate = "the time the thread that waited most (the main thread when it waited) spent in "
                "the steps waiting for dlhook's writer thread to drain its ring, divided by the "
                "steps",
    .evidence = "calls",
    .fix = "trade dlhook's completeness for its cost: DLHOOK_RING_WAIT_MS=0 drops calls instead "
           "of waiting (counted as dropped), a larger DLHOOK_MEM_MB gives the rings more room, "
           "--stacks none (or python) makes each record cheaper; or record a window "
           "(DLHOOK_CAPTURE_RANGE, dlhook ctl)",
    .min_pct = ADV_MIN_PCT,
    .family = &self_family,
};

/* ---------------------------------------------------------------- detection */

typedef struct selffind {
  uint64_t ns;       /* the cost: that thread's waits inside [lo, hi) */
  uint64_t waits;    /* its waits there */
  uint32_t tid;
  char place[64];    /* "dlhook's writer (thread TID waited)" */
  char detail[400];
} selffind;

/* The part of a folded event's waits inside [lo, hi): in proportion to its span's overlap. */
static uint64_t in_window(const rd_wait_ev *e, uint64_t lo, uint64_t hi) {
  uint64_t s = e->start, end = e->start + (e->span ? e->span : 1);
  uint64_t a = s > lo ? s : lo, b = end < hi ? end : hi;
  if (b <= a) return 0;
  return (uint64_t)((double)e->wait * (double)(b - a) / (double)(end - s));
}

/* The trace's waits inside the steps [lo, hi) (a folded event counts in proportion to its
 * overlap), of main_tid when it waited there, else of the thread that waited most. Returns 1 when
 * they are at least the class's min_pct of step_ns, else 0. */
static int selffind_trace(const rd_trace *t, uint64_t lo, uint64_t hi, uint32_t main_tid,
                          uint64_t step_ns, selffind *out) {
  const rd_waits *w = t->waits;
  memset(out, 0, sizeof *out);
  if (!w || !w->nev || !step_ns) return 0;
  uint64_t *ns = calloc(w->nth, sizeof *ns), *cnt = calloc(w->nth, sizeof *cnt);
  if (!ns || !cnt) { free(ns); free(cnt); return 0; }
  for (size_t i = 0; i < w->nev; i++) {
    const rd_wait_ev *e = &w->ev[i];
    uintptr_t k = (uintptr_t)rd_map_get(&w->by_tid, e->tid);
    uint64_t x = k ? in_window(e, lo, hi) : 0;
    if (!x) continue;
    ns[k - 1] += x;
    cnt[k - 1] += e->count;
  }
  size_t best = w->nth;
  for (size_t i = 0; i < w->nth; i++) {
    if (!ns[i]) continue;
    if (w->th[i].tid == main_tid) { best = i; break; }
    if (best == w->nth || ns[i] > ns[best]) best = i;
  }
  int found = 0;
  if (best < w->nth) {
    uint64_t all = 0;
    size_t nthreads = 0;
    for (size_t i = 0; i < w->nth; i++) all += ns[i], nthreads += ns[i] != 0;
    out->ns = ns[best];
    out->waits = cnt[best];
    out->tid = w->th[best].tid;
    snprintf(out->place, sizeof out->place, "dlhook's writer (thread %u waited)", out->tid);
    snprintf(out->detail, sizeof out->detail,
             "thread %u%s waited %" PRIu64 " times for dlhook's writer inside the steps, %.3f ms "
             "in all; %zu thread%s waited %.3f ms together (dlhook stats: \"What dlhook cost or "
             "lost\")",
             out->tid, out->tid == main_tid ? " (the main thread)" : "", out->waits,
             (double)out->ns / 1e6, nthreads, nthreads == 1 ? "" : "s", (double)all / 1e6);
    found = 100.0 * (double)out->ns / (double)step_ns >= rdf_dlhook_overhead.min_pct;
  }
  free(ns);
  free(cnt);
  return found;
}

/* dlhook's own cost: its writer's waits */
static void self_trace(rd_advise *x, actx *a) {
  selffind sf;
  if (selffind_trace(a->t, a->in_lo, a->in_hi, a->main_tid, a->step_ns, &sf)) {
    afinding *f = adv_finding(x, a->base, &rdf_dlhook_overhead, rd_xstrdup(sf.place), a->t,
                              a->nsteps, a->step_ns);
    f->ns = sf.ns, f->calls = sf.waits, f->fns = rd_xstrdup("[waits for dlhook's writer]");
    adv_detail(f, "%s", sf.detail);
  }
}
