/* rd_memfind.h — memory findings from the ledger's samples and a trace's steps (memfind.c), for
 * `dlhook advise`. */
#ifndef RD_MEMFIND_H
#define RD_MEMFIND_H

#include "rd.h"

/* The least growth of live memory over the steps that makes a leak. */
#define RD_LEAK_MIN_BYTES (1ull << 20)

/* One place (a user's line, else a stack) that holds memory allocated after the first step and
 * still live at the end of the last. */
typedef struct rd_memleak {
  uint32_t stack;   /* the stack of one of its allocations (for the place's name) */
  uint64_t bytes;   /* the bytes it holds so */
  uint64_t allocs;  /* in that many allocations */
  uint64_t growth;  /* live bytes at the end of the last step minus at the end of the first */
  uint64_t steps;   /* the steps compared */
  uint64_t grew;    /* the step ends (of steps - 1) at which live memory was higher than before */
} rd_memleak;

/* Whether live memory grows step over step (ms: the ledger's samples in time order, n of them;
 * st: the steps in time order, nst >= 3 needed): fills out with up to max places, the one that
 * holds the most bytes first, and returns their number; 0 when there is no leak. */
size_t rd_memleaks(rd_trace *t, const rd_mem_sample *ms, long n, const rd_step_span *st,
                   size_t nst, rd_memleak *out, size_t max);

#endif
