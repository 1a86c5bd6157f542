/* mem.c — what dlhook holds in the profiled process, by part, and the budget (DLHOOK_MEM_MB).
 *
 * Rings, thread structs and CUPTI's activity buffers are counted where they are allocated
 * (atomics: a thread's first call may come from a signal handler); the writer's buffers and
 * the stack and symbol tables are measured by the writer thread after each pass. The budget is
 * applied where memory grows with the program: a new thread's ring is halved until it fits,
 * the writer cuts its frames shorter, CUPTI buffers beyond it are not handed out (CUPTI counts
 * the records it then drops). The peak of the total and of each part goes in the trailer. */
#include <stdatomic.h>

#include "dlh_format.h"
#include "dlh_internal.h"

static _Atomic int64_t part_bytes[DLH_MEM_NPARTS];
static _Atomic int64_t part_peak[DLH_MEM_NPARTS];
static _Atomic int64_t total, total_peak;

static const char *const part_names[DLH_MEM_NPARTS] = {
    [DLH_MEM_RINGS] = "rings",     [DLH_MEM_THREADS] = "threads", [DLH_MEM_WRITER] = "writer",
    [DLH_MEM_STACKS] = "stacks",   [DLH_MEM_SYMBOLS] = "symbols", [DLH_MEM_CUPTI] = "cupti",
    [DLH_MEM_FLIGHT] = "flight",
};

static void raise_peak(_Atomic int64_t *peak, int64_t v) {
  int64_t p = atomic_load_explicit(peak, memory_order_relaxed);
  while (v > p && !atomic_compare_exchange_weak_explicit(peak, &p, v, memory_order_relaxed,
                                                         memory_order_relaxed)) {}
}

void dlh_mem_add(int part, int64_t bytes) {
  if (part < 0 || part >= DLH_MEM_NPARTS || !bytes) return;
  int64_t v = atomic_fetch_add_explicit(&part_bytes[part], bytes, memory_order_relaxed) + bytes;
  int64_t t = atomic_fetch_add_explicit(&total, bytes, memory_order_relaxed) + bytes;
  if (bytes > 0) {
    raise_peak(&part_peak[part], v);
    raise_peak(&total_peak, t);
  }
}

void dlh_mem_set(int part, uint64_t bytes) {
  if (part < 0 || part >= DLH_MEM_NPARTS) return;
  int64_t old = atomic_load_explicit(&part_bytes[part], memory_order_relaxed);
  dlh_mem_add(part, (int64_t)bytes - old); /* only the writer thread sets a measured part */
}

uint64_t dlh_mem_total(void) {
  int64_t t = atomic_load_explicit(&total, memory_order_relaxed);
  return t > 0 ? (uint64_t)t : 0;
}

int dlh_mem_fits(uint64_t bytes) { return dlh_mem_total() + bytes <= dlh_cfg.mem_limit; }

/* The child of fork writes its own trace: what it allocates from now on. The parent's rings and
 * writer buffers stay mapped in it (copy on write), untouched. */
void dlh_mem_after_fork_child(void) {
  for (int i = 0; i < DLH_MEM_NPARTS; i++) {
    if (i == DLH_MEM_STACKS || i == DLH_MEM_SYMBOLS) continue; /* shared tables, still in use */
    int64_t v = atomic_exchange(&part_bytes[i], 0);
    atomic_fetch_sub(&total, v);
    atomic_store(&part_peak[i], 0);
  }
  atomic_store(&total_peak, atomic_load(&total));
}

void dlh_mem_report(struct Dlh__Trailer *tr) {
  static Dlh__MemPart parts[DLH_MEM_NPARTS];
  static Dlh__MemPart *pp[DLH_MEM_NPARTS];
  tr->has_mem_budget_bytes = tr->has_mem_peak_bytes = 1;
  tr->mem_budget_bytes = dlh_cfg.mem_limit;
  int64_t peak = atomic_load(&total_peak);
  tr->mem_peak_bytes = peak > 0 ? (uint64_t)peak : 0;
  for (int i = 0; i < DLH_MEM_NPARTS; i++) {
    dlh__mem_part__init(&parts[i]);
    parts[i].name = (char *)part_names[i];
    int64_t p = atomic_load(&part_peak[i]), b = atomic_load(&part_bytes[i]);
    parts[i].has_peak_bytes = parts[i].has_bytes = 1;
    parts[i].peak_bytes = p > 0 ? (uint64_t)p : 0;
    parts[i].bytes = b > 0 ? (uint64_t)b : 0;
    pp[i] = &parts[i];
  }
  tr->n_mem_parts = DLH_MEM_NPARTS;
  tr->mem_parts = pp;
}
