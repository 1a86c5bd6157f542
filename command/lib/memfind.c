/* memfind.c — memory findings from the ledger (memory.c's samples) and a trace's steps, for
 * `dlhook advise` (rd_memfind.h).
 *
 * memory-leak: live device memory at the end of each step, compared step over step after the
 * first (the first step makes the optimizer's state and the caches: it may grow once). A leak is
 * live memory that grew at three quarters or more of those step ends and by at least
 * RD_LEAK_MIN_BYTES in all. Its places are where the memory was allocated that is still live at
 * the end of the last step, was allocated after the first and lived across another step end:
 * by the user's line (rd_torch_of), else by stack; the place that holds the most bytes comes
 * first, and places that hold less than a quarter of the growth are left out. */
#include "rd_memfind.h"

#include <stdlib.h>
#include <string.h>

/* The live bytes of the process after the last sample at or before ts (0 before any). */
static uint64_t live_at(const rd_mem_sample *ms, long n, uint64_t ts) {
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (ms[mid].ts_ns <= ts) lo = mid + 1;
    else hi = mid;
  }
  return lo ? ms[lo - 1].live_bytes : 0;
}

typedef struct leak_key {
  const void *key;      /* the user's line (interned by torch.c), else NULL with the stack */
  uint32_t stack;
} leak_key;

/* Adds allocation m to the place of its stack in out[*k] (at most max places). */
static void add_place(rd_trace *t, rd_memleak *out, leak_key *keys, size_t *k, size_t max,
                      const rd_mem_sample *m) {
  const rd_torch *c = m->stack ? rd_torch_of(t, m->stack) : NULL;
  leak_key key = {c && c->user ? (const void *)c->user : NULL, c && c->user ? 0 : m->stack};
  size_t i = 0;
  while (i < *k && (keys[i].key != key.key || keys[i].stack != key.stack)) i++;
  if (i == *k) {
    if (*k == max) return;
    keys[i] = key;
    memset(&out[i], 0, sizeof out[i]);
    out[i].stack = m->stack;
    (*k)++;
  }
  out[i].bytes += (uint64_t)m->bytes;
  out[i].allocs++;
}

static int by_bytes(const void *a, const void *b) {
  const rd_memleak *p = a, *q = b;
  return p->bytes < q->bytes ? 1 : p->bytes > q->bytes ? -1 : 0;
}

size_t rd_memleaks(rd_trace *t, const rd_mem_sample *ms, long n, const rd_step_span *st,
                   size_t nst, rd_memleak *out, size_t max) {
  if (nst < 3 || n <= 0 || !max) return 0;
  uint64_t first = live_at(ms, n, st[0].e), last = live_at(ms, n, st[nst - 1].e);
  uint64_t grew = 0, prev = first;
  for (size_t i = 1; i < nst; i++) {
    uint64_t v = live_at(ms, n, st[i].e);
    if (v > prev) grew++;
    prev = v;
  }
  if (last < first + RD_LEAK_MIN_BYTES || 4 * grew < 3 * (nst - 1)) return 0;
  /* the allocations made after the first step, live across a later step end and still at the
   * end of the last (what a step allocates and frees in the next is not a leak) */
  uint64_t t0 = st[0].e, tk = st[nst - 2].e, t1 = st[nst - 1].e;
  char *held = rd_xcalloc((size_t)n, 1);
  rd_u64map at = {0};
  for (long i = 0; i < n && ms[i].ts_ns <= t1; i++) {
    uint32_t j;
    if (ms[i].bytes > 0) {
      held[i] = ms[i].ts_ns > t0 && ms[i].ts_ns <= tk;
      rd_m_put(&at, ms[i].ptr, (uint32_t)i);
    } else if (rd_m_get(&at, ms[i].ptr, &j)) {
      held[j] = 0;
      rd_m_del(&at, ms[i].ptr);
    }
  }
  rd_m_free(&at);
  leak_key *keys = rd_xmalloc(max * sizeof *keys);
  size_t k = 0;
  for (long i = 0; i < n; i++)
    if (held[i]) add_place(t, out, keys, &k, max, &ms[i]);
  free(keys);
  free(held);
  for (size_t i = 0; i < k; i++) {
    out[i].growth = last - first;
    out[i].steps = nst;
    out[i].grew = grew;
  }
  qsort(out, k, sizeof *out, by_bytes);
  while (k > 1 && 4 * out[k - 1].bytes < last - first) k--; /* places that hold a quarter or more */
  return k;
}
