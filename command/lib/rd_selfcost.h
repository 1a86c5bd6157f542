/* rd_selfcost.h — what dlhook cost the traced program or lost of it (a trace's own account:
 * waits.c; summed over traces: selfcost.c): its threads'
 * waits for dlhook's writer thread (RingWaitBatch, DLHOOK_RING_WAIT_MS), calls dropped, GPU
 * records CUPTI dropped, host samples lost and the sampler's CPU time (Counters), for `dlhook
 * stats`, `dlhook report` and advise's dlhook-overhead class (findings/self.c).
 *
 * Per trace (rd_trace.waits, made on the first RingWaitBatch or Counters that says anything of
 * it): the first pass reads every RingWaitBatch and the last Counters (trace.c calls
 * rd_waits_define and rd_waits_counters); the second pass gives each call's span to
 * rd_waits_api (stats), so that a waiting thread's time is known: from its first call or wait
 * to its last. Across traces, rd_selfcost sums them for the outputs. */
#ifndef RD_SELFCOST_H
#define RD_SELFCOST_H

#include <stdint.h>
#include <stdio.h>

#include "rd.h"

/* one thread's waits in a trace; lo/hi: its calls' and waits' span (trace clock) */
typedef struct rd_twait {
  uint32_t tid;
  uint64_t waits, wait_ns, lo, hi;
} rd_twait;

/* one folded event of RingWaitBatch: a thread's waits in one pass of the writer */
typedef struct rd_wait_ev {
  uint32_t tid;
  uint64_t start, span, wait, count;
} rd_wait_ev;

typedef struct rd_waits {
  rd_map by_tid;            /* tid -> index + 1 into th */
  rd_twait *th;
  size_t nth;
  rd_wait_ev *ev;           /* every event, in file order (the report's lanes) */
  size_t nev;
  uint64_t waits, wait_ns;  /* sums of the events */
  /* the last Counters with the cost fields (format: Counters.ring_waits ...); have = 0 in a
   * trace written before them */
  int have_counters;
  uint64_t c_waits, c_wait_ns, c_calls_dropped, c_gpu_dropped;
} rd_waits;

/* trace.c, first pass: a RingWaitBatch (a damaged one is ignored), the cost fields of a
 * Counters packet. */
void rd_waits_define(rd_trace *t, const Dlh__RingWaitBatch *b);
void rd_waits_counters(rd_trace *t, const Dlh__Counters *c);
void rd_waits_free(rd_trace *t);
/* second pass: a call of thread tid from start to end (trace clock): the thread's span */
void rd_waits_span(rd_waits *w, uint32_t tid, uint64_t start, uint64_t end);
static inline void rd_waits_api(const rd_trace *t, uint32_t tid, uint64_t start, uint64_t end) {
  if (t->waits && t->waits->nth) rd_waits_span(t->waits, tid, start, end);
}
/* the thread's time: its span, at least its waits */
uint64_t rd_twait_time(const rd_twait *w);

/* ---- across traces: `dlhook stats` ---- */
typedef struct rd_selfcost rd_selfcost;
rd_selfcost *rd_selfcost_new(void);
void rd_selfcost_free(rd_selfcost *x);
/* after a trace's second pass (its threads' spans known) */
void rd_selfcost_trace_end(rd_selfcost *x, const rd_trace *t);
/* The totals. waits, wait_ns: every wait; thread_ns: the time of the threads that waited;
 * nthreads: those threads. */
void rd_selfcost_waits(const rd_selfcost *x, uint64_t *waits, uint64_t *wait_ns,
                       uint64_t *thread_ns, uint64_t *nthreads);
/* "threads waited N times, X ms (Y % of their time) for dlhook's writer" (buf; "" when no
 * thread waited). */
const char *rd_selfcost_wait_line(const rd_selfcost *x, char *buf, size_t n);
/* CPU time of dlhook's threads and its sample handler (own), and of the processes (every
 * thread), over the traces that said them; 0 when none did. */
int rd_selfcost_cpu(const rd_selfcost *x, uint64_t *own, uint64_t *process);
/* The section "What dlhook cost or lost" of stats' tables: the waits (the threads that waited
 * most), calls dropped, GPU records CUPTI dropped, host samples lost and the sampler's CPU. */
void rd_selfcost_table(FILE *f, const rd_selfcost *x);
/* ,"dlhook_cost":{...} of stats --json (its fields: cmd/stats.c's help) */
void rd_selfcost_json(FILE *f, const rd_selfcost *x);

#endif
