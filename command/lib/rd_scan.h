/* rd_scan.h — what the exporters and the analyses of the command share: the exporters' options,
 * the streaming scan of a trace (window filter, merge offsets, progress: scan.c), a u64 map,
 * argument lookup, and the output helpers (output.c). */
#ifndef DLH_SCAN_H
#define DLH_SCAN_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rd.h"

/* flame graph weights (--weight): samples and wait are the host samples (SampleBatch) */
enum { RD_W_GPU = 0, RD_W_CPU = 1, RD_W_BYTES = 2, RD_W_SAMPLES = 3, RD_W_WAIT = 4 };

/* --fold: the frames of a flame graph (the index of a value in export.c's folds[]) */
enum { RD_FOLD_STACK = 0, RD_FOLD_OP = 1, RD_FOLD_MODULE = 2, RD_FOLD_LINE = 3 };

typedef struct rd_opts {
  const char *format;
  const char *out;
  int weight;                   /* RD_W_* */
  int fold;                     /* flame graphs: RD_FOLD_* (--fold) */
  int have_window;
  uint64_t win_start, win_end;  /* relative to the trace's start, ns; end UINT64_MAX = open */
  const char *step_range;       /* NVTX range name that marks a step (kineto ProfilerStep#N) */
  const char *title;
  int quiet;                    /* no progress on stderr */
  int keep_gpuless;             /* --keep-gpuless: export processes that did no GPU work */
  int no_gzip;                  /* --no-gzip: kineto files as plain JSON */
  int merge;                    /* dlhook merge: the traces on one timeline (ex_each) */
  int64_t *offsets;             /* with merge: room for one clock offset per trace */
  /* The event limit of the outputs that hold every event (timelines, tables, dump, report,
   * advise), which spend time and memory per event: a few KB of trace can hold tens of
   * millions of alike events. events_limited turns it on (the command sets it): 1, or 2 for
   * the commands that keep ~150 bytes per event (report, advise: half the default limit);
   * have_max_events: --max-events N was given (N = 0: no limit). Else rd_event_limit. */
  int events_limited;
  int have_max_events;
  uint64_t max_events;
} rd_opts;

/* The default event limit of a trace of `size` bytes: RD_EVENTS_BASE, or RD_EVENTS_PER_BYTE
 * per byte of the file when that is more (both halved for events_limited 2: a 1 MiB trace
 * then yields at most 2 Mi events, ~250 MiB of the report). A recorded trace holds at most ~2 events per byte (a
 * tight loop of distinct calls; a PyTorch program ~0.07), so no recorded trace meets it; a
 * trace of 1 MiB yields at most 4 Mi events (~2 s of an exporter). Events are API events, GPU
 * records and host samples, a folded event counting once. A pass that reaches the limit
 * delivers the events before it and passes over the rest undecoded (definitions and other
 * packets still come), says so once, naming the limit and --max-events, and returns
 * RD_BAD_INPUT. */
#define RD_EVENTS_BASE (2ull << 20)
#define RD_EVENTS_PER_BYTE 4ull
uint64_t rd_event_limit(const rd_opts *o, uint64_t size);
/* The default limit of the file at path (0 bytes when it cannot be read), for events_limited
 * `level`: for the analyses that keep events within a command without the limit (dlhook stats:
 * its steps and findings). */
uint64_t rd_default_event_limit(const char *path, int level);
/* --max-events N (the option of every command that has the limit): sets o, or prints a usage
 * error and returns RD_USAGE. */
int rd_parse_max_events(const char *cmd, const char *v, rd_opts *o);

/* One GPU record of a GpuBatch, decoded. vals points into the packet. */
typedef struct rd_gpu {
  uint32_t kind, device, stream, context, name;
  const char *kname;  /* name (StringDef) demangled when it is a C++ name; NULL when none */
  unsigned kflags;    /* RD_KF_* of kname, found once per name (rd_gpu_kflags) */
  uint64_t start, dur, corr;
  const uint64_t *vals;
  uint32_t nvals;
  /* Work of a CUDA graph launch: CUPTI's graphId and graphNodeId (0 = not from a graph). When
   * the trace names the call that made the node (at capture, or an explicit node call), corr is
   * that call's and launch_corr the graph launch's (cudaGraphLaunch); else launch_corr is 0. */
  uint32_t graph;
  uint64_t graph_node, launch_corr;
} rd_gpu;

