/* capture.c — the hot path of call stacks: unw_backtrace, the Python splice, and lock-free
 * interning of stacks and Python frames.
 *
 * libunwind: Debian's static libunwind.a / libunwind-x86_64.a are not position independent
 * (R_X86_64_32 and local-exec TLS relocations in .text), so they cannot be linked into
 * libdlhook.so. The shared libunwind.so.8 exports _Unwind_* and backtrace; linked as a
 * dependency it would join the global symbol scope and could take over the program's C++
 * exception unwinding and backtrace(). It is therefore loaded with dlopen(RTLD_LOCAL): its
 * symbols are reachable only through our dlsym handle and never bind the program's references.
 *
 * Interning: a fixed table of (hash, id) slots, open addressing with linear probing. The first
 * thread to see a stack claims a slot with a CAS on its hash, copies the frames into the arena
 * (bump allocation with an atomic add), stores the record pointer and then publishes the id
 * (release). Others that meet the same hash wait (bounded) for the id, then compare frames.
 * Table or arena full: id 0 and a counter. */
#include <dlfcn.h>
#include <ucontext.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "unwind_int.h"
#define UNW_LOCAL_ONLY
#include <libunwind.h> /* types only: the functions come from the dlopen'ed library */

int dlh_stack_mode;
dlh_unwind_settings dlh_unwind_cfg;
dlh_stack_rec **dlh_stack_recs;
dlh_pyf_rec **dlh_pyf_recs;
uint32_t dlh_stack_max_id, dlh_pyf_max_id;

static int (*unw_bt)(void **, int);
/* validated stack cache (below): libunwind's cursor API for the misses */
static int (*sc_getcontext)(unw_context_t *);
static int (*sc_init)(unw_cursor_t *, unw_context_t *);
static int (*sc_step)(unw_cursor_t *);
static int (*sc_get_reg)(unw_cursor_t *, int, unw_word_t *);

static uintptr_t self_lo, self_hi;       /* libdlhook.so's mapped range: frames skipped */
static unsigned depth_max;               /* DLHOOK_STACK_DEPTH */
static int py_mode;                      /* splice Python frames (mixed) / only them (python) */

typedef struct slot {
  _Atomic uint64_t key;                  /* hash | 1; 0 = empty */
  _Atomic uint32_t id;                   /* 0 = being filled, DEAD = could not be stored */
  uint32_t pad;
} slot;
#define DEAD 0xffffffffu
#define STACK_BITS 18                    /* 256 Ki slots; at most 3/4 used */
#define PYF_BITS 17
static slot *stack_tab, *pyf_tab;
static _Atomic uint32_t stack_next, pyf_next;
static _Atomic uint64_t lost;

static char *arena;
static size_t arena_size;
static _Atomic size_t arena_used;
#define ARENA_BYTES (128ull << 20)       /* address space reserved; pages are touched on use */
static _Atomic size_t cache_bytes;       /* per-thread caches mapped */
static uint32_t sc_frames = DLH_STACK_MAX_DEPTH + 8; /* frames a cache entry holds (below) */

/* ---------------------------------------------------------------- fork safety */

/* glibc (2.36) re-initialises the loader's dl_load_lock in a fork child but not the lock that
 * dl_iterate_phdr takes: a fork() while another thread is inside dl_iterate_phdr leaves the
 * child's dl_iterate_phdr blocked for ever. unw_backtrace calls dl_iterate_phdr for pcs it has
 * not cached yet, and the writer's module scan calls it too. So fork() waits (bounded) until no
 * thread is inside unw_backtrace, new captures are skipped while it forks (stack id 0), and the
 * writer's scans hold dlh_dl_mutex, which fork() takes too. The hot path pays two atomic
 * increments on a per-thread-striped counter. */
#define NSTRIPE 128
static struct { _Atomic int n; char pad[60]; } in_unwind[NSTRIPE] __attribute__((aligned(64)));
static _Atomic int fork_pending;
pthread_mutex_t dlh_dl_mutex = PTHREAD_MUTEX_INITIALIZER;

static void fork_prepare(void) {
  pthread_mutex_lock(&dlh_dl_mutex);
  atomic_store(&fork_pending, 1);
  for (int i = 0; i < NSTRIPE; i++)
    for (int k = 0; k < 20000 && atomic_load(&in_unwind[i].n) > 0; k++) usleep(5); /* <=100 ms */
}
static void fork_parent(void) {
  atomic_store(&fork_pending, 0);
  pthread_mutex_unlock(&dlh_dl_mutex);
}
static void fork_child(void) {
  atomic_store(&fork_pending, 0);
  for (int i = 0; i < NSTRIPE; i++) atomic_store(&in_unwind[i].n, 0); /* only this thread lives */
  pthread_mutex_init(&dlh_dl_mutex, NULL);
}

/* ---------------------------------------------------------------- setup */

static int find_self(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t me = (uintptr_t)data, lo, hi;
  dlh_object_range(info, &lo, &hi);
  if (me >= lo && me < hi) {
    self_lo = lo;
    self_hi = hi;
    return 1;
  }
  return 0;
}

static void *map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* The intern tables (their slots become resident as they are used: counted whole), the arena's
 * used part and the per-thread caches. */
