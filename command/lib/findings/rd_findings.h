/* rd_findings.h — what the findings of `dlhook advise` share (internal to command/lib/advise.c
 * and the files of command/lib/findings/): a finding class's descriptor, the state one trace's
 * analysis reads (struct rd_advise, filled by advise.c's sink during the trace's second pass,
 * and actx, the trace's steps), the finding being built and the helpers every family uses.
 *
 * A class is a descriptor (rd_finding_class: id, what it finds, threshold, how its cost is
 * estimated, what its evidence counts, fix) in the file of its family, which also holds the
 * family's detection (rd_finding_family: a function run once per trace, and one run once after
 * every trace for the classes that compare traces). advise.c's CLASSES lists every class, one
 * line each: its order is the order of the docs table and of `dlhook advise --help`, it breaks
 * ties between equal costs, and a family's detection runs when its first class comes up in it.
 * docs/advise.md's class table, `dlhook advise --help` and the manual page are written from the
 * descriptors (`make advise-doc`, `make man`; tests/cli/t_advise_doc.sh). */
#ifndef RD_FINDINGS_H
#define RD_FINDINGS_H

#include <stdint.h>
#include <stdio.h>

#include "rd.h"
#include "rd_scan.h"

/* the thresholds several classes share (a finding is reported only above all of its class's) */
#define ADV_MIN_PCT 1.0     /* % of the step: host calls */
#define ADV_MIN_PCT_GPU 5.0 /* % of the step: the GPU's classes, samples, ranks */
#define ADV_MIN_CALLS 3
#define ADV_MIN_SAMPLES 10 /* host samples of a function (cpu-bound-python): fewer say nothing */

typedef struct rd_advise rd_advise;
typedef struct actx actx;

/* A family of classes found together: trace() runs after each trace (NULL: none), ranks() after
 * every trace was read (the classes that compare traces; NULL: none) and returns the number of
 * findings it added. */
typedef struct rd_finding_family {
  const char *name;
  void (*trace)(rd_advise *x, actx *a);
  size_t (*ranks)(rd_advise *x);
} rd_finding_family;

/* A class of findings. The texts: `summary` one line of `dlhook advise --help`; `what`,
 * `threshold` and `cost` the columns of docs/advise.md's table; `estimate` and `fix` what each
 * finding says (advise's "estimated:" and "fix:", --json's "estimate" and "fix"); `evidence`
 * what its evidence's count counts ("calls", "GPU ops", "samples"). The numbers are the
 * thresholds the driver applies to every finding of the class (thresholds() in advise.c): at
 * least min_calls calls (and at least one per step when per_step), at least min_pct % of the
 * step time; `always`: kept whatever its cost (a risk or a failure, not lost time); `first`:
 * ranked before every class without it (it ends the run). */
typedef struct rd_finding_class {
  const char *id;
  const char *summary, *what, *threshold, *cost;
  const char *estimate, *evidence, *fix;
  uint64_t min_calls;
  int per_step;
  double min_pct;
  int always, first;
  const rd_finding_family *family;
} rd_finding_class;

/* ---------------------------------------------------------------- what a trace's pass gathers */

typedef struct acall {
  uint64_t start, dur, corr, calls;
  uint32_t stack, fn, tid;
  const rd_finding_class *cls; /* sync-in-loop, malloc-in-loop, or NULL: a copy call (pageable-h2d
                                * is decided by its GPU record) */
} acall;

/* every call with a correlation id, and every outermost call */
typedef struct xcall {
  uint64_t start, end, corr;
  uint32_t stack, fn, tid, depth;
  uint32_t top; /* index of the outermost call it is inside (itself at depth 0) */
} xcall;

typedef struct gop {
  uint64_t s, e, corr;
  uint32_t dev, kind, name, nccl;
  uint32_t v[9]; /* kernels: grid, block, registers, static and dynamic shared memory */
  float occ;     /* kernels: estimated occupancy %, < 0 unknown */
} gop;

typedef struct agemm {
  uint32_t call; /* index into xc */
  int reason;    /* 1 float32 without TF32, 2 half/bf16 shape not a multiple of 8 */
  int64_t m, n, k;
} agemm;

typedef struct asample {
  uint64_t time, weight;
  uint32_t tid, stack, kind;
} asample;

typedef struct adev {
  Dlh__DeviceInfo d;
} adev;

typedef struct afinding {
  const rd_finding_class *cls;
  char *trace, *place, *fns, *detail;
  uint64_t calls, ns, step_ns, nsteps, first;
  int steps_from;
  uint32_t ntraces; /* > 1: found in that many traces (coalesced) */
} afinding;

typedef struct tally {
  char **k;
  uint64_t *w;
  size_t n;
} tally;

/* the steps of a trace, for advise --json's "steps" */
typedef struct asteps {
  char *path;
  uint64_t nsteps, step_ns;
  int from;
  uint64_t lo, hi; /* the steps' span (trace clock) */
} asteps;

/* what a trace's rank did on the host before its collectives (for straggler-rank) */
typedef struct precoll {
  char *path, *place;
  tally t;         /* the samples' places behind that place (for the differential) */
  uint64_t nsteps;
} precoll;

enum { PAGEABLE_H2D = 1, PAGEABLE_D2H = 2 }; /* the values of rd_advise.pageable */