/* What a kernel's name says, found once per name and trace (the analyses asked strstr of every
 * kernel record): RD_KF_COMM, the name has "nccl", "Nccl" or "NCCL" in it (the steps' collective
 * time); RD_KF_NCCL, it starts with "nccl" or has "ncclDevKernel" or "ncclKernel" (advise);
 * RD_KF_NCCL_DEV, it starts with "ncclDevKernel" or "ncclKernel" or has "ncclDevKernel" (ranks'
 * collectives). RD_KF_KNOWN: the others are set. */
enum { RD_KF_KNOWN = 1, RD_KF_COMM = 2, RD_KF_NCCL = 4, RD_KF_NCCL_DEV = 8 };
unsigned rd_kernel_flags(const char *kname);
static inline unsigned rd_gpu_kflags(const rd_gpu *g) {
  return g->kflags & RD_KF_KNOWN ? g->kflags : rd_kernel_flags(g->kname);
}

/* One host sample of a SampleBatch, decoded (dlhook.proto, SampleBatch). */
enum { RD_SAMPLE_CPU = DLH__SAMPLE_KIND__SAMPLE_CPU, RD_SAMPLE_WAIT = DLH__SAMPLE_KIND__SAMPLE_WAIT };
typedef struct rd_sample {
  uint32_t tid;
  uint64_t time;      /* when it was taken (trace clock, merge offset added) */
  uint32_t kind;      /* RD_SAMPLE_CPU or RD_SAMPLE_WAIT (other kinds are not delivered) */
  uint64_t weight;    /* ns it stands for: CPU time (on-CPU), wall time (wait) */
  uint32_t stack;     /* StackDef id, 0 = none; wait stacks hold Python frames only */
  uint32_t state;     /* wait: the system call blocked in, its x86-64 number + 1; 0 = none */
  uint32_t api_fn;    /* FunctionDesc id of the CUDA/library call in flight, 0 = none */
} rd_sample;

/* The samples of a SampleBatch in order, as they are in the file (no offset, every kind):
 * rd_sample_iter_next returns 1 and fills *s, 0 at the end. A batch whose columns differ in
 * length (other than empty ones, which mean 0 for all) is damaged: it->bad is set at init, and
 * the samples up to the shortest column's end are still returned. */
typedef struct rd_sample_iter {
  const Dlh__SampleBatch *b;
  size_t i, cut;
  uint64_t t;
  int bad;
} rd_sample_iter;
void rd_sample_iter_init(rd_sample_iter *it, const Dlh__SampleBatch *b);
int rd_sample_iter_next(rd_sample_iter *it, rd_sample *s);

/* What a trace scan delivers. Any callback may be NULL. The packets and events are valid only
 * during the call. `t` has the definitions (functions, strings) read so far. */
typedef struct rd_sink {
  void *ctx;
  /* every packet that is not an ApiBatch or GpuBatch (process, thread, device, stack, ...) */
  void (*packet)(void *ctx, const rd_trace *t, const Dlh__Packet *p);
  /* API events inside the window (a folded event, count > 1, stands for count calls: see
   * dlh_api_calls and dlh_api_span) */
  void (*api)(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev);
  /* GPU records inside the window (external-correlation records, kind 7, always) */
  void (*gpu)(void *ctx, const rd_trace *t, const rd_gpu *g);
  /* 1: every event, whatever the window (o->have_window): for a ledger that must see what
   * happened before the window */
  int unwindowed;
  /* host samples inside the window (taken at or after its start, before its end); last, so
   * that sinks written as {ctx, packet, api, gpu, unwindowed} have none */
  void (*sample)(void *ctx, const rd_trace *t, const rd_sample *s);
} rd_sink;