size_t dlh_stacks_table_bytes(void) {
  if (!stack_tab) return 0;
  return (sizeof(slot) << STACK_BITS) + (sizeof(slot) << PYF_BITS) +
         (sizeof(void *) << STACK_BITS) + (sizeof(void *) << PYF_BITS) +
         atomic_load_explicit(&arena_used, memory_order_relaxed) +
         atomic_load_explicit(&cache_bytes, memory_order_relaxed);
}

const char *dlh_stacks_mode_name(void) {
  static const char *const names[] = {"none", "native", "python", "mixed"};
  return names[dlh_stack_mode & 3];
}

static void gcc_setup(void); /* the signal handler's unwinder: below */

int dlh_capture_setup(const dlh_unwind_settings *settings) {
  depth_max = settings->depth ? settings->depth : 64;
  if (depth_max > DLH_STACK_MAX_DEPTH) depth_max = DLH_STACK_MAX_DEPTH;
  if (!atomic_load(&cache_bytes)) sc_frames = depth_max + 8; /* no cache made yet: their size */
  if (!stack_tab) {
    stack_tab = map(sizeof(slot) << STACK_BITS);
    pyf_tab = map(sizeof(slot) << PYF_BITS);
    dlh_stack_recs = map(sizeof(void *) << STACK_BITS);
    dlh_pyf_recs = map(sizeof(void *) << PYF_BITS);
    arena_size = settings->arena_bytes && settings->arena_bytes < ARENA_BYTES ? settings->arena_bytes
                                                                               : ARENA_BYTES;
    arena = map(arena_size);
    dlh_stack_max_id = (1u << STACK_BITS) / 4 * 3;
    dlh_pyf_max_id = (1u << PYF_BITS) / 4 * 3;
    if (!stack_tab || !pyf_tab || !dlh_stack_recs || !dlh_pyf_recs || !arena) {
      dlh_warn("cannot allocate the stack tables; calls are recorded without stacks");
      return -1;
    }
  }
  if (!unw_bt) {
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (h) unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
    if (h) {
      sc_getcontext = (int (*)(unw_context_t *))dlsym(h, "_Ux86_64_getcontext");
      sc_init = (int (*)(unw_cursor_t *, unw_context_t *))dlsym(h, "_ULx86_64_init_local");
      sc_step = (int (*)(unw_cursor_t *))dlsym(h, "_ULx86_64_step");
      sc_get_reg = (int (*)(unw_cursor_t *, int, unw_word_t *))dlsym(h, "_ULx86_64_get_reg");
      if (!sc_getcontext || !sc_init || !sc_get_reg) sc_step = NULL;
    }
    if (!unw_bt) {
      dlh_warn("libunwind (libunwind.so.8) not found: calls are recorded without native stacks "
               "(install libunwind8)");
    }
  }
  dl_iterate_phdr(find_self, (void *)(uintptr_t)&dlh_capture_setup);
  gcc_setup();
  dlh_modmap_init();
  static int atfork_done;
  if (!atfork_done) {
    atfork_done = 1;
    pthread_atfork(fork_prepare, fork_parent, fork_child);
  }
  return unw_bt ? 1 : 0;
}

void dlh_capture_set_mode(int mode) {
  py_mode = mode == DLH_STACKS_MIXED || mode == DLH_STACKS_PYTHON;
  dlh_stack_mode = mode;
}

uint64_t dlh_stacks_count(void) { return atomic_load(&stack_next); }
uint64_t dlh_stacks_lost(void) { return atomic_load(&lost); }

/* ---------------------------------------------------------------- interning */

