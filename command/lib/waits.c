/* waits.c — a trace's own account of what dlhook cost it (rd_selfcost.h): the waits of its
 * threads for the writer thread (RingWaitBatch) and the cost fields of its Counters, kept by
 * trace.c's first pass; each waiting thread's span from the second pass (rd_waits_span).
 * selfcost.c sums them over traces. */
#include <stdlib.h>
#include <string.h>

#include "rd_selfcost.h"

static rd_waits *waits_of(rd_trace *t) {
  if (!t->waits) {
    t->waits = rd_xmalloc(sizeof *t->waits);
    memset(t->waits, 0, sizeof *t->waits);
  }
  return t->waits;
}

static rd_twait *thread_of(rd_waits *w, uint32_t tid, int create) {
  uintptr_t v = (uintptr_t)rd_map_get(&w->by_tid, tid);
  if (v) return &w->th[v - 1];
  if (!create) return NULL;
  w->th = rd_xrealloc(w->th, (w->nth + 1) * sizeof *w->th);
  rd_twait *h = &w->th[w->nth++];
  memset(h, 0, sizeof *h);
  h->tid = tid;
  h->lo = UINT64_MAX;
  rd_map_put(&w->by_tid, tid, (void *)(uintptr_t)w->nth);
  return h;
}

void rd_waits_define(rd_trace *t, const Dlh__RingWaitBatch *b) {
  size_t n = b->n_tid;
  if (!n || b->n_start_ns != n || b->n_span_ns != n || b->n_wait_ns != n || b->n_count != n)
    return; /* damaged: says nothing */
  rd_waits *w = waits_of(t);
  w->ev = rd_xrealloc(w->ev, (w->nev + n) * sizeof *w->ev);
  for (size_t i = 0; i < n; i++) {
    rd_wait_ev e = {b->tid[i], b->start_ns[i], b->span_ns[i], b->wait_ns[i], b->count[i]};
    if (e.wait > e.span) e.span = e.wait;
    w->ev[w->nev++] = e;
    rd_twait *h = thread_of(w, e.tid, 1);
    h->waits += e.count;
    h->wait_ns += e.wait;
    if (e.start < h->lo) h->lo = e.start;
    if (e.start + e.span > h->hi) h->hi = e.start + e.span;
    w->waits += e.count;
    w->wait_ns += e.wait;
  }
}

void rd_waits_counters(rd_trace *t, const Dlh__Counters *c) {
  if (!c->has_ring_waits && !c->has_calls_dropped && !c->has_gpu_dropped) return;
  rd_waits *w = waits_of(t);
  w->have_counters = 1;
  w->c_waits = c->ring_waits;
  w->c_wait_ns = c->ring_wait_ns;
  w->c_calls_dropped = c->calls_dropped;
  w->c_gpu_dropped = c->gpu_dropped;
}

void rd_waits_free(rd_trace *t) {
  if (!t->waits) return;
  rd_map_free(&t->waits->by_tid, NULL);
  free(t->waits->th);
  free(t->waits->ev);
  free(t->waits);
  t->waits = NULL;
}

void rd_waits_span(rd_waits *w, uint32_t tid, uint64_t start, uint64_t end) {
  rd_twait *h = thread_of(w, tid, 0);
  if (!h) return;
  if (start < h->lo) h->lo = start;
  if (end > h->hi) h->hi = end;
}

uint64_t rd_twait_time(const rd_twait *w) {
  uint64_t span = w->hi > w->lo && w->lo != UINT64_MAX ? w->hi - w->lo : 0;
  return span > w->wait_ns ? span : w->wait_ns;
}

