/* memfind.c — memory findings from the ledger (memory.c's samples) and a trace's steps, for
 * `dlhook advise` (rd_memfind.h): memory-leak, memory-fragmentation, out-of-memory.
 *
 * memory-leak: live device memory at the end of each step, compared step over step after the
 * first (the first step makes the optimizer's state and the caches: it may grow once). A leak is
 * live memory that grew at three quarters or more of those step ends and by at least
 * RD_LEAK_MIN_BYTES in all. Its places are where the memory was allocated that is still live at
 * the end of the last step, was allocated after the first and lived across another step end:
 * by the user's line (rd_torch_of), else by stack; the place that holds the most bytes comes
 * first, and places that hold less than a quarter of the growth are left out.
 *
 * memory-fragmentation: PyTorch's default caching allocator (modelled below) replayed over the
 * tensors of a trace recorded with --torch-memory reserves, at the peak of allocated memory,
 * RD_FRAG_RATIO_NUM/DEN times what is allocated and RD_FRAG_MIN_BYTES more. Its places are
 * where the requests were made that created the segments holding that idle memory (by the
 * user's line, else by stack), the most idle first; places with less than a quarter are left out.
 *
 * out-of-memory: each failed allocation (one per place of request): what was live on the device
 * then by place, and the largest free block the request could have had (rd_memooms). */
#include "rd_memfind.h"

#include <stdlib.h>
#include <string.h>

/* The live bytes of the process after the last sample at or before ts (0 before any). */
static uint64_t live_at(const rd_mem_sample *ms, long n, uint64_t ts) {
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (ms[mid].ts_ns <= ts) lo = mid + 1;
    else hi = mid;
  }
  return lo ? ms[lo - 1].live_bytes : 0;
}

typedef struct leak_key {
  const void *key;      /* the user's line (interned by torch.c), else NULL with the stack */
  uint32_t stack;
} leak_key;

/* Adds allocation m to the place of its stack in out[*k] (at most max places). */
static void add_place(rd_trace *t, rd_memleak *out, leak_key *keys, size_t *k, size_t max,
                      const rd_mem_sample *m) {
  const rd_torch *c = m->stack ? rd_torch_of(t, m->stack) : NULL;
  leak_key key = {c && c->user ? (const void *)c->user : NULL, c && c->user ? 0 : m->stack};
  size_t i = 0;
  while (i < *k && (keys[i].key != key.key || keys[i].stack != key.stack)) i++;
  if (i == *k) {
    if (*k == max) return;
    keys[i] = key;
    memset(&out[i], 0, sizeof out[i]);
    out[i].stack = m->stack;
    (*k)++;
  }
  out[i].bytes += (uint64_t)m->bytes;
  out[i].allocs++;
}

static int by_bytes(const void *a, const void *b) {
  const rd_memleak *p = a, *q = b;
  return p->bytes < q->bytes ? 1 : p->bytes > q->bytes ? -1 : 0;
}

size_t rd_memleaks(rd_trace *t, const rd_mem_sample *ms, long n, const rd_step_span *st,
                   size_t nst, rd_memleak *out, size_t max) {
  if (nst < 3 || n <= 0 || !max) return 0;
  uint64_t first = live_at(ms, n, st[0].e), last = live_at(ms, n, st[nst - 1].e);
  uint64_t grew = 0, prev = first;
  for (size_t i = 1; i < nst; i++) {
    uint64_t v = live_at(ms, n, st[i].e);
    if (v > prev) grew++;
    prev = v;
  }
  if (last < first + RD_LEAK_MIN_BYTES || 4 * grew < 3 * (nst - 1)) return 0;
  /* the allocations made after the first step, live across a later step end and still at the
   * end of the last (what a step allocates and frees in the next is not a leak) */
  uint64_t t0 = st[0].e, tk = st[nst - 2].e, t1 = st[nst - 1].e;
  char *held = rd_xcalloc((size_t)n, 1);
  rd_u64map at = {0};
  for (long i = 0; i < n && ms[i].ts_ns <= t1; i++) {
    uint32_t j;
    if (ms[i].bytes > 0) {
      held[i] = ms[i].ts_ns > t0 && ms[i].ts_ns <= tk;
      rd_m_put(&at, ms[i].ptr, (uint32_t)i);
    } else if (rd_m_get(&at, ms[i].ptr, &j)) {
      held[j] = 0;
      rd_m_del(&at, ms[i].ptr);
    }
  }
  rd_m_free(&at);
  leak_key *keys = rd_xmalloc(max * sizeof *keys);
  size_t k = 0;
  for (long i = 0; i < n; i++)
    if (held[i]) add_place(t, out, keys, &k, max, &ms[i]);
  free(keys);
  free(held);
  for (size_t i = 0; i < k; i++) {
    out[i].growth = last - first;
    out[i].steps = nst;
    out[i].grew = grew;
  }
  rd_qsort(out, k, sizeof *out, by_bytes);
  while (k > 1 && 4 * out[k - 1].bytes < last - first) k--; /* places that hold a quarter or more */
  return k;
}