/* Reading a trace takes at most two passes over its file (rd.h, "traces"):
 *   rd_open   the first pass: definitions, process, anchors, devices, trailer; with `pre`, also
 *             every packet and event to pre (window and offsets applied as in rd_pass), for
 *             what must be known before the output is written (links, clock offsets, memory);
 *             without, the event batches are not even decoded. Returns RD_OK, or RD_BAD_INPUT
 *             when the file cannot be opened (message printed; t->opens is 0) or pre saw a
 *             damaged batch. t must be closed with rd_trace_close either way.
 *   rd_pass   the second pass: every packet and event in file order to s, with every
 *             definition known. Shows progress on a terminal once it takes more than a
 *             second (unless o->quiet; rd_progress_plan); `what` names it. Returns RD_OK, or
 *             RD_BAD_INPUT when the trace is damaged (everything readable was delivered; the message is printed once).
 *   rd_scan   rd_open without pre, rd_pass, rd_trace_close.
 *   rd_read_once  one pass only, definitions as they come, for consumers that need no
 *             definition that may follow its use (stacks, symbols: `dlhook symbolize` appends
 *             them): dlhook stats. Returns as rd_pass; t must be closed. rd_read_again then
 *             makes the second pass when a trace needs it after all (PyTorch operators).
 * Several consumers share one pass through an rd_tee. */
int rd_open(rd_trace *t, const char *path, const rd_opts *o, rd_sink *pre);
int rd_pass(rd_trace *t, const rd_opts *o, const char *what, rd_sink *s);
int rd_scan(const char *path, const rd_opts *o, const char *what, rd_sink *s);
int rd_read_once(rd_trace *t, const char *path, const rd_opts *o, const char *what, rd_sink *s);
/* After rd_read_once, for a consumer that turned out to need every definition (dlhook stats on
 * a PyTorch trace: the operators): the second pass, every definition known. */
int rd_read_again(rd_trace *t, const rd_opts *o, const char *what, rd_sink *s);

/* Up to 8 consumers of one pass, called in order for each packet and event (NULL entries and
 * callbacks are left out). */
typedef struct rd_tee {
  rd_sink *s[8];
  size_t n;
} rd_tee;
rd_sink rd_tee_sink(rd_tee *x);

/* The traces a command is about to read (the array stays owned by the caller and must outlive
 * the reading): the progress line on a terminal (stderr a TTY, after DLHOOK_PROGRESS_AFTER
 * seconds, default 1) says which of them is being read, events read and per second, and the
 * time left. Without a plan, each trace is its own. Nothing is shown when stderr is not a
 * terminal, nor for a quiet pass (o->quiet, no `what`). */
void rd_progress_plan(char *const *files, size_t n);

/* dlhook merge: from now on rd_scan adds offsets[i] ns to every time of paths[i] (the arrays
 * stay owned by the caller and must outlive the scans). */
void rd_set_offsets(char **paths, const int64_t *offsets, size_t n);

/* The offset rd_set_offsets gave a trace (0 when none). */
int64_t rd_offset_of(const char *path);

/* ---------------------------------------------------------------- helpers */



/* The value of the argument named `name` (or any of the |-separated names) of an API event;
 * returns 1 and sets *v, or 0 when the function has no such argument. */
int rd_arg(const rd_trace *t, const dlh_api_event *ev, const char *names, uint64_t *v);
/* The index of f's first argument named one of names (as rd_arg), -1 when none. names must be
 * a string constant: the answer is kept in f by its address. */
int rd_arg_index(const rd_func *f, const char *names);

/* Opens an output for writing; gz != 0 writes gzip; "-" (without gz) is stdout; a device or pipe
 * (or the user's or root's symlink to one: /dev/stdout) is written into as it is. The data goes
 * to a new file with a random name (O_EXCL) in PATH's directory, which must be the user's (or
 * root's) or sticky; rd_close renames it to PATH, replacing what is there (a planted symlink
 * included, never following it): for paths the user named. Returns NULL after printing why. */
FILE *rd_create(const char *path, int gz);
/* A stdio stream that gzips into fd (gzip.c: ISA-L's deflate, level 1); closing it finishes the
 * stream and closes fd. NULL (fd closed) when out of memory. */
