/* rd.h — the reading library of the dlhook command (command/lib/, prefix rd_): everything the
 * subcommands (cmd/) and the exporters (export/, prefix ex_) share to read traces.
 *
 * What it offers:
 *   traces    rd_trace: a trace read at most twice. The first pass knows the definitions
 *             (functions, strings, stacks, modules, symbols, Python frames), the process,
 *             clock anchors, devices, trailer and counters; the second streams the events in
 *             file order. Decoding goes through format/'s iterators only (trace.c, scan.c).
 *   passes    rd_scan.h: rd_open / rd_pass / rd_read_once / rd_scan, sinks (rd_sink) that
 *             receive packets, calls and GPU records with the time window and merge offsets
 *             applied, and rd_tee to feed several consumers from one pass.
 *   analyses  consumers of those passes, shared by stats, report and the exporters: library
 *             calls (libcalls.c), the GPU memory ledger (memory.c), clock alignment and the
 *             straggler (ranks.c), the step breakdown (steps.c), host time from the samples
 *             (samples.c), the stats run (cmd/stats.c).
 *   stacks    frames of a stack id, demangling (symbols.c).
 *   PyTorch   aten operators, autograd nodes, Python frames, modules and the user's line of a
 *             stack, and their instances on a thread (torch.c), for every output.
 *   options   rd_opts.h: the one option parser of every command (opts.c).
 *   output    rd_scan.h: files written atomically, gzip, safe names (output.c); JSON and
 *             terminal text (text.c); messages and exit codes (util.c). */
#ifndef RD_H
#define RD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlh_format.h"

/* qsort() for arrays that may be empty with a NULL base (qsort declares its base nonnull). */
static inline void rd_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

/* exit codes */
#define RD_OK 0
#define RD_FDIRECT_DOMAINS 16 /* rd_trace.fdirect: function ids below 16 << 16, by index */
#define RD_BAD_INPUT 1
#define RD_USAGE 2

/* ---------------------------------------------------------------- messages */

/* Prints "dlhook: <message>\n" to stderr. */
void rd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a usage error ("dlhook CMD: message" plus a hint to --help). Returns RD_USAGE. */
int rd_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- id maps */

/* A 64-bit hash keyed by a random per-process seed (trace contents cannot aim at one slot). */
extern uint64_t rd_hash_seed[2];
void rd_hash_seed_init(void);
static inline uint64_t rd_hash64(uint64_t k) {
  if (__builtin_expect(!rd_hash_seed[1], 0)) rd_hash_seed_init();
  k ^= rd_hash_seed[0];
  k *= rd_hash_seed[1];
  k ^= k >> 29;
  k *= 0xd6e8feb86659fd93ull;
  k ^= k >> 32;
  return k;
}
/* The same for a string. */
uint64_t rd_hash_str(const char *s);

/* uint32 id -> pointer, open addressing (rd_hash64); grows as needed. A slot holds its key
 * and value side by side: a lookup touches one cache line (function, stack and frame ids are
 * looked up per event). */
typedef struct rd_map_slot {
  uint32_t key;
  void *val;      /* NULL: empty */
} rd_map_slot;
typedef struct rd_map {
  rd_map_slot *v;
  size_t cap, n;
} rd_map;
void *rd_map_get(const rd_map *m, uint32_t key);
/* The value of key, or a new zeroed one of size bytes put there. */
void *rd_map_get_new(rd_map *m, uint32_t key, size_t size);
/* Inserts or replaces; returns the old value (for the caller to free) or NULL. Aborts on OOM. */
void *rd_map_put(rd_map *m, uint32_t key, void *val);
void rd_map_free(rd_map *m, void (*free_val)(void *));

/* uint64 -> uint32 hash map (open addressing, linear probing). */
typedef struct rd_u64map {
  uint64_t *keys;
  uint32_t *vals; /* 0 = empty slot; stored values are value + 1 */
  size_t cap, n;
} rd_u64map;
/* Inserts or replaces. Aborts on OOM. */
void rd_m_put(rd_u64map *m, uint64_t k, uint32_t v);
/* Returns 1 and sets *v when k is present. */
int rd_m_get(const rd_u64map *m, uint64_t k, uint32_t *v);
void rd_m_del(rd_u64map *m, uint64_t k);
void rd_m_free(rd_u64map *m);

void *rd_xmalloc(size_t n);
/* calloc that exits like rd_xmalloc when out of memory. */
void *rd_xcalloc(size_t n, size_t size);
/* Two 64-bit words sorted by the first: rd_sort_pairs sorts v by key in O(n) (a radix sort;
 * input already in order costs one look). */
typedef struct rd_pair { uint64_t key, val; } rd_pair;
void rd_sort_pairs(rd_pair *v, size_t n);
/* Sorts n records of `size` bytes (a multiple of 8) by the uint64 key each begins with, keeping
 * the order of equal keys (as glibc's merge sort in qsort does): rd_sort_pairs on (key, index),
 * then the records moved once. For the millions of events an analysis sorts by time. */
void rd_sort_by_key(void *base, size_t n, size_t size);
void *rd_xrealloc(void *p, size_t n);
char *rd_xstrdup(const char *s);

/* ---------------------------------------------------------------- traces */

typedef struct rd_func {
  uint32_t id;
  char *name;
  int domain;       /* Dlh__Domain */
  size_t nargs;
  char **argname;
  uint32_t *argtype; /* ArgDesc.type */
  /* caches of what the analyses ask of a function, filled by them through a const rd_func
   * (the struct is the trace's, malloc'd, zeroed at definition): rd_arg's last answers (the
   * names asked, a string constant, and the index of the arg, -1 = none) and advise's class of
   * the function (advise.c, 0 = not known yet) */
  struct { const char *names; int ix; } arg_cache[32]; /* by the names' address */
  uint32_t adv_class;
} rd_func;