/* ---------------------------------------------------------------- PyTorch's caching allocator
 *
 * A model of PyTorch's default CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, no
 * PYTORCH_CUDA_ALLOC_CONF), replayed over the tensors of a trace recorded with --torch-memory:
 * requests rounded up to 512 bytes; up to 1 MiB from the small pool (2 MiB segments), larger
 * ones from the large pool (20 MiB segments below 10 MiB, else the size rounded up to 2 MiB);
 * the best-fitting free block of the same pool and stream (smallest, then lowest address),
 * split when the rest is at least 512 bytes (small) or more than 1 MiB (large); a freed block
 * merges with its free neighbours; segments are never given back, except all wholly free ones
 * when a new segment would exceed the device's memory (PyTorch frees its cache and retries). */

#define MIB (1ull << 20)

typedef struct mblk {
  uint64_t addr, size, stream;
  int32_t prev, next; /* neighbours in the segment (-1: none) */
  uint32_t seg;
  uint8_t used, small;
} mblk;

typedef struct mseg {
  uint64_t size, used;
  uint32_t stack; /* of the request that made it */
} mseg;

typedef struct model {
  mblk *b;
  size_t nb, capb;
  int32_t *spare; /* block ids merged away, for reuse */
  size_t nspare, capspare;
  mseg *s;
  size_t ns, caps;
  int32_t *fr[2]; /* free blocks of the large (0) and small (1) pool by (stream, size, addr) */
  size_t nfr[2], capfr[2];
  rd_u64map at;   /* the tensor's pointer -> its block */
  uint64_t reserved, allocated, next_addr, capacity;
} model;

static int fr_less(const mblk *b, uint64_t stream, uint64_t size, uint64_t addr) {
  if (b->stream != stream) return b->stream < stream;
  if (b->size != size) return b->size < size;
  return b->addr < addr;
}