static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static void *arena_alloc(size_t bytes) {
  bytes = (bytes + 7) & ~(size_t)7;
  size_t off = atomic_fetch_add_explicit(&arena_used, bytes, memory_order_relaxed);
  if (off + bytes > arena_size) return NULL;
  return arena + off;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO; async-signal-safe */
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits (bounded) for the id of a slot claimed by another thread: a short spin (the claimer
 * is between its claim and its id, a few hundred instructions), then yielding the CPU, up to
 * 200 ms: on a loaded machine the claimer may have been preempted, and spinning on the core it
 * waits for only keeps it away (a CI run once lost every call of one stack on one thread). */
static uint32_t wait_id(slot *s) {
  uint64_t deadline = 0;
  for (int i = 0;; i++) {
    uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
    if (id) return id;
    if (i < 2000) { cpu_relax(); continue; }
    uint64_t now = mono_ms();
    if (!deadline) deadline = now + 200;
    else if (now >= deadline) break;
    sched_yield();
  }
  /* The claimer stalled that long, or was another thread of the parent at fork(): give this
   * slot up, so that later lookups do not wait again (a claimer that comes back still stores
   * its id over DEAD: the stack is found again from then on). */
  uint32_t id = 0;
  if (atomic_compare_exchange_strong(&s->id, &id, DEAD)) return DEAD;
  return id;
}

/* Interns frames[0..n): returns the stack id, or 0; *fresh (when not NULL) is set to 1 when
 * this call created the id, 0 when the stack was known. */
static uint32_t intern_stack_f(const uint64_t *frames, uint32_t n, uint32_t truncated,
                               int *fresh) {
  if (fresh) *fresh = 0;
  /* four independent multiply lanes: the hash costs about a cycle per frame */
  uint64_t a = n, b = truncated, c = 0x243f6a8885a308d3ull, d = 0x13198a2e03707344ull;
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = (a ^ frames[i]) * 0x9e3779b97f4a7c15ull;
    b = (b ^ frames[i + 1]) * 0xc2b2ae3d27d4eb4full;
    c = (c ^ frames[i + 2]) * 0x165667b19e3779f9ull;
    d = (d ^ frames[i + 3]) * 0xff51afd7ed558ccdull;
  }
  for (; i < n; i++) a = (a ^ frames[i]) * 0x9e3779b97f4a7c15ull;
  uint64_t h = mix(mix(mix(a, b), c), d) | 1;
  const uint64_t mask = (1u << STACK_BITS) - 1;
  for (uint64_t i = h >> 20, probes = 0; probes < 64; i++, probes++) {
    slot *s = &stack_tab[i & mask];
    uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
    if (k == 0) {
      if (atomic_compare_exchange_strong(&s->key, &k, h)) {
        uint32_t id = atomic_fetch_add_explicit(&stack_next, 1, memory_order_relaxed) + 1;
        dlh_stack_rec *r = id <= dlh_stack_max_id
                               ? arena_alloc(sizeof *r + (size_t)n * sizeof(uint64_t)) : NULL;
        if (!r) {
          atomic_store_explicit(&s->id, DEAD, memory_order_release);
          break;
        }
        r->n = n;
        r->truncated = (uint16_t)truncated;
        atomic_store_explicit(&r->nocache, 0, memory_order_relaxed);
        memcpy(r->frames, frames, (size_t)n * sizeof(uint64_t));
        dlh_stack_recs[id] = r;
        atomic_store_explicit(&s->id, id, memory_order_release);
        if (fresh) *fresh = 1;
        return id;
      }
      /* lost the race: k now holds the winner's key */
    }
    if (k == h) {
      uint32_t id = wait_id(s);
      if (id == DEAD) break;
      const dlh_stack_rec *r = dlh_stack_recs[id];
      if (r->n == n && r->truncated == truncated &&
          memcmp(r->frames, frames, (size_t)n * sizeof(uint64_t)) == 0)
        return id;
    }
  }
  atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
  return 0;
}

static uint32_t intern_stack(const uint64_t *frames, uint32_t n, uint32_t truncated) {
  return intern_stack_f(frames, n, truncated, NULL);
}

/* Interns one Python frame (code, lasti); resolves names and line the first time. */
/* Its names are read before a slot is claimed: a signal handler's walk reads them under a
 * fault guard (host sampling, preload/sample.c), and a fault must not leave a slot claimed. */