typedef struct rd_trace {
  const char *path;
  dlh_reader *r;
  rd_map funcs;     /* FunctionDesc.id -> rd_func* */
  rd_func **fdirect[RD_FDIRECT_DOMAINS]; /* the same by index: id >> 16 (the writer's domain)
                      * below RD_FDIRECT_DOMAINS, then id & 0xffff (rd_trace_func: the analyses
                      * look a function up per call, millions of times) */
  uint32_t nfdirect[RD_FDIRECT_DOMAINS];
  uint64_t fn_gen;  /* counts function definitions: a cached rd_func* is valid while it stays */
  rd_map strings;   /* StringDef.id -> char* */
  int pass;         /* 1: the first read (definitions), 2: the second (rd_trace_rewind) */
  int opens, done;  /* times the file was opened; the second pass could not open it */
  int only;         /* rd_read_once: the first pass is the only one */
  /* the first pass read every definition without damage or a limit: a second pass by rd_pass
   * or rd_read_again passes over the definitions only the first reads (stacks, symbols,
   * modules, Python frames, NCCL events, graph nodes), undecoded */
  int defs_clean;
  uint64_t skip_cases; /* data cases the reader passes over undecoded (dlh_reader_skip) */
  int quiet_damage; /* rd_read_again: damage was said by the first pass */
  /* ProcessInfo (the first), the first clock anchor with a realtime, devices: known after the
   * first pass */
  int have_process;
  uint32_t pid;
  int rank, local_rank, world; /* -1 = not given */
  int have_start;
  uint64_t start_ns;             /* ProcessInfo.start_ns (trace clock) */
  char host[128];                /* "host" when not given */
  char exe[64];                  /* the program's file name, "" when not given */
  int have_anchor;
  uint64_t anchor_real_ns, anchor_trace_ns;
  uint32_t devices;              /* DeviceInfo packets */
  rd_map knames;                 /* StringDef id -> demangled kernel name (rd_scan.h's rd_gpu) */
  rd_map kflags;                 /* ... and its RD_KF_* flags (as a pointer-sized integer) */
  rd_map places;                 /* stack id -> advise's place of it (findings.c, adv_place_of) */
  uint64_t win_lo, win_hi;       /* the pass's time window (rd_scan.h), [0, UINT64_MAX] none */
  int have_trailer, have_counters;
  uint64_t trailer_records, trailer_dropped;
  uint64_t counters_records, counters_dropped;
  /* format version 2: calls (folded repeats included) of the trailer or the last counters */
  int have_trailer_calls, have_counters_calls;
  uint64_t trailer_calls, counters_calls;
  int have_trailer_folded;
  uint64_t trailer_folded;       /* Trailer.folded: calls folded into an earlier one */
  /* host sampling: ProcessInfo.sample_hz (0 = not sampled), the last Counters.samples and
   * samples_lost (rd_trace_samples), the samples of the SampleBatches read so far */
  uint32_t sample_hz;
  int have_counters_samples;
  uint64_t counters_samples, counters_samples_lost, counters_sample_cost_ns;
  /* the last Counters' CPU times (format: Counters.writer_cpu_ns ...): dlhook's writer, sampler
   * and symbolizer threads, the whole process (rd_trace_own_cpu) */
  int have_counters_cpu;
  uint64_t counters_cpu[4];
  uint64_t sample_events;
  uint64_t api_events, gpu_events, packets;
  uint64_t api_calls;            /* calls of the API events read so far (sum of their counts) */
  struct rd_mem *mem;            /* the trailer's memory figures, NULL when it has none */
  struct rd_waits *waits;        /* what dlhook cost or lost (rd_selfcost.h), NULL: nothing said */
  struct rd_stacks *stacks; /* symbols.c: stacks, modules, symbols, Python frames */
  struct rd_torchs *torch;  /* torch.c: PyTorch's view of each stack */
  struct rd_graphs *graphs; /* graphs.c: CUDA graph nodes, Inductor's kernels */
  struct rd_ncclev *ncclev; /* ncclev.c: NCCL's profiler plugin events (rd_ncclev.h) */
  int defs_read;    /* the first pass read every stack definition (symbols.c) */
  uint64_t pcs_unsymbolized; /* Trailer.pcs_unsymbolized */
  /* the pass stopped at its event limit (rd_scan.h, rd_event_limit) before the event at
   * events_over_at (trace clock, merge offset added) */
  int events_over;
  uint64_t events_limit, events_over_at;
} rd_trace;

/* A trace is read at most twice. The first pass reads its definitions (functions, strings,
 * stacks, modules, symbols, Python frames: symbols may follow the events that use them), the
 * process, clock anchors, devices, trailer and counters; it decodes the event batches only when
 * a consumer wants them in that pass (rd_open in rd_scan.h). The second pass streams everything
 * in file order to the consumers, with every definition known from the start.
 *
 * rd_trace_open: the first pass without events, then t is ready for the second
 * (rd_trace_next from the start). On failure prints "dlhook: PATH: why" and returns -1. */
int rd_trace_open(rd_trace *t, const char *path);
/* The pieces of rd_trace_open for readers that want the events in the first pass too:
 * rd_trace_begin opens the file (events != 0: event batches are decoded), rd_trace_next reads
 * it, rd_trace_rewind ends the first pass (the second opens the file again at its first
 * rd_trace_next). rd_trace_begin returns 0, or -1 after printing why. */
int rd_trace_begin(rd_trace *t, const char *path, int events);
void rd_trace_rewind(rd_trace *t);
/* The end of the first pass without a second one yet (rd_read_once): the file closed, and
 * whether its definitions were read clean noted (defs_clean). rd_trace_rewind calls it. */
