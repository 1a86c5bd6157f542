/* rd_selffind.h — advise's dlhook-overhead class (selffind.c): the time dlhook itself took from
 * the steps (threads waiting for its writer thread), with the settings that trade it. */
#ifndef RD_SELFFIND_H
#define RD_SELFFIND_H

#include <stdint.h>

#include "rd.h"

#define RD_SELFFIND_ID "dlhook-overhead"
#define RD_SELFFIND_HOW                                                                        \
  "the time the thread that waited most (the main thread when it waited) spent in the steps "  \
  "waiting for dlhook's writer thread to drain its ring, divided by the steps"
#define RD_SELFFIND_FIX                                                                        \
  "trade dlhook's completeness for its cost: DLHOOK_RING_WAIT_MS=0 drops calls instead of "    \
  "waiting (counted as dropped), a larger DLHOOK_MEM_MB gives the rings more room, "           \
  "--stacks none (or python) makes each record cheaper; or record a window "                   \
  "(DLHOOK_CAPTURE_RANGE, dlhook ctl)"
#define RD_SELFFIND_MIN_PCT 1.0 /* of a step */
#define RD_SELFFIND_FNS "[waits for dlhook's writer]" /* the evidence's "calls of" */

typedef struct rd_selffind {
  uint64_t ns;       /* the cost: that thread's waits inside [lo, hi) */
  uint64_t waits;    /* its waits there */
  uint32_t tid;
  char place[64];    /* "dlhook's writer (thread TID waited)" */
  char detail[400];
} rd_selffind;

/* The trace's finding: the waits inside the steps [lo, hi) (a folded event counts in proportion
 * to its overlap), of main_tid when it waited there, else of the thread that waited most.
 * Returns 1 when they are at least RD_SELFFIND_MIN_PCT of step_ns, else 0. */
int rd_selffind_trace(const rd_trace *t, uint64_t lo, uint64_t hi, uint32_t main_tid,
                      uint64_t step_ns, rd_selffind *out);

#endif
