/* elfsym.c — sorted function-symbol index of one ELF file (see dlh_elfsym.h).
 *
 * Every defined STT_FUNC / STT_GNU_IFUNC symbol of .symtab and .dynsym becomes a 16-byte entry
 * (address, size, name offset, which string table). Entries are sorted by address; at one
 * address the one with a size and global binding wins (an alias of the same code). A lookup is
 * a binary search for the last entry at or below the address, which covers it when the address
 * lies inside its size (or the symbol has no size). */
#include <fcntl.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_elfsym.h"

typedef struct ent {
  uint64_t addr;
  uint32_t size;   /* clamped at 4 GiB - 1 */
  uint32_t name;   /* bit 31: dynsym's string table; bits 0-30: offset in it */
} ent;

/* After sorting, the index is split for the cache: keys[] holds the addresses alone (8 bytes a
 * symbol) and info[] the rest. A bucket table over the address range (one bucket per ~4
 * symbols, 4 bytes each) gives the first key of each bucket, so that a lookup searches only the
 * few keys of its bucket: constant time where code is spread evenly, a binary search within
 * the bucket where it is not. */
typedef struct info { uint32_t size, name; } info;

struct dlh_symtab {
  const dlh_elf_api *api;
  Elf *elf;
  ent *e;              /* while building */
  uint64_t *keys;
  info *info;
  uint32_t *bucket;    /* bucket b: first i with (keys[i] - keys[0]) >> shift >= b; nb + 1 */
  size_t e_bytes;      /* the mappings' lengths (map_alloc) */
  size_t n, nb;
  unsigned shift;
  size_t strndx[2];   /* section index of the string tables: [0] .symtab's, [1] .dynsym's */
  const char *str[2]; /* their contents (mapped by libelf) and sizes */
  size_t strsize[2];
  uint64_t debug_bytes; /* non-allocated PROGBITS sections: the DWARF, mostly */
};

#define DYN_BIT 0x80000000u

static int cmp_ent(const void *a, const void *b) {
  const ent *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  /* prefer a sized symbol at the same address; then keep file order (stable via name) */
  if ((x->size != 0) != (y->size != 0)) return x->size ? -1 : 1;
  return 0;
}

static int api_ok(const dlh_elf_api *a) {
  return a && a->version && a->begin && a->cntl && a->end && a->nextscn && a->getshdr &&
         a->getdata && a->getsym && a->strptr && a->getnote;
}

static Elf *open_elf(const dlh_elf_api *api, const char *path) {
  if (!api_ok(api) || !path || !*path) return NULL;
  if (api->version(EV_CURRENT) == EV_NONE) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return NULL;
  Elf *elf = api->begin(fd, ELF_C_READ_MMAP, NULL);
  /* the contents are mapped: libelf no longer needs the descriptor */
  if (elf && api->cntl(elf, ELF_C_FDDONE) != 0) {
    api->end(elf);
    elf = NULL;
  }
  close(fd);
  return elf;
}

