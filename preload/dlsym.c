/* dlsym.c — libraries reached through dlopen + dlsym are recorded like linked ones.
 *
 * `dlsym(handle, name)` on a handle of libcudart, libcublas, libcublasLt, libcudnn or libnccl
 * bypasses LD_PRELOAD: it returns the library's own function. libdlhook.so therefore exports
 * `dlsym` and `dlvsym`: when the handle is not RTLD_DEFAULT/RTLD_NEXT, the name is one that
 * dlhook wraps (the generated dlh_syms_<lib>[] tables) and the symbol the real dlsym finds lies
 * in that very library (not in, say, cuDNN's sub-library libcudnn_cnn.so.9), a second entry of
 * the wrapper is returned instead, which records the call and calls the library's own
 * definition, the one found. Other interposers of the same functions (the program's own shims)
 * see the calls they see untraced: see "The interposer chain" below.
 *
 * Caller-relative semantics are kept: glibc's dlsym/dlvsym/dlopen look at their return address
 * (RTLD_NEXT, the caller's namespace and scope, $ORIGIN). The exported entry points are small
 * assembly stubs (x86-64, AArch64) that ask a C function what to do and then either return its
 * answer or jump to the real function with the caller's return address untouched. Lookups made
 * by libdlhook itself are never substituted (dlh_resolve must find the real functions).
 *
 * `dlopen` is exported only to warn: a library opened with RTLD_DEEPBIND resolves its own
 * references before the preloaded wrappers, so the CUDA calls it makes are not recorded.
 *
 * The real functions: libc's dlvsym is found by reading libc's dynamic symbol table
 * (dl_iterate_phdr: calling dlvsym by name would reach our own export), then
 * dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34") (or "GLIBC_2.2.5") finds the next definition after
 * libdlhook: another interposer's or libc's.
 * Other architectures: dlsym/dlvsym are not exported (handles are not covered) — see
 * DLH_DLSYM_ASM. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "dlh_internal.h"
#include "dlh_hooks.h"

#if defined(__x86_64__) || defined(__aarch64__)
#define DLH_DLSYM_ASM 1
#else
#define DLH_DLSYM_ASM 0
#endif

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
typedef void *(*dlopen_fn)(const char *, int);

/* Read by the assembly stubs (hidden: PC-relative, no GOT). */
__attribute__((visibility("hidden"))) dlsym_fn dlh_real_dlsym;
__attribute__((visibility("hidden"))) dlvsym_fn dlh_real_dlvsym;
__attribute__((visibility("hidden"))) dlopen_fn dlh_real_dlopen;

/* ---------------------------------------------------------------- the generated tables */

/* The generated wrappers of each library (hooks/dlh_hooks.h). */
static const struct {
  const dlh_sym *syms;
  const unsigned *count;
  int lib;
} tables[] = {
#define DLH_TABLE(name, LIB) {dlh_syms_##name, &dlh_syms_##name##_count, DLH_LIB_##LIB},
    DLH_HOOKED_LIBS(DLH_TABLE)
#undef DLH_TABLE
};
#define NTABLES (sizeof tables / sizeof tables[0])

static const dlh_sym *table_find(unsigned t, const char *name) {
  if (!tables[t].syms || !tables[t].count) return NULL;
  size_t lo = 0, hi = *tables[t].count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(name, tables[t].syms[mid].name);
    if (!c) return &tables[t].syms[mid];
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return NULL;
}