struct rd_advise {
  acall *c;
  size_t n, cap;
  xcall *xc;
  size_t nxc, capxc;
  rd_u64map corr_ix; /* corr -> index into xc */
  gop *g;
  size_t ng, capg;
  agemm *gm;
  size_t ngm, capgm;
  rd_u64map math; /* cuBLAS handle -> math mode */
  rd_u64map nccl_kb; /* corr of an NCCL collective call -> the KiB it moves over the links */
  rd_u64map push; /* tid -> stack of its last __cudaPushCallConfiguration */
  asample *sm;
  size_t nsm, capsm;
  adev *dev;
  size_t ndev;
  rd_memcol *mem;
  rd_sink memsink;
  rd_u64map pageable; /* corr of a memcpy record from (1) or into (2) pageable memory */
  rd_u64map copy_us;  /* corr of a pageable HtoD memcpy record -> its GPU time in µs */
  rd_stepfind *sf;      /* the trace's steps (stepfind.c) */
  rd_step_span *st;     /* after the pass: its steps, owned by sf */
  size_t nst;
  uint64_t lo, hi;
  afinding *f;
  size_t nf, capf;
  size_t ntraces;
  uint64_t nsteps_all, step_ns_all;
  int steps_from; /* of the last trace: RD_STEPS_* */
  asteps *ts;     /* every trace's steps */
  tally dataset;  /* user lines under the DataLoader's fetch, all traces */
  precoll *pc;
  size_t npc;
  /* NCCL's profiler plugin events of every rank trace (slow-network-rank, straggler-rank's
   * why): the collectives, and per trace with any its index in ts and its collective call's
   * place */
  struct rd_ncclstats *nccl;
  struct { size_t ts; char *place; } *nr;
  size_t nnr, capnr;
  /* the events of the trace being read, and the most kept (rd_event_limit, as for dlhook
   * advise): past it, the rest of the trace is passed over (over = 1) */
  uint64_t events, budget;
  int over;
};

/* What the analyses of one trace share (rd_advise_trace_end). */
struct actx {
  rd_trace *t;
  size_t base;              /* the trace's first finding in x->f */
  uint64_t nsteps, step_ns; /* its steps and their summed time */
  uint64_t after;           /* the end of the first step (UINT64_MAX: no steady state to tell) */
  uint64_t in_lo, in_hi;    /* with steps: only what is inside [in_lo, in_hi) counts */
  uint32_t main_tid;        /* the thread with the most outermost calls */
  uint64_t gpu_busy;        /* the busiest device's busy time inside the steps (the GPU family
                             * sets it; the GEMM and sample families, after it, read it) */
};

/* ---------------------------------------------------------------- helpers (findings.c) */

#define PUSH(arr, n, cap, init)                                 \
  do {                                                          \
    if ((n) == (cap)) {                                         \
      (cap) = (cap) ? (cap) / 2 * 3 : (init);                   \
      (arr) = rd_xrealloc((arr), (cap) * sizeof *(arr));        \
    }                                                           \
  } while (0)

static inline int adv_in_win(uint64_t t, uint64_t lo, uint64_t hi) { return t >= lo && t < hi; }

/* Which calls a function name is: synchronizing, allocating or freeing, a copy, a collective. */
int adv_sync_fn(const char *n);
int adv_malloc_fn(const char *n);
int adv_copy_fn(const char *n);
int adv_collective_fn(const char *n);

/* The place of a stack in the user's code (malloc'd): the innermost frame of the user's Python
 * code, else of the program's executable, else the innermost frame that has a name. */
char *adv_place_of(rd_trace *t, uint32_t stack);
/* A function's name, "?" when it has none. */
const char *adv_fname(const rd_trace *t, uint32_t fn);

/* Weights by key: add (the key is copied), the heaviest key's index, free. */
void adv_tally_add(tally *y, const char *k, uint64_t w);
size_t adv_tally_top(const tally *y);
void adv_tally_free(tally *y);

/* Adds name to the comma-separated list *fns unless it is there. */
void adv_add_fn(char **fns, const char *name);
/* The finding of class cls at place (taken over) in this trace (its findings start at base),
 * new or the one there is. */
afinding *adv_finding(rd_advise *x, size_t base, const rd_finding_class *cls, char *place,
                      const rd_trace *t, uint64_t nsteps, uint64_t step_ns);
/* Sets the finding's detail line (printf-like). */
void adv_detail(afinding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees what a finding holds. */
void adv_finding_free(afinding *f);

/* The device's description, or NULL. */
const Dlh__DeviceInfo *adv_device(const rd_advise *x, uint32_t id);
/* The outermost call that launched GPU op o, or NULL. */
const xcall *adv_launcher(const rd_advise *x, const gop *o);
/* qsort_r order of indices into xcall ctx: by thread, start, depth. */
int adv_by_tid_start(const void *a, const void *b, void *ctx);
/* Sorts the indices o[0..n) into xc in that order (stable), without a comparator per pair. */
void adv_sort_tid_start(uint32_t *o, size_t n, const xcall *xc);

/* ---------------------------------------------------------------- the classes */

/* Each class is defined in its family's file and listed in advise.c's CLASSES. The classes that
 * other files name: host.c's, into which advise.c's sink sorts calls (memory.c looks among the
 * allocations for the one that reached the peak). */
extern const rd_finding_class rdf_sync_in_loop, rdf_malloc_in_loop;

#endif