static size_t note_build_id(const dlh_elf_api *api, Elf *elf, uint8_t *id, size_t cap) {
  Elf_Scn *scn = NULL;
  while ((scn = api->nextscn(elf, scn))) {
    GElf_Shdr sh;
    if (!api->getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data *d = api->getdata(scn, NULL);
    if (!d) continue;
    size_t off = 0, noff, doff;
    GElf_Nhdr nh;
    while (off < d->d_size && (off = api->getnote(d, off, &nh, &noff, &doff)) > 0) {
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          !memcmp((const char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz <= cap) {
        memcpy(id, (const char *)d->d_buf + doff, nh.n_descsz);
        return nh.n_descsz;
      }
    }
  }
  return 0;
}

size_t dlh_elf_build_id(const dlh_elf_api *api, const char *path, uint8_t *id, size_t cap) {
  Elf *elf = open_elf(api, path);
  if (!elf) return 0;
  size_t n = note_build_id(api, elf, id, cap);
  api->end(elf);
  return n;
}

/* Pages of the mapped image in [p, p + n) given back to the kernel once read: only whole pages
 * inside that range (a page it shares with another section stays), and only inside the image
 * libelf mapped (a table libelf had to convert is its own memory). The file's pages are read
 * again from the page cache if touched, which the index never does for its symbol tables. */
static void give_back(const dlh_symtab *t, const void *p, size_t n) {
  static uintptr_t pg;
  if (!t->api->rawfile || !n) return;
  size_t size = 0;
  const char *raw = t->api->rawfile(t->elf, &size), *c = p;
  if (!raw || c < raw || c + n > raw + size) return;
  if (!pg) pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)c + pg - 1) & ~(pg - 1), b = ((uintptr_t)c + n) & ~(pg - 1);
  if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

/* The function symbols of one symbol table section: counted (out NULL), or stored at out.
 * Returns how many. The table is read in chunks, each given back once read, so that a large
 * table is never resident whole. */
static size_t add_section(const dlh_symtab *t, Elf_Scn *scn, const GElf_Shdr *sh, int dyn,
                          ent *out) {
  enum { CHUNK = 8192 };
  Elf_Data *d = t->api->getdata(scn, NULL);
  if (!d || !sh->sh_entsize || !d->d_buf) return 0;
  size_t count = d->d_size / sh->sh_entsize, n = 0, done = 0;
  for (size_t i = 1; i < count; i++) {
    if (i - done == CHUNK) {
      give_back(t, (const char *)d->d_buf + done * sh->sh_entsize, CHUNK * sh->sh_entsize);
      done = i;
    }
    GElf_Sym s;
    if (!t->api->getsym(d, (int)i, &s)) break;
    int type = GELF_ST_TYPE(s.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || s.st_name == 0 || s.st_name >= DYN_BIT)
      continue;
    if (out) {
      ent *e = &out[n];
      e->addr = s.st_value;
      e->size = s.st_size > 0xffffffffull ? 0xffffffffu : (uint32_t)s.st_size;
      e->name = (uint32_t)s.st_name | (dyn ? DYN_BIT : 0);
    }
    n++;
  }
  give_back(t, (const char *)d->d_buf + done * sh->sh_entsize, d->d_size - done * sh->sh_entsize);
  return n;
}

/* The index's arrays have mappings of their own. From malloc, a large block freed once raises
 * glibc's mmap threshold, and the next index's temporary arrays then come from the arena and
 * stay resident after they are freed (11 MB after indexing libtriton.so while recording). */
static void *map_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void map_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes ? bytes : 1);
}

/* The mapping at p of `bytes` cut to its first `keep` bytes (whole pages). */
static void map_cut(void *p, size_t bytes, size_t keep) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  size_t a = (keep + pg - 1) & ~(pg - 1), b = ((bytes ? bytes : 1) + pg - 1) & ~(pg - 1);
  if (p && a < b && a) munmap((char *)p + a, b - a);
}

/* The symbol tables (one of each kind): counted, then read into t->e at their exact size. */
static int read_tables(dlh_symtab *t) {
  Elf_Scn *scn[2] = {NULL, NULL};
  GElf_Shdr sh[2];
  Elf_Scn *s = NULL;
  int first = -1; /* the kind whose table comes first in the section headers */
  while ((s = t->api->nextscn(t->elf, s))) {
    GElf_Shdr h;
    if (!t->api->getshdr(s, &h)) continue;
    if (h.sh_type == SHT_PROGBITS && !(h.sh_flags & SHF_ALLOC)) t->debug_bytes += h.sh_size;
    if (h.sh_type != SHT_SYMTAB && h.sh_type != SHT_DYNSYM) continue;
    int dyn = h.sh_type == SHT_DYNSYM;
    if (t->strndx[dyn]) continue; /* one table of each kind */
    t->strndx[dyn] = h.sh_link;
    if (first < 0) first = dyn;
    scn[dyn] = s;
    sh[dyn] = h;
  }
  /* in section order: the order of aliases at one address decides which name wins */
  if (first < 0) return 0;
  size_t total = 0;
  for (int k = 0; k < 2; k++) {
    int dyn = k ? !first : first;
    if (scn[dyn]) total += add_section(t, scn[dyn], &sh[dyn], dyn, NULL);
  }
  if (!total) return 0;
  t->e = map_alloc(total * sizeof *t->e);
  if (!t->e) return -1;
  t->e_bytes = total * sizeof *t->e;
  for (int k = 0; k < 2; k++) {
    int dyn = k ? !first : first;
    if (scn[dyn]) t->n += add_section(t, scn[dyn], &sh[dyn], dyn, t->e + t->n);
  }
  if (t->n > total) t->n = total; /* cannot happen: the same table read twice */
  return 0;
}

/* Entries sorted in place: qsort's merge sort takes a second buffer as large as the entries.
 * Each entry's order is made unique, as the index wants it (address; at one address a sized
 * symbol first, then file order), and packed into its addr field: addr << 25 | unsized << 24 |
 * position. That needs addresses below 2^39 and fewer than 2^24 entries (every shared library;
 * other files take qsort, as before). */
