/* modmap.c — which loaded object a pc belongs to, on the program's own threads, in O(log n)
 * and without a lock or malloc (dlh_modmap_find, used by stack capture to skip CUPTI's and the
 * driver's leading frames).
 *
 * glibc 2.35 and later keep exactly this index for the unwinder: _dl_find_object is a
 * lock-free binary search over the loaded objects, kept current by the loader on dlopen and
 * dlclose, and async-signal-safe. It is looked up at run time, so that libdlhook.so still loads
 * on an older glibc. There, a sorted snapshot of the objects' ranges (dl_iterate_phdr) is used
 * instead, published through an atomic pointer and rebuilt when a pc falls outside it and the
 * loader's counters (dlpi_adds, dlpi_subs) say objects came or went since. Snapshots are mmap'd
 * and never unmapped (a reader may still hold an old one); a rebuild happens once per
 * dlopen/dlclose burst, so they are few. glibc's dladdr, which scans every symbol of the
 * object (236,000 in libtorch_cuda.so), is never called here. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "unwind_int.h"

/* glibc >= 2.35 (dlfcn.h): declared here too so that the file builds on older headers. */
struct dlh_dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  struct link_map *dlfo_link_map;
  void *dlfo_eh_frame;
  unsigned long long reserved[7];
};
typedef int (*find_object_fn)(void *, struct dlh_dl_find_object *);
static find_object_fn find_object;

static unsigned flags_of(const char *path) {
  if (!path) return 0;
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  return (!strncmp(b, "libcupti.so", 11) || !strncmp(b, "libcuda.so", 10)) ? DLH_MOD_CUDA_INTERNAL
                                                                            : 0;
}

/* ---------------------------------------------------------------- snapshot (glibc < 2.35) */

typedef struct range { uintptr_t lo, hi; unsigned flags; } range;
typedef struct snapshot {
  unsigned long long adds, subs;
  size_t n, cap;
  range r[];
} snapshot;
static _Atomic(snapshot *) snap;
static _Atomic int building;

static int fill(struct dl_phdr_info *info, size_t size, void *data) {
  snapshot *s = data;
  unsigned long long v[2];
  if (!s->n && dlh_loader_counts(info, size, v)) {
    s->adds = v[0];
    s->subs = v[1];
  }
  uintptr_t lo, hi;
  dlh_object_range(info, &lo, &hi);
  if (hi <= lo || s->n == s->cap) return 0;
  size_t j = s->n++; /* insertion sort by lo: a few hundred objects, no malloc */
  while (j && s->r[j - 1].lo > lo) {
    s->r[j] = s->r[j - 1];
    j--;
  }
  s->r[j] = (range){lo, hi, flags_of(info->dlpi_name)};
  return 0;
}

static int peek(struct dl_phdr_info *info, size_t size, void *data) {
  dlh_loader_counts(info, size, data);
  return 1; /* the first object is enough */
}

#define SNAP_BYTES (256u << 10) /* room for ~10,900 objects */

static snapshot *rebuild(void) {
  int z = 0;
  if (!atomic_compare_exchange_strong(&building, &z, 1)) return NULL; /* another thread does */
  snapshot *s = mmap(NULL, SNAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) {
    atomic_store(&building, 0);
    return NULL;
  }
  s->cap = (SNAP_BYTES - sizeof *s) / sizeof(range);
  dl_iterate_phdr(fill, s);
  atomic_store_explicit(&snap, s, memory_order_release);
  atomic_store(&building, 0);
  return s;
}

static const range *snap_find(const snapshot *s, uintptr_t pc) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->r[mid].lo <= pc) lo = mid + 1; else hi = mid;
  }
  return lo && pc < s->r[lo - 1].hi ? &s->r[lo - 1] : NULL;
}

/* ---------------------------------------------------------------- lookup */

void dlh_modmap_init(void) {
  find_object = (find_object_fn)dlsym(RTLD_DEFAULT, "_dl_find_object");
}

int dlh_modmap_find(uintptr_t pc, dlh_modinfo *out) {
  if (find_object) {
    struct dlh_dl_find_object fo;
    if (find_object((void *)pc, &fo) != 0) return 0;
    out->lo = (uintptr_t)fo.dlfo_map_start;
    out->hi = (uintptr_t)fo.dlfo_map_end;
    out->flags = flags_of(fo.dlfo_link_map ? fo.dlfo_link_map->l_name : NULL);
    return 1;
  }
  snapshot *s = atomic_load_explicit(&snap, memory_order_acquire);
  const range *r = s ? snap_find(s, pc) : NULL;
  if (!r) {
    unsigned long long v[2] = {~0ull, ~0ull};
    if (s) dl_iterate_phdr(peek, v);
    if (!s || v[0] != s->adds || v[1] != s->subs) {
      s = rebuild();
      r = s ? snap_find(s, pc) : NULL;
    }
  }
  if (!r) return 0;
  out->lo = r->lo;
  out->hi = r->hi;
  out->flags = r->flags;
  return 1;
}
