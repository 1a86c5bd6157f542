/* dlh_unwind.h — call stacks inside the profiled process (unwind/): capture on the hot path,
 * interning, the CPython frame walker, and the writer-side module map and symbolizer.
 *
 * A service with this API only: it includes no header of preload/. What it needs from the
 * runtime comes through dlh_stacks_init (the settings and a few callbacks) and through the
 * per-thread cache that the caller of dlh_stack_capture owns; it warns with common/dlh_msg.h.
 *
 * Hot path: dlh_stack_capture() takes the native stack with libunwind's unw_backtrace, splices
 * in the calling thread's Python frames (mixed mode), and interns the result in a lock-free
 * open-addressing table whose stack contents live in an mmap'd arena. No locks, no malloc of
 * dlhook's own (libunwind may allocate its per-thread cache once per thread); an atomic counter
 * around unw_backtrace lets fork() wait until no thread is inside dl_iterate_phdr (capture.c).
 * A full table or arena gives stack id 0 ("none") and counts it.
 *
 * Writer thread: dlh_stacks_define() writes, once per trace file, the ModuleDef and PyFrameDef
 * packets a stack needs and then its StackDef, before the first event using it; the SymbolDef
 * packets of its pcs follow as dlh_stacks_symbolize() resolves them (within time budgets).
 */
#ifndef DLH_UNWIND_H
#define DLH_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct dlh_encoder;

/* Stack modes (DLHOOK_STACKS; -1 = not set: mixed when Python is present, else native). */
enum { DLH_STACKS_NONE = 0, DLH_STACKS_NATIVE = 1, DLH_STACKS_PYTHON = 2, DLH_STACKS_MIXED = 3 };

/* What the service is told once, at dlh_stacks_init. The callbacks may be NULL. */
typedef struct dlh_unwind_settings {
  int mode;                     /* DLH_STACKS_*, or -1: by default (see above) */
  unsigned depth;               /* native frames kept per stack, 1..256 (0: 64) */
  int symbolize;                /* 0: no symbol names while recording (module + offset only) */
  /* Moves a file descriptor the symbolizer opened out of the program's range; returns the fd
   * to use (the program may close or dup2 over low numbers). */
  int (*fd_move_up)(int fd);
  /* Called first on each thread the service starts (the symbolizer): the caller makes sure that
   * nothing this thread calls is recorded. */
  void (*thread_enter)(void);
  /* Address space reserved for interned stacks (0, or more than 128 MiB: 128 MiB), and the
   * stack size of the threads the service starts (0: the system's default): smaller under a
   * finite RLIMIT_AS. */
  uint64_t arena_bytes;
  size_t thread_stack;
} dlh_unwind_settings;

/* The effective mode after dlh_stacks_init(): 0 = no stacks (hooks skip the capture). */
extern int dlh_stack_mode;

/* Loads libunwind (privately: RTLD_LOCAL, so that it takes over neither the program's C++
 * exception unwinding nor its backtrace()), detects CPython, allocates the intern tables.
 * Called once, at start-up; the settings are copied. On any failure it warns once and sets
 * dlh_stack_mode to 0. */
void dlh_stacks_init(const dlh_unwind_settings *settings);

/* A thread's recent stacks (the validated stack cache of capture.c), owned by the caller, one
 * per thread: zero-initialised, or emptied with dlh_stack_cache_reset. Its entries are mapped
 * at the thread's first cache miss and kept. */
typedef struct dlh_stack_cache {
  void *entries;                /* capture.c's entries, or NULL */
  unsigned next;                /* entry replaced next */
  unsigned miss_known;          /* the last miss was a stack seen before */
  volatile unsigned busy;       /* > 0: the thread is inside a walk (a signal handler that
                                   interrupted it must not walk: dlh_stack_capture_signal) */
  void *sig;                    /* the last signal walk's callers (capture.c), or NULL */
} dlh_stack_cache;

/* Hot path: captures the calling thread's stack (dlhook's own frames skipped) and returns its
 * interned id, or 0 when stacks are off or the stack could not be interned. cache: the calling
 * thread's cache, or NULL (no cache: every capture walks). No lock, no malloc. */
uint32_t dlh_stack_capture(dlh_stack_cache *cache);
/* In a signal handler (host sampling), in two steps. First the thread's Python frames, interned:
 * the interrupted interpreter may be between two stores of a frame push or pop, so the caller
 * runs this under a fault guard (a fault ends it; nothing is left half done). Returns the
 * frames taken (0 when Python frames are not read, or the thread is inside a walk). */
