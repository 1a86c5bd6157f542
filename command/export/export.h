/* export.h — shared pieces of `dlhook export` and `dlhook diff`: options, the streaming scan of
 * a trace (window filter, progress), output helpers, and the entry points of each format
 * (export_kineto.c, export_perfetto.c, export_xplane.c, flame.c). */
#ifndef EXPORT_H
#define EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "vx.h"

/* flame graph weights (--weight) */
enum { EX_W_GPU = 0, EX_W_CPU = 1, EX_W_BYTES = 2 };

typedef struct ex_opts {
  const char *format;
  const char *out;
  int weight;                   /* EX_W_* */
  int have_window;
  uint64_t win_start, win_end;  /* relative to the trace's start, ns; end UINT64_MAX = open */
  const char *step_range;       /* NVTX range name that marks a step (kineto ProfilerStep#N) */
  const char *title;
  int quiet;                    /* no progress on stderr */
  int keep_gpuless;             /* --keep-gpuless: export processes that did no GPU work */
} ex_opts;

/* One GPU record of a GpuBatch, decoded. vals points into the packet. */
typedef struct ex_gpu {
  uint32_t kind, device, stream, context, name;
  const char *kname;  /* name (StringDef) demangled when it is a C++ name; NULL when none */
  uint64_t start, dur, corr;
  const uint64_t *vals;
  uint32_t nvals;
} ex_gpu;

/* What a trace scan delivers. Any callback may be NULL. The packets and events are valid only
 * during the call. `t` has the definitions (functions, strings) read so far. */
typedef struct ex_sink {
  void *ctx;
  /* every packet that is not an ApiBatch or GpuBatch (process, thread, device, stack, ...) */
  void (*packet)(void *ctx, const vx_trace *t, const Dlh__Packet *p);
  /* API calls inside the window */
  void (*api)(void *ctx, const vx_trace *t, uint32_t tid, const dlh_api_event *ev);
  /* GPU records inside the window (external-correlation records, kind 7, always) */
  void (*gpu)(void *ctx, const vx_trace *t, const ex_gpu *g);
} ex_sink;

/* Reads a whole trace in file order and calls the sink. Shows progress on stderr once the
 * scan takes more than a second (unless o->quiet); `what` names the pass in it.
 * Returns VX_OK, or VX_BAD_INPUT when the trace cannot be opened or is damaged (everything
 * readable was delivered; the message is printed). */
int ex_scan(const char *path, const ex_opts *o, const char *what, ex_sink *s);

/* dlhook merge: from now on ex_scan adds offsets[i] ns to every time of paths[i] (the arrays
 * stay owned by the caller and must outlive the scans). */
void ex_set_offsets(char **paths, const int64_t *offsets, size_t n);

/* The offset ex_set_offsets gave a trace (0 when none). */
int64_t ex_offset_of(const char *path);

/* Events per scan so far (API + GPU), for the bench and progress. */
extern uint64_t ex_events_scanned;

/* ---------------------------------------------------------------- helpers */

/* uint64 -> uint32 hash map (open addressing, linear probing). */
typedef struct ex_u64map {
  uint64_t *keys;
  uint32_t *vals; /* 0 = empty slot; stored values are value + 1 */
  size_t cap, n;
} ex_u64map;
/* Inserts or replaces. Aborts on OOM. */
void ex_m_put(ex_u64map *m, uint64_t k, uint32_t v);
/* Returns 1 and sets *v when k is present. */
int ex_m_get(const ex_u64map *m, uint64_t k, uint32_t *v);
void ex_m_del(ex_u64map *m, uint64_t k);
void ex_m_free(ex_u64map *m);


/* The value of the argument named `name` (or any of the |-separated names) of an API event;
 * returns 1 and sets *v, or 0 when the function has no such argument. */
int ex_arg(const vx_trace *t, const dlh_api_event *ev, const char *names, uint64_t *v);

/* Opens an output for writing; gz != 0 writes gzip; "-" (without gz) is stdout; a device or pipe
 * (or the user's or root's symlink to one: /dev/stdout) is written into as it is. The data goes
 * to a new file with a random name (O_EXCL) in PATH's directory, which must be the user's (or
 * root's) or sticky; ex_close renames it to PATH, replacing what is there (a planted symlink
 * included, never following it): for paths the user named. Returns NULL after printing why. */
FILE *ex_create(const char *path, int gz);
/* Closes an ex_create output, reports write errors (returns -1, the temporary file removed). */
int ex_close(FILE *f, const char *path);
/* Closes an ex_create output (created under DIR) as DIR/STEM EXT without replacing anything:
 * when that name exists, DIR/STEM-2 EXT, -3, ... For names derived from traces. Returns the
 * name used (malloc'd) or NULL after printing why. */
