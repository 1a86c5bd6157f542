/* rd_memtl.h — the memory section of `dlhook report` (memtl.c): live device memory over time by
 * place, binned so that a page stays light whatever the number of allocations. */
#ifndef RD_MEMTL_H
#define RD_MEMTL_H

#include "rd.h"

/* Time bins of the timeline: past this many samples, samples are merged into as many bins. */
#define RD_MEMTL_BINS 4096
/* Places drawn per grouping (the others are summed as "other"). */
#define RD_MEMTL_KEYS 10

/* One trace's memory timeline as a JSON object (malloc'd, the caller frees; *len its length):
 * group g of the page, the samples v (n, time order, the trace clock shifted onto the page's),
 * live bytes by user line (or the first frame outside dlhook and CUDA), module and operator
 * (rd_torch_of) per bin, the peak with the stacks that hold the most at that moment, and what
 * was live at the peak by place. NULL when n is 0. */
char *rd_memtl_json(rd_trace *t, const rd_mem_sample *v, long n, uint32_t g, size_t *len);

/* The samples of v (n) that draw its live-bytes line at RD_MEMTL_BINS bins: per bin its first,
 * lowest, highest and last sample (all of them when n is small); their indexes in time order
 * into idx (room for n), returns how many. */
long rd_memtl_pick(const rd_mem_sample *v, long n, long *idx);

#endif
