/* rd_memfind.h — memory findings from the ledger's samples and a trace's steps (memfind.c), for
 * `dlhook advise`: leaks, fragmentation, out-of-memory errors. */
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

/* The least memory reserved and never allocated at the peak that makes fragmentation, and the
 * ratio: reserved at least RD_FRAG_RATIO_NUM / RD_FRAG_RATIO_DEN times the allocated peak. */
#define RD_FRAG_MIN_BYTES (128ull << 20)
#define RD_FRAG_RATIO_NUM 3
#define RD_FRAG_RATIO_DEN 2

/* One place whose requests made PyTorch's caching allocator reserve segments that are mostly
 * unallocated at the peak (memfind.c replays the allocator over the tensors). */
typedef struct rd_memfrag {
  uint32_t stack;     /* the stack of an allocation that made such a segment (the place's name) */
  uint64_t idle;      /* reserved and unallocated at the peak, in segments made there */
  uint64_t segments;  /* those segments */
  uint64_t reserved;  /* the whole process at the peak: what the allocator has reserved */
  uint64_t allocated; /* and what is allocated (the tensors' bytes) */
} rd_memfrag;

/* Whether the tensors of a trace recorded with --torch-memory (ms: the ledger's samples, n of
 * them) would leave PyTorch's default caching allocator with much more reserved than allocated
 * at the peak of allocated memory: fills out with up to max places, the one whose segments hold
 * the most idle bytes first, and returns their number; 0 when there is no fragmentation or the
 * trace has no tensors (a segment-level trace has only one of the two figures). */
size_t rd_memfrag_places(rd_trace *t, const rd_mem_sample *ms, long n, rd_memfrag *out,
                         size_t max);

/* The context of one out-of-memory error. */
typedef struct rd_memoom {
  rd_mem_fail fail;       /* the failed request */
  uint64_t capacity;      /* the device's memory (0: unknown) */
  uint64_t live;          /* live bytes of that device then */
  uint64_t largest_free;  /* the largest free block the request could have had */
  int model;              /* 1: largest_free is that of PyTorch's caching allocator (tensor level) */
  uint64_t reserved;      /* model = 1: what that allocator had reserved then */
  size_t nplaces;         /* the places that held the most of what was live, most first */
  struct { uint32_t stack; uint64_t bytes, allocs; } place[3];
} rd_memoom;

/* The context of each out-of-memory error (f: the failed allocations, nf of them; one per
 * place of request, up to max) on a device of capacity bytes (0: unknown); returns their
 * number. */
size_t rd_memooms(rd_trace *t, const rd_mem_sample *ms, long n, const rd_mem_fail *f, size_t nf,
                  uint64_t capacity, rd_memoom *out, size_t max);

#endif