char *ex_close_new(FILE *f, const char *dir, const char *stem, const char *ext);
/* Checks that dlhook may write into directory DIR (see ex_create). Returns 0 or -1 after printing
 * why. */
int ex_dir_safe(const char *dir);
/* The one rule for file names derived from traces (host names): ASCII letters, digits, '-', '_'
 * and '.' (not first) are kept, every other byte becomes '_', at most 64 bytes; empty gives
 * dflt. The result is never hidden, never a path, never needs quoting. */
void ex_safe_name(char *dst, size_t cap, const char *src, const char *dflt);

/* Creates a directory and its parents (mkdir -p). Returns 0 or -1 after printing why. */
int ex_mkdirs(const char *path);

/* Name of a CUPTI memcpy kind (1 HtoD, 2 DtoH, ...): "HtoD", "DtoH", "DtoD", ... */
const char *ex_memcpy_kind(uint64_t kind);

/* Kernel or record name of a GPU record: its (demangled) name, or "Memcpy HtoD", "Memset"... */
const char *ex_gpu_name(const vx_trace *t, const ex_gpu *g, char *buf, size_t n);

/* Display name of a stack frame: its function, else (Python) its file, else "[module]" or
 * "0xPC" written into buf. */
const char *ex_frame_name(const vx_frame *fr, char *buf, size_t n);

/* Writes a varint (protobuf base-128) to f. */
void ex_put_varint(FILE *f, uint64_t v);

/* ---------------------------------------------------------------- links (export_links.c) */

/* CUPTI callback ids by function name (cupti_cbids.c, generated from CUPTI's headers). */
typedef struct ex_cbid {
  const char *name;
  uint32_t cbid;
} ex_cbid;
extern const ex_cbid ex_cbids_runtime[], ex_cbids_driver[];
extern const size_t ex_ncbids_runtime, ex_ncbids_driver;
/* The CUPTI callback id of API function `fn` of a trace (runtime or driver), or -1. */
long ex_cupti_cbid(const vx_trace *t, uint32_t fn);

/* Per-SM limits of a CUDA compute capability (CUDA C Programming Guide, "Technical
 * Specifications per Compute Capability"). */
typedef struct ex_arch {
  unsigned threads_per_sm, smem_per_sm, smem_optin, max_blocks_per_sm;
} ex_arch;
ex_arch ex_arch_of(unsigned major, unsigned minor);
/* Kineto's occupancy estimates of a kernel record (vals: grid, block, registers, static and
 * dynamic shared memory) on device d: blocks and warps per SM, and the achieved occupancy in %
 * that the per-SM limits allow. Returns 0 when d or the values are missing. */
int ex_occupancy(const Dlh__DeviceInfo *d, const uint64_t *v, uint32_t nvals, double *bps,
                 double *wps, double *occ);

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

typedef struct ex_links {
  ex_u64map ix;         /* corr -> index in link */
  ex_link *link;
  size_t nlink, caplink;
  ex_range *range;      /* NVTX ranges sorted by (tid, start) */
  size_t nrange, caprange;
  ex_evrec *evrec;      /* event records sorted by (event, start) */
  size_t nevrec, capevrec;
  char **labels;        /* interned NVTX labels */
  size_t nlabels;
  ex_u64map label_ix;
  ex_u64map ext_ix;     /* CUPTI correlation id -> index in ext (external correlation records) */
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

/* Step number of an NVTX range name: "ProfilerStep#N", "step N" (and "step#N", "Step_N"...) give
 * N; with step_range set, a range named exactly step_range gives `counter`; else -1. */
long ex_step_of(const char *step_range, const char *name, long counter);

/* Scans a trace once (with o's window) and fills L: GPU work per correlation id, NVTX ranges
 * (sorted, nested, steps numbered), CUDA event records, the process (rank, host). Returns VX_OK
 * or VX_BAD_INPUT (message printed; what was read is kept). */
int ex_links_scan(ex_links *L, const char *path, const ex_opts *o);
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

/* Whether a trace recorded GPU work or a CUDA device (a launcher or shell that only called
 * cudaGetDeviceCount did not). Returns 1, 0, or -1 when it cannot be read. */
int ex_trace_has_gpu(const char *path);
/* Drops the traces without GPU work from files[] unless keep; returns the new count, and
 * prints which were left out (unless quiet). */
size_t ex_drop_gpuless(char **files, size_t n, int keep, int quiet);

/* ---------------------------------------------------------------- formats */

int ex_kineto(const ex_opts *o, char **files, size_t n);
int ex_perfetto(const ex_opts *o, char **files, size_t n);
int ex_xplane(const ex_opts *o, char **files, size_t n);
/* folded, svg, speedscope, pprof */
int ex_flame(const ex_opts *o, char **files, size_t n);
/* dlhook diff: A and B, output by the extension of o->out (.svg, else folded) */
int ex_flame_diff(const ex_opts *o, const char *a, const char *b);

#endif