static uint32_t intern_pyframe(uint64_t code, int64_t lasti) {
  uint64_t h = mix(mix(0x84222325cbf29ce4ull, code), (uint64_t)lasti) | 1;
  const uint64_t mask = (1u << PYF_BITS) - 1;
  char fn[256], file[1024];
  uint32_t line = 0;
  int resolved = 0;
  for (uint64_t i = h >> 20, probes = 0; probes < 64; i++, probes++) {
    slot *s = &pyf_tab[i & mask];
    uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
    if (k == 0) {
      if (!resolved) {
        dlh_py_resolve(code, lasti, &line, fn, sizeof fn, file, sizeof file);
        resolved = 1;
      }
      if (atomic_compare_exchange_strong(&s->key, &k, h)) {
        uint32_t id = atomic_fetch_add_explicit(&pyf_next, 1, memory_order_relaxed) + 1;
        size_t fl = strlen(fn), pl = strlen(file);
        dlh_pyf_rec *r = id <= dlh_pyf_max_id ? arena_alloc(sizeof *r + fl + pl + 2) : NULL;
        if (!r) {
          atomic_store_explicit(&s->id, DEAD, memory_order_release);
          break;
        }
        r->code = code;
        r->lasti = lasti;
        r->line = line;
        r->fn_len = (uint32_t)fl;
        memcpy(r->s, fn, fl + 1);
        memcpy(r->s + fl + 1, file, pl + 1);
        dlh_pyf_recs[id] = r;
        atomic_store_explicit(&s->id, id, memory_order_release);
        return id;
      }
      /* lost the race: k now holds the winner's key */
    }
    if (k == h) {
      uint32_t id = wait_id(s);
      if (id == DEAD) break;
      const dlh_pyf_rec *r = dlh_pyf_recs[id];
      if (r->code == code && r->lasti == lasti) return id;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- capture */

/* Calls recorded from a CUPTI callback have CUPTI's and the driver's frames between dlhook and
 * the program: leading frames in libcupti / libcuda are skipped too, so that a stack starts at
 * the caller of the API either way. Each leading pc is classified once (the module map: a
 * binary search, see modmap.c) and remembered in a small lock-free direct-mapped cache. */
static _Atomic uint64_t lead_cache[4096]; /* pc << 1 | skip; 0 = empty */

static int lead_skip(uintptr_t pc) {
  _Atomic uint64_t *e = &lead_cache[(pc * 0x9e3779b97f4a7c15ull) >> 52];
  uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
  if (v >> 1 == pc) return (int)(v & 1);
  dlh_modinfo mi;
  int skip = dlh_modmap_find(pc, &mi) && (mi.flags & DLH_MOD_CUDA_INTERNAL);
  atomic_store_explicit(e, (uint64_t)pc << 1 | (uint64_t)skip, memory_order_relaxed);
  return skip;
}

/* ---------------------------------------------------------------- validated stack cache
 * A thread that calls from the same place again has the same return addresses in the same stack
 * slots. Each thread keeps its last SC_WAYS stacks with, per frame, the stack slot its return
 * address was read from (CFA - 8: the unwinder's SP of the next frame, minus 8). A capture whose
 * stack pointer equals an entry's, and whose slots all still hold the recorded return addresses,
 * has the same stack: the interned id is returned after n loads and compares, without
 * unwinding. The frames' CFAs follow from their PCs and the SP they were entered with, so equal
 * slots give an equal unwind. Entries whose slots were not all consistent (signal frames, a
 * switch to another stack) are not kept. */
#define SC_WAYS 8
#define SC_MAX (DLH_STACK_MAX_DEPTH + 8)
typedef struct sc_entry {
  uint64_t sp;                 /* frame address of dlh_stack_capture; 0 = empty */
  uint32_t n, id;              /* slots to check, interned id */
  uint64_t v[];                /* frame i: return address v[2i], its stack slot v[2i + 1] */
} sc_entry;
/* An entry holds the frames a walk keeps (DLHOOK_STACK_DEPTH + 8; sc_frames, set at setup), not
 * the most there can be: with hundreds of threads the caches are a part of dlhook's memory
 * budget (issue 48: 33 KiB a thread before, 9 KiB at the default depth of 64). */
static size_t sc_stride(void) { return sizeof(sc_entry) + (size_t)sc_frames * 2 * sizeof(uint64_t); }
static inline sc_entry *sc_way(void *entries, int w) {
  return (sc_entry *)((char *)entries + (size_t)w * sc_stride());
}
/* The entries live in the caller's per-thread dlh_stack_cache (SC_WAYS entries, mapped at its
 * first miss): no TLS of our own (a dlopen'ed libdlhook.so keeps one TLS pointer). A reused
 * cache starts empty (dlh_stack_cache_reset). */
typedef struct sig_cache sig_cache; /* below */
static void sig_cache_clear(sig_cache *c);
void dlh_stack_cache_reset(dlh_stack_cache *cache) {
  void *e = cache ? cache->entries : NULL;
  for (int w = 0; e && w < SC_WAYS; w++) sc_way(e, w)->sp = 0;
  if (cache && cache->sig) sig_cache_clear(cache->sig);
  /* A new thread runs code that other threads ran: its first miss is guessed a stack seen
   * before (one cursor walk that fills the cache), not a new one (unw_backtrace, whose first
   * use in a thread sets up libunwind's per-thread cache, and then the cursor walk). */
  if (cache) cache->miss_known = 1;
}

/* The fork guard's stripe of the calling thread (its cache is per thread). */
static inline _Atomic int *unwind_stripe(const dlh_stack_cache *cache) {
  return &in_unwind[((uintptr_t)cache >> 6) % NSTRIPE].n;
}

typedef struct walked { /* the native frames a signal handler walked: pcs[skip .. got) */
  void **pcs;
  int got, skip;
  uint32_t truncated;
} walked;
static uint32_t capture_slow(dlh_stack_cache *cache, int *fresh, const dlh_py_snap *snap,
                             const walked *pre);

static inline int gcc_walk_here(void **pcs, uint64_t *cfa, int max); /* below */

static __attribute__((noinline)) uint32_t capture_miss(dlh_stack_cache *cache, uint64_t sp,
                                                       int *fresh) {
  uint32_t depth = depth_max, n = 0, truncated = 0;
  unw_context_t uc;
  unw_cursor_t cur;
  uint64_t ra[SC_MAX], slot[SC_MAX], out[SC_MAX];
  int got = 0, skip = 0, ok = 1;
  /* the same fork guard as capture_slow: the unwinder may call dl_iterate_phdr */
  _Atomic int *busy = unwind_stripe(cache);
  atomic_fetch_add(busy, 1);
  if (__builtin_expect(atomic_load_explicit(&fork_pending, memory_order_relaxed), 0)) {
    atomic_fetch_sub(busy, 1);
    return 0;
  }
  /* libgcc's unwinder where it finds tables lock-free (_dl_find_object): libunwind 1.6 masks
   * every signal around each step (two system calls a frame: ~30 a call with stacks of 15) */
  void *pcs[SC_MAX];
  int walked = gcc_walk_here(pcs, slot, (int)depth + 8);
  if (walked > 0) {
    for (got = 0; got < walked; got++) {
      ra[got] = (uint64_t)(uintptr_t)pcs[got];
      slot[got] = got && slot[got] ? slot[got] - 8 : 0; /* the CFA of the frame it called */
      if (got && (!slot[got] || *(const uint64_t *)(uintptr_t)slot[got] != ra[got] ||
                  slot[got] <= slot[got - 1]))
        ok = 0;
    }
  } else {
    if (sc_getcontext(&uc) != 0 || sc_init(&cur, &uc) != 0) {
      atomic_fetch_sub(busy, 1);
      return 0;
    }
    unw_word_t ip, fsp;
    sc_get_reg(&cur, UNW_REG_IP, &ip);
    ra[got] = ip;
    slot[got++] = 0; /* frame 0 (this function): its PC is not on the stack */
    while (got < (int)depth + 8 && sc_step(&cur) > 0) {
      sc_get_reg(&cur, UNW_REG_IP, &ip);
      sc_get_reg(&cur, UNW_REG_SP, &fsp);
      ra[got] = ip;
      slot[got] = fsp - 8;
      if (*(const uint64_t *)(uintptr_t)slot[got] != ip || slot[got] <= slot[got - 1]) ok = 0;
      got++;
    }
  }
  while (skip < got && (uintptr_t)ra[skip] - self_lo < self_hi - self_lo) skip++;
  while (skip < got - 1 && lead_skip((uintptr_t)ra[skip])) skip++; /* may scan the loader's list */
  atomic_fetch_sub_explicit(busy, 1, memory_order_release);
  for (int i = skip; i < got; i++) {
    if (n >= depth) { truncated = 1; break; }
    out[n++] = ra[i];
  }
  if (got == (int)depth + 8) truncated = 1;
  if (!n) return 0;
  uint32_t id = intern_stack_f(out, n, truncated, fresh);
  if (!id) return id;
  if (!ok) { /* a signal frame, a switch of stacks: later misses of it skip this walk */
    atomic_store_explicit(&dlh_stack_recs[id]->nocache, 1, memory_order_relaxed);
    return id;
  }
  if (!cache) return id;
  /* check frames 2 .. the last one kept: from the return address of dlh_stack_capture (frame 1;
   * frame 0 is this function, whose slot lies below the caller's frame) up, dlhook's own frames
   * too (they say which wrapper) */
  uint32_t last = skip + n;
  if (last < 3 || last - 2 > sc_frames) return id;
  if (!cache->entries) {
    cache->entries = map(SC_WAYS * sc_stride());
    if (!cache->entries) return id;
    atomic_fetch_add_explicit(&cache_bytes, SC_WAYS * sc_stride(), memory_order_relaxed);
  }
  sc_entry *e = sc_way(cache->entries, (int)(cache->next++ % SC_WAYS));
  e->sp = 0;
  for (uint32_t i = 2; i < last; i++) {
    e->v[2 * (i - 2)] = ra[i];
    e->v[2 * (i - 2) + 1] = slot[i];
  }
  e->n = last - 2;
  e->id = id;
  e->sp = sp;
  return id;
}

static inline __attribute__((always_inline)) uint32_t capture_any(dlh_stack_cache *cache,
                                                                   uint64_t sp) {
  /* A miss. A stack seen before is worth a cache entry, which needs the cursor walk (the
   * stack slots of the return addresses); a new one is not, and unw_backtrace (its own per-pc
   * cache makes it the cheaper walk) gives its id. Which kind the next miss is, is guessed
   * from the last one of this thread: a program whose stacks are all different (torch's
   * import: ~44,000 distinct registration stacks) pays the cheap walk only, one that cycles
   * through more call sites than the cache holds pays one cursor walk a miss, as before. */
  if (py_mode || !sc_step) return capture_slow(cache, NULL, NULL, NULL);
  if (cache && cache->miss_known) {
    int fresh = 0;
    uint32_t id = capture_miss(cache, sp, &fresh);
    if (fresh) cache->miss_known = 0;
    return id;
  }
  int fresh = 0;
  uint32_t id = capture_slow(cache, &fresh, NULL, NULL);
  if (id && !fresh &&
      !atomic_load_explicit(&dlh_stack_recs[id]->nocache, memory_order_relaxed)) {
    id = capture_miss(cache, sp, NULL);
    if (cache) cache->miss_known = 1;
  }
  return id;
}

uint32_t dlh_stack_capture(dlh_stack_cache *cache) {
  uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
  if (!py_mode && sc_step) {
    void *t = cache ? cache->entries : NULL;
    if (t) {
      for (int w = 0; w < SC_WAYS; w++) {
        const sc_entry *e = sc_way(t, w);
        if (e->sp != sp) continue;
        uint32_t i = 0;
        while (i < e->n && *(const uint64_t *)(uintptr_t)e->v[2 * i + 1] == e->v[2 * i]) i++;
        if (i == e->n) return e->id;
      }
    }
  }
  /* a walk: a sampling signal that interrupts it must not walk too (libunwind's per-thread
   * state, a claimed intern slot this thread would wait for) */
  if (!cache) return capture_any(NULL, sp);
  cache->busy++;
  atomic_signal_fence(memory_order_seq_cst);
  uint32_t id = capture_any(cache, sp);
  atomic_signal_fence(memory_order_seq_cst);
  cache->busy--;
  return id;
}

int dlh_stack_python_snap(dlh_stack_cache *cache, dlh_py_snap *snap) {
  snap->n = 0;
  if (!py_mode || !dlh_py_active || !cache || cache->busy) return 0;
  dlh_pyframe py[DLH_PY_SNAP];
  int max = (int)depth_max + 1 < DLH_PY_SNAP ? (int)depth_max + 1 : DLH_PY_SNAP;
  int n = dlh_py_walk(py, max);
  for (int i = 0; i < n; i++) {
    snap->id[i] = intern_pyframe(py[i].code, py[i].lasti);
    snap->end[i] = (uint8_t)py[i].group_end;
    snap->n = i + 1;
  }
  return snap->n;
}


uint32_t dlh_stack_capture_python_of(uintptr_t ts) {
  if (!py_mode || !dlh_py_active || !ts) return 0;
  uint32_t depth = depth_max, n = 0;
  dlh_pyframe py[depth + 1];
  uint64_t out[depth];
  int npy = dlh_py_walk_ts(ts, py, (int)depth + 1);
  for (int i = 0; i < npy && n < depth; i++) {
    uint32_t id = intern_pyframe(py[i].code, py[i].lasti);
    if (id) out[n++] = DLH_PYFRAME_TAG | id;
  }
  return n ? intern_stack(out, n, npy > (int)depth) : 0;
}

/* A signal handler's native frames, from the interrupted context uc: libunwind's cursor, never
 * unw_backtrace, whose trace cache is thread-local storage of the dlopen'ed libunwind: its
 * first use in a thread allocates it with malloc, which the signal may have interrupted
 * (a deadlock seen with torch's import). The cursor keeps its state on this stack. */
/* A signal handler's native frames. Not libunwind: its caches are thread-local storage of a
 * dlopen'ed library, and glibc's __tls_get_addr allocates (the DTV of the thread, after any
 * dlopen of a library with TLS) where the signal may have interrupted malloc: a deadlock seen in
 * torch's import. libgcc's _Unwind_Backtrace keeps its state on the stack and finds unwind
 * tables with glibc's _dl_find_object (lock-free, async-signal-safe; glibc >= 2.35, the only
 * case where it is used: gcc_bt stays NULL otherwise, and samples keep their Python frames and
 * their pc only). */
/* The callers of the last sample, validated as the hooks' cache is (above): a sampled thread
 * is interrupted at a new pc each time, but mostly under the same callers (a Python loop: the
 * interpreter's dozen frames down to main). Each libgcc step looks its pc up in the unwind
 * tables (_dl_find_object, a binary search, the FDE and CIE): a few cache misses a frame that
 * made a 20-frame walk cost 40-70 us of CPU on a loaded machine. So the walk stops at the first
 * frame above the interrupted one whose return address sits in a slot where the last walk found
 * the same address, and whose callers' slots all still hold theirs: the rest is the last walk's
 * (equal slots give an equal unwind, as for the hooks' entries). Only the frames below it (the
 * handler's own, the signal frame, the interrupted leaves) are walked. */
struct sig_cache {
  uint32_t n, truncated;       /* frames kept; the walk that gave them was cut at the depth */
  uint64_t v[];                /* frame i above the interrupted one: its pc v[3i], slot v[3i + 1],
                                  the start of its function v[3i + 2] (0: not known) */
};
static void sig_cache_clear(sig_cache *c) { c->n = 0; }

typedef struct gcc_walk {
  void **pcs;
  uint64_t *cfa;               /* _Unwind_GetCFA at each frame: the CFA of the frame it called,
                                  whose return address (this frame's pc) is at CFA - 8 */
  uint64_t *fn;                /* _Unwind_GetRegionStart at each frame: its function's start */
  int n, max, seen;            /* seen: the index of the interrupted frame + 1 */
  uintptr_t pc;                /* the interrupted pc */
  const sig_cache *sc;
  int hit;                     /* the cache gave its frames from this index on, or -1 */
} gcc_walk;
static int (*gcc_bt)(int (*)(void *, void *), void *);
static uintptr_t (*gcc_ip)(void *), (*gcc_cfa)(void *), (*gcc_fn)(void *);

/* The cached frame whose slot is `slot`, when every slot above it still holds its pc: its index
 * in sc, or -1. Each slot read is one the unwinder would read. */
static int sig_cache_match(const sig_cache *sc, uint64_t slot) {
  uint32_t j = 0;
  while (j < sc->n && sc->v[3 * j + 1] < slot) j++;
  if (j == sc->n || sc->v[3 * j + 1] != slot) return -1;
  for (uint32_t k = j + 1; k < sc->n; k++)
    if (*(const uint64_t *)(uintptr_t)sc->v[3 * k + 1] != sc->v[3 * k]) return -1;
  return (int)j;
}

static int gcc_frame(void *ctx, void *arg) {
  gcc_walk *w = arg;
  uintptr_t ip = gcc_ip(ctx);
  if (!ip || w->n >= w->max) return 5; /* _URC_END_OF_STACK: stop */
  uint64_t cfa = gcc_cfa ? gcc_cfa(ctx) : 0, fn = gcc_fn ? gcc_fn(ctx) : 0;
  if (w->cfa) w->cfa[w->n] = cfa;
  if (w->fn) w->fn[w->n] = fn;
  w->pcs[w->n++] = (void *)ip;
  if (!w->seen && ip == w->pc) w->seen = w->n;
  if (w->seen && w->n > w->seen && w->sc && cfa) { /* a caller of the interrupted frame */
    int j = sig_cache_match(w->sc, cfa - 8);
    /* this frame is the cache's j, its callers follow: the same return address in the same
     * slot, or another one of the same function there (the interpreter's loop called another
     * function since): the same invocation, whose CFA and callers are those cached */
    if (j >= 0 && *(const uint64_t *)(uintptr_t)(cfa - 8) == ip &&
        (w->sc->v[3 * j] == ip || (fn && w->sc->v[3 * j + 2] == fn))) {
      w->hit = j + 1;
      return 5;
    }
  }
  return 0;                            /* _URC_NO_REASON: on */
}

/* A walk of the calling function's stack by libgcc: its frames' pcs, and each frame's
 * _Unwind_GetCFA (the CFA of the frame it called) in cfa; frame 0 is the caller. Returns the
 * frames walked, 0 where libgcc is not used (no _dl_find_object, no _Unwind_GetCFA). */
__attribute__((always_inline)) static inline int gcc_walk_here(void **pcs, uint64_t *cfa, int max) {
  if (!gcc_bt || !gcc_cfa) return 0;
  gcc_walk w = {.pcs = pcs, .cfa = cfa, .max = max, .hit = -1};
  gcc_bt(gcc_frame, &w);
  return w.n;
}

/* After a walk from a signal: frames pcs[skip + 1 .. got), then (on a hit) the cache's from
 * index hit, become the thread's cache when their slots are consistent. */
static void sig_cache_store(dlh_stack_cache *cache, void **pcs, const uint64_t *cfa,
                            const uint64_t *fn, int skip, int got, int hit, int truncated) {
  sig_cache *c = cache->sig;
  uint32_t cap = depth_max + 8;
  if (!c) {
    c = map(sizeof *c + (size_t)cap * 3 * sizeof(uint64_t));
    if (!c) return;
    atomic_fetch_add_explicit(&cache_bytes, sizeof *c + (size_t)cap * 3 * sizeof(uint64_t),
                              memory_order_relaxed);
    cache->sig = c;
  }
  /* the walked frames first, into a copy (the hit's part is read from c itself) */
  uint64_t v[3 * (depth_max + 8)];
  uint32_t n = 0;
  uint64_t last = 0;
  for (int i = skip + 1; i < got && n < cap; i++) {
    uint64_t slot = cfa[i] - 8;
    if (!cfa[i] || slot <= last || *(const uint64_t *)(uintptr_t)slot != (uint64_t)(uintptr_t)pcs[i]) {
      c->n = 0; /* a signal frame, a switch of stacks: not kept */
      return;
    }
    v[3 * n] = (uint64_t)(uintptr_t)pcs[i];
    v[3 * n + 1] = last = slot;
    v[3 * n + 2] = fn[i];
    n++;
  }
  if (hit >= 0) {
    uint32_t k = (uint32_t)hit;
    for (; k < c->n && n < cap; k++, n++) {
      v[3 * n] = c->v[3 * k];
      v[3 * n + 1] = c->v[3 * k + 1];
      v[3 * n + 2] = c->v[3 * k + 2];
    }
    truncated = truncated || c->truncated || k < c->n;
  }
  memcpy(c->v, v, (size_t)n * 3 * sizeof(uint64_t));
  c->truncated = (uint32_t)truncated;
  c->n = n;
}

static void gcc_setup(void) {
  if (gcc_bt) return;
  if (!dlsym(RTLD_DEFAULT, "_dl_find_object")) return; /* libgcc would take the loader's lock */
  void *g = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g) return;
  gcc_ip = (uintptr_t (*)(void *))dlsym(g, "_Unwind_GetIP");
  gcc_cfa = (uintptr_t (*)(void *))dlsym(g, "_Unwind_GetCFA"); /* the callers' cache: optional */
  gcc_fn = (uintptr_t (*)(void *))dlsym(g, "_Unwind_GetRegionStart");
  int (*bt)(int (*)(void *, void *), void *) =
      (int (*)(int (*)(void *, void *), void *))dlsym(g, "_Unwind_Backtrace");
  if (!gcc_ip || !bt) return;
  void *pcs[4];
  gcc_walk w = {.pcs = pcs, .max = 4, .hit = -1};
  bt(gcc_frame, &w); /* its one-time set-up, here rather than in a handler */
  gcc_bt = bt;
}

/* From a signal handler: pcs[0 .. returned) with *skip the index of the interrupted pc (the
 * frames below it are the handler's), its callers from the thread's cache where they are still
 * on the stack (sig_cache), which is then updated. */
__attribute__((always_inline)) static inline int
signal_walk(dlh_stack_cache *cache, uintptr_t pc, void **pcs, int max, int *skip,
            uint32_t *truncated) {
  uint64_t cfa[max], fn[max];
  gcc_walk w = {.pcs = pcs, .cfa = cfa, .fn = fn, .max = max, .pc = pc, .sc = cache->sig, .hit = -1};
  if (w.sc && !((const sig_cache *)w.sc)->n) w.sc = NULL;
  if (gcc_bt) gcc_bt(gcc_frame, &w);
  int got = w.n, walked = got;
  if (!w.seen) {
    if (pc) { /* no unwind information to step through the signal frame: the pc */
      pcs[0] = (void *)pc;
      got = 1;
    }
    *skip = 0;
    return got;
  }
  *skip = w.seen - 1;
  int cut = got == max;
  if (w.hit >= 0) {
    const sig_cache *c = w.sc;
    for (uint32_t k = (uint32_t)w.hit; k < c->n; k++) {
      if (got == max) { cut = 1; break; }
      pcs[got++] = (void *)(uintptr_t)c->v[3 * k];
    }
    cut = cut || c->truncated;
    if (got == max) cut = 1;
  }
  if (gcc_cfa) sig_cache_store(cache, pcs, cfa, fn, *skip, walked, w.hit, walked == max);
  if (cut) *truncated = 1;
  return got;
}

/* pre: NULL for a hook (dlhook's own leading frames and CUPTI's are skipped); a signal
 * handler's walk from the interrupted context (dlh_stack_capture_signal). */
static uint32_t capture_slow(dlh_stack_cache *cache, int *fresh, const dlh_py_snap *snap,
                             const walked *pre) {
  uint32_t depth = depth_max, n = 0, nnat = 0, truncated = 0;
  void *own[depth + 8], **pcs = own;
  /* DLHOOK_STACK_DEPTH bounds the native frames; the Python frames are all kept (the user's
   * line is the outermost of them, and libtorch's dispatch alone can fill 64 native frames) */
  uint64_t out[2 * depth + 2];
  /* the thread's Python frames, interned (a signal handler's come walked under its guard) */
  uint32_t pid[depth + 1];
  uint8_t pend[depth + 1];
  int npy = 0, got = 0, skip = 0;
  if (snap) {
    npy = snap->n < (int)depth + 1 ? snap->n : (int)depth + 1;
    for (int i = 0; i < npy; i++) { pid[i] = snap->id[i]; pend[i] = snap->end[i]; }
  } else if (py_mode && dlh_py_active) {
    dlh_pyframe py[depth + 1];
    npy = dlh_py_walk(py, (int)depth + 1);
    for (int i = 0; i < npy; i++) {
      pid[i] = intern_pyframe(py[i].code, py[i].lasti);
      pend[i] = (uint8_t)py[i].group_end;
    }
  }
  if (dlh_stack_mode == DLH_STACKS_PYTHON && npy > 0) {
    /* Python frames only */
    for (int i = 0; i < npy && n < depth; i++)
      if (pid[i]) out[n++] = DLH_PYFRAME_TAG | pid[i];
    truncated = npy > (int)depth;
    return n ? intern_stack(out, n, truncated) : 0;
  }
  if (pre) { /* a signal handler's walk (dlh_stack_capture_signal) */
    pcs = pre->pcs;
    got = pre->got;
    skip = pre->skip;
    truncated = pre->truncated;
  } else {
    if (!unw_bt) return 0;
    _Atomic int *busy = unwind_stripe(cache);
    atomic_fetch_add(busy, 1);           /* full barrier, then look for a fork in progress */
    if (__builtin_expect(atomic_load_explicit(&fork_pending, memory_order_relaxed), 0)) {
      atomic_fetch_sub(busy, 1);
      return 0;
    }
    got = unw_bt(pcs, (int)depth + 4); /* dlhook's own frames (2 or 3) are cut */
    while (skip < got && (uintptr_t)pcs[skip] - self_lo < self_hi - self_lo) skip++;
    while (skip < got - 1 && lead_skip((uintptr_t)pcs[skip])) skip++; /* may scan the loader's list */
    atomic_fetch_sub_explicit(busy, 1, memory_order_release);
    if (got == (int)depth + 4) truncated = 1;
  }
  int g = 0; /* next Python frame to splice */
  for (int i = skip; i < got; i++) {
    uintptr_t pc = (uintptr_t)pcs[i];
    if (g < npy && pc - dlh_py_eval_lo < dlh_py_eval_hi - dlh_py_eval_lo) {
      /* an interpreter frame: its Python frames take its place */
      for (; g < npy; g++) {
        if (n >= DLH_STACK_MAX_DEPTH) { truncated = 1; break; } /* the format's limit */
        if (pid[g]) out[n++] = DLH_PYFRAME_TAG | pid[g];
        if (pend[g]) { g++; break; }
      }
      continue;
    }
    if (nnat >= depth || n >= DLH_STACK_MAX_DEPTH) { /* on to the next interpreter frame */
      truncated = 1;
      continue;
    }
    out[n++] = pc;
    nnat++;
  }
  /* Python frames whose interpreter frames were not seen (deeper than the native walk) */
  for (; g < npy && n < DLH_STACK_MAX_DEPTH; g++)
    if (pid[g]) out[n++] = DLH_PYFRAME_TAG | pid[g];
  if (g < npy) truncated = 1;
  if (!n) return 0;
  return intern_stack_f(out, n, truncated, fresh);
}

/* The native frames of a signal handler's stack are walked here, not in capture_slow: each
 * frame between the unwinder and the interrupted one is a look-up in the unwind tables (a few
 * cache misses each, the handler's main cost): the handler's frames are this one and its
 * caller. */
uint32_t dlh_stack_capture_signal(dlh_stack_cache *cache, void *uc, const dlh_py_snap *py) {
  if (!dlh_stack_mode || !cache || cache->busy) return 0;
  static const dlh_py_snap none;
  if (!py) py = &none;
  cache->busy++;
  atomic_signal_fence(memory_order_seq_cst);
  uint32_t id = 0;
  void *pcs[depth_max + 8];
  walked pre = {.pcs = pcs};
  if (uc && !(dlh_stack_mode == DLH_STACKS_PYTHON && py->n > 0)) {
    _Atomic int *busy = unwind_stripe(cache);
    atomic_fetch_add(busy, 1); /* full barrier, then look for a fork in progress */
    if (__builtin_expect(atomic_load_explicit(&fork_pending, memory_order_relaxed), 0)) {
      atomic_fetch_sub(busy, 1);
      goto out;
    }
    uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    pre.got = signal_walk(cache, pc, pcs, (int)depth_max + 8, &pre.skip, &pre.truncated);
    atomic_fetch_sub_explicit(busy, 1, memory_order_release);
  }
  id = capture_slow(cache, NULL, py, &pre);
out:
  atomic_signal_fence(memory_order_seq_cst);
  cache->busy--;
  return id;
}