void rd_trace_end_first(rd_trace *t);
/* Data cases (DLH_CASE_BIT) the reader passes over undecoded from now on, in this pass and
 * the file's next opening of it; kept until the first pass ends. */
void rd_trace_skip(rd_trace *t, uint64_t cases);
#define RD_EVENT_CASES (DLH_CASE_BIT(DLH__PACKET__DATA_API) | DLH_CASE_BIT(DLH__PACKET__DATA_GPU) | \
                        DLH_CASE_BIT(DLH__PACKET__DATA_SAMPLES))
/* What only the first pass reads (trace.c, define): a clean first pass lets the second pass
 * over them */
#define RD_DEF_CASES (DLH_CASE_BIT(DLH__PACKET__DATA_STACK) | DLH_CASE_BIT(DLH__PACKET__DATA_SYMBOL) | \
                      DLH_CASE_BIT(DLH__PACKET__DATA_MODULE) | DLH_CASE_BIT(DLH__PACKET__DATA_PY_FRAME) | \
                      DLH_CASE_BIT(DLH__PACKET__DATA_NCCL_EVENTS) | DLH_CASE_BIT(DLH__PACKET__DATA_GRAPH_NODES) | \
                      DLH_CASE_BIT(DLH__PACKET__DATA_INDUCTOR))
/* Next packet, after recording definitions (functions, strings, process, trailer, counters).
 * Returns 1, 0 at the clean end, -1 when the rest is damaged (message printed by the second
 * pass only, so that it is said once). */
int rd_trace_next(rd_trace *t, const Dlh__Packet **p);
void rd_trace_close(rd_trace *t);

/* Reading several traces at once (issue 49): a command that is about to open the traces
 * paths[0..n) in this order, with skips[i] the data cases its pass will pass over (NULL: none;
 * rd_pass2_skip for a second pass), has the next ones read ahead, each by a thread of its own
 * (dlh_reader_open_ahead: decompression and decoding) while it works on the current one, at most
 * rd_read_threads(n) traces at a time including the current one. What every pass delivers is
 * what it delivers without: an open that is not the plan's next (another path, a third read)
 * reads as usual. The plan is copied; a new one (or n = 0) ends the last, closing what was read
 * ahead and not opened. */
void rd_read_ahead(char *const *paths, const uint64_t *skips, size_t n);
/* How many traces are read at once for a command of n traces: DLHOOK_READ_THREADS when set (1:
 * one after the other, as before), else the online CPUs; at most n and 64. */
size_t rd_read_threads(size_t n);
/* The cases t's second pass (after its first, rd_open) passes over: RD_DEF_CASES when its
 * definitions were read clean (scan.c's stream), else none. */
uint64_t rd_pass2_skip(const rd_trace *t);

const rd_func *rd_trace_func(const rd_trace *t, uint32_t id);
const char *rd_trace_string(const rd_trace *t, uint32_t id);
/* "cudart", "driver", ... ("unknown" for anything else). */
const char *rd_domain_name(int domain);
/* Display name of a function id: its name, or "fn#ID" when undefined (static buffer). */
const char *rd_func_name(const rd_trace *t, uint32_t id);
/* Records and dropped of a trace: from the trailer, else the last counters; records falls
 * back to the events read. */
uint64_t rd_trace_records(const rd_trace *t);
uint64_t rd_trace_dropped(const rd_trace *t);
/* Calls recorded in a trace, folded repeats included: Trailer.calls, else the last
 * Counters.calls; a trace without them (format version 1, which folds nothing) falls back to
 * rd_trace_records. */
uint64_t rd_trace_calls(const rd_trace *t);
/* Host samples of a trace: written (the last Counters.samples, else the samples read so far)
 * and lost in the recorder (the last Counters.samples_lost, else 0). */
uint64_t rd_trace_samples(const rd_trace *t);
uint64_t rd_trace_samples_lost(const rd_trace *t);
/* CPU time the recorder's on-CPU sample handler took in the program's threads (the last
 * Counters.sample_cost_ns, else 0). */
uint64_t rd_trace_sample_cost_ns(const rd_trace *t);
/* CPU time of the recorder's own threads and of the whole process, from the last Counters:
 * ns[0] the writer, ns[1] the host sampler's thread, ns[2] the symbolizer, ns[3] the process
 * (every thread). Returns 0 (ns zeroed) for a trace written before these fields. */
int rd_trace_own_cpu(const rd_trace *t, uint64_t ns[4]);
/* Calls folded into an earlier call: Trailer.folded, else what the events read so far say
 * (api_calls - api_events). */
uint64_t rd_trace_folded(const rd_trace *t);

/* The memory dlhook held in the recorded process (Trailer.mem_*), copied out of the trailer. */
typedef struct rd_mem_part {
  char *name;
  uint64_t peak_bytes, bytes;
  int has_bytes;
} rd_mem_part;
#define RD_MAX_MEM_PARTS 256
typedef struct rd_mem {
  int has_budget, has_peak;
  uint64_t budget_bytes, peak_bytes;
  rd_mem_part *parts;
  size_t nparts;
} rd_mem;

/* "NAME ×COUNT" (malloc'd, the caller frees) for an event that stands for COUNT > 1 folded
 * calls, else a copy of NAME: the label timelines give a folded event. */
char *rd_folded_name(const char *name, uint64_t count);

/* ---------------------------------------------------------------- stacks (symbols.c) */

/* One frame of a recorded call stack. Strings are owned by the trace (valid until
 * rd_trace_close); function/file/module are NULL when unknown, line is 0 when unknown.
 * Python frames (python = 1) have pc 0, function = the code object's qualified name,
 * file = the .py path, module = NULL. */
typedef struct rd_frame {
  uint64_t pc;
  const char *function;
  const char *file;
  uint32_t line;
  const char *module;
  uint64_t modoff;  /* pc - the module's load bias (the address in the file), if has_modoff */
  int has_modoff;
  int python;
} rd_frame;