#define POS_BITS 24

static inline void swap_ent(ent *a, ent *b) {
  ent x = *a;
  *a = *b;
  *b = x;
}

/* The heap property restored below i, in a[0..n). */
static void sift_down(ent *a, size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && a[c + 1].addr > a[c].addr) c++;
    if (a[i].addr >= a[c].addr) return;
    swap_ent(&a[i], &a[c]);
    i = c;
  }
}

static void heap_sort(ent *a, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n);
  for (size_t m = n; m > 1; m--) {
    swap_ent(&a[0], &a[m - 1]);
    sift_down(a, 0, m - 1);
  }
}

/* Introsort over unique keys: quicksort (median of three, Hoare's partition), a heap sort past
 * the depth limit, insertion sort of short runs. */
static void intro_sort(ent *a, size_t n, unsigned depth) {
  while (n > 16) {
    if (depth-- == 0) {
      heap_sort(a, n);
      return;
    }
    size_t m = n / 2;
    if (a[m].addr < a[0].addr) swap_ent(&a[m], &a[0]);
    if (a[n - 1].addr < a[0].addr) swap_ent(&a[n - 1], &a[0]);
    if (a[n - 1].addr < a[m].addr) swap_ent(&a[n - 1], &a[m]);
    uint64_t p = a[m].addr;
    size_t i = 0, j = n - 1;
    for (;;) { /* a[0] <= p <= a[n - 1]: neither scan leaves the range */
      while (a[i].addr < p) i++;
      while (a[j].addr > p) j--;
      if (i >= j) break;
      swap_ent(&a[i], &a[j]);
      i++;
      j--;
    }
    size_t left = j + 1; /* [0, left) <= p <= [left, n) */
    if (left < n - left) {
      intro_sort(a, left, depth);
      a += left;
      n -= left;
    } else {
      intro_sort(a + left, n - left, depth);
      n = left;
    }
  }
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && a[j - 1].addr > a[j].addr; j--) swap_ent(&a[j - 1], &a[j]);
}

/* Sorts e[0..n) by address and keeps one entry per address (a sized one first, then the first
 * in file order); returns how many are left. */
static size_t sort_unique(ent *e, size_t n) {
  uint64_t top = 0;
  for (size_t i = 0; i < n; i++)
    if (e[i].addr > top) top = e[i].addr;
  size_t k = 0;
  if (top >> (63 - POS_BITS - 1) || n >> POS_BITS) {
    qsort(e, n, sizeof *e, cmp_ent); /* stable in glibc (merge sort) */
    for (size_t i = 0; i < n; i++)
      if (!k || e[k - 1].addr != e[i].addr) e[k++] = e[i];
    return k;
  }
  for (size_t i = 0; i < n; i++)
    e[i].addr = e[i].addr << (POS_BITS + 1) | (uint64_t)(e[i].size == 0) << POS_BITS | i;
  unsigned depth = 0;
  for (size_t m = n; m; m >>= 1) depth += 2;
  intro_sort(e, n, depth);
  uint64_t last = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = e[i].addr >> (POS_BITS + 1);
    if (k && a == last) continue;
    e[k] = e[i];
    e[k++].addr = a;
    last = a;
  }
  return k;
}

