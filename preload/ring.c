/* ring.c — the hot path: storing a call in the calling thread's ring (ring.h has the record
 * layout), folding repeats, and the ring memory.
 *
 * dlh_call_store, dlh_record_link and the NVTX store are a few word stores into the thread's
 * own ring and one release store of its head: no lock, no malloc, no system call (except one
 * futex wake when the ring is half full). A full ring drops the record and counts it.
 * Everything here may run in a signal handler that interrupted the same thread anywhere, also
 * inside one of these functions (the `storing` flag: the handler's record is dropped). */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dlh_internal.h"

/* Bumped when a new trace starts in the same process (dlhook attach, again): a FOLD record
 * repeats a record of the same trace only. */
volatile unsigned dlh_trace_gen;

/* The writer thread sleeps on this futex word between passes; a ring half full wakes it. */
_Atomic uint32_t dlh_writer_wake_seq;

void dlh_writer_wake(void) {
  atomic_fetch_add(&dlh_writer_wake_seq, 1);
  syscall(SYS_futex, (uint32_t *)&dlh_writer_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---------------------------------------------------------------- reserve / publish */

/* The words of a record (storing already set). */
static uint64_t *reserve_words(struct dlh_thread *t, uint64_t n) {
  uint64_t cap = t->cap, h = t->head_local;
  uint64_t pos = h & (cap - 1);
  uint64_t need = n + (pos + n > cap ? cap - pos : 0);
  if (DLH_UNLIKELY(h + need - t->tail_cache > cap / 2)) {
    /* Half full as far as we know: look at the real tail, wake the writer once if needed. */
    t->tail_cache = atomic_load_explicit(&t->tail, memory_order_acquire);
    if (h + need - t->tail_cache > cap / 2 &&
        !atomic_load_explicit(&t->wake_sent, memory_order_relaxed)) {
      atomic_store_explicit(&t->wake_sent, 1, memory_order_relaxed);
      dlh_writer_wake();
    }
    if (h + need - t->tail_cache > cap) {
      atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
      return NULL;
    }
  }
  if (DLH_UNLIKELY(pos + n > cap)) { /* wrap: pad to the end of the ring */
    t->buf[pos] = dlh_rec_header(0, 0, 0, DLH_REC_PAD, 0, 0);
    t->head_local = h + cap - pos;
    pos = 0;
  }
  return t->buf + pos;
}

static inline int store_begin(struct dlh_thread *t) {
  if (DLH_UNLIKELY(t->storing)) {
    /* A signal handler's call interrupted this thread's own store: the words between reserve
     * and publish are not ours to take. Dropped and counted. */
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
    return 0;
  }
  t->storing = 1;
  atomic_signal_fence(memory_order_seq_cst);
  return 1;
}

static inline void store_end(struct dlh_thread *t) {
  atomic_signal_fence(memory_order_seq_cst);
  t->storing = 0;
}

uint64_t *dlh_ring_reserve(struct dlh_thread *t, uint64_t n) {
  if (!store_begin(t)) return NULL;
  uint64_t *w = reserve_words(t, n);
  if (!w) store_end(t);
  return w;
}

void dlh_ring_publish(struct dlh_thread *t, uint64_t n) {
  t->head_local += n;
  atomic_store_explicit(&t->head, t->head_local, memory_order_release);
  store_end(t);
}

void dlh_ring_abandon(struct dlh_thread *t) { store_end(t); }

/* ---------------------------------------------------------------- calls */

/* Adds a repeat of the thread's last API record: to its FOLD record while the writer has not
 * taken it, else in a new FOLD record. Returns 0 when the repeat was dropped (ring full). */
static int fold_repeat(struct dlh_thread *t, uint64_t t0, uint64_t t1) {
  uint64_t *f = t->fold_rec;
  if (f) {
    uint64_t c = __atomic_load_n(&f[2], __ATOMIC_RELAXED);
    if (!(c & DLH_FOLD_SEALED)) {
      const uint64_t *cur = f + 3 + 2 * (c & 1);
      uint64_t *next = f + 3 + 2 * ((c + 1) & 1);
      __atomic_store_n(&next[0], t1, __ATOMIC_RELAXED);
      __atomic_store_n(&next[1], cur[1] + (t1 - t0), __ATOMIC_RELAXED);
      if (__atomic_compare_exchange_n(&f[2], &c, c + 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        return 1;
    }
  }
  /* the writer took it (sealed): a new FOLD record follows it */
  uint64_t *w = reserve_words(t, DLH_REC_FOLD_WORDS);
  if (!w) return 0;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_FOLD, 0, DLH_REC_FOLD_WORDS);
  w[1] = t0;
  w[2] = 1;
  w[3] = w[4] = 0;
  w[5] = t1;        /* slot of count 1 */
  w[6] = t1 - t0;
  t->head_local += DLH_REC_FOLD_WORDS;
  atomic_store_explicit(&t->head, t->head_local, memory_order_release);
  t->fold_rec = w;
  t->fold_head = t->head_local;
  return 1;
}

void dlh_call_store(dlh_call *c, uint32_t fn, int64_t ret, uint32_t nargs, const uint64_t *args,
                    uint64_t t1) {
  struct dlh_thread *t = c->t;
  t->hot.depth = c->depth;
  if (DLH_UNLIKELY(nargs > DLH_MAX_ARGS)) nargs = DLH_MAX_ARGS;
  uint64_t corr = t->pending_corr;
  t->pending_corr = 0; /* this call's, whether its record is stored or dropped */
  if (!store_begin(t)) return;
  /* The call stack, interned (unwind/capture.c): lock-free, no malloc. */
  uint32_t stack = dlh_stack_mode ? dlh_stack_capture(&t->stack_cache) : 0;
  uint64_t n = DLH_REC_HDR_WORDS + (corr != 0) + nargs;
  uint64_t h0 = dlh_rec_header(fn, nargs, c->depth, DLH_REC_API, corr ? DLH_REC_F_CORR : 0, n);
  uint64_t w3 = dlh_rec_ret_stack(ret, stack);
  /* A repeat of the last record (nothing else stored since, no correlation id on either): the
   * last record's words are still in the ring (only this thread writes there). */
  const uint64_t *last = t->last_api;
  if (!corr && dlh_cfg.fold && last && t->fold_head == t->head_local && last[0] == h0 &&
      last[3] == w3 && t->fold_gen == dlh_trace_gen) {
    uint32_t i = 0;
    while (i < nargs && last[DLH_REC_HDR_WORDS + i] == args[i]) i++;
    if (i == nargs) {
      fold_repeat(t, c->t0, t1);
      store_end(t);
      return;
    }
  }
  uint64_t *w = reserve_words(t, n);
  if (!w) {
    store_end(t);
    return;
  }
  w[0] = h0;
  w[1] = c->t0;
  w[2] = t1 - c->t0;
  w[3] = w3;
  uint64_t *a = w + DLH_REC_HDR_WORDS;
  if (corr) *a++ = corr;
  for (uint32_t i = 0; i < nargs; i++) a[i] = args[i];
  t->head_local += n;
  atomic_store_explicit(&t->head, t->head_local, memory_order_release);
  t->last_api = w;
  t->fold_gen = dlh_trace_gen;
  t->fold_rec = NULL;
  t->fold_head = t->head_local;
  store_end(t);
}

void dlh_record_link(struct dlh_thread *t, uint64_t corr) {
  uint64_t *w = dlh_ring_reserve(t, DLH_REC_LINK_WORDS);
  if (!w) return;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_LINK, 0, DLH_REC_LINK_WORDS);
  w[1] = corr;
  dlh_ring_publish(t, DLH_REC_LINK_WORDS);
}

/* ---------------------------------------------------------------- ring memory */

/* Rings of exited threads wait for new threads in a list kept in their own first words (no
 * malloc: a thread's first call may come from a signal handler that interrupted malloc). The
 * list's lock is held for a few instructions, never across a call, and never by a thread
 * twice (a thread takes a ring only while attaching, with recording blocked). */
struct free_ring { struct free_ring *next; uint64_t cap; };
static struct free_ring *free_rings;
static atomic_flag free_lock = ATOMIC_FLAG_INIT;

static void free_lock_take(void) {
  while (atomic_flag_test_and_set_explicit(&free_lock, memory_order_acquire)) sched_yield();
}
static void free_lock_give(void) { atomic_flag_clear_explicit(&free_lock, memory_order_release); }

/* What a new thread's ring may take: DLHOOK_RING_KB, halved while it does not fit in the memory
 * budget (DLHOOK_MEM_MB, everything dlhook holds counted), down to 64 KiB. */
#define RING_MIN_BYTES (64u << 10)

uint64_t *dlh_ring_alloc(uint64_t *cap_words) {
  free_lock_take();
  struct free_ring *f = free_rings;
  if (f) free_rings = f->next;
  free_lock_give();
  if (f) {
    *cap_words = f->cap;
    f->next = NULL;
    f->cap = 0;
    return (uint64_t *)f;
  }
  uint64_t bytes = 4096;
  while (bytes < dlh_cfg.ring_bytes && bytes < (1ull << 40)) bytes *= 2;
  uint64_t floor = bytes < RING_MIN_BYTES ? bytes : RING_MIN_BYTES;
  while (bytes > floor && !dlh_mem_fits(bytes)) bytes /= 2;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return NULL;
  dlh_mem_add(DLH_MEM_RINGS, (int64_t)bytes);
  *cap_words = bytes / 8;
  return p;
}

/* Called by the writer once an exited thread's ring is drained. */
void dlh_ring_release(struct dlh_thread *t) {
  struct free_ring *f = (struct free_ring *)t->buf;
  if (f) {
    f->cap = t->cap;
    free_lock_take();
    f->next = free_rings;
    free_rings = f;
    free_lock_give();
  }
  t->buf = NULL;
  atomic_store(&t->state, DLH_T_RETIRED);
}

/* fork child: the parent's rings stay mapped in the child and are not reused (only the forking
 * thread lives on; it may have held the lock). */
void dlh_ring_after_fork_child(void) {
  atomic_flag_clear(&free_lock);
  free_rings = NULL;
}
