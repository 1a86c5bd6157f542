/* export.h — the exporters (command/export/): GPU-to-call links and their tables (links.c,
 * cupti_cbids.c), the entry point of each format (kineto.c, perfetto.c, xplane.c, flame.c), and
 * the options of `dlhook export`, `dlhook diff` and `dlhook merge` (cmd/export.c). */
#ifndef EXPORT_H
#define EXPORT_H

#include "rd_opts.h"
#include "rd_scan.h"

/* ---------------------------------------------------------------- links (links.c) */

/* CUPTI callback ids by function name (cupti_cbids.c, generated from CUPTI's headers). */
typedef struct ex_cbid {
  const char *name;
  uint32_t cbid;
} ex_cbid;
extern const ex_cbid ex_cbids_runtime[], ex_cbids_driver[];
extern const size_t ex_ncbids_runtime, ex_ncbids_driver;
/* The CUPTI callback id of API function `fn` of a trace (runtime or driver), or -1. */
long ex_cupti_cbid(const rd_trace *t, uint32_t fn);

/* What a correlation id that caused GPU work (kernels, copies, memsets) leads to. Filled by
 * ex_links_scan (GPU side) and by the exporter while it writes the calls (call side). */
typedef struct ex_link {
  uint64_t first_gpu;  /* start of its first GPU record */
  uint64_t launch;     /* start of the call (0 until the exporter saw it) */
  uint32_t ngpu;       /* its GPU records: kernels, copies, memsets */
  uint32_t seen;       /* GPU records written so far (numbers them) */
  uint32_t fn;         /* function of the call (0 until seen) */
  uint32_t tid;        /* thread of the call */
  uint32_t ext;        /* External id the call gave its GPU work */
  uint32_t op;         /* exporter's op name id (xplane), 0 = none */
} ex_link;

/* An NVTX range of a thread, with the innermost range that encloses it (parent, -1 = none). */
typedef struct ex_range {
  uint64_t start, end;
  uint32_t tid;
  int32_t parent;
  long step;           /* step number when the range marks a step, else -1 */
  const char *label;   /* owned by ex_links */
} ex_range;

/* A cudaEventRecord as the GPU saw it (CUPTI event record): for wait_on_* of syncs. */
typedef struct ex_evrec {
  uint64_t event, start, corr;
  uint32_t stream;
} ex_evrec;

/* A u64 -> u32 map whose keys come in dense runs (correlation ids: CUPTI's, and the library
 * calls' external ids, each counting up) as tables, v[key - base] = value + 1 (0: absent), with
 * the keys of no table in a hash map (rest). on = 0: not used, the plain map answers. */
typedef struct ex_dense {
  int on;
  size_t nt, n0;             /* tables; keys in the first */
  struct { uint64_t base; size_t n; uint32_t *v; } t[4];
  rd_u64map rest;
} ex_dense;

typedef struct ex_links {
  rd_u64map ix;         /* unused: ixd */
  ex_dense ixd;         /* corr -> index in link (ix is left empty) */
  ex_link *link;
  size_t nlink, caplink;
  ex_range *range;      /* NVTX ranges sorted by (tid, start) */
  size_t nrange, caprange;
  ex_evrec *evrec;      /* event records sorted by (event, start) */
  size_t nevrec, capevrec;
  char **labels;        /* interned NVTX labels */
  size_t nlabels;
  rd_u64map label_ix;
  rd_u64map ext_ix;     /* CUPTI correlation id -> index in ext (external correlation records) */
  ex_dense extd;        /* ext_ix as a table, when dense */
  uint64_t *ext;        /* the library call's correlation id */
  size_t next, capext;
  size_t nsteps;
  uint32_t step_tid;    /* the thread of the first step (the training loop's) */
  uint64_t gpu_records; /* kernels, copies, memsets, syncs */
  int have_process;
  uint32_t pid;
  int rank, local_rank, world;
  char host[128];
  uint64_t start_ns;    /* ProcessInfo.start_ns (trace clock) */
  uint64_t real_ns;     /* realtime of the first clock anchor, 0 = none */
  uint64_t anchor_trace_ns;
} ex_links;


/* The correlation id of the call a GPU record with CUPTI correlation id `corr` belongs to: the
 * library call's own id when an external correlation record says the work was launched inside
 * it, else corr. */
uint64_t ex_links_corr(const ex_links *L, uint64_t corr);
/* The link of a correlation id (already resolved by ex_links_corr), or NULL when it caused no
 * GPU work. */
