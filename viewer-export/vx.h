/* vx.h — shared pieces of the dlhook command: trace loading with definition tables, JSON
 * output, messages. One file per subcommand (dump.c, stats.c, record.c) uses these. */
#ifndef VX_H
#define VX_H

#include <stdint.h>
#include <stdio.h>

#include "dlh_format.h"

/* exit codes */
#define VX_OK 0
#define VX_BAD_INPUT 1
#define VX_USAGE 2

/* ---------------------------------------------------------------- messages */

/* Prints "dlhook: <message>\n" to stderr. */
void vx_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a usage error ("dlhook CMD: message" plus a hint to --help). Returns VX_USAGE. */
int vx_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when arg is "--help" or "-h". */
int vx_is_help(const char *arg);

/* ---------------------------------------------------------------- id maps */

/* uint32 id -> pointer, open addressing; grows as needed. */
typedef struct vx_map {
  uint32_t *keys;
  void **vals;
  size_t cap, n;
} vx_map;
void *vx_map_get(const vx_map *m, uint32_t key);
/* Inserts or replaces; returns the old value (for the caller to free) or NULL. Aborts on OOM. */
void *vx_map_put(vx_map *m, uint32_t key, void *val);
void vx_map_free(vx_map *m, void (*free_val)(void *));

void *vx_xmalloc(size_t n);
void *vx_xrealloc(void *p, size_t n);
char *vx_xstrdup(const char *s);

/* ---------------------------------------------------------------- traces */

typedef struct vx_func {
  uint32_t id;
  char *name;
  int domain;       /* Dlh__Domain */
  size_t nargs;
  char **argname;
  uint32_t *argtype; /* ArgDesc.type */
} vx_func;

typedef struct vx_trace {
  const char *path;
  dlh_reader *r;
  vx_map funcs;     /* FunctionDesc.id -> vx_func* */
  vx_map strings;   /* StringDef.id -> char* */
  int have_process;
  uint32_t pid;
  int have_trailer, have_counters;
  uint64_t trailer_records, trailer_dropped;
  uint64_t counters_records, counters_dropped;
  uint64_t api_events, gpu_events, packets;
  struct vx_stacks *stacks; /* symbols.c: stacks, modules, symbols, Python frames read so far */
} vx_trace;

/* Opens a trace; on failure prints "dlhook: PATH: why" and returns -1. */
int vx_trace_open(vx_trace *t, const char *path);
/* Next packet, after recording definitions (functions, strings, process, trailer, counters).
 * Returns 1, 0 at the clean end, -1 when the rest is damaged (message already printed). */
int vx_trace_next(vx_trace *t, const Dlh__Packet **p);
void vx_trace_close(vx_trace *t);

const vx_func *vx_trace_func(const vx_trace *t, uint32_t id);
const char *vx_trace_string(const vx_trace *t, uint32_t id);
/* "cudart", "driver", ... ("unknown" for anything else). */
const char *vx_domain_name(int domain);
/* Display name of a function id: its name, or "fn#ID" when undefined (static buffer). */
const char *vx_func_name(const vx_trace *t, uint32_t id);
/* Records and dropped of a trace: from the trailer, else the last counters; records falls
 * back to the events read. */
uint64_t vx_trace_records(const vx_trace *t);
uint64_t vx_trace_dropped(const vx_trace *t);

/* ---------------------------------------------------------------- stacks (symbols.c) */

/* One frame of a recorded call stack. Strings are owned by the trace (valid until
 * vx_trace_close); function/file/module are NULL when unknown, line is 0 when unknown.
 * Python frames (python = 1) have pc 0, function = the code object's qualified name,
 * file = the .py path, module = NULL. */
typedef struct vx_frame {
  uint64_t pc;
  const char *function;
  const char *file;
  uint32_t line;
  const char *module;
  int python;
} vx_frame;

/* The frames of stack `stack_id` (ApiBatch.stack) as read so far, innermost first: sets *out
 * to an array owned by the trace and returns its length; 0 (and *out = NULL) when the id is 0
 * or undefined. Native and Python frames are interleaved as the trace records them (mixed
 * mode: Python frames in place of the interpreter's frames). */
size_t vx_stack_frames(const vx_trace *t, uint32_t stack_id, const vx_frame **out);
/* Whether stack `stack_id` was cut at DLHOOK_STACK_DEPTH (its outermost frames are missing). */
int vx_stack_truncated(const vx_trace *t, uint32_t stack_id);
/* trace.c -> symbols.c: records a StackDef, ModuleDef, SymbolDef or PyFrameDef packet;
 * frees them all. */
void vx_stacks_define(vx_trace *t, const Dlh__Packet *p);
void vx_stacks_free(vx_trace *t);

/* Demangled C++ name (malloc'd, caller frees), or NULL when name is not a mangled name. */
char *vx_demangle(const char *name);

/* ---------------------------------------------------------------- ranks (ranks.c) */

/* Aligns several traces of one job and matches their collectives; returns 1 when there are
 * at least 2 ranked traces with collectives. Then vx_ranks_json / vx_ranks_table print the
 * per-rank arrival delays, waits and the straggler. */
int vx_ranks_analyze(char **files, size_t n);
void vx_ranks_json(FILE *f);
void vx_ranks_table(FILE *f);

/* GpuBatch kinds */
const char *vx_gpu_kind_name(uint32_t kind);

/* ---------------------------------------------------------------- JSON output */

/* Writes s as a JSON string (quotes included); NULL writes null. Invalid UTF-8 becomes U+FFFD. */
void vx_json_str(FILE *f, const char *s);
void vx_json_double(FILE *f, double d);

#endif
