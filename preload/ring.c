/* ring.c — the hot path: storing a call in the calling thread's ring (ring.h has the record
 * layout), folding repeats, and the ring memory.
 *
 * dlh_call_store, dlh_record_link and the NVTX store are a few word stores into the thread's
 * own ring and one release store of its head: no lock, no malloc, no system call (except, when
 * the ring is half full and the writer behind, an mmap of a larger ring or one futex wake). A
 * full ring drops the record and counts it.
 * Everything here may run in a signal handler that interrupted the same thread anywhere, also
 * inside one of these functions (the `storing` flag: the handler's record is dropped). */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dlh_internal.h"

/* Defined in this library: loaded without the GOT on the hot path. */
extern int dlh_stack_mode __attribute__((visibility("hidden")));
extern dlh_config dlh_cfg __attribute__((visibility("hidden")));

/* Bumped when a new trace starts in the same process (dlhook attach, again): a FOLD record
 * repeats a record of the same trace only. */
volatile unsigned dlh_trace_gen;

/* Bumped by the writer whenever it gives a ring's words back: a thread waiting for room sees
 * that the writer is at work (wait_room). */
_Atomic uint64_t dlh_writer_progress;

/* The writer thread sleeps on this futex word between passes; a ring half full wakes it. */
_Atomic uint32_t dlh_writer_wake_seq;

