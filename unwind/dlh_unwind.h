/* dlh_unwind.h — call stacks inside the profiled process (unwind/): capture on the hot path,
 * interning, the CPython frame walker, and the writer-side module map and symbolizer.
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

#include <stdint.h>

struct dlh_writer;

/* DLHOOK_STACKS values (dlh_cfg.stacks; -1 = not set: mixed when Python is present, else
 * native). */
enum { DLH_STACKS_NONE = 0, DLH_STACKS_NATIVE = 1, DLH_STACKS_PYTHON = 2, DLH_STACKS_MIXED = 3 };

/* The effective mode after dlh_stacks_init(): 0 = no stacks (hooks skip the capture). */
extern int dlh_stack_mode;

/* Loads libunwind (privately: RTLD_LOCAL, so that it takes over neither the program's C++
 * exception unwinding nor its backtrace()), detects CPython, allocates the intern tables.
 * Called once from the constructor after dlh_config_load(). On any failure it warns once and
 * sets dlh_stack_mode to 0. */
void dlh_stacks_init(void);

/* Hot path: captures the calling thread's stack (dlhook's own frames skipped) and returns its
 * interned id, or 0 when stacks are off or the stack could not be interned. */
uint32_t dlh_stack_capture(void);
/* Empties a thread's stack cache (a dlh_thread reused by a new thread). */
void dlh_stack_cache_reset(void *cache);

/* "none", "native", "python" or "mixed": the effective mode, for ProcessInfo.stacks_mode. */
const char *dlh_stacks_mode_name(void);

/* Writer thread: makes sure stack `id` and what it refers to (modules, Python frames) is
 * defined in the trace that `w` writes, appending the packets to w's current frame. Never waits
 * for symbols: the stack's new pcs are queued for dlh_stacks_symbolize. Idempotent per writer;
 * a new writer (after fork) starts over. */
void dlh_stacks_define(struct dlh_writer *w, uint32_t id);

/* Writer thread: appends to w's current frame the SymbolDef packets of the pcs that the
 * symbolizer thread resolved since the last call (function names from each module's sorted
 * symbol index, then file:line from DWARF), waiting for more until no pc is left or
 * dlh_mono_ns() reaches deadline_ns (0: no wait). Returns the number of pcs still to do. */
size_t dlh_stacks_symbolize(struct dlh_writer *w, uint64_t deadline_ns);
/* Starts the symbolizer thread (when stacks are on and DLHOOK_SYMBOLIZE is not 0): called by
 * the thread that starts the writer, right after it. */
void dlh_stacks_start_symbolizer(void);
/* At exit, after the last dlh_stacks_symbolize: the symbolizer stops after its current pc. */
void dlh_stacks_symbolize_stop(void);

/* pcs given a SymbolDef, pcs with no symbol found, pcs still queued (of the current trace). */
void dlh_stacks_symbol_counts(uint64_t *resolved, uint64_t *unresolved, uint64_t *pending);

/* Bytes held by the modules' symbol indexes (not counting the mapped files). */
size_t dlh_stacks_index_bytes(void);

/* Counters for the trailer/diagnostics: stacks interned, stacks lost (table or arena full). */
uint64_t dlh_stacks_count(void);
uint64_t dlh_stacks_lost(void);

/* dlhook attach (preload/attach.c), after a trace was finished: the symbolizer may start again and
 * the next writer defines modules, stacks and frames from scratch. */
void dlh_stacks_reset_for_attach(void);

#endif