/* The frames of stack `stack_id` (ApiBatch.stack) as read so far, innermost first: sets *out
 * to an array owned by the trace, valid until the next rd_stack_frames call for another stack
 * (built frames are bounded: symbols.c, FRAME_CACHE), and returns its length; 0 (and *out = NULL) when the id is 0
 * or undefined. Native and Python frames are interleaved as the trace records them (mixed
 * mode: Python frames in place of the interpreter's frames). */
size_t rd_stack_frames(const rd_trace *t, uint32_t stack_id, const rd_frame **out);
/* One raw stack entry (a pc, or a Python frame id tagged DLH_PYFRAME_TAG) as a frame. */
void rd_frame_of(const rd_trace *t, uint64_t raw, rd_frame *out);
/* The raw entries of a stack (pcs, and Python frame ids tagged DLH_PYFRAME_TAG), innermost
 * first; 0 when undefined. */
size_t rd_stack_raw(const rd_trace *t, uint32_t stack_id, const uint64_t **out, int *truncated);
/* trace.c -> symbols.c: records a StackDef, ModuleDef, SymbolDef or PyFrameDef packet;
 * frees them all. */
void rd_stacks_define(rd_trace *t, const Dlh__Packet *p);
void rd_stacks_free(rd_trace *t);

/* Demangled C++ name (malloc'd, caller frees), or NULL when name is not a mangled name. */
char *rd_demangle(const char *name);

/* ---------------------------------------------------------------- CUDA graphs, Inductor (graphs.c) */

/* A node of a CUDA graph (GraphNodeBatch): made by the call with correlation id corr on thread
 * tid, or a copy of node origin (corr 0). */
typedef struct rd_graph_node {
  uint64_t node, origin, corr;
  uint32_t graph, type, tid;
} rd_graph_node;
/* trace.c: a GraphNodeBatch or InductorKernel packet read (definitions) */
void rd_graphs_define(rd_trace *t, const Dlh__Packet *p);
void rd_graphs_free(rd_trace *t);
/* The node with that id, or NULL. */
const rd_graph_node *rd_graph_node_get(const rd_trace *t, uint64_t node);
/* The node a call made, following copies (instantiation) back from node; NULL when unknown. */
const rd_graph_node *rd_graph_node_made(const rd_trace *t, uint64_t node);
size_t rd_graph_node_count(const rd_trace *t);

/* A Triton kernel of torch.compile's generated code (InductorKernel). Strings owned by t. */
typedef struct rd_inductor_kernel {
  const char *file, *kernel;
  const char *source_nodes;   /* "gelu, mul, add" ("" when not given) */
  const char *aten_ops;       /* "aten::gelu, aten::mul, aten::add" ("" when not given) */
  uint32_t def_line;
} rd_inductor_kernel;
/* The kernel launched (or defined) at file:line, or NULL. */
const rd_inductor_kernel *rd_inductor_at(const rd_trace *t, const char *file, uint32_t line);
/* The first kernel of that name the trace defines, or NULL. */
const rd_inductor_kernel *rd_inductor_kernel_named(const rd_trace *t, const char *name);
size_t rd_inductor_count(const rd_trace *t);
/* Whether a Python file is Inductor's generated code (under a torchinductor_ cache directory). */
int rd_inductor_file(const char *file);

/* ---------------------------------------------------------------- graphs and torch.compile in dlhook stats (graphstats.c) */
/* Per CUDA graph (nodes, replays, kernels, copies, memsets, GPU time), per graph node (runs, GPU
 * time, the call that made it with its operator and line) and per torch.compile kernel (the
 * aten ops fused into it, the line that ran it). Per trace: rd_gstats_gpu for every GPU record
 * of the first pass; when rd_gstats_wanted, a second pass of rd_gstats_sink (every definition
 * known); then rd_gstats_trace_end. rd_gstats_json writes `,"graphs":[...],"graph_nodes":[...],
 * "inductor_kernels":[...]`. */
typedef struct rd_gstats rd_gstats;
struct rd_gpu;
struct rd_sink;
rd_gstats *rd_gstats_new(void);
void rd_gstats_gpu(rd_gstats *x, const rd_trace *t, const struct rd_gpu *g);
int rd_gstats_wanted(const rd_gstats *x);
struct rd_sink rd_gstats_sink(rd_gstats *x);
void rd_gstats_trace_end(rd_gstats *x);
void rd_gstats_table(FILE *f, rd_gstats *x);
void rd_gstats_json(FILE *f, rd_gstats *x);
void rd_gstats_free(rd_gstats *x);

/* ---------------------------------------------------------------- PyTorch (torch.c) */

/* What PyTorch was doing during a call, derived from its stack (torch.c says how): layers,
 * outermost first, each an aten operator ("aten::addmm", named as torch.profiler names it), an
 * autograd node ("AddmmBackward0"; rd_torch_node_label gives torch.profiler's
 * "autograd::engine::evaluate_function: AddmmBackward0") or a Python frame ("Block.forward",
 * with its file and line). Strings are interned per trace (equal names, equal pointers) and
 * live until rd_trace_close. */
