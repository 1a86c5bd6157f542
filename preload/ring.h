/* ring.h — the per-thread ring and the layout of its records: the one place where records are
 * packed (by the recording thread) and unpacked (by the writer thread).
 *
 * A ring is `cap` words of 8 bytes (cap a power of two), written only by its thread (head) and
 * read only by the writer (tail). A record is a header word and its payload, contiguous (a
 * record that would cross the end is preceded by a PAD header that sends the reader to word 0).
 *
 * Header word: fn (bits 0-31) | nargs (32-39) | depth (40-47) | kind (48-51) | flags (52-55) |
 *              nwords (56-63)
 *   API   word 1: start ticks   word 2: duration in ticks   word 3: ret (low 32 bits,
 *         sign-extended on reading) | stack id (high 32)   [word 4: correlation id, when
 *         flags has DLH_REC_F_CORR]   then nargs argument words.
 *   LINK  word 1: a CUPTI correlation id whose GPU work belongs to the next outermost (depth 0)
 *         call this thread records (a kernel launched by cublasLtMatmul inside cublasSgemm
 *         links to the cublasSgemm call).
 *   NVTX  see nvtx.c.
 *   SAMPLE  a host sample (sample.c), flags = its SampleKind: word 1: ticks; word 2: weight in
 *         ns; word 3: stack id | tid << 32 (the sampled thread: the sampler thread's ring holds
 *         other threads' wait samples); word 4: state (system call + 1) | api fn << 32.
 *   FOLD  repeats of the thread's previous API record (same function, args, return value,
 *         stack and depth; neither carries a correlation id): word 1: first repeat's start
 *         ticks; word 2: repeats (count) | DLH_FOLD_SEALED; words 3-4 and 5-6: two slots of
 *         (last repeat's end ticks, sum of the repeats' durations), the one of count's parity
 *         being current.
 *   GROW  the thread moved to a larger ring (ring.c: grow): word 1: the new ring's address;
 *         word 2: its size in words. The records that follow are there, at the same word
 *         counts (head and tail go on counting: a record's place is its count & (cap - 1)); the
 *         reader gives this ring back once it has read this record (dlh_ring_free).
 *   NCCL  a call of NCCL's profiler plugin (start, state or stop of an event): see ncclprof.c.
 *   WAIT  the thread waited for the writer to drain its ring (ring.c: wait_room), one or more
 *         times since its last WAIT record: word 1: the first wait's start ticks; word 2: the
 *         last wait's end ticks; word 3: the waits (count); word 4: their durations summed, in
 *         ticks.
 *
 * Folding in place: the recording thread adds a repeat to the FOLD record it wrote last by
 * filling the other slot and then moving count to count + 1 with a compare-and-swap; the writer
 * takes the record by setting DLH_FOLD_SEALED (atomic or) and reads the slot of the count it got.
 * A repeat that finds the record sealed writes a new FOLD record. So neither side waits, no
 * repeat is lost or counted twice, and a polling thread costs one small record per writer pass
 * instead of a record per call. */
#ifndef DLH_RING_H
#define DLH_RING_H

#include <stdatomic.h>
#include <stdint.h>

enum { DLH_REC_PAD = 0, DLH_REC_API = 1, DLH_REC_LINK = 2, DLH_REC_NVTX = 3, DLH_REC_FOLD = 4,
       DLH_REC_SAMPLE = 5, DLH_REC_GROW = 6,
       DLH_REC_WAIT = 7 };
#define DLH_REC_F_CORR 1u
#define DLH_REC_HDR_WORDS 4
#define DLH_REC_LINK_WORDS 2
#define DLH_REC_FOLD_WORDS 7
#define DLH_REC_SAMPLE_WORDS 5
#define DLH_REC_GROW_WORDS 3
#define DLH_REC_WAIT_WORDS 5
#define DLH_FOLD_SEALED (1ull << 63)
enum { DLH_REC_NCCL = 9 }; /* ncclprof.c */

