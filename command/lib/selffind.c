/* selffind.c — advise's dlhook-overhead class: a profiler that must not lose calls makes a thread
 * that calls faster than its writer thread drains wait (DLHOOK_RING_WAIT_MS). The trace has
 * every wait (rd_selfcost.h); when they take 1 % of a step or more, the step times and every
 * finding's share are dlhook's as much as the program's, and the user should know which setting
 * trades that cost for completeness. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_selfcost.h"
#include "rd_selffind.h"

/* The part of a folded event's waits inside [lo, hi): in proportion to its span's overlap. */
static uint64_t in_window(const rd_wait_ev *e, uint64_t lo, uint64_t hi) {
  uint64_t s = e->start, end = e->start + (e->span ? e->span : 1);
  uint64_t a = s > lo ? s : lo, b = end < hi ? end : hi;
  if (b <= a) return 0;
  return (uint64_t)((double)e->wait * (double)(b - a) / (double)(end - s));
}

int rd_selffind_trace(const rd_trace *t, uint64_t lo, uint64_t hi, uint32_t main_tid,
                      uint64_t step_ns, rd_selffind *out) {
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
    found = 100.0 * (double)out->ns / (double)step_ns >= RD_SELFFIND_MIN_PCT;
  }
  free(ns);
  free(cnt);
  return found;
}