void dlh_writer_wake(void) {
  atomic_fetch_add(&dlh_writer_wake_seq, 1);
  syscall(SYS_futex, (uint32_t *)&dlh_writer_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---------------------------------------------------------------- reserve / publish */

static int grow(struct dlh_thread *t);
static int wait_room(struct dlh_thread *t, uint64_t want);

/* Words that n words at count h take: n, plus the padding to the end of the ring when they
 * would cross it. */
static inline uint64_t need_at(uint64_t h, uint64_t cap, uint64_t n) {
  uint64_t pos = h & (cap - 1);
  return n + (pos + n > cap ? cap - pos : 0);
}

/* The thread's waits for the writer (self.waits, ring.c: wait_room) as one WAIT record at the
 * head, when the ring has room for it and for n words after it (storing set). So a wait is said
 * right after it, in the room it waited for, and the waits of a thread that ran out of time are
 * said at its next store that finds room. Returns 1 when it wrote the record. */
static __attribute__((noinline)) int wait_record(struct dlh_thread *t, uint64_t n) {
  uint64_t cap = t->prod.cap, h = t->prod.head_local;
  uint64_t wn = need_at(h, cap, DLH_REC_WAIT_WORDS);
  if (h + wn + need_at(h + wn, cap, n) - t->prod.tail_cache > cap) return 0;
  uint64_t pos = h & (cap - 1);
  if (wn > DLH_REC_WAIT_WORDS) { /* wrap: pad to the end of the ring */
    t->prod.buf[pos] = dlh_rec_header(0, 0, 0, DLH_REC_PAD, 0, 0);
    h += cap - pos;
    pos = 0;
  }
  uint64_t *w = t->prod.buf + pos;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_WAIT, 0, DLH_REC_WAIT_WORDS);
  w[1] = atomic_load_explicit(&t->self.wait_t0, memory_order_relaxed);
  w[2] = atomic_load_explicit(&t->self.wait_t1, memory_order_relaxed);
  w[3] = atomic_load_explicit(&t->self.waits, memory_order_relaxed);
  w[4] = atomic_load_explicit(&t->self.wait_sum, memory_order_relaxed);
  atomic_store_explicit(&t->self.waits, 0, memory_order_relaxed);
  t->prod.head_local = h + DLH_REC_WAIT_WORDS;
  atomic_store_explicit(&t->shared.head, t->prod.head_local, memory_order_release);
  t->prod.last_api = NULL; /* the next call folds into nothing before this record */
  t->prod.fold_rec = NULL;
  t->prod.room_end = 0;
  return 1;
}

/* The words of a record (storing already set): the slow part of reserve_words. */
static __attribute__((noinline)) uint64_t *reserve_slow(struct dlh_thread *t, uint64_t n) {
  uint64_t cap, h, pos, need;
  if (atomic_load_explicit(&t->self.waits, memory_order_relaxed) && !t->prod.sampling) {
    t->prod.tail_cache = atomic_load_explicit(&t->shared.tail, memory_order_acquire);
    wait_record(t, n);
  }
again:
  cap = t->prod.cap, h = t->prod.head_local;
  pos = h & (cap - 1);
  need = n + (pos + n > cap ? cap - pos : 0);
  if (h + need - t->prod.tail_cache > cap / 2) {
    /* Half full as far as we know: look at the real tail; still half full, the writer is
     * behind: a larger ring if this thread's share of the budget allows, else wake the writer
     * (once until it drains this ring). */
    t->prod.tail_cache = atomic_load_explicit(&t->shared.tail, memory_order_acquire);
    if (h + need - t->prod.tail_cache > cap / 2) {
      if (grow(t)) goto again;
      if (!atomic_load_explicit(&t->shared.wake_sent, memory_order_relaxed)) {
        atomic_store_explicit(&t->shared.wake_sent, 1, memory_order_relaxed);
        dlh_writer_wake();
      }
    }
    if (h + need - t->prod.tail_cache > cap) {
      /* room for the record and for the WAIT record that says this wait before it */
      uint64_t wn = need_at(h, cap, DLH_REC_WAIT_WORDS);
      if (!wait_room(t, h + wn + need_at(h + wn, cap, n) - cap)) {
        if (!t->prod.sampling)
          atomic_fetch_add_explicit(&t->shared.dropped, 1, memory_order_relaxed);
        return NULL;
      }
      if (atomic_load_explicit(&t->self.waits, memory_order_relaxed) && wait_record(t, n))
        goto again;
    }
  }
  if (pos + n > cap) { /* wrap: pad to the end of the ring */
    t->prod.buf[pos] = dlh_rec_header(0, 0, 0, DLH_REC_PAD, 0, 0);
    h += cap - pos;
    t->prod.head_local = h;
    pos = 0;
  }
  /* Until the next wrap or half the ring past the tail as we know it, the fast path's one
   * comparison says all of the above. */
  uint64_t wrap = (h & ~(cap - 1)) + cap, half = t->prod.tail_cache + cap / 2;
  t->prod.room_end = wrap < half ? wrap : half;
  return t->prod.buf + pos;
}

/* The ring is full and cannot grow: the thread waits for the writer to move the tail to `want`
 * (a futex wait on shared.drained, which the writer bumps whenever it gives words back while
 * `waiting` is set), as long as the writer is at work: it drains some ring (dlh_writer_progress)
 * or runs (its CPU clock advances: compressing a large frame, say) at least every
 * DLHOOK_RING_WAIT_MS (counted in 10 ms slices, see wait_room); never for a host sample. So a
 * thread that calls faster than the writer drains runs at the writer's pace instead of losing
 * calls. A wait that runs out (the writer blocked or gone; one that is runnable, waiting for a
 * CPU on a loaded machine, is waited for) is not tried again until the writer has moved the
 * tail: it costs a thread one wait, not one per call. Returns 1 when there is room. The wait takes no
 * lock and holds nothing the writer needs; it only lends the writer the CPU it is short of. */
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The writer thread's CPU clock (writer.c sets it at its first pass); 0 when unknown or gone. */
clockid_t dlh_writer_cpu_clock;
_Atomic int dlh_writer_cpu_clock_set;

pid_t dlh_writer_tid;

/* 1 when the writer thread is runnable (state R in /proc/self/task/TID/stat: running or waiting
 * for a CPU), 0 when it sleeps, is blocked or gone, or that cannot be read. Async-signal-safe
 * (open, read, close; no stdio); one file descriptor for a moment. */
static int writer_runnable(void) {
  pid_t tid = __atomic_load_n(&dlh_writer_tid, __ATOMIC_RELAXED);
  if (tid <= 0) return 0;
  char path[64] = "/proc/self/task/", digits[16], st[512];
  int nd = 0, n = 16;
  for (pid_t v = tid; v && nd < 15; v /= 10) digits[nd++] = (char)('0' + v % 10);
  while (nd) path[n++] = digits[--nd];
  memcpy(path + n, "/stat", 6);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t len = read(fd, st, sizeof st - 1);
  close(fd);
  if (len <= 0) return 0;
  st[len] = 0;
  const char *r = strrchr(st, ')'); /* the name may hold anything: the state follows its ')' */
  return r && r[1] == ' ' && r[2] == 'R';
}

static uint64_t writer_cpu_ns(void) {
  struct timespec ts;
  if (!atomic_load_explicit(&dlh_writer_cpu_clock_set, memory_order_acquire) ||
      clock_gettime(dlh_writer_cpu_clock, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A wait for the writer from tick t0 to t1, added to the thread's waits not yet in a WAIT
 * record (reserve_slow writes one as soon as there is room). */
static void note_wait(struct dlh_thread *t, uint64_t t0, uint64_t t1) {
  uint64_t n = atomic_load_explicit(&t->self.waits, memory_order_relaxed);
  uint64_t sum = n ? atomic_load_explicit(&t->self.wait_sum, memory_order_relaxed) : 0;
  if (!n) atomic_store_explicit(&t->self.wait_t0, t0, memory_order_relaxed);
  atomic_store_explicit(&t->self.wait_t1, t1, memory_order_relaxed);
  atomic_store_explicit(&t->self.wait_sum, sum + (t1 > t0 ? t1 - t0 : 0), memory_order_relaxed);
  atomic_store_explicit(&t->self.waits, n + 1, memory_order_release);
}

static __attribute__((noinline)) int wait_room(struct dlh_thread *t, uint64_t want) {
  enum { SLICE_NS = 10000000 }; /* a look at the writer every 10 ms */
  uint64_t tail = t->prod.tail_cache;
  if (!dlh_cfg.ring_wait_ns || t->prod.sampling) return 0;
  if (t->prod.wait_off) {
    if (t->prod.wait_off == tail + 1) return 0;
    t->prod.wait_off = 0;
  }
  /* The time without progress is counted in slices of 10 ms that passed here, each counted
   * once however long it took: a stall of the whole machine (another process, a virtual
   * machine's host) that also kept the writer from running counts as one slice, not as time
   * the writer had. */
  uint64_t idle_max = dlh_cfg.ring_wait_ns / SLICE_NS ? dlh_cfg.ring_wait_ns / SLICE_NS : 1;
  uint64_t tk0 = dlh_ticks();
  int slept = 0; /* a wait that found room at once is none */
  uint64_t now = mono_ns(), slice_start = now, idle = 0, seen = tail, cpu = writer_cpu_ns();
  uint64_t busy = atomic_load_explicit(&dlh_writer_progress, memory_order_relaxed);
  atomic_store(&t->shared.waiting, 1); /* seq_cst: the writer's fence after its tail store */
  for (;;) {
    uint32_t seq = atomic_load(&t->shared.drained);
    tail = atomic_load(&t->shared.tail);
    if (tail >= want) break;
    uint64_t b = atomic_load_explicit(&dlh_writer_progress, memory_order_relaxed);
    if (tail != seen || b != busy) { /* the writer is at work: it has the full time again */
      seen = tail;
      busy = b;
      idle = 0;
      slice_start = now;
    } else if (now - slice_start >= SLICE_NS) {
      uint64_t c = writer_cpu_ns(); /* no drain: does the writer run at all? */
      if (c && c != cpu) idle = 0;
      else idle++;
      cpu = c;
      slice_start = now;
      /* out of time: a writer that waits for a CPU (a loaded machine) is waited for still; one
       * that sleeps or is blocked that long is not */
      if (idle >= idle_max && writer_runnable()) idle = 0;
      if (idle >= idle_max) {
        t->prod.wait_off = tail + 1;
        break;
      }
    }
    dlh_writer_wake();
    uint64_t used = now - slice_start, left = used < SLICE_NS ? SLICE_NS - used : 1;
    struct timespec rel = {0, (long)left};
    slept = 1;
    syscall(SYS_futex, (uint32_t *)&t->shared.drained, FUTEX_WAIT_PRIVATE, seq, &rel, NULL, 0);
    now = mono_ns();
  }
  atomic_store(&t->shared.waiting, 0);
  t->prod.tail_cache = tail;
  if (slept) note_wait(t, tk0, dlh_ticks());
  return tail >= want;
}

/* Reserves n words at head_local (moved past a PAD record at the wrap); NULL: dropped and
 * counted. room_end <= the next wrap and <= tail_cache + cap / 2, so a record that fits below it
 * needs neither a PAD record nor a look at the tail. */
static inline uint64_t *reserve_words(struct dlh_thread *t, uint64_t n) {
  uint64_t h = t->prod.head_local;
  if (DLH_LIKELY(h + n <= t->prod.room_end)) return t->prod.buf + (h & (t->prod.cap - 1));
  return reserve_slow(t, n);
}

static inline void publish_words(struct dlh_thread *t, uint64_t n) {
  t->prod.head_local += n;
  atomic_store_explicit(&t->shared.head, t->prod.head_local, memory_order_release);
}

static inline int store_begin(struct dlh_thread *t) {
  if (DLH_UNLIKELY(t->prod.storing)) {
    /* A signal handler's call interrupted this thread's own store: the words between reserve
     * and publish are not ours to take. Dropped and counted. */
    if (!t->prod.sampling) atomic_fetch_add_explicit(&t->shared.dropped, 1, memory_order_relaxed);
    return 0;
  }
  t->prod.storing = 1;
  atomic_signal_fence(memory_order_seq_cst);
  return 1;
}

static void sample_pending_store(struct dlh_thread *t);

static inline void store_end(struct dlh_thread *t) {
  atomic_signal_fence(memory_order_seq_cst);
  t->prod.storing = 0;
  atomic_signal_fence(memory_order_seq_cst);
  if (DLH_UNLIKELY(t->prod.smp_pending)) sample_pending_store(t);
}

/* Host samples that land inside a thread's own store (sample.c: on_cpu_sample cannot take ring
 * words there) are kept: the handler leaves the sample in self.smp_* and raises
 * prod.smp_pending, and the store's end writes it as a SAMPLE record attributed to the call
 * just stored (its function, and its stack when the handler could not take one: it came
 * inside the call's own stack walk). Counted in dlh_ring_samples_lost when the ring is full. */
_Atomic uint64_t dlh_ring_samples_lost;

static __attribute__((noinline)) void sample_pending_store(struct dlh_thread *t) {
  do {
    t->prod.storing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint32_t stack = t->self.smp_stack, fn = 0;
    const uint64_t *last = t->prod.last_api; /* the API record just stored, or its repeats' */
    if (last && t->prod.fold_gen == dlh_trace_gen) {
      fn = dlh_rec_fn(last[0]);
      if (!stack) stack = dlh_rec_stack(last[3]);
    }
    t->prod.sampling = 1; /* a full ring drops the sample, not a call */
    uint64_t *w = reserve_words(t, DLH_REC_SAMPLE_WORDS);
    t->prod.sampling = 0;
    if (w) {
      w[0] = dlh_rec_header(0, 0, 0, DLH_REC_SAMPLE, 0 /* SAMPLE_CPU */, DLH_REC_SAMPLE_WORDS);
      w[1] = t->self.smp_tk;
      w[2] = t->self.smp_weight;
      w[3] = (uint64_t)stack | (uint64_t)t->os.tid << 32;
      w[4] = (uint64_t)fn << 32;
      publish_words(t, DLH_REC_SAMPLE_WORDS);
      t->prod.last_api = NULL;
      t->prod.fold_rec = NULL;
    } else {
      atomic_fetch_add_explicit(&dlh_ring_samples_lost, 1, memory_order_relaxed);
    }
    t->prod.smp_pending = 0;
    atomic_signal_fence(memory_order_seq_cst);
    t->prod.storing = 0;
    atomic_signal_fence(memory_order_seq_cst);
  } while (t->prod.smp_pending);
}

/* A record other than an API record or a FOLD record (LINK, NVTX): the next call does not fold
 * into the API record before it. */
uint64_t *dlh_ring_reserve(struct dlh_thread *t, uint64_t n) {
  if (!store_begin(t)) return NULL;
  uint64_t *w = reserve_words(t, n);
  if (!w) store_end(t);
  return w;
}

void dlh_ring_publish(struct dlh_thread *t, uint64_t n) {
  publish_words(t, n);
  t->prod.last_api = NULL;
  store_end(t);
}

void dlh_ring_abandon(struct dlh_thread *t) { store_end(t); }

/* ---------------------------------------------------------------- calls */

_Static_assert(DLH_API_KEY(0x12345, 3) == ((uint64_t)0x12345 | (uint64_t)3 << 32 |
                                           (uint64_t)DLH_REC_API << 48 |
                                           (uint64_t)(DLH_REC_HDR_WORDS + 3) << 56),
               "DLH_API_KEY (dlh_hook.h) and the header layout (ring.h) differ");

/* A new FOLD record after the last API record (its first repeat), when the writer took the one
 * before (sealed) or there is none yet; dropped and counted when the ring is full. */
static void fold_new(struct dlh_thread *t, uint64_t t0, uint64_t t1) {
  uint64_t a = t->prod.head_local;
  uint64_t *w = reserve_words(t, DLH_REC_FOLD_WORDS);
  if (!w) return;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_FOLD, 0, DLH_REC_FOLD_WORDS);
  w[1] = t0;
  w[2] = 1;
  w[3] = w[4] = 0;
  w[5] = t1;        /* slot of count 1 */
  w[6] = t1 - t0;
  publish_words(t, DLH_REC_FOLD_WORDS);
  t->prod.fold_rec = w;
  /* FOLD records alone (one per writer pass) come round the ring to the API record they repeat:
   * once the words [a, head) written now come near it, later calls no longer fold into it. */
  uint64_t dist = (a - (uint64_t)(t->prod.last_api - t->prod.buf)) & (t->prod.cap - 1);
  if (dist == 0 ||
      dist + (t->prod.head_local - a) > t->prod.cap - (DLH_REC_HDR_WORDS + 1 + DLH_MAX_ARGS))
    t->prod.last_api = NULL;
}

/* Adds a repeat of the thread's last API record to its FOLD record while the writer has not
 * taken it: returns 0 when there is none or the writer sealed it (then the CAS fails). */
static inline __attribute__((always_inline)) int fold_add(struct dlh_thread *t, uint64_t t0,
                                                          uint64_t t1) {
  uint64_t *f = t->prod.fold_rec;
  if (DLH_UNLIKELY(f == NULL)) return 0;
  uint64_t c = __atomic_load_n(&f[2], __ATOMIC_RELAXED);
  if (DLH_UNLIKELY(c & DLH_FOLD_SEALED)) return 0;
  uint64_t cur = 3 + 2 * (c & 1), next = cur ^ 6; /* slots at words 3 and 5 */
  __atomic_store_n(&f[next], t1, __ATOMIC_RELAXED);
  __atomic_store_n(&f[next + 1], f[cur + 1] + (t1 - t0), __ATOMIC_RELAXED);
  return __atomic_compare_exchange_n(&f[2], &c, c + 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* A call folds into the thread's last API record: same header (function, args count, depth, no
 * correlation id), return value and stack, arguments, and trace. last_api is NULL when folding
 * is off, when the last record stored was not an API record without a correlation id, and
 * before the ring comes round to it (fold_new): its words are still in the ring, only this
 * thread writes there. */
static inline __attribute__((always_inline)) int folds(const struct dlh_thread *t, uint64_t h0,
                                                       uint64_t w3, const uint64_t *args,
                                                       uint32_t nargs) {
  const uint64_t *last = t->prod.last_api;
  if (!last || last[0] != h0 || last[3] != w3 || t->prod.fold_gen != dlh_trace_gen) return 0;
  for (uint32_t i = 0; i < nargs; i++)
    if (last[DLH_REC_HDR_WORDS + i] != args[i]) return 0;
  return 1;
}

/* After an API record at w (NULL: one that nothing folds into) was filled. */
static inline __attribute__((always_inline)) void api_published(struct dlh_thread *t,
                                                                const uint64_t *w, uint64_t h,
                                                                uint64_t n) {
  t->prod.head_local = h + n;
  atomic_store_explicit(&t->shared.head, h + n, memory_order_release);
  t->prod.last_api = dlh_cfg.fold ? w : NULL;
  t->prod.fold_gen = dlh_trace_gen;
  t->prod.fold_rec = NULL;
}

static inline __attribute__((always_inline)) void api_fill(uint64_t *a, const uint64_t *args,
                                                           uint32_t nargs) {
  for (uint32_t i = 0; i < nargs; i++) a[i] = args[i];
}

/* The slow end of a repeat (storing set; ends the store): a FOLD record to start. */
static __attribute__((noinline)) void fold_new_end(struct dlh_thread *t, uint64_t t0,
                                                   uint64_t t1) {
  fold_new(t, t0, t1);
  store_end(t);
}

/* dlh_call_store when there is more to do than stack-less stores: a correlation id, a call
 * stack, a signal handler's call inside this thread's store, or a look at the tail. */
static __attribute__((noinline)) void call_store_full(dlh_call *c, uint64_t key, int64_t ret,
                                                      const uint64_t *args, uint64_t t1) {
  struct dlh_thread *t = c->t;
  uint64_t h0 = key | (uint64_t)(uint8_t)c->depth << 40;
  uint64_t corr = t->prod.pending_corr;
  t->prod.pending_corr = 0; /* this call's, whether its record is stored or dropped */
  if (!store_begin(t)) return;
  /* The call stack, interned (unwind/capture.c): lock-free, no malloc. */
  uint32_t stack = dlh_stack_mode ? dlh_stack_capture(&t->stack_cache) : 0;
  uint64_t w3 = dlh_rec_ret_stack(ret, stack), t0 = c->t0;
  if (!corr && folds(t, h0, w3, args, dlh_rec_nargs(h0))) {
    if (!fold_add(t, t0, t1)) fold_new(t, t0, t1);
    store_end(t);
    return;
  }
  uint64_t n = dlh_rec_nwords(h0) + (corr != 0);
  uint64_t *w = reserve_words(t, n), h = t->prod.head_local;
  if (w) {
    /* a call with a correlation id never folds, nor does the next call into it */
    w[0] = corr ? dlh_rec_header(dlh_rec_fn(h0), dlh_rec_nargs(h0), dlh_rec_depth(h0),
                                 DLH_REC_API, DLH_REC_F_CORR, n)
                : h0;
    w[1] = t0;
    w[2] = t1 - t0;
    w[3] = w3;
    uint64_t *a = w + DLH_REC_HDR_WORDS;
    if (corr) *a++ = corr;
    api_fill(a, args, dlh_rec_nargs(h0));
    api_published(t, corr ? NULL : w, h, n);
  }
  store_end(t);
}

/* The hot path of every recorded call (key: DLH_API_KEY(fn, nargs), dlh_hook.h), nargs a constant
 * in dlh_call_store0..2. Stacks off, no correlation id: a repeat is a compare-and-swap on the
 * FOLD record, any other call an API record in the words below room_end. Returns 0 when the
 * call is not stored yet (nor its store begun): call_store_full does it all then. args never
 * leaves this function, so that the arguments of dlh_call_store0..2 stay in registers. */
static inline __attribute__((always_inline)) int call_store(dlh_call *c, uint64_t key,
                                                            int64_t ret, const uint64_t *args,
                                                            uint32_t nargs, uint64_t t1) {
  struct dlh_thread *t = c->t;
  uint32_t depth = c->depth;
  t->hot.depth = depth;
  if (DLH_UNLIKELY(t->prod.pending_corr | t->prod.storing | (unsigned)dlh_stack_mode)) return 0;
  t->prod.storing = 1;
  atomic_signal_fence(memory_order_seq_cst);
  uint64_t h0 = key | (uint64_t)(uint8_t)depth << 40;
  uint64_t w3 = dlh_rec_ret_stack(ret, 0), t0 = c->t0;
  if (folds(t, h0, w3, args, nargs)) {
    if (DLH_LIKELY(fold_add(t, t0, t1)))
      store_end(t);
    else
      fold_new_end(t, t0, t1);
    return 1;
  }
  uint64_t h = t->prod.head_local, n = DLH_REC_HDR_WORDS + nargs;
  if (DLH_UNLIKELY(h + n > t->prod.room_end)) { /* a look at the tail or a wrap: out of line */
    store_end(t);
    return 0;
  }
  uint64_t *w = t->prod.buf + (h & (t->prod.cap - 1));
  w[0] = h0;
  w[1] = t0;
  w[2] = t1 - t0;
  w[3] = w3;
  api_fill(w + DLH_REC_HDR_WORDS, args, nargs);
  api_published(t, w, h, n);
  store_end(t);
  return 1;
}

void dlh_call_store(dlh_call *c, uint64_t key, int64_t ret, const uint64_t *args, uint64_t t1) {
  if (DLH_UNLIKELY(!call_store(c, key, ret, args, dlh_rec_nargs(key), t1)))
    call_store_full(c, key, ret, args, t1);
}

void dlh_call_store0(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1) {
  if (DLH_UNLIKELY(!call_store(c, key, ret, NULL, 0, t1))) call_store_full(c, key, ret, NULL, t1);
}

/* the arguments in an array on the slow path only */
static __attribute__((noinline)) void call_store_full2(dlh_call *c, uint64_t key, int64_t ret,
                                                       uint64_t t1, uint64_t a0, uint64_t a1) {
  const uint64_t a[2] = {a0, a1};
  call_store_full(c, key, ret, a, t1);
}

void dlh_call_store1(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0) {
  const uint64_t a[1] = {a0};
  if (DLH_UNLIKELY(!call_store(c, key, ret, a, 1, t1))) call_store_full2(c, key, ret, t1, a0, 0);
}

void dlh_call_store2(dlh_call *c, uint64_t key, int64_t ret, uint64_t t1, uint64_t a0,
                     uint64_t a1) {
  const uint64_t a[2] = {a0, a1};
  if (DLH_UNLIKELY(!call_store(c, key, ret, a, 2, t1))) call_store_full2(c, key, ret, t1, a0, a1);
}

void dlh_record_link(struct dlh_thread *t, uint64_t corr) {
  uint64_t *w = dlh_ring_reserve(t, DLH_REC_LINK_WORDS);
  if (!w) return;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_LINK, 0, DLH_REC_LINK_WORDS);
  w[1] = corr;
  dlh_ring_publish(t, DLH_REC_LINK_WORDS);
}

/* ---------------------------------------------------------------- ring memory */

/* Rings given back (an exited thread's, or one a GROW record replaced) wait in lists by size,
 * kept in their own first words (no malloc: a thread's first call may come from a signal
 * handler that interrupted malloc), for a new thread or a thread growing its ring: their pages
 * are already there, and no munmap stops every core of the process to flush its TLB. They stay
 * counted in the budget; beyond a sixteenth of it, a ring given back is unmapped instead. The
 * lists' lock is held for a few instructions, never across a call, and never by a thread twice
 * (a thread takes a ring while attaching, with recording blocked, or inside its own store,
 * where a signal handler's store is dropped). */
struct free_ring { struct free_ring *next; uint64_t cap; };
#define RING_CLASSES 44 /* log2 of the size in bytes */
static struct free_ring *free_rings[RING_CLASSES];
static _Atomic uint64_t free_bytes; /* written under free_lock */
static atomic_flag free_lock = ATOMIC_FLAG_INIT;
/* The threads holding a ring and the bytes of all rings (those in the lists and those a GROW
 * record replaced included): what a thread may grow its ring to. */
static _Atomic uint64_t rings_live, rings_bytes;

static void free_lock_take(void) {
  while (atomic_flag_test_and_set_explicit(&free_lock, memory_order_acquire)) sched_yield();
}
static void free_lock_give(void) { atomic_flag_clear_explicit(&free_lock, memory_order_release); }

static unsigned ring_class(uint64_t bytes) {
  unsigned c = 63u - (unsigned)__builtin_clzll(bytes);
  return c < RING_CLASSES ? c : RING_CLASSES - 1;
}

/* A ring of exactly `bytes` from the lists, or NULL. */
static uint64_t *take_free(uint64_t bytes) {
  unsigned c = ring_class(bytes);
  free_lock_take();
  struct free_ring *f = free_rings[c];
  if (f && f->cap * 8 == bytes) {
    free_rings[c] = f->next;
    free_bytes -= bytes;
  } else {
    f = NULL;
  }
  free_lock_give();
  if (f) {
    f->next = NULL;
    f->cap = 0;
  }
  return (uint64_t *)f;
}

/* A new thread's ring: 16 KiB (a thousand threads that call once hold 16 MiB), or
 * DLHOOK_RING_KB when smaller. Mapped whatever the budget: a thread's calls are recorded. */
#define RING_START_BYTES (16u << 10)

static uint64_t start_bytes(void) {
  uint64_t b = 4096;
  uint64_t max = dlh_cfg.ring_bytes < RING_START_BYTES ? dlh_cfg.ring_bytes : RING_START_BYTES;
  while (b * 2 <= max) b *= 2;
  return b;
}

static uint64_t *map_ring(uint64_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return NULL;
  dlh_mem_add(DLH_MEM_RINGS, (int64_t)bytes);
  atomic_fetch_add_explicit(&rings_bytes, bytes, memory_order_relaxed);
  return p;
}

void dlh_ring_free(uint64_t *buf, uint64_t cap_words) {
  if (!buf) return;
  uint64_t bytes = cap_words * 8;
  struct free_ring *f = (struct free_ring *)buf;
  free_lock_take();
  int keep = free_bytes + bytes <= dlh_cfg.mem_limit / 16;
  if (keep) {
    unsigned c = ring_class(bytes);
    f->cap = cap_words;
    f->next = free_rings[c];
    free_rings[c] = f;
    free_bytes += bytes;
  }
  free_lock_give();
  if (keep) return;
  munmap(buf, bytes);
  dlh_mem_add(DLH_MEM_RINGS, -(int64_t)bytes);
  atomic_fetch_sub_explicit(&rings_bytes, bytes, memory_order_relaxed);
}

uint64_t *dlh_ring_alloc(uint64_t *cap_words) {
  uint64_t bytes = start_bytes();
  if (*cap_words && *cap_words * 8 < bytes)
    while (bytes > 4096 && bytes / 2 >= *cap_words * 8) bytes /= 2;
  /* the rings' half of the budget taken, or the budget nearly spent (hundreds of threads): the
   * smallest ring, which grows if its share allows */
  if (atomic_load_explicit(&rings_bytes, memory_order_relaxed) + bytes > dlh_cfg.mem_limit / 2 ||
      !dlh_mem_fits(bytes + dlh_cfg.mem_limit / 16))
    bytes = 4096;
  uint64_t *p = take_free(bytes);
  if (!p && !(p = map_ring(bytes))) return NULL;
  atomic_fetch_add_explicit(&rings_live, 1, memory_order_relaxed);
  *cap_words = bytes / 8;
  return p;
}

/* The thread's ring doubled (reserve_slow, the ring half full and the writer behind), when
 * DLHOOK_RING_KB and the thread's share of the budget allow it: a GROW record in the old ring
 * sends the writer to the new one, where this thread goes on at the same word counts. The old
 * ring is the writer's to give back; nothing of this thread points into it any more (no record
 * to fold into). Returns 1 when the thread moved to a larger ring. */
static __attribute__((noinline)) int grow(struct dlh_thread *t) {
  uint64_t cap = t->prod.cap, bytes = cap * 16; /* doubled, in bytes */
  if (bytes > dlh_cfg.ring_bytes || t->prod.no_grow) return 0;
  uint64_t live = atomic_load_explicit(&rings_live, memory_order_relaxed);
  uint64_t held = atomic_load_explicit(&rings_bytes, memory_order_relaxed);
  int64_t others = (int64_t)dlh_mem_total() - (int64_t)held;
  /* the rings together: what the rest of dlhook leaves of the budget, at most half of it (the
   * writer's buffers and the stack tables are measured after the fact, and grow too) */
  uint64_t o = others > 0 ? (uint64_t)others : 0;
  o += dlh_cfg.mem_limit / 16; /* what those parts may grow by before they are measured again */
  uint64_t room = dlh_cfg.mem_limit > o ? dlh_cfg.mem_limit - o : 0;
  if (room > dlh_cfg.mem_limit / 2) room = dlh_cfg.mem_limit / 2;
  if (bytes > room / (live ? live : 1)) return 0;
  uint64_t h = t->prod.head_local, pos = h & (cap - 1);
  uint64_t pad = pos + DLH_REC_GROW_WORDS > cap ? cap - pos : 0;
  if (h + pad + DLH_REC_GROW_WORDS - t->prod.tail_cache > cap) return 0; /* no room to say so */
  uint64_t *nb = take_free(bytes); /* already counted */
  if (!nb) {
    /* the rings in use after this one (the one it replaces given back) within their room */
    uint64_t gone = atomic_load_explicit(&free_bytes, memory_order_relaxed) + cap * 8;
    uint64_t in_use = held > gone ? held - gone : 0;
    if (in_use + bytes > room || !dlh_mem_fits(bytes + dlh_cfg.mem_limit / 16)) return 0;
    if (!(nb = map_ring(bytes))) {
      t->prod.no_grow = 1; /* out of address space: not again for this thread */
      return 0;
    }
  }
  if (pad) {
    t->prod.buf[pos] = dlh_rec_header(0, 0, 0, DLH_REC_PAD, 0, 0);
    h += pad;
    pos = 0;
  }
  uint64_t *w = t->prod.buf + pos;
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_GROW, 0, DLH_REC_GROW_WORDS);
  w[1] = (uint64_t)(uintptr_t)nb;
  w[2] = bytes / 8;
  t->prod.buf = nb;
  t->prod.cap = bytes / 8;
  t->prod.head_local = h + DLH_REC_GROW_WORDS;
  t->prod.room_end = 0;
  t->prod.last_api = NULL;
  t->prod.fold_rec = NULL;
  atomic_store_explicit(&t->shared.head, t->prod.head_local, memory_order_release);
  return 1;
}

/* Called by the writer once an exited thread's ring is drained. */
void dlh_ring_release(struct dlh_thread *t) {
  if (t->writer.buf) {
    dlh_ring_free(t->writer.buf, t->writer.cap);
    atomic_fetch_sub_explicit(&rings_live, 1, memory_order_relaxed);
  }
  t->writer.buf = NULL;
  t->prod.buf = NULL;
  atomic_store(&t->shared.state, DLH_T_RETIRED);
}

/* The reader's side, with the writer stopped (dlhook attach, between traces): every record up
 * to the head dropped, the rings that GROW records replaced freed. */
void dlh_ring_skip(struct dlh_thread *t) {
  uint64_t head = atomic_load_explicit(&t->shared.head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&t->shared.tail, memory_order_relaxed);
  while (tail < head && t->writer.buf) {
    uint64_t cap = t->writer.cap, pos = tail & (cap - 1), *w = t->writer.buf + pos;
    uint64_t nw = dlh_rec_nwords(w[0]);
    if (dlh_rec_kind(w[0]) == DLH_REC_GROW && nw == DLH_REC_GROW_WORDS) {
      uint64_t *nb = (uint64_t *)(uintptr_t)w[1], ncap = w[2];
      dlh_ring_free(t->writer.buf, cap);
      t->writer.buf = nb;
      t->writer.cap = ncap;
    } else if (dlh_rec_kind(w[0]) == DLH_REC_PAD || nw == 0) {
      nw = cap - pos;
    }
    tail += nw;
  }
  atomic_store_explicit(&t->shared.tail, head, memory_order_release);
}

/* fork child: the parent's rings stay mapped in the child and are not reused (only the forking
 * thread lives on; it may have held the lock). */
void dlh_ring_after_fork_child(void) {
  atomic_flag_clear(&free_lock);
  memset(free_rings, 0, sizeof free_rings);
  free_bytes = 0;
  atomic_store(&dlh_writer_cpu_clock_set, 0); /* the parent's writer: not this process's */
  dlh_writer_tid = 0;
  atomic_store(&rings_live, 0);
  atomic_store(&rings_bytes, 0);
}