#define DLH_PY_SNAP 128
typedef struct dlh_py_snap {
  int n;
  uint32_t id[DLH_PY_SNAP];     /* interned Python frames, innermost first (0: not interned) */
  uint8_t end[DLH_PY_SNAP];     /* the last frame of one interpreter call */
} dlh_py_snap;
int dlh_stack_python_snap(dlh_stack_cache *cache, dlh_py_snap *snap);
/* Then the stack of the code the signal interrupted (uc: the handler's ucontext_t), innermost
 * first, with py (may be NULL) spliced in as by dlh_stack_capture. No malloc, no lock, no
 * thread-local storage: libgcc's unwinder over glibc's _dl_find_object (glibc >= 2.35; before,
 * the interrupted pc and the Python frames only). Returns 0 (no walk) when the thread was
 * interrupted inside a walk of its own (cache->busy), while a fork is in progress, or when
 * stacks are off. */
uint32_t dlh_stack_capture_signal(dlh_stack_cache *cache, void *uc, const dlh_py_snap *py);

/* Host sampling, from another thread: the Python frames of the thread whose PyThreadState is
 * ts (from dlh_py_this_ts, in that thread), read with checked copies (a frame freed meanwhile
 * gives a shorter stack, never a fault), interned as a stack of Python frames only. 0 when
 * there are none or Python frames are not read in this process. */
uint32_t dlh_stack_capture_python_of(uintptr_t ts);
/* Sampler thread: learns where a PyThreadState keeps its thread's id, from the state ts of
 * thread tid (given by that thread itself; two different threads settle it). Then
 * dlh_py_thread_states lists the interpreter's thread states with their thread ids (checked
 * copies), at most max; 0 while not settled, or where states do not keep the id (3.10). */
void dlh_py_calibrate(uintptr_t ts, uint32_t tid);
int dlh_py_thread_states(uint32_t *tids, uintptr_t *states, int max);
/* The calling thread's PyThreadState (0: none, or no supported CPython); async-signal-safe. */
uintptr_t dlh_py_this_ts(void);

/* Empties a cache (its thread's struct is reused by a new thread). */
void dlh_stack_cache_reset(dlh_stack_cache *cache);

/* "none", "native", "python" or "mixed": the effective mode, for ProcessInfo.stacks_mode. */
const char *dlh_stacks_mode_name(void);

/* Writer thread: makes sure stack `id` and what it refers to (modules, Python frames) is
 * defined in the trace that `w` writes, appending the packets to w's current frame. Never waits
 * for symbols: the stack's new pcs are queued for dlh_stacks_symbolize. Idempotent per writer;
 * a new writer (after fork) starts over. */
void dlh_stacks_define(struct dlh_encoder *w, uint32_t id);

/* Writer thread: appends to w's current frame the SymbolDef packets of the pcs that the
 * symbolizer thread resolved since the last call (function names from each module's sorted
 * symbol index, then file:line from DWARF), waiting for more until no pc is left or
 * CLOCK_MONOTONIC reaches deadline_ns (0: no wait). Returns the number of pcs still to do. */
size_t dlh_stacks_symbolize(struct dlh_encoder *w, uint64_t deadline_ns);
/* Starts the symbolizer thread (when stacks are on and settings.symbolize): called by
 * the thread that starts the writer, right after it. */
void dlh_stacks_start_symbolizer(void);
/* At exit, after the last dlh_stacks_symbolize: the symbolizer stops after its current pc. */
void dlh_stacks_symbolize_stop(void);
/* The symbolizer thread's CPU time so far (as of its last wait for pcs), 0 before it ran. */
uint64_t dlh_stacks_symbolizer_cpu_ns(void);

/* pcs given a SymbolDef, pcs with no symbol found, pcs still queued (of the current trace). */
void dlh_stacks_symbol_counts(uint64_t *resolved, uint64_t *unresolved, uint64_t *pending);

/* Bytes held by the modules' symbol indexes (not counting the mapped files). */
size_t dlh_stacks_index_bytes(void);
/* Bytes of the stack and Python-frame intern tables, their arena and the per-thread caches. */
size_t dlh_stacks_table_bytes(void);

/* Counters for the trailer/diagnostics: stacks interned, stacks lost (table or arena full). */
uint64_t dlh_stacks_count(void);
uint64_t dlh_stacks_lost(void);

/* dlhook attach (preload/attach.c), after a trace was finished: the symbolizer may start again and
 * the next writer defines modules, stacks and frames from scratch. */
void dlh_stacks_reset_for_attach(void);

#endif
