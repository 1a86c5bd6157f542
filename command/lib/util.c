/* util.c — the command's helpers: messages, memory that never returns NULL, and the id maps
 * (seeded hash). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dlh_msg.h"
#include "rd.h"

/* ---------------------------------------------------------------- messages and memory */

void rd_error(const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fflush(stderr);
  va_start(ap, fmt);
  dlh_vmsg("", fmt, ap);
  va_end(ap);
}

int rd_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "dlhook%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'dlhook%s%s --help')\n", cmd ? " " : "", cmd ? cmd : "");
  return RD_USAGE;
}

void *rd_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return p;
}

void *rd_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return p;
}

void *rd_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return p;
}

char *rd_xstrdup(const char *s) {
  size_t n = strlen(s ? s : "") + 1;
  char *d = rd_xmalloc(n);
  memcpy(d, s ? s : "", n);
  return d;
}

/* ---------------------------------------------------------------- id map */

/* The hash of every id map of the command is keyed by a per-process random seed (rd_hash64 in
 * rd.h): ids come from the trace, and a trace built so that its ids share one slot of a fixed
 * hash would make each lookup linear (46,000 such function ids took `dlhook stats` from 0.25 s
 * to 75 s). */
uint64_t rd_hash_seed[2];

void rd_hash_seed_init(void) {
  if (rd_hash_seed[1]) return;
  uint64_t s[2] = {0, 0};
  if (getrandom(s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) { /* no entropy yet: mix */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
            (uint64_t)(uintptr_t)&ts;
    s[1] ^= (uint64_t)ts.tv_sec * 0xc2b2ae3d27d4eb4full ^ (uint64_t)(uintptr_t)s;
  }
  rd_hash_seed[0] = s[0];
  rd_hash_seed[1] = s[1] | 1;
}

uint64_t rd_hash_str(const char *s) {
  if (!rd_hash_seed[1]) rd_hash_seed_init();
  uint64_t h = 1469598103934665603ull ^ rd_hash_seed[0];
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return rd_hash64(h);
}

static size_t slot(uint32_t key, size_t cap) { return (size_t)rd_hash64(key) & (cap - 1); }

void *rd_map_get(const rd_map *m, uint32_t key) {
  if (!m->cap) return NULL;
  for (size_t i = slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->v[i].val) return NULL;
    if (m->v[i].key == key) return m->v[i].val;
  }
}

void *rd_map_get_new(rd_map *m, uint32_t key, size_t size) {
  void *v = rd_map_get(m, key);
  if (!v) {
    v = rd_xmalloc(size);
    memset(v, 0, size);
    rd_map_put(m, key, v);
  }
  return v;
}

void *rd_map_put(rd_map *m, uint32_t key, void *val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    rd_map n = {calloc(nc, sizeof(rd_map_slot)), nc, 0};
    if (!n.v) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
    for (size_t i = 0; i < m->cap; i++)
      if (m->v[i].val) rd_map_put(&n, m->v[i].key, m->v[i].val);
    free(m->v);
    *m = n;
  }
  size_t i = slot(key, m->cap);
  for (; m->v[i].val; i = (i + 1) & (m->cap - 1)) {
    if (m->v[i].key == key) {
      void *old = m->v[i].val;
      m->v[i].val = val;
      return old;
    }
  }
  m->v[i].key = key;
  m->v[i].val = val;
  m->n++;
  return NULL;
}

void rd_map_free(rd_map *m, void (*free_val)(void *)) {
  if (free_val)
    for (size_t i = 0; i < m->cap; i++)
      if (m->v[i].val) free_val(m->v[i].val);
  free(m->v);
  memset(m, 0, sizeof *m);
}


/* ---------------------------------------------------------------- sorting */