const dlh_sym *dlh_sym_find(const char *name, int *lib) {
  for (unsigned t = 0; t < NTABLES; t++) {
    const dlh_sym *e = table_find(t, name);
    if (e) {
      if (lib) *lib = tables[t].lib;
      return e;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- bootstrap */

struct elf_find { const char *soname, *name; void *found; };

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

/* String helpers of the bootstrap: it runs inside a sanitizer runtime's start-up (ASan looks up
 * the real functions with dlsym), before libc's intercepted string functions are usable. */
static int bs_streq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}
static const char *bs_basename(const char *p) {
  const char *b = p;
  for (; *p; p++)
    if (*p == '/') b = p + 1;
  return b;
}

/* The default-version (or unversioned) definition of `name` in the loaded object at load address
 * base with dynamic section dyn, found through its GNU hash table; NULL when it defines no such
 * symbol or has no GNU hash table. */
static void *dyn_lookup(ElfW(Addr) base, const ElfW(Dyn) *dyn, const char *name) {
  uintptr_t symtab = 0, strtab = 0, gnuhash = 0, versym = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    uintptr_t v = dyn->d_un.d_ptr;
    switch (dyn->d_tag) {
    case DT_SYMTAB: symtab = v; break;
    case DT_STRTAB: strtab = v; break;
    case DT_GNU_HASH: gnuhash = v; break;
    case DT_VERSYM: versym = v; break;
    }
  }
  /* ld.so relocates these in place on most architectures; where it does not, add the base. */
#define FIX(p) if ((p) && (p) < base) (p) += base
  FIX(symtab); FIX(strtab); FIX(gnuhash); FIX(versym);
#undef FIX
  if (!symtab || !strtab || !gnuhash) return NULL;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
  const char *strs = (const char *)strtab;
  const uint16_t *vs = (const uint16_t *)versym;
  const uint32_t *ht = (const uint32_t *)gnuhash;
  uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
  const ElfW(Addr) *bloom = (const ElfW(Addr) *)&ht[4];
  const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
  const uint32_t *chain = &buckets[nbuckets];
  if (!nbuckets) return NULL;
  uint32_t h = gnu_hash(name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return NULL;
  for (;; i++) {
    uint32_t h2 = chain[i - symoffset];
    if ((h | 1) == (h2 | 1) && bs_streq(strs + syms[i].st_name, name) &&
        syms[i].st_shndx != SHN_UNDEF && (!vs || !(vs[i] & 0x8000)))
      return (void *)(base + syms[i].st_value);
    if (h2 & 1) break;
  }
  return NULL;
}

/* The default-version definition of `name` in the loaded object named soname. */
static int elf_find_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct elf_find *f = arg;
  const char *base = info->dlpi_name ? bs_basename(info->dlpi_name) : NULL;
  if (!base || !bs_streq(base, f->soname)) return 0;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  f->found = dyn_lookup(info->dlpi_addr, dyn, f->name);
  return f->found != NULL;
}

static void *elf_find(const char *soname, const char *name) {
  struct elf_find f = {soname, name, NULL};
  /* The objects from ld.so's link map, not from dl_iterate_phdr: TSan intercepts that one and,
   * when it asks dlsym for the real functions at start-up, has not set its own pointer yet. */
  for (struct link_map *l = _r_debug.r_map; l && !f.found; l = l->l_next) {
    if (!l->l_ld) continue;
    ElfW(Phdr) dyn_ph;
    memset(&dyn_ph, 0, sizeof dyn_ph);
    dyn_ph.p_type = PT_DYNAMIC;
    dyn_ph.p_vaddr = (uintptr_t)l->l_ld - l->l_addr;
    struct dl_phdr_info info;
    memset(&info, 0, sizeof info);
    info.dlpi_addr = l->l_addr;
    info.dlpi_name = l->l_name;
    info.dlpi_phdr = &dyn_ph;
    info.dlpi_phnum = 1;
    elf_find_cb(&info, sizeof info, &f);
  }
  return f.found;
}

static void *next_versioned(dlvsym_fn libc_dlvsym, const char *name) {
  void *p = libc_dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (!p) p = libc_dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  return p;
}

static void ensure_real(void) {
  if (__atomic_load_n(&dlh_real_dlsym, __ATOMIC_ACQUIRE)) return;
  if (dlh_attach_mode) {
    /* Loaded by `dlhook attach` (RTLD_LOCAL, late): no RTLD_NEXT from here; the program's
     * dlsym entries were bound to libc's before dlhook came (attach.c rewrites them). */
    dlsym_fn s = (dlsym_fn)elf_find("libc.so.6", "dlsym");
    dlvsym_fn v = (dlvsym_fn)elf_find("libc.so.6", "dlvsym");
    dlopen_fn o = (dlopen_fn)elf_find("libc.so.6", "dlopen");
    if (s && v && o) {
      __atomic_store_n(&dlh_real_dlvsym, v, __ATOMIC_RELEASE);
      __atomic_store_n(&dlh_real_dlopen, o, __ATOMIC_RELEASE);
      __atomic_store_n(&dlh_real_dlsym, s, __ATOMIC_RELEASE);
      return;
    }
  }
  dlvsym_fn libc_dlvsym = (dlvsym_fn)elf_find("libc.so.6", "dlvsym");
  if (!libc_dlvsym) libc_dlvsym = (dlvsym_fn)elf_find("libdl.so.2", "dlvsym");
  dlsym_fn s = NULL;
  dlvsym_fn v = NULL;
  dlopen_fn o = NULL;
  if (libc_dlvsym) {
    s = (dlsym_fn)next_versioned(libc_dlvsym, "dlsym");
    v = (dlvsym_fn)next_versioned(libc_dlvsym, "dlvsym");
    o = (dlopen_fn)next_versioned(libc_dlvsym, "dlopen");
  }
  /* Last resort, straight from libc's table. */
  if (!s) s = (dlsym_fn)elf_find("libc.so.6", "dlsym");
  if (!v) v = libc_dlvsym;
  if (!o) o = (dlopen_fn)elf_find("libc.so.6", "dlopen");
  __atomic_store_n(&dlh_real_dlvsym, v, __ATOMIC_RELEASE);
  __atomic_store_n(&dlh_real_dlopen, o, __ATOMIC_RELEASE);
  __atomic_store_n(&dlh_real_dlsym, s, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- the loaded objects */

/* The loaded objects are told apart without dladdr, which scans the symbol table of the object
 * (linear: libtorch_cuda.so has 236,000 symbols): glibc 2.35+'s _dl_find_object answers in
 * logarithmic time, and an object's definitions are looked up in its GNU hash table. */
#ifdef DLFO_STRUCT_HAS_EH_DBASE
typedef int (*find_object_fn)(void *, struct dl_find_object *);
#endif

/* The link map of the loaded object that contains address p; NULL when none does. */
static struct link_map *object_of(void *p) {
  if (!p) return NULL;
#ifdef DLFO_STRUCT_HAS_EH_DBASE
  static find_object_fn find;
  static int looked;
  if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE) && dlh_real_dlvsym) {
    find_object_fn f =
        dlh_real_dlvsym ? (find_object_fn)dlh_real_dlvsym(RTLD_DEFAULT, "_dl_find_object",
                                                          "GLIBC_2.35")
                        : NULL;
    __atomic_store_n(&find, f, __ATOMIC_RELAXED);
    __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
  }
  find_object_fn f = __atomic_load_n(&find, __ATOMIC_RELAXED);
  if (f) {
    struct dl_find_object o;
    return f(p, &o) == 0 ? o.dlfo_link_map : NULL;
  }
#endif
  Dl_info di;
  struct link_map *lm = NULL;
  return dladdr1(p, &di, (void **)&lm, RTLD_DL_LINKMAP) ? lm : NULL;
}

/* libdlhook.so's own link map. */
static struct link_map *self_map(void) {
  static struct link_map *self;
  struct link_map *m = __atomic_load_n(&self, __ATOMIC_RELAXED);
  if (!m) {
    m = object_of((void *)&ensure_real);
    __atomic_store_n(&self, m, __ATOMIC_RELAXED);
  }
  return m;
}

/* The definition of `name` in one loaded object; NULL when it has none. */
static void *map_lookup(const struct link_map *m, const char *name) {
  return m && m->l_ld ? dyn_lookup(m->l_addr, m->l_ld, name) : NULL;
}

/* The last of the objects loaded at start-up (the program, LD_PRELOAD, their needed libraries):
 * those form the global scope, in the order of the link map; objects opened later with dlopen
 * come after it. Noted by the constructor; before it, every loaded object counts. */
static struct link_map *startup_last;

__attribute__((constructor)) static void note_startup(void) {
  struct link_map *l = _r_debug.r_map;
  while (l && l->l_next) l = l->l_next;
  __atomic_store_n(&startup_last, l, __ATOMIC_RELEASE);
}

/* The object after m in the global scope, NULL after the last. */
static struct link_map *startup_next(const struct link_map *m) {
  return m == __atomic_load_n(&startup_last, __ATOMIC_ACQUIRE) ? NULL : m->l_next;
}

/* Whether m comes after `after` in the global scope (both loaded at start-up). */
static int startup_after(const struct link_map *m, const struct link_map *after) {
  for (const struct link_map *l = after ? startup_next(after) : NULL; l; l = startup_next(l))
    if (l == m) return 1;
  return 0;
}

/* Whether m is one of the objects loaded at start-up. */
static int startup_object(const struct link_map *m) {
  return m && (m == _r_debug.r_map || startup_after(m, _r_debug.r_map));
}

/* The loaded library named soname (a handle is its link map in glibc); NULL when not loaded. */
static struct link_map *loaded_library(const char *soname) {
  void *h = dlh_real_dlopen ? dlh_real_dlopen(soname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  if (h) dlclose(h);
  return (struct link_map *)h;
}

/* ---------------------------------------------------------------- a second copy */

/* Every copy of libdlhook.so exports dlhook_attach_start, and no other library does. */
#define DLH_COPY_MARK "dlhook_attach_start"

const char *dlh_earlier_copy(void) {
  static int state; /* 0: not looked yet, 1: this copy is the first, 2: another one is */
  static const char *first;
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s) return s == 2 ? first : NULL;
  ensure_real();
  struct link_map *self = self_map();
  if (!self) return NULL;
  const char *found = NULL;
  for (struct link_map *l = _r_debug.r_map; l && l != self && !found; l = l->l_next)
    if (map_lookup(l, DLH_COPY_MARK)) found = l->l_name && l->l_name[0] ? l->l_name : "?";
  __atomic_store_n(&first, found, __ATOMIC_RELAXED);
  __atomic_store_n(&state, found ? 2 : 1, __ATOMIC_RELEASE);
  return found;
}

/* Only the objects loaded at start-up are looked at: the rest of the link map may change under
 * a concurrent dlopen or dlclose. */
const char *dlh_later_copy(void) {
  ensure_real();
  struct link_map *self = self_map();
  for (struct link_map *l = self ? startup_next(self) : NULL; l; l = startup_next(l))
    if (map_lookup(l, DLH_COPY_MARK)) return l->l_name && l->l_name[0] ? l->l_name : "?";
  return NULL;
}

/* ---------------------------------------------------------------- decisions */

/* The interposer chain. A CUDA function can have several definitions in the global scope: the
 * program's own shims (GPU sharing, checkpointing), libdlhook.so, any other preloaded tool, then
 * the library itself, which a program that opened it RTLD_LOCAL (Python, plugin hosts) reaches
 * only through its handle. Each interposer sees the calls it sees untraced, no more, no fewer,
 * and no lookup ever answers with a definition that leads back to its caller:
 *   - dlhook's wrapper forwards to the next definition after dlhook (dlh_resolve: RTLD_NEXT,
 *     else the library's own): a linked call goes through the chain as untraced;
 *   - a handle lookup made by an interposer that comes after dlhook (the wrapper calls it, and
 *     recorded the call) gets the library's own definition;
 *   - a handle lookup made by any other code (the program, a plugin, an interposer before
 *     dlhook) gets the wrapper's second entry (dlh_sym.own), which records the call and calls
 *     the library's own definition: untraced, such a lookup passes by every interposer;
 *   - an interposer's RTLD_NEXT lookup is glibc's, except where glibc finds nothing (the library
 *     is not in the global scope): then it gets the library's own definition.
 * An interposer is an object loaded at start-up that exports the name (other than the library
 * itself). Loaded by `dlhook attach`, dlhook is outside the global scope: handle lookups get the
 * wrapper, RTLD_NEXT is glibc's. */

/* Whether object m is an interposer of name that comes before or after libdlhook.so in the global
 * scope: -1 before, 1 after, 0 not an interposer. lib: the library itself. */
static int interposer_side(const struct link_map *m, const char *name, const struct link_map *lib) {
  if (!m || m == lib || !startup_object(m) || !map_lookup(m, name)) return 0;
  return startup_after(m, self_map()) ? 1 : -1;
}

/* dlsym(RTLD_NEXT, name) (dlvsym when ver is set) made from object `from`, name wrapped in
 * library lib: NULL (glibc answers) unless `from` is an interposer of name and no object after it
 * in the global scope defines name; then the library's own definition, with *done set. */
static void *next_definition(const struct link_map *from, const char *name, const char *ver,
                             int lib, int *done) {
  if (!startup_object(from) || !map_lookup(from, name)) return NULL;
  for (const struct link_map *l = startup_next(from); l; l = startup_next(l))
    if (map_lookup(l, name)) return NULL;
  void *h = dlh_real_dlopen ? dlh_real_dlopen(dlh_lib_sonames[lib], RTLD_LAZY | RTLD_NOLOAD) : NULL;
  if (!h) return NULL;
  void *p = ver ? (dlh_real_dlvsym ? dlh_real_dlvsym(h, name, ver) : NULL)
                : dlh_real_dlsym(h, name);
  dlclose(h);
  if (p) *done = 1;
  return p;
}

/* The entry a handle lookup gets: it records the call and calls p, the library's own definition,
 * as the untraced lookup would, past every interposer. One definition per name is cached (the
 * library pinned, so that it outlives a dlclose of the handle); a second copy of the library,
 * loaded from another path, gets its own definition unrecorded. */
static void *own_entry(const dlh_sym *e, void *p) {
  void *expect = NULL;
  if (__atomic_compare_exchange_n(e->own_real, &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    dlh_pin_library(p);
  else if (expect != p)
    return p;
  return e->own;
}

/* Called by the dlsym/dlvsym stubs (ver NULL for dlsym). Sets *done and returns the answer when
 * the lookup was made here; leaves *done 0 when the stub must jump to the real function. */
__attribute__((visibility("hidden"), used)) void *dlh_dlsym_pre(void *handle, const char *name,
                                                                const char *ver, void *caller,
                                                                int *done) {
  ensure_real();
  if (handle == RTLD_DEFAULT || !name || !dlh_real_dlsym) return NULL;
  if (!dlh_attach_mode && dlh_earlier_copy()) return NULL; /* the first copy answers */
  if (strncmp(name, "cu", 2) && strncmp(name, "__cuda", 6) && strncmp(name, "nccl", 4)) return NULL;
  const dlh_sym *e = NULL;
  unsigned t = 0;
  for (; t < NTABLES && !e; t++) e = table_find(t, name);
  if (!e) return NULL;
  t--;
  struct link_map *self = self_map(), *from = object_of(caller);
  if (!self || from == self) return NULL; /* dlhook's own lookups are never substituted */
  if (handle == RTLD_NEXT)
    return dlh_attach_mode ? NULL : next_definition(from, name, ver, tables[t].lib, done);
  /* An explicit handle: the lookup does not depend on the caller. */
  void *p = ver ? (dlh_real_dlvsym ? dlh_real_dlvsym(handle, name, ver) : NULL)
                : dlh_real_dlsym(handle, name);
  *done = 1;
  /* dlhook's own definition: the tables' addresses are bound in the global scope, where the
   * first definition may be another interposer's (or, once attached, the library's). */
  void *wrapper = dlh_attach_mode ? dlh_attach_wrapper(name) : map_lookup(self, name);
  struct link_map *lib = loaded_library(dlh_lib_sonames[tables[t].lib]);
  if (!p || !wrapper || p == wrapper || !lib || object_of(p) != lib) return p;
  if (dlh_attach_mode) {
    void *expect = NULL;
    if (__atomic_compare_exchange_n(e->real, &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      dlh_pin_library(p); /* the cache outlives a dlclose of the handle */
    return wrapper;
  }
  if (interposer_side(from, name, lib) > 0)
    return p; /* dlhook's wrapper calls this interposer, which recorded the call already */
  return own_entry(e, p);
}

/* Called by the dlopen stub before it jumps to the real dlopen. */
__attribute__((visibility("hidden"), used)) void dlh_dlopen_pre(const char *file, int flags) {
  ensure_real();
  if (!dlh_attach_mode && dlh_earlier_copy()) return; /* the first copy warns */
  static int warned;
  if ((flags & RTLD_DEEPBIND) && file && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    dlh_warn("%s is opened with RTLD_DEEPBIND: the CUDA library calls made from it are not "
             "recorded (later RTLD_DEEPBIND libraries are not listed)", file);
}

/* ---------------------------------------------------------------- exported stubs */

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl dlsym\n.type dlsym,@function\n"
    "dlsym:\n"
    "  .cfi_startproc\n"
    "  endbr64\n"
    "  push %rdi\n  .cfi_adjust_cfa_offset 8\n"
    "  push %rsi\n  .cfi_adjust_cfa_offset 8\n"
    "  sub $24, %rsp\n  .cfi_adjust_cfa_offset 24\n"
    "  movl $0, 8(%rsp)\n"
    "  xor %edx, %edx\n"
    "  mov 40(%rsp), %rcx\n"
    "  lea 8(%rsp), %r8\n"
    "  call dlh_dlsym_pre\n"
    "  mov 8(%rsp), %ecx\n"
    "  add $24, %rsp\n  .cfi_adjust_cfa_offset -24\n"
    "  pop %rsi\n  .cfi_adjust_cfa_offset -8\n"
    "  pop %rdi\n  .cfi_adjust_cfa_offset -8\n"
    "  test %ecx, %ecx\n"
    "  jz 1f\n"
    "  ret\n"
    "1:\n"
    "  jmp *dlh_real_dlsym(%rip)\n"
    "  .cfi_endproc\n"
    ".size dlsym, .-dlsym\n"
    ".globl dlvsym\n.type dlvsym,@function\n"
    "dlvsym:\n"
    "  .cfi_startproc\n"
    "  endbr64\n"
    "  push %rdi\n  .cfi_adjust_cfa_offset 8\n"
    "  push %rsi\n  .cfi_adjust_cfa_offset 8\n"
    "  push %rdx\n  .cfi_adjust_cfa_offset 8\n"
    "  sub $16, %rsp\n  .cfi_adjust_cfa_offset 16\n"
    "  movl $0, 0(%rsp)\n"
    "  mov 40(%rsp), %rcx\n"
    "  lea 0(%rsp), %r8\n"
    "  call dlh_dlsym_pre\n"
    "  mov 0(%rsp), %ecx\n"
    "  add $16, %rsp\n  .cfi_adjust_cfa_offset -16\n"
    "  pop %rdx\n  .cfi_adjust_cfa_offset -8\n"
    "  pop %rsi\n  .cfi_adjust_cfa_offset -8\n"
    "  pop %rdi\n  .cfi_adjust_cfa_offset -8\n"
    "  test %ecx, %ecx\n"
    "  jz 1f\n"
    "  ret\n"
    "1:\n"
    "  jmp *dlh_real_dlvsym(%rip)\n"
    "  .cfi_endproc\n"
    ".size dlvsym, .-dlvsym\n"
    ".globl dlopen\n.type dlopen,@function\n"
    "dlopen:\n"
    "  .cfi_startproc\n"
    "  endbr64\n"
    "  push %rdi\n  .cfi_adjust_cfa_offset 8\n"
    "  push %rsi\n  .cfi_adjust_cfa_offset 8\n"
    "  sub $8, %rsp\n  .cfi_adjust_cfa_offset 8\n"
    "  call dlh_dlopen_pre\n"
    "  add $8, %rsp\n  .cfi_adjust_cfa_offset -8\n"
    "  pop %rsi\n  .cfi_adjust_cfa_offset -8\n"
    "  pop %rdi\n  .cfi_adjust_cfa_offset -8\n"
    "  jmp *dlh_real_dlopen(%rip)\n"
    "  .cfi_endproc\n"
    ".size dlopen, .-dlopen\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n"
    ".globl dlsym\n.type dlsym,%function\n"
    "dlsym:\n"
    "  stp x29, x30, [sp, #-48]!\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  str wzr, [sp, #32]\n"
    "  mov x2, #0\n"
    "  mov x3, x30\n"
    "  add x4, sp, #32\n"
    "  bl dlh_dlsym_pre\n"
    "  ldr w9, [sp, #32]\n"
    "  cbz w9, 1f\n"
    "  ldp x29, x30, [sp], #48\n"
    "  ret\n"
    "1:\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldp x29, x30, [sp], #48\n"
    "  adrp x16, dlh_real_dlsym\n"
    "  ldr x16, [x16, :lo12:dlh_real_dlsym]\n"
    "  br x16\n"
    ".size dlsym, .-dlsym\n"
    ".globl dlvsym\n.type dlvsym,%function\n"
    "dlvsym:\n"
    "  stp x29, x30, [sp, #-48]!\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  str x2, [sp, #40]\n"
    "  str wzr, [sp, #32]\n"
    "  mov x3, x30\n"
    "  add x4, sp, #32\n"
    "  bl dlh_dlsym_pre\n"
    "  ldr w9, [sp, #32]\n"
    "  cbz w9, 1f\n"
    "  ldp x29, x30, [sp], #48\n"
    "  ret\n"
    "1:\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldr x2, [sp, #40]\n"
    "  ldp x29, x30, [sp], #48\n"
    "  adrp x16, dlh_real_dlvsym\n"
    "  ldr x16, [x16, :lo12:dlh_real_dlvsym]\n"
    "  br x16\n"
    ".size dlvsym, .-dlvsym\n"
    ".globl dlopen\n.type dlopen,%function\n"
    "dlopen:\n"
    "  stp x29, x30, [sp, #-32]!\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  bl dlh_dlopen_pre\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldp x29, x30, [sp], #32\n"
    "  adrp x16, dlh_real_dlopen\n"
    "  ldr x16, [x16, :lo12:dlh_real_dlopen]\n"
    "  br x16\n"
    ".size dlopen, .-dlopen\n");
#endif
