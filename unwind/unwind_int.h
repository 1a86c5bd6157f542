/* unwind_int.h — state shared by the files of unwind/ (not by the rest of dlhook). */
#ifndef DLH_UNWIND_INT_H
#define DLH_UNWIND_INT_H

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <time.h>

#include "dlh_format.h" /* DLH_PYFRAME_TAG */
#include "dlh_msg.h"
#include "dlh_unwind.h"

#define DLH_STACK_MAX_DEPTH 256

/* The settings given to dlh_stacks_init (capture.c). */
extern dlh_unwind_settings dlh_unwind_cfg;

/* CLOCK_MONOTONIC in ns: the clock of the writer's deadlines. */
static inline uint64_t dlh_unwind_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An interned stack in the arena: n frames, innermost first (pcs, or DLH_PYFRAME_TAG | id). */
typedef struct dlh_stack_rec {
  uint32_t n;
  uint16_t truncated;
  _Atomic uint16_t nocache;  /* its stack slots could not be validated: no cache entry (capture.c) */
  uint64_t frames[];
} dlh_stack_rec;

/* An interned Python frame: code object and instruction offset, resolved when first seen (in
 * the calling thread, while its frames are alive). s holds "function\0file\0". */
typedef struct dlh_pyf_rec {
  uint64_t code;
  int64_t lasti;
  uint32_t line;
  uint32_t fn_len;
  char s[];
} dlh_pyf_rec;

/* id -> record (index 0 unused); a record is complete once its id was returned. */
extern dlh_stack_rec **dlh_stack_recs;
extern dlh_pyf_rec **dlh_pyf_recs;
extern uint32_t dlh_stack_max_id, dlh_pyf_max_id;

/* Held around dl_iterate_phdr on the writer thread; fork() takes it (capture.c). */
#include <pthread.h>
extern pthread_mutex_t dlh_dl_mutex;

/* ---- dl_iterate_phdr helpers ---- */
/* The range [*lo, *hi) that an object's PT_LOAD segments cover; *hi <= *lo when it has none. */
static inline void dlh_object_range(const struct dl_phdr_info *info, uintptr_t *lo,
                                    uintptr_t *hi) {
  *lo = UINTPTR_MAX;
  *hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < *lo) *lo = a;
    if (a + ph->p_memsz > *hi) *hi = a + ph->p_memsz;
  }
}
/* The loader's counts of objects loaded and unloaded so far (v[0], v[1]), when this glibc
 * passes them (size); returns 0 when it does not. */
static inline int dlh_loader_counts(const struct dl_phdr_info *info, size_t size,
                                    unsigned long long v[2]) {
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 0;
  v[0] = info->dlpi_adds;
  v[1] = info->dlpi_subs;
  return 1;
}

/* ---- loaded objects by address, on any thread (modmap.c) ---- */
#define DLH_MOD_CUDA_INTERNAL 1u   /* libcupti / libcuda: leading frames of CUPTI callbacks */
typedef struct dlh_modinfo {
  uintptr_t lo, hi;   /* the object's mapped range */
  unsigned flags;     /* DLH_MOD_* */
} dlh_modinfo;
/* Constructor time: picks glibc's _dl_find_object when there is one. */
void dlh_modmap_init(void);
/* Hot path (lock-free, no malloc, O(log n)): fills *out for the object containing pc and
 * returns 1, or returns 0 when pc is in no loaded object (JIT code, anonymous memory). */
int dlh_modmap_find(uintptr_t pc, dlh_modinfo *out);

/* ---- capture (capture.c) ---- */
/* Allocates the intern tables, loads libunwind, finds libdlhook's own range
 * and installs the fork guard. Returns 1 when native stacks can be taken, 0 when libunwind is
 * missing (warned), -1 when the tables cannot be allocated (warned: no stacks at all). */
int dlh_capture_setup(const dlh_unwind_settings *settings);
/* Sets the effective mode (dlh_stack_mode; DLH_STACKS_*): which walks capture takes. */
void dlh_capture_set_mode(int mode);

/* ---- symbolizer (symbolize.c) ---- */
/* Loads elfutils' libdw privately (constructor time only: never dlopen on the writer thread),
 * and installs the fork handler that lets a child start the symbolizer's state over. */
void dlh_symbolize_preload(void);

/* ---- CPython frame walker (python.c) ---- */
typedef struct dlh_pyframe {
  uint64_t code;    /* PyCodeObject * */
  int64_t lasti;    /* byte offset of the current instruction in the code */
  int group_end;    /* 1: the last Python frame run by one _PyEval_EvalFrameDefault call */
} dlh_pyframe;

extern int dlh_py_active;                    /* a supported CPython was found */
extern uintptr_t dlh_py_eval_lo, dlh_py_eval_hi; /* [lo, hi) of _PyEval_EvalFrameDefault */

/* Detects CPython in the process (exported symbols of the executable or libpython). Returns 1
 * when the walker can be used; warns once for an unsupported version. */
int dlh_py_init(int (*fd_move_up)(int)); /* fd_move_up: dlh_unwind_settings' (may be NULL) */
/* Hot path: the calling thread's Python frames, innermost first (at most max). */
int dlh_py_walk(dlh_pyframe *out, int max);
/* Another thread's frames (host sampling: dlhook's sampler thread): as dlh_py_walk for the
 * thread state ts, every load a checked copy (process_vm_readv, or /proc/self/mem). */
int dlh_py_walk_ts(uintptr_t ts, dlh_pyframe *out, int max);
/* Slow path (first sighting of a frame, in the calling thread): line number, qualified name and
 * file name (UTF-8, truncated to the buffers). */
void dlh_py_resolve(uint64_t code, int64_t lasti, uint32_t *line, char *fn, size_t fncap,
                    char *file, size_t filecap);

/* inductor.c: the first Python frame of a file of torch.compile's generated code in this trace
 * (writer thread): the file is read and an InductorKernel packet written per Triton kernel. */
struct dlh_encoder;
int dlh_inductor_file(const char *file);
void dlh_inductor_note(struct dlh_encoder *w, const char *file);

#endif