static size_t fr_lower(const model *m, int small, uint64_t stream, uint64_t size, uint64_t addr) {
  size_t lo = 0, hi = m->nfr[small];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fr_less(&m->b[m->fr[small][mid]], stream, size, addr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void fr_add(model *m, int32_t id) {
  const mblk *b = &m->b[id];
  int k = b->small;
  size_t i = fr_lower(m, k, b->stream, b->size, b->addr);
  if (m->nfr[k] == m->capfr[k]) {
    m->capfr[k] = m->capfr[k] ? 2 * m->capfr[k] : 64;
    m->fr[k] = rd_xrealloc(m->fr[k], m->capfr[k] * sizeof *m->fr[k]);
  }
  memmove(&m->fr[k][i + 1], &m->fr[k][i], (m->nfr[k] - i) * sizeof *m->fr[k]);
  m->fr[k][i] = id;
  m->nfr[k]++;
}

static void fr_del(model *m, int32_t id) {
  const mblk *b = &m->b[id];
  int k = b->small;
  size_t i = fr_lower(m, k, b->stream, b->size, b->addr);
  if (i < m->nfr[k] && m->fr[k][i] == id) {
    memmove(&m->fr[k][i], &m->fr[k][i + 1], (m->nfr[k] - i - 1) * sizeof *m->fr[k]);
    m->nfr[k]--;
  }
}

static int32_t blk_new(model *m) {
  if (m->nspare) return m->spare[--m->nspare];
  if (m->nb == m->capb) {
    m->capb = m->capb ? 2 * m->capb : 256;
    m->b = rd_xrealloc(m->b, m->capb * sizeof *m->b);
  }
  return (int32_t)m->nb++;
}

static void blk_drop(model *m, int32_t id) {
  if (m->nspare == m->capspare) {
    m->capspare = m->capspare ? 2 * m->capspare : 64;
    m->spare = rd_xrealloc(m->spare, m->capspare * sizeof *m->spare);
  }
  m->spare[m->nspare++] = id;
}

/* Gives back every wholly free segment (what PyTorch does before it reports out of memory). */
static void release_cached(model *m) {
  for (int k = 0; k < 2; k++) {
    size_t w = 0;
    for (size_t i = 0; i < m->nfr[k]; i++) {
      int32_t id = m->fr[k][i];
      mblk *b = &m->b[id];
      if (b->prev < 0 && b->next < 0) {
        m->reserved -= b->size;
        m->s[b->seg].size = 0;
        blk_drop(m, id);
      } else {
        m->fr[k][w++] = id;
      }
    }
    m->nfr[k] = w;
  }
}

static void model_alloc(model *m, uint64_t ptr, uint64_t req, uint64_t stream, uint32_t stack) {
  uint64_t size = req < 512 ? 512 : (req + 511) & ~511ull;
  int small = size <= MIB;
  size_t i = fr_lower(m, small, stream, size, 0);
  int32_t id;
  if (i < m->nfr[small] && m->b[m->fr[small][i]].stream == stream) {
    id = m->fr[small][i];
    memmove(&m->fr[small][i], &m->fr[small][i + 1], (m->nfr[small] - i - 1) * sizeof *m->fr[small]);
    m->nfr[small]--;
  } else {
    uint64_t sz = small ? 2 * MIB : size < 10 * MIB ? 20 * MIB : (size + 2 * MIB - 1) & ~(2 * MIB - 1);
    if (m->capacity && m->reserved + sz > m->capacity) release_cached(m);
    if (m->ns == m->caps) {
      m->caps = m->caps ? 2 * m->caps : 64;
      m->s = rd_xrealloc(m->s, m->caps * sizeof *m->s);
    }
    m->s[m->ns] = (mseg){sz, 0, stack};
    id = blk_new(m);
    m->b[id] = (mblk){m->next_addr, sz, stream, -1, -1, (uint32_t)m->ns++, 0, (uint8_t)small};
    m->next_addr += sz;
    m->reserved += sz;
  }
  uint64_t rest = m->b[id].size - size;
  if (small ? rest >= 512 : rest > MIB) {
    int32_t r = blk_new(m);
    mblk *b = &m->b[id];
    m->b[r] = (mblk){b->addr + size, rest, stream, id, b->next, b->seg, 0, b->small};
    if (b->next >= 0) m->b[b->next].prev = r;
    b->next = r;
    b->size = size;
    fr_add(m, r);
  }
  m->b[id].used = 1;
  m->s[m->b[id].seg].used += m->b[id].size;
  m->allocated += req;
  rd_m_put(&m->at, ptr, (uint32_t)id);
}

/* A free of ptr with its requested size req; 0 when the model never saw ptr allocated. */
static int model_free(model *m, uint64_t ptr, uint64_t req) {
  uint32_t u;
  if (!rd_m_get(&m->at, ptr, &u)) return 0;
  rd_m_del(&m->at, ptr);
  int32_t id = (int32_t)u;
  mblk *b = &m->b[id];
  b->used = 0;
  m->s[b->seg].used -= b->size;
  m->allocated -= req;
  int32_t p = b->prev, q = b->next;
  if (p >= 0 && !m->b[p].used) { /* merge into the previous block */
    fr_del(m, p);
    m->b[p].size += b->size;
    m->b[p].next = q;
    if (q >= 0) m->b[q].prev = p;
    blk_drop(m, id);
    id = p;
  }
  q = m->b[id].next;
  if (q >= 0 && !m->b[q].used) { /* and the next one into it */
    fr_del(m, q);
    m->b[id].size += m->b[q].size;
    m->b[id].next = m->b[q].next;
    if (m->b[q].next >= 0) m->b[m->b[q].next].prev = id;
    blk_drop(m, q);
  }
  fr_add(m, id);
  return 1;
}

static uint64_t model_largest_free(const model *m) {
  uint64_t big = 0;
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < m->nfr[k]; i++)
      if (m->b[m->fr[k][i]].size > big) big = m->b[m->fr[k][i]].size;
  return big;
}

static void model_free_all(model *m) {
  free(m->b);
  free(m->spare);
  free(m->s);
  free(m->fr[0]);
  free(m->fr[1]);
  rd_m_free(&m->at);
}

/* Whether allocation sample m is one of PyTorch's tensors (--torch-memory: cudaMallocAsync). */
static int tensor_alloc(rd_trace *t, const rd_mem_sample *m) {
  const char *f = rd_func_name(t, m->fn);
  return f && (!strncmp(f, "cudaMallocAsync", 15) || !strncmp(f, "cudaMallocFromPoolAsync", 23));
}

/* Replays samples [0, upto) into the model (tensors only); returns how many were tensors. */
static long model_run(rd_trace *t, model *m, const rd_mem_sample *ms, long upto) {
  long tensors = 0;
  for (long i = 0; i < upto; i++) {
    if (ms[i].bytes > 0) {
      if (!tensor_alloc(t, &ms[i])) continue;
      model_alloc(m, ms[i].ptr, (uint64_t)ms[i].bytes, ms[i].stream, ms[i].stack);
      tensors++;
    } else {
      model_free(m, ms[i].ptr, (uint64_t)-ms[i].bytes);
    }
  }
  return tensors;
}

/* ---------------------------------------------------------------- places */

/* A tally of bytes by place: the user's line (rd_torch_of), else the stack. */
typedef struct ptally {
  leak_key *k;
  uint32_t *stack;
  uint64_t *bytes, *n;
  size_t len, cap;
} ptally;

static void ptally_add(rd_trace *t, ptally *p, uint32_t stack, uint64_t bytes) {
  const rd_torch *c = stack ? rd_torch_of(t, stack) : NULL;
  leak_key key = {c && c->user ? (const void *)c->user : NULL, c && c->user ? 0 : stack};
  size_t i = 0;
  while (i < p->len && (p->k[i].key != key.key || p->k[i].stack != key.stack)) i++;
  if (i == p->len) {
    if (p->len == p->cap) {
      p->cap = p->cap ? 2 * p->cap : 16;
      p->k = rd_xrealloc(p->k, p->cap * sizeof *p->k);
      p->stack = rd_xrealloc(p->stack, p->cap * sizeof *p->stack);
      p->bytes = rd_xrealloc(p->bytes, p->cap * sizeof *p->bytes);
      p->n = rd_xrealloc(p->n, p->cap * sizeof *p->n);
    }
    p->k[i] = key;
    p->stack[i] = stack;
    p->bytes[i] = p->n[i] = 0;
    p->len++;
  }
  p->bytes[i] += bytes;
  p->n[i]++;
}

/* The index of the place with the most bytes not yet taken (taken[i] set), or len. */
static size_t ptally_next(const ptally *p, const char *taken) {
  size_t best = p->len;
  for (size_t i = 0; i < p->len; i++)
    if (!taken[i] && (best == p->len || p->bytes[i] > p->bytes[best])) best = i;
  return best;
}

static void ptally_free(ptally *p) {
  free(p->k);
  free(p->stack);
  free(p->bytes);
  free(p->n);
}

/* ---------------------------------------------------------------- fragmentation */

size_t rd_memfrag_places(rd_trace *t, const rd_mem_sample *ms, long n, rd_memfrag *out,
                         size_t max) {
  if (n <= 0 || !max) return 0;
  /* the peak of the tensors' live bytes */
  rd_u64map sz = {0};
  uint64_t live = 0, peak = 0;
  long at = -1;
  for (long i = 0; i < n; i++) {
    uint32_t k;
    if (ms[i].bytes > 0 && tensor_alloc(t, &ms[i])) {
      rd_m_put(&sz, ms[i].ptr, 1);
      live += (uint64_t)ms[i].bytes;
      if (live > peak) peak = live, at = i;
    } else if (ms[i].bytes < 0 && rd_m_get(&sz, ms[i].ptr, &k)) {
      rd_m_del(&sz, ms[i].ptr);
      live -= (uint64_t)-ms[i].bytes;
    }
  }
  rd_m_free(&sz);
  if (at < 0) return 0;
  model m = {0};
  model_run(t, &m, ms, at + 1);
  uint64_t reserved = m.reserved, allocated = m.allocated;
  size_t k = 0;
  if (reserved >= allocated + RD_FRAG_MIN_BYTES &&
      reserved * RD_FRAG_RATIO_DEN >= allocated * RD_FRAG_RATIO_NUM) {
    ptally p = {0};
    for (size_t s = 0; s < m.ns; s++)
      if (m.s[s].size > m.s[s].used) ptally_add(t, &p, m.s[s].stack, m.s[s].size - m.s[s].used);
    char *taken = rd_xcalloc(p.len ? p.len : 1, 1);
    uint64_t idle = reserved - allocated;
    for (size_t i; k < max && (i = ptally_next(&p, taken)) < p.len; k++) {
      taken[i] = 1;
      if (k && 4 * p.bytes[i] < idle) break; /* places that hold a quarter or more */
      out[k] = (rd_memfrag){p.stack[i], p.bytes[i], p.n[i], reserved, allocated};
    }
    free(taken);
    ptally_free(&p);
  }
  model_free_all(&m);
  return k;
}

/* ---------------------------------------------------------------- out of memory */

size_t rd_memooms(rd_trace *t, const rd_mem_sample *ms, long n, const rd_mem_fail *f, size_t nf,
                  uint64_t capacity, rd_memoom *out, size_t max) {
  size_t k = 0;
  for (size_t j = 0; j < nf && k < max; j++) {
    size_t d = 0;
    while (d < k && out[d].fail.stack != f[j].stack) d++;
    if (d < k) continue; /* that place has its context already (PyTorch retries once) */
    rd_memoom *o = &out[k++];
    memset(o, 0, sizeof *o);
    o->fail = f[j];
    o->capacity = capacity;
    /* what was live then, by place */
    long cut = 0;
    while (cut < n && ms[cut].ts_ns <= f[j].ts_ns) cut++;
    char *held = rd_xcalloc((size_t)(cut ? cut : 1), 1);
    rd_u64map at = {0};
    for (long i = 0; i < cut; i++) {
      uint32_t a;
      if (ms[i].bytes > 0) {
        held[i] = 1;
        rd_m_put(&at, ms[i].ptr, (uint32_t)i);
      } else if (rd_m_get(&at, ms[i].ptr, &a)) {
        held[a] = 0;
        rd_m_del(&at, ms[i].ptr);
      }
    }
    rd_m_free(&at);
    ptally p = {0};
    for (long i = 0; i < cut; i++)
      if (held[i] && ms[i].device == f[j].device) {
        o->live += (uint64_t)ms[i].bytes;
        ptally_add(t, &p, ms[i].stack, (uint64_t)ms[i].bytes);
      }
    free(held);
    char *taken = rd_xcalloc(p.len ? p.len : 1, 1);
    size_t i;
    while (o->nplaces < 3 && (i = ptally_next(&p, taken)) < p.len) {
      taken[i] = 1;
      o->place[o->nplaces].stack = p.stack[i];
      o->place[o->nplaces].bytes = p.bytes[i];
      o->place[o->nplaces++].allocs = p.n[i];
    }
    free(taken);
    ptally_free(&p);
    /* the largest free block: what the device has not allocated, and at tensor level what
     * PyTorch's default caching allocator would have: its largest cached block, or the device
     * memory it has not reserved */
    uint64_t unalloc = capacity > o->live ? capacity - o->live : 0;
    o->largest_free = unalloc;
    model m = {0};
    m.capacity = capacity;
    if (model_run(t, &m, ms, cut) > 0) {
      uint64_t inside = model_largest_free(&m);
      uint64_t outside = capacity > m.reserved ? capacity - m.reserved : 0;
      o->model = 1;
      o->reserved = m.reserved;
      o->largest_free = inside > outside ? inside : outside;
    }
    model_free_all(&m);
  }
  return k;
}
