/* clock.c — the clocks of the runtime: CLOCK_MONOTONIC (the trace clock), CLOCK_REALTIME (for
 * anchors across hosts), and the conversion of the hot path's ticks (rdtsc on x86-64) to the
 * trace clock.
 *
 * Conversion: piecewise linear between (ticks, trace ns, realtime) anchors that the writer
 * thread takes, at its start and once per drain. Anchors and conversion are the writer
 * thread's (no lock): the NVTX, CUPTI and capture converters it calls use them too. */
#include <time.h>

#include "dlh_internal.h"

/* CPU clock c in ns, 0 when it cannot be read (a thread gone, another process's thread) */
uint64_t dlh_cpu_ns(clockid_t c) {
  struct timespec ts;
  if (clock_gettime(c, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dlh_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dlh_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dlh_ticks_slow(void) { return dlh_mono_ns(); }

/* ---------------------------------------------------------------- anchors */

#define NANCH 4096
static dlh_anchor anchors[NANCH];
uint64_t dlh_clock_nanch;            /* anchors taken so far (ring of NANCH) */
static dlh_anchor first;

dlh_anchor dlh_clock_take(void) {
  dlh_anchor a = {0, 0, 0};
  uint64_t best = ~0ull;
  for (int i = 0; i < 3; i++) { /* keep the tightest bracket */
    uint64_t t0 = dlh_ticks(), ns = dlh_mono_ns(), rt = dlh_real_ns(), t1 = dlh_ticks();
    if (t1 - t0 < best) { best = t1 - t0; a.tk = t0 + (t1 - t0) / 2; a.ns = ns; a.rt = rt; }
  }
  return a;
}

void dlh_clock_add(dlh_anchor a) { anchors[dlh_clock_nanch++ % NANCH] = a; }

dlh_anchor dlh_clock_last(void) { return anchors[(dlh_clock_nanch - 1) % NANCH]; }

dlh_anchor dlh_clock_restart(void) {
  first = dlh_clock_take();
  dlh_clock_nanch = 0;
  dlh_tick_seg.gen = ~0ull; /* a new writer (after fork, attach): no segment yet */
  dlh_clock_add(first);
  return first;
}

/* ---------------------------------------------------------------- ticks -> trace ns */

/* The segment of the last conversion (dlh_internal.h: dlh_tick_ns_fast). */
struct dlh_tick_seg dlh_tick_seg = {~0ull, 0, 0, 0, 0, 0};

static void seg_set_mult(void) {
  double m = dlh_tick_seg.rate * 4294967296.0;
  dlh_tick_seg.mult = m > 0 && m < 1.8e19 ? (uint64_t)m : 0;
}

uint64_t dlh_tick_ns(uint64_t tk) {
#if !defined(__x86_64__)
  return tk;
#else
  struct dlh_tick_seg *seg = &dlh_tick_seg;
  uint64_t nanch = dlh_clock_nanch;
  if (dlh_tick_seg_hit(tk)) return seg->ns + dlh_tick_seg_scale(tk - seg->lo);
  uint64_t lo = nanch > NANCH ? nanch - NANCH : 0, hi = nanch; /* valid: [lo, hi) */
  const dlh_anchor *last = &anchors[(hi - 1) % NANCH];
  const dlh_anchor *old = &anchors[lo % NANCH];
  double rate = last->tk > first.tk ? (double)(last->ns - first.ns) / (double)(last->tk - first.tk)
                                    : 1.0;
  if (tk >= last->tk) {
    seg->gen = nanch; seg->lo = last->tk; seg->hi = ~0ull; seg->ns = last->ns; seg->rate = rate;
    seg_set_mult();
    return last->ns + (uint64_t)((double)(tk - last->tk) * rate);
  }
  if (tk <= old->tk) {
    double back = (double)(old->tk - tk) * rate;
    return back >= (double)old->ns ? 0 : old->ns - (uint64_t)back;
  }
  while (hi - lo > 1) { /* anchors are increasing: find the segment */
    uint64_t mid = lo + (hi - lo) / 2;
    if (anchors[mid % NANCH].tk <= tk) lo = mid; else hi = mid;
  }
  const dlh_anchor *a = &anchors[lo % NANCH], *b = &anchors[(lo + 1) % NANCH];
  if (b->tk == a->tk) return a->ns;
  seg->gen = nanch; seg->lo = a->tk; seg->hi = b->tk; seg->ns = a->ns;
  seg->rate = (double)(b->ns - a->ns) / (double)(b->tk - a->tk);
  seg_set_mult();
  return a->ns + (uint64_t)((double)(tk - a->tk) * seg->rate);
#endif
}

/* A duration of `ticks` starting at tick t0, in ns: at the rate of the segment of the last
 * conversion when t0 was converted just before (the common case), else by two conversions. */
uint64_t dlh_tick_dur_ns(uint64_t t0, uint64_t ticks) {
#if defined(__x86_64__)
  if (dlh_tick_seg_hit(t0) && dlh_tick_seg_hit(t0 + ticks)) return dlh_tick_seg_scale(ticks);
#endif
  uint64_t a = dlh_tick_ns(t0), b = dlh_tick_ns(t0 + ticks);
  return b > a ? b - a : 0;
}