static inline uint64_t dlh_rec_header(uint32_t fn, uint32_t nargs, uint32_t depth, unsigned kind,
                                      unsigned flags, uint64_t nwords) {
  return (uint64_t)fn | (uint64_t)(nargs & 0xff) << 32 | (uint64_t)(depth & 0xff) << 40 |
         (uint64_t)(kind & 0xf) << 48 | (uint64_t)(flags & 0xf) << 52 | nwords << 56;
}
static inline uint32_t dlh_rec_fn(uint64_t h) { return (uint32_t)h; }
static inline uint32_t dlh_rec_nargs(uint64_t h) { return (uint32_t)(h >> 32) & 0xff; }
static inline uint32_t dlh_rec_depth(uint64_t h) { return (uint32_t)(h >> 40) & 0xff; }
static inline unsigned dlh_rec_kind(uint64_t h) { return (unsigned)(h >> 48) & 0xf; }
static inline unsigned dlh_rec_flags(uint64_t h) { return (unsigned)(h >> 52) & 0xf; }
static inline uint64_t dlh_rec_nwords(uint64_t h) { return h >> 56; }

/* API word 3: return value and stack id */
static inline uint64_t dlh_rec_ret_stack(int64_t ret, uint32_t stack) {
  return (uint32_t)ret | (uint64_t)stack << 32;
}
static inline int64_t dlh_rec_ret(uint64_t w3) { return (int64_t)(int32_t)(uint32_t)w3; }
static inline uint32_t dlh_rec_stack(uint64_t w3) { return (uint32_t)(w3 >> 32); }

struct dlh_thread;

/* Reserves n contiguous words in the thread's ring (padding at the wrap). Returns NULL and
 * counts a drop when the ring is full. The caller fills the words, then publishes. */
uint64_t *dlh_ring_reserve(struct dlh_thread *t, uint64_t n);
void dlh_ring_publish(struct dlh_thread *t, uint64_t n);
void dlh_ring_abandon(struct dlh_thread *t);        /* reserved, nothing written */

/* Ring memory. A new thread's ring is small (16 KiB, or DLHOOK_RING_KB when smaller; recycled
 * from an exited thread when one waits); it doubles when the thread fills half of it faster
 * than the writer drains it, up to DLHOOK_RING_KB and to the thread's share of the memory
 * budget: the rings together take at most half of DLHOOK_MEM_MB and no more than the rest of
 * dlhook leaves of it, shared out over the threads that hold a ring. A ring that is full and
 * cannot grow makes its thread wait while the writer drains (DLHOOK_RING_WAIT_MS, ring.c).
 * dlh_ring_alloc: the ring for a new thread (*cap_words non-zero on entry: at most that many
 * words; its size in words on return), NULL when none can be mapped. dlh_ring_free: the reader frees a ring that a GROW
 * record replaced. dlh_ring_release: the writer gives an exited thread's drained ring back.
 * dlh_ring_skip: the reader drops every record up to the head (following GROW records). */
uint64_t *dlh_ring_alloc(uint64_t *cap_words);
void dlh_ring_free(uint64_t *buf, uint64_t cap_words);
void dlh_ring_release(struct dlh_thread *t);
void dlh_ring_skip(struct dlh_thread *t);

/* The writer's side of a FOLD record at w: seals it and returns the repeats, with the last
 * repeat's end ticks and the sum of their durations. */
static inline uint64_t dlh_fold_take(uint64_t *w, uint64_t *last_end, uint64_t *dur_sum) {
  uint64_t c = __atomic_fetch_or(&w[2], DLH_FOLD_SEALED, __ATOMIC_ACQ_REL) & ~DLH_FOLD_SEALED;
  const uint64_t *slot = w + 3 + 2 * (c & 1);
  *last_end = __atomic_load_n(&slot[0], __ATOMIC_RELAXED);
  *dur_sum = __atomic_load_n(&slot[1], __ATOMIC_RELAXED);
  return c;
}

#endif