enum { RD_LAYER_PY = 1, RD_LAYER_NODE = 2, RD_LAYER_OP = 3 };
typedef struct rd_layer {
  int kind;
  const char *name;
  const char *file;  /* Python frames: the .py file (NULL when unknown) */
  uint32_t line;
  uint64_t key;      /* tells instances apart: the frame's identity, its call site and the layer
                        outside it */
  int cut;           /* the outermost layer of a truncated stack: key without the layer outside */
  const char *module; /* a module's forward(): the module path down to it, else NULL */
  const char *user;   /* a frame of the user's code (rd_torch_user_file): "file:line", else NULL */
} rd_layer;
typedef struct rd_torch {
  uint32_t n;
  rd_layer *l;
  int op;                      /* index of the innermost operator layer, -1 = none */
  int node;                    /* index of the autograd node layer, -1 = none */
  const char *op_path;         /* "aten::linear > aten::addmm", NULL = no operator */
  const char *module;          /* "LM.forward > Block.forward", NULL = no module */
  const char *user;            /* "train.py:57": the innermost frame of the user's code, or NULL */
} rd_torch;
/* PyTorch's view of stack `stack_id` of t (computed once per stack, after the definitions are
 * read: rd_open's first pass, or the end of rd_read_once); never NULL (n = 0 without layers). */
const rd_torch *rd_torch_of(rd_trace *t, uint32_t stack_id);
static inline const char *rd_torch_op(const rd_torch *x) { return x->op >= 0 ? x->l[x->op].name : NULL; }
const char *rd_torch_node_label(const rd_torch *x, char *buf, size_t cap);
/* "aten::" and the operator name of dispatcher struct s (n bytes: "fill__Scalar" ->
 * "aten::fill_") into buf; returns the length. */
size_t rd_aten_name(const char *s, size_t n, char *buf, size_t cap);
/* Whether a Python file is the user's own code (not site-packages, the standard library,
 * torch/ or frozen). */
int rd_torch_user_file(const char *file);
void rd_torch_free(rd_trace *t);

/* Whether a trace loaded a module whose path contains `part` ("libtorch_cpu."), and how many
 * stacks it defines (symbols.c). */
int rd_stacks_have_module(const rd_trace *t, const char *part);
size_t rd_stacks_count(const rd_trace *t);

/* The operator, module and source-line tables of dlhook stats and report (ops.c): for each
 * trace that rd_ops_wanted says has PyTorch with stacks, a pass through rd_ops_sink (with every
 * definition known), then rd_ops_trace_end. rd_ops_json writes `,"pytorch":{...}` (leading
 * comma), rd_ops_table the terminal tables; rd_ops_none says in one line why there is no
 * table (NULL when there is one). */
typedef struct rd_ops rd_ops;
rd_ops *rd_ops_new(void);
int rd_ops_wanted(rd_ops *x, const rd_trace *t);
struct rd_sink rd_ops_sink(rd_ops *x, rd_trace *t);
void rd_ops_trace_end(rd_ops *x);
const char *rd_ops_none(const rd_ops *x);
void rd_ops_json(FILE *f, rd_ops *x);
void rd_ops_table(FILE *f, rd_ops *x);
/* The first screen's PyTorch rows: the nops operators with the most GPU time, the nops with
 * the most host time of their own, the nmods modules with the most GPU time. Prints nothing
 * without operators; returns the lines printed. */
size_t rd_ops_summary(FILE *f, rd_ops *x, size_t nops, size_t nmods);
void rd_ops_free(rd_ops *x);

/* Instances of the layers on each thread, from its calls in time order: consecutive calls whose
 * layer has the same key are one instance, from the first call's start to the last one's end
 * (an operator that made no recorded call is not seen). rd_spans_add takes one call and returns
 * the id of the innermost open layer (0 = none), and in *at where the call is (a stack
 * truncated at the outer end is placed inside the open layers it agrees with); ids count up from *next_id (or from 1). Each instance goes to emit once it is
 * closed (a later call outside it, rd_spans_free), parent = the enclosing
 * instance's id (0 = none). */
typedef struct rd_span {
  uint32_t tid, depth;
  const rd_layer *layer;
  uint64_t start, end;
  uint32_t id, parent;
} rd_span;
typedef void (*rd_span_fn)(void *ctx, const rd_span *s);
typedef struct rd_spans rd_spans;
rd_spans *rd_spans_new(rd_span_fn emit, void *ctx, uint32_t *next_id);
/* What a call is inside once rd_spans_add placed it: the innermost open operator or autograd
 * node (one of op and node: whichever is innermost), module (forward() frame: its layer's module has the whole path) and frame of the user's code
 * (NULL = none), and op_id, the id of the innermost operator or node instance (0 = none).
 * Unlike the call's own rd_torch, it knows the outer layers a truncated stack lost. */
typedef struct rd_span_at {
  const rd_layer *op, *node, *module, *user;
  const char *module_path;  /* the open modules, outermost first (valid until the next call) */
  uint32_t op_id;
} rd_span_at;
uint32_t rd_spans_add(rd_spans *x, uint32_t tid, uint64_t start, uint64_t end, const rd_torch *c,
                      rd_span_at *at);
/* open(ctx, s) is called when an instance opens (s->end: its first call's end), before the
 * call that opens it is returned: for writers that must put a parent before its children. */
void rd_spans_on_open(rd_spans *x, rd_span_fn open);
/* Emits what is still open, then frees x (accepts NULL). */
void rd_spans_free(rd_spans *x);

/* ---------------------------------------------------------------- host samples (samples.c) */

/* The host-time tables of dlhook stats and report from the traces' samples (SampleBatch;
 * samples.c says how they are attributed): rd_samples_sink gathers one trace during a pass
 * (it also wants the thread packets), rd_samples_trace_end after it (with every definition
 * read: the stacks are resolved then). rd_samples_json writes `,"samples":{hz,cpu,wait,cpu_ns,
 * wait_ns,lost,written,traces,by_thread,by_line,by_op,by_wait}` (leading comma),
 * rd_samples_table the terminal tables (nothing without samples); both sort the rows, once. */