dlh_symtab *dlh_symtab_open(const dlh_elf_api *api, const char *path, const uint8_t *want_id,
                            size_t want_len) {
  Elf *elf = open_elf(api, path);
  if (!elf) return NULL;
  if (want_id && want_len) {
    uint8_t id[64];
    size_t n = note_build_id(api, elf, id, sizeof id);
    if (n != want_len || memcmp(id, want_id, n) != 0) {
      api->end(elf);
      return NULL;
    }
  }
  dlh_symtab *t = calloc(1, sizeof *t);
  if (!t) {
    api->end(elf);
    return NULL;
  }
  t->api = api;
  t->elf = elf;
  if (read_tables(t) != 0) {
    dlh_symtab_close(t);
    return NULL;
  }
  for (int k = 0; k < 2; k++) { /* the string tables, read once */
    Elf_Scn *ss = NULL;
    GElf_Shdr sh;
    size_t idx = 0;
    while (t->strndx[k] && (ss = api->nextscn(elf, ss)))
      if (++idx == t->strndx[k]) break;
    Elf_Data *d = ss && api->getshdr(ss, &sh) && sh.sh_type == SHT_STRTAB ? api->getdata(ss, NULL)
                                                                          : NULL;
    /* a table that ends in NUL terminates every string that starts inside it: a lookup then
     * needs no check beyond the offset (done here, once per symbol) */
    if (d && d->d_buf && d->d_size && ((const char *)d->d_buf)[d->d_size - 1] == 0) {
      t->str[k] = d->d_buf;
      t->strsize[k] = d->d_size;
    }
  }
  if (!t->n || (!t->str[0] && !t->str[1])) {
    dlh_symtab_close(t);
    return NULL;
  }
  size_t kept = 0; /* names outside their string table: a damaged file */
  for (size_t i = 0; i < t->n; i++) {
    int dyn = (t->e[i].name & DYN_BIT) != 0;
    if ((t->e[i].name & ~DYN_BIT) < t->strsize[dyn]) t->e[kept++] = t->e[i];
  }
  t->n = kept;
  if (!t->n) {
    dlh_symtab_close(t);
    return NULL;
  }
  size_t k = sort_unique(t->e, t->n);
  t->n = k;
  map_cut(t->e, t->e_bytes, k * sizeof *t->e);
  t->e_bytes = k * sizeof *t->e;
  size_t want = k / 4 ? k / 4 : 1; /* buckets: about one per 4 symbols */
  uint64_t span = t->e[k - 1].addr - t->e[0].addr + 1;
  t->shift = 0;
  while ((span >> t->shift) > want) t->shift++;
  t->nb = (size_t)((span - 1) >> t->shift) + 1;
  t->keys = map_alloc(k * sizeof *t->keys);
  t->bucket = k < 0xffffffffu ? map_alloc((t->nb + 1) * sizeof *t->bucket) : NULL;
  if (!t->keys || !t->bucket) {
    dlh_symtab_close(t);
    return NULL;
  }
  for (size_t i = 0; i < k; i++) t->keys[i] = t->e[i].addr;
  /* info[] in the entries' own memory: info i (bytes 8i..8i+8) never reaches entry j > i
   * (bytes 16j..), which is still to be read */
  info *inf = (info *)(void *)t->e;
  for (size_t i = 0; i < k; i++) {
    uint32_t size = t->e[i].size, name = t->e[i].name;
    inf[i].size = size;
    inf[i].name = name;
  }
  map_cut(inf, t->e_bytes, k * sizeof *inf);
  t->info = inf;
  size_t i = 0;
  for (size_t b = 0; b <= t->nb; b++) {
    while (i < k && ((t->keys[i] - t->keys[0]) >> t->shift) < b) i++;
    t->bucket[b] = (uint32_t)i;
  }
  t->e = NULL; /* now t->info */
  return t;
}

/* The last i in [lo, hi) with v[i] <= x, given v[lo] <= x. */
static size_t last_le(const uint64_t *v, size_t lo, size_t hi, uint64_t x) {
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] <= x) lo = mid; else hi = mid;
  }
  return lo;
}

const char *dlh_symtab_lookup(const dlh_symtab *t, uint64_t addr, uint64_t *off) {
  if (!t || !t->n || addr < t->keys[0]) return NULL;
  uint64_t b = (addr - t->keys[0]) >> t->shift;
  if (b >= t->nb) b = t->nb - 1;
  /* the answer is in bucket b, or it is the last key of an earlier bucket */
  size_t lo = t->bucket[b] ? t->bucket[b] - 1 : 0, hi = t->bucket[b + 1];
  if (hi <= lo) hi = lo + 1;
  size_t i = last_le(t->keys, lo, hi, addr);
  const info *e = &t->info[i];
  if (e->size && addr - t->keys[i] >= e->size) return NULL;
  int dyn = (e->name & DYN_BIT) != 0;
  const char *name = t->str[dyn] + (e->name & ~DYN_BIT); /* checked when indexed */
  if (off) *off = addr - t->keys[i];
  return name;
}

size_t dlh_symtab_count(const dlh_symtab *t) { return t ? t->n : 0; }
uint64_t dlh_symtab_debug_bytes(const dlh_symtab *t) { return t ? t->debug_bytes : 0; }

size_t dlh_symtab_bytes(const dlh_symtab *t) {
  return t ? sizeof *t + t->n * (sizeof *t->keys + sizeof *t->info) +
                 (t->nb + 1) * sizeof *t->bucket
           : 0;
}

void dlh_symtab_close(dlh_symtab *t) {
  if (!t) return;
  if (t->elf) t->api->end(t->elf);
  map_free(t->e, t->e_bytes);
  map_free(t->keys, t->n * sizeof *t->keys);
  map_free(t->info, t->n * sizeof *t->info);
  map_free(t->bucket, (t->nb + 1) * sizeof *t->bucket);
  free(t);
}