void rd_sort_pairs(rd_pair *v, size_t n) {
  size_t i = 1;
  while (i < n && v[i - 1].key <= v[i].key) i++;
  if (i >= n) return; /* in order already: GPU records mostly are */
  /* LSD radix sort on the key, 8 bits a pass; passes where every key has the same byte skip */
  rd_pair *tmp = rd_xmalloc(n * sizeof *tmp), *a = v, *b = tmp;
  uint64_t diff = 0;
  for (size_t k = 1; k < n; k++) diff |= v[k].key ^ v[0].key;
  for (unsigned shift = 0; shift < 64; shift += 8) {
    if (!(diff >> shift & 0xff)) continue;
    size_t cnt[257] = {0};
    for (size_t k = 0; k < n; k++) cnt[(a[k].key >> shift & 0xff) + 1]++;
    for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (size_t k = 0; k < n; k++) b[cnt[a[k].key >> shift & 0xff]++] = a[k];
    rd_pair *x = a;
    a = b;
    b = x;
  }
  if (a != v) memcpy(v, a, n * sizeof *v);
  free(tmp);
}

void rd_sort_by_key(void *base, size_t n, size_t size) {
  uint8_t *b = base;
  size_t i = 1;
  uint64_t prev = 0, k;
  if (n > 0) memcpy(&prev, b, sizeof prev);
  for (; i < n; i++, prev = k) {
    memcpy(&k, b + i * size, sizeof k);
    if (k < prev) break;
  }
  if (i >= n) return; /* in order already */
  rd_pair *v = rd_xmalloc(n * sizeof *v);
  for (size_t j = 0; j < n; j++) {
    memcpy(&v[j].key, b + j * size, sizeof v[j].key);
    v[j].val = j;
  }
  rd_sort_pairs(v, n); /* LSD radix: equal keys keep their order */
  uint8_t *tmp = rd_xmalloc(n * size);
  for (size_t j = 0; j < n; j++) memcpy(tmp + j * size, b + v[j].val * size, size);
  memcpy(b, tmp, n * size);
  free(tmp);
  free(v);
}

/* ---------------------------------------------------------------- u64 -> u32 hash map */

static size_t h64(uint64_t k, size_t cap) { return (size_t)rd_hash64(k) & (cap - 1); }

static void rd_m_grow(rd_u64map *m) {
  rd_u64map n = {0};
  n.cap = m->cap ? m->cap * 2 : 1024;
  n.keys = rd_xmalloc(n.cap * sizeof *n.keys);
  n.vals = calloc(n.cap, sizeof *n.vals);
  if (!n.vals) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i]) rd_m_put(&n, m->keys[i], m->vals[i] - 1);
  free(m->keys);
  free(m->vals);
  *m = n;
}

void rd_m_put(rd_u64map *m, uint64_t k, uint32_t v) {
  if ((m->n + 1) * 4 > m->cap * 3) rd_m_grow(m);
  size_t i = h64(k, m->cap);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) { m->vals[i] = v + 1; return; }
  m->keys[i] = k;
  m->vals[i] = v + 1;
  m->n++;
}

/* Returns 1 and sets *v when found. */
int rd_m_get(const rd_u64map *m, uint64_t k, uint32_t *v) {
  if (!m->cap) return 0;
  for (size_t i = h64(k, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) { *v = m->vals[i] - 1; return 1; }
  return 0;
}

/* Removes k (backward-shift deletion keeps probe chains intact). */
void rd_m_del(rd_u64map *m, uint64_t k) {
  if (!m->cap) return;
  size_t i = h64(k, m->cap);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) break;
  if (!m->vals[i]) return;
  m->vals[i] = 0;
  m->n--;
  for (size_t j = (i + 1) & (m->cap - 1); m->vals[j]; j = (j + 1) & (m->cap - 1)) {
    size_t home = h64(m->keys[j], m->cap);
    /* move j back to i when i lies cyclically in [home, j) */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      m->vals[j] = 0;
      i = j;
    }
  }
}

void rd_m_free(rd_u64map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