typedef struct rd_samples rd_samples;
rd_samples *rd_samples_new(void);
struct rd_sink rd_samples_sink(rd_samples *x);
void rd_samples_trace_end(rd_samples *x, rd_trace *t);
/* Samples gathered so far (0 for NULL). */
uint64_t rd_samples_count(const rd_samples *x);
/* The samples lost and the CPU time the sample handler took in the programs' threads. */
void rd_samples_cost(const rd_samples *x, uint64_t *lost, uint64_t *cost_ns);
void rd_samples_json(FILE *f, rd_samples *x);
void rd_samples_table(FILE *f, rd_samples *x);
void rd_samples_free(rd_samples *x);

/* ---------------------------------------------------------------- GPU architecture (gpuarch.c) */

/* Per-SM limits of a CUDA compute capability (CUDA C Programming Guide, "Technical
 * Specifications per Compute Capability"). */
typedef struct rd_arch {
  unsigned threads_per_sm, smem_per_sm, smem_optin, max_blocks_per_sm;
} rd_arch;
rd_arch rd_arch_of(unsigned major, unsigned minor);
/* Kineto's occupancy estimates of a kernel record (vals: grid, block, registers, static and
 * dynamic shared memory) on device d: blocks and warps per SM, and the achieved occupancy in %
 * that the per-SM limits allow. Returns 0 when d or the values are missing. */
int rd_occupancy(const Dlh__DeviceInfo *d, const uint64_t *v, uint32_t nvals, double *bps,
                 double *wps, double *occ);

/* ---------------------------------------------------------------- ranks (ranks.c) */

/* Aligns several traces of one job and matches their collectives. Each trace's collectives are
 * gathered during one of its passes by the sink of an rd_ranks_in (rd_ranks_in_end after the
 * pass, with the trace); rd_ranks_finish(in, n) then analyses them (and frees them); it returns
 * 1 when there are at least 2 ranked traces with collectives. Then rd_ranks_json /
 * rd_ranks_table print the per-rank arrival delays, waits and the straggler. */
typedef struct rd_ranks_in rd_ranks_in;
rd_ranks_in *rd_ranks_in_new(const char *path);
struct rd_sink rd_ranks_in_sink(rd_ranks_in *x);
void rd_ranks_in_end(rd_ranks_in *x, const rd_trace *t);
int rd_ranks_finish(rd_ranks_in **in, size_t n);
void rd_ranks_free(void);
void rd_ranks_json(FILE *f);
void rd_ranks_table(FILE *f);
/* After rd_ranks_finish: the refined (realtime - trace clock) offset of a ranked trace. */
int rd_ranks_offset(const char *path, int64_t *offset);
/* After rd_ranks_finish: the straggler (see ranks.c) of the traces analysed; returns 0 when
 * fewer than 2 ranks had collectives. path is the caller's (rd_ranks_in_new), valid as long. */
typedef struct rd_straggler {
  const char *path;
  int rank;
  uint64_t last_count;  /* collectives it arrived last at */
  size_t ncoll, nranks; /* collectives matched, ranks */
  double delay_ns;      /* how long the others waited for it there (trimmed mean) */
} rd_straggler;
int rd_ranks_straggler(rd_straggler *out);
/* The straggler by the wait it caused (advise's straggler-rank): only the collectives that every
 * rank ran inside its steps (in_steps(ctx, path, trace-clock start) != 0) count; at each, the
 * last rank to arrive held the others up for its arrival minus the one before it. The rank
 * that caused the most wait in all; delay_ns is its mean over the collectives it arrived last
 * at, caused_ns its total, other_ns the largest total of another rank, ncoll the collectives
 * counted. Returns 0 when none counts. */
typedef struct rd_straggler_wait {
  const char *path;
  int rank;
  uint64_t last_count;
  size_t ncoll, nranks;
  double delay_ns, caused_ns, other_ns;
} rd_straggler_wait;
int rd_ranks_straggler_in(rd_straggler_wait *out, int (*in_steps)(void *ctx, const char *path, int64_t t),
                          void *ctx);

/* ---------------------------------------------------------------- steps (steps.c) */

/* The step breakdown of traces (steps.c says how time is divided): rd_steps_sink gathers one
 * trace during a pass, rd_steps_end after each trace; rd_steps_json then prints
 * `,"steps":{"rows":[{rank,pid,step,name,start_ns,dur_ns,compute_ns,comm_ns,copy_ns,host_ns,
 * idle_ns}],"slowest_step":{...},"slowest_rank":{...}}` (leading comma included) and frees x. */
typedef struct rd_steps rd_steps;
rd_steps *rd_steps_new(void);
struct rd_sink rd_steps_sink(rd_steps *x);
void rd_steps_end(rd_steps *x);
void rd_steps_json(FILE *f, rd_steps *x);
/* Before rd_steps_json: the steps of every trace so far in one line's figures (steps: rows
 * over all processes; from: RD_STEPS_* of the first; cat: compute, comm, copy, host, idle ns
 * summed over the steps, total_ns their sum). Returns steps (0: none). */
typedef struct rd_steps_sum {
  size_t steps, processes;
  int from;
  uint64_t median_ns, total_ns, cat[5];
} rd_steps_sum;
size_t rd_steps_brief(rd_steps_sum *out);

/* ---------------------------------------------------------------- finding steps (stepfind.c) */

/* Where a trace's steps come from (stepfind.c says how each is found). */
enum { RD_STEPS_TRACE, RD_STEPS_NVTX, RD_STEPS_OPTIMIZER, RD_STEPS_BACKWARD,
       RD_STEPS_TRAINING_STEP, RD_STEPS_DETECTED };