FILE *rd_gzip_fdopen(int fd);
/* Closes an rd_create output, reports write errors (returns -1, the temporary file removed). */
int rd_close(FILE *f, const char *path);
/* Closes an rd_create output (created under DIR) as DIR/STEM EXT without replacing anything:
 * when that name exists, DIR/STEM-2 EXT, -3, ... For names derived from traces. Returns the
 * name used (malloc'd) or NULL after printing why. */
char *rd_close_new(FILE *f, const char *dir, const char *stem, const char *ext);
/* Checks that dlhook may write into directory DIR (see rd_create). Returns 0 or -1 after printing
 * why. */
int rd_dir_safe(const char *dir);
/* The one rule for file names derived from traces (host names): ASCII letters, digits, '-', '_'
 * and '.' (not first) are kept, every other byte becomes '_', at most 64 bytes; empty gives
 * dflt. The result is never hidden, never a path, never needs quoting. */
void rd_safe_name(char *dst, size_t cap, const char *src, const char *dflt);

/* Creates a directory and its parents (mkdir -p). Returns 0 or -1 after printing why. */
int rd_mkdirs(const char *path);

/* The name of an x86-64 system call number ("futex", "poll"; NULL when not in dlhook's table of
 * the calls threads block in), and the frame flame graphs and timelines give a wait sample:
 * "[in cudaStreamSynchronize]" when a CUDA/library call is in flight, else "[wait: futex]"
 * ("[wait: syscall 17]" for a number not in the table, "[wait]" when none was recorded).
 * rd_wait_label writes into buf and returns it. */
const char *rd_syscall_name(uint32_t nr);
const char *rd_wait_label(const rd_trace *t, const rd_sample *s, char *buf, size_t n);
/* Where a stack's host time goes (samples.c): the innermost frame of the user's own Python
 * code (rd_torch_user_file), else the innermost Python frame (*fn its function, *file and
 * *line its source), else the innermost native frame (*fn its function, *file its module,
 * *line 0). *fn is "[no stack]" for stack 0 or an undefined one, *file NULL when unknown; buf
 * (cap bytes) may hold the name of a native frame without a symbol. */
void rd_sample_where(const rd_trace *t, uint32_t stack, const char **fn, const char **file,
                     uint32_t *line, char *buf, size_t cap);
/* The name timelines give a sample: rd_sample_where's function; a wait sample's followed by
 * its rd_wait_label ("load [wait: futex]", "step [in cudaStreamSynchronize]"), or that label
 * alone when the sample has no Python frames ("[wait: read]"). Into buf. */
const char *rd_sample_label(const rd_trace *t, const rd_sample *s, char *buf, size_t n);
/* The syscall part alone: "[wait: futex]", "[wait: syscall 17]" or "[wait]". */
const char *rd_wait_state_label(uint32_t state, char *buf, size_t n);

/* Name of a CUPTI memcpy kind (1 HtoD, 2 DtoH, ...): "HtoD", "DtoH", "DtoD", ... */
const char *rd_memcpy_kind(uint64_t kind);

/* Kernel or record name of a GPU record: its (demangled) name, or "Memcpy HtoD", "Memset"... */
const char *rd_gpu_name(const rd_trace *t, const rd_gpu *g, char *buf, size_t n);

/* Display name of a stack frame: its function, else (Python) its file, else "[module]" or
 * "0xPC" written into buf. */
const char *rd_frame_name(const rd_frame *fr, char *buf, size_t n);

/* Appends n bytes to f: straight into the stream's buffer when they fit (what glibc's
 * putc_unlocked does for one byte), else fwrite. For exporters that write millions of short
 * pieces: each fputs or fwrite call costs more than the bytes it copies. */
static inline void rd_put(FILE *f, const char *s, size_t n) {
#ifdef __GLIBC__
  if ((size_t)(f->_IO_write_end - f->_IO_write_ptr) >= n) {
    memcpy(f->_IO_write_ptr, s, n);
    f->_IO_write_ptr += n;
    return;
  }
#endif
  fwrite_unlocked(s, 1, n, f);
}

/* Writes a varint (protobuf base-128) to f. */
void rd_put_varint(FILE *f, uint64_t v);

#endif