ex_link *ex_links_get(ex_links *L, uint64_t corr);
/* Index of the innermost NVTX range of thread tid that contains time ts, or -1. */
long ex_links_range_at(const ex_links *L, uint32_t tid, uint64_t ts);
/* The last record of CUDA event `event` at or before ts, or NULL. */
const ex_evrec *ex_links_evrec(const ex_links *L, uint64_t event, uint64_t ts);
void ex_links_free(ex_links *L);

/* One trace of an export, between its two passes (rd_scan.h):
 *   ex_input_open   the first pass: definitions, the links above (GPU work per correlation id,
 *                   NVTX ranges, event records, the process; with o's window), the live device
 *                   memory samples, and with `ranks` the collectives for dlhook merge. Returns
 *                   RD_OK or RD_BAD_INPUT (message printed; in->opened says whether it could be
 *                   opened at all).
 *   ex_input_pass   the second pass: every packet, call and GPU record to s in file order, but
 *                   for the GPU records of a call that comes later in the file: those are held
 *                   with every record after them, and given to s once that call has been seen:
 *                   s sees a call before its GPU work and the GPU records in file order (about
 *                   100 bytes per record held: CUPTI's batches usually follow the calls; at
 *                   most 128 Ki records are held, then the oldest goes out without its call).
 *   ex_input_close  frees it. */
typedef struct ex_input {
  const char *path;
  rd_trace t;
  ex_links L;
  rd_mem_sample *samples;  /* live device memory (trace clock), nmem of them */
  long nmem;
  int opened, has_gpu, later;
  struct rd_memcol *mem;
  struct rd_ranks_in *ranks;
  rd_sink *out;
  void *held;
  size_t head, nheld, capheld;
  uint64_t *vals;
  size_t nvals, capvals;
} ex_input;
int ex_input_open(ex_input *in, const char *path, const rd_opts *o, int ranks);
int ex_input_pass(ex_input *in, const rd_opts *o, rd_sink *s);
void ex_input_close(ex_input *in);
/* Adds off ns to every time of the links (dlhook merge, after the first passes). */
void ex_input_shift(ex_input *in, int64_t off);

/* Exports traces one after another: each one's first pass, then fn(ctx, in, index, n), which
 * runs its second pass. Traces without GPU work (no device, no GPU record: a launcher or shell)
 * are left out, said on stderr, unless o->keep_gpuless, a single trace, or none has GPU work.
 * With o->merge (dlhook merge), every first pass comes first, then the common timeline (clock
 * anchors refined on the collectives, as rd_ranks), then the second passes. Returns RD_OK or
 * RD_BAD_INPUT when any trace was damaged or could not be read. */
typedef int (*ex_one_fn)(void *ctx, ex_input *in, size_t index, size_t n);

int ex_each(const rd_opts *o, char **files, size_t n, ex_one_fn fn, void *ctx);

/* ---------------------------------------------------------------- formats */

int ex_kineto(const rd_opts *o, char **files, size_t n);
int ex_perfetto(const rd_opts *o, char **files, size_t n);
int ex_xplane(const rd_opts *o, char **files, size_t n);
/* folded, svg, speedscope, pprof */
int ex_flame(const rd_opts *o, char **files, size_t n);
/* One trace as the binary column stream of the Parquet writer (columns.c); the Parquet dataset
 * itself, written by the Python package through rd_python (parquet.c). */
int ex_columns(const rd_opts *o, char **files, size_t n);
int ex_parquet(const rd_opts *o, char **files, size_t n);
/* One trace's GPU memory as PyTorch's memory snapshot, a pickle (memsnap.c). */
int ex_memsnap(const rd_opts *o, char **files, size_t n);
/* dlhook diff: A and B, output by the extension of o->out (.svg, else folded) */
int ex_flame_diff(const rd_opts *o, const char *a, const char *b);

/* ---------------------------------------------------------------- command line */

/* The options of `dlhook export`, `dlhook diff` and `dlhook merge` (cmd/export.c): ex_options
 * are shared by the three, ex_format_option (--format, with the one list of formats) by export
 * and merge. */
extern const rd_option ex_options[], ex_format_option[];
/* Parses argv by cmd's tables (ex_options among them) into o, the trace files into files[]
 * (*nfiles of them; files has room for argc). Returns RD_OK; or, after printing the help
 * (*help_shown = 1, returns RD_OK) or a usage error (returns RD_USAGE), the status to exit
 * with. */
int ex_parse_options(const rd_command *cmd, int argc, char **argv, rd_opts *o, char **files,
                     size_t *nfiles, int *help_shown);
/* Runs the exporter of o->format (a name of ex_format_option's list) on the traces. */
int ex_run(const rd_opts *o, char **files, size_t n);

#endif