/* Step number of an NVTX range name ("ProfilerStep#3", "step 3", "Step 3"), -1 when none. */
long rd_step_number(const char *name);
/* "trace", "nvtx", "optimizer", "backward", "training_step", "detected". */
const char *rd_steps_from_name(int from);
/* One step: [s, e) on the trace clock, its number, and for NVTX its range's name (else NULL). */
typedef struct rd_step_span {
  uint64_t s, e;
  long num;
  char *name;
} rd_step_span;
/* The steps of one trace at a time: rd_stepfind_api takes every API event of its pass (in file
 * order), rd_stepfind_end after the pass sets *from (RD_STEPS_*), sets *out to the steps in time
 * order (owned by x, valid until the next rd_stepfind_end or rd_stepfind_free) and returns
 * their number: 0 for RD_STEPS_TRACE. x is then ready for the next trace. */
typedef struct rd_stepfind rd_stepfind;
rd_stepfind *rd_stepfind_new(void);
void rd_stepfind_api(rd_stepfind *x, const rd_trace *t, uint32_t tid, const dlh_api_event *e);
size_t rd_stepfind_end(rd_stepfind *x, int *from, rd_step_span **out);
/* Accepts NULL. */
void rd_stepfind_free(rd_stepfind *x);

/* ---------------------------------------------------------------- findings (advise.c) */

/* The findings of dlhook advise (advise.c lists the classes, findings/ holds them): rd_advise_sink
 * gathers one trace during its second pass, rd_advise_trace_end after it (with the trace's
 * stacks known) turns it into findings, ranked by cost. rd_advise_json writes them as a JSON
 * array, rd_advise_table as the text "Findings" section ("no findings above the thresholds"
 * when there is none). */
typedef struct rd_advise rd_advise;
rd_advise *rd_advise_new(void);
struct rd_sink rd_advise_sink(rd_advise *x);
void rd_advise_trace_end(rd_advise *x, rd_trace *t);
/* Several traces, after rd_ranks_finish: the straggler rank as a finding (ranked in). */
void rd_advise_ranks(rd_advise *x);
size_t rd_advise_count(const rd_advise *x);
void rd_advise_json(FILE *f, rd_advise *x);
/* The steps of each trace as a JSON array: [{trace,steps,step_ns,steps_from}]. */
void rd_advise_steps_json(FILE *f, const rd_advise *x);
void rd_advise_table(FILE *f, rd_advise *x);
/* The first max findings, one line each (rank, class, ms/step, share of the step, place);
 * returns the lines printed. */
size_t rd_advise_headlines(FILE *f, rd_advise *x, size_t max);
void rd_advise_free(rd_advise *x);
/* The classes, from their descriptors: one line each for `dlhook advise --help` (troff for the
 * manual page when man), and docs/advise.md's table (Markdown; `dlhook help --advise-classes`). */
void rd_advise_classes_help(FILE *f, int man);
void rd_advise_classes_doc(FILE *f);

/* ---------------------------------------------------------------- dlhook stats (cmd/stats.c) */

/* A run of dlhook stats over n traces, fed by the reader's passes: rd_stats_run_begin gives the
 * sink for trace i's second pass (valid until rd_stats_run_end), rd_stats_run_end after it;
 * rd_stats_run_finish prints the table (or with json the JSON object of `stats --json`) to out
 * and frees x. dlhook report uses it to read each trace only twice. */
typedef struct rd_stats_run rd_stats_run;
rd_stats_run *rd_stats_run_new(size_t nfiles, int json);
struct rd_sink *rd_stats_run_begin(rd_stats_run *x, size_t i, const char *path);
rd_gstats *rd_stats_run_gstats(rd_stats_run *x);
void rd_stats_run_end(rd_stats_run *x, size_t i, rd_trace *t);
/* After rd_stats_run_begin, when the trace could not be opened at all. */
void rd_stats_run_drop(rd_stats_run *x);
void rd_stats_run_finish(rd_stats_run *x, int json, FILE *out);
/* The PyTorch tables of the run (ops.c), for the caller to feed: each trace that
 * rd_ops_wanted accepts, through a pass of rd_ops_sink, then rd_ops_trace_end. */
struct rd_ops *rd_stats_run_ops(rd_stats_run *x);

/* GPU record kinds (GpuBatch.kind): dlhook.proto's GpuRecordKind, by shorter names. */
enum {
  RD_KERNEL = DLH__GPU_RECORD_KIND__KERNEL,
  RD_MEMCPY = DLH__GPU_RECORD_KIND__MEMCPY,
  RD_MEMSET = DLH__GPU_RECORD_KIND__MEMSET,
  RD_SYNC = DLH__GPU_RECORD_KIND__SYNC,
  RD_EVENT = DLH__GPU_RECORD_KIND__EVENT,
  RD_OVERHEAD = DLH__GPU_RECORD_KIND__OVERHEAD,
  RD_EXTCORR = DLH__GPU_RECORD_KIND__EXTERNAL_CORRELATION,
};
/* Kernels, copies and memsets: what occupies the GPU. */
static inline int rd_gpu_busy(uint32_t kind) { return kind >= RD_KERNEL && kind <= RD_MEMSET; }
/* The same and synchronizations: the GPU work of a trace. */
static inline int rd_gpu_work(uint32_t kind) { return kind >= RD_KERNEL && kind <= RD_SYNC; }
/* "kernel", "memcpy", ... ("gpu" for a kind this reader does not know). */
const char *rd_gpu_kind_name(uint32_t kind);

/* ---------------------------------------------------------------- library tables (libcalls.c) */

/* GEMM, convolution and collective tables of `dlhook stats`, from the recorded library args.
 * Feed each trace's API and GPU events, then rd_libstats_trace_end() once per trace. */
typedef struct rd_libstats rd_libstats;
rd_libstats *rd_libstats_new(void);
void rd_libstats_api(rd_libstats *s, const rd_trace *t, uint32_t tid, const dlh_api_event *ev);
void rd_libstats_gpu(rd_libstats *s, const dlh_gpu_event *ev);
/* Kernels kept for the join per trace at most (0: no bound): past it, the calls whose kernels
 * were not kept count their own time, and rd_libstats_over says so until the trace's end. */
void rd_libstats_budget(rd_libstats *s, size_t max);
int rd_libstats_over(const rd_libstats *s);
void rd_libstats_trace_end(rd_libstats *s);
/* `,"gemms":[...],"convs":[...],"collectives":[...]` (leading comma included). */
void rd_libstats_json(rd_libstats *s, FILE *f);
/* The three tables (each only when it has rows), 100 columns at most. */
void rd_libstats_table(rd_libstats *s, FILE *f);
void rd_libstats_free(rd_libstats *s);

/* ---------------------------------------------------------------- GPU memory (memory.c) */

/* One point of the live device memory counter: after an allocation or free at ts_ns. */
typedef struct rd_mem_sample {
  uint64_t ts_ns;
  uint32_t device;
  uint64_t device_live_bytes;  /* live bytes of that device */
  uint64_t live_bytes;         /* live bytes of the process, all devices */
  uint64_t ptr;                /* the allocation allocated or freed */
  int64_t bytes;               /* its size: > 0 allocated, < 0 freed */
  uint32_t tid;                /* thread of the call */
  uint32_t stack, fn;          /* the call's stack and function (the free's own, for a free) */
  uint64_t stream;             /* the call's stream argument (0 when it has none) */
} rd_mem_sample;

/* The live-bytes counter track of a trace for exporters: the sink of an rd_memcol gathers its
 * allocations and frees during a pass (all of them, whatever the window), rd_memcol_samples
 * replays them (memory.c says which calls count), sets *out to the samples in time order
 * (trace clock, malloc'd, the caller frees), frees c and returns the number of samples. */
typedef struct rd_memcol rd_memcol;
rd_memcol *rd_memcol_new(void);
struct rd_sink rd_memory_sink(rd_memcol *c);
long rd_memcol_samples(rd_memcol *c, rd_mem_sample **out, int keep);
/* A failed device allocation (out of memory: cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY)
 * seen in the replay: a folded event of retries is one, with its calls. */
typedef struct rd_mem_fail {
  uint64_t ts_ns, bytes, calls, stream;
  uint64_t live_bytes;         /* live bytes of the process then */
  uint32_t device, tid, stack, fn;
} rd_mem_fail;
/* rd_memcol_samples, and the failed allocations in time order in *fails (malloc'd, the caller
 * frees; *nfails of them) when fails is not NULL. */
long rd_memcol_replay(rd_memcol *c, rd_mem_sample **out, rd_mem_fail **fails, size_t *nfails,
                      int keep);
/* keep: c stays (for rd_memory_stats_of), freed by rd_memcol_free (accepts NULL). */
void rd_memcol_free(rd_memcol *c);
/* `dlhook stats --memory [--json]`: peak, leaks (with stacks), out-of-memory snapshots of the
 * traces, as a table or one JSON object. Returns RD_OK or RD_BAD_INPUT. */
int rd_memory_stats(char **files, size_t nfiles, int json, FILE *f);
/* The same for traces read already (dlhook report): T[i] after its passes and the memory calls
 * that mc[i] gathered; both are taken over (closed and freed). */
int rd_memory_stats_of(char **files, rd_trace *T, rd_memcol **mc, size_t nfiles, int json, FILE *f);

/* ---------------------------------------------------------------- Python (python.c) */

/* Runs `python -m dlhook.cli CMD ARGS...` (the Python package beside the command: the Parquet
 * writer, dlhook sql and analyze) with DLHOOK_PYTHON (default python3), and returns its exit
 * status (RD_BAD_INPUT when it cannot run; the message printed). */
int rd_python(const char *cmd, int argc, char **argv);

/* ---------------------------------------------------------------- JSON output */

/* Length of the valid UTF-8 sequence at p (1 for ASCII, NUL included), 0 when p does not start
 * one (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut sequence). */
size_t rd_utf8_seq(const unsigned char *p);
/* A copy of s (NULL = "") with each byte that is not valid UTF-8 replaced by U+FFFD: what every
 * name derived from a trace goes through before it reaches XML, JSON or a protobuf string.
 * malloc'd; the caller frees. */
char *rd_utf8_dup(const char *s);
/* src made safe and fitted for a terminal table cell of `width` columns (width >= 4): control
 * characters (C0, DEL, C1 such as CSI) and bytes that are not UTF-8 are shown as \xNN, a longer
 * text is cut at a character boundary and ends in "...", a shorter one is padded with spaces.
 * dst holds cap bytes (4 * width + 4 is always enough). */
void rd_term_fit(char *dst, size_t cap, size_t width, const char *src);

/* Names a person reads in a table (names.c says how they are shortened). rd_kernel_short: a
 * kernel's name (mangled or not) as its base name with the template arguments that tell
 * kernels apart (`vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>`); malloc'd.
 * rd_module_short: a module path ("GPT.forward > Block.forward") as its classes, cut from the
 * outside in to width columns (`… > Block > Linear`); malloc'd. rd_names_kernels and
 * rd_names_modules fill out[0..n) with the cells (rd_term_fit'ed to width, each malloc'd
 * with 4 * width + 4 bytes) of a whole table's rows, giving rows that would read alike more of
 * their name. rd_place_short: a "file:line" place relative to the working directory when it
 * lies under it (a pointer into place). */
char *rd_kernel_short(const char *name);
char *rd_module_short(const char *path, size_t width);
void rd_names_kernels(const char *const *names, size_t n, size_t width, char **out);
void rd_names_modules(const char *const *paths, size_t n, size_t width, char **out);
const char *rd_place_short(const char *place);

/* Writes s as a JSON string (quotes included); NULL writes null. Invalid UTF-8 becomes U+FFFD. */
void rd_json_str(FILE *f, const char *s);
void rd_json_double(FILE *f, double d);

#endif
