/* dlsym.c — libraries reached through dlopen + dlsym are recorded like linked ones.
 *
 * `dlsym(handle, name)` on a handle of libcudart, libcublas, libcublasLt, libcudnn or libnccl
 * bypasses LD_PRELOAD: it returns the library's own function. libdlhook.so therefore exports
 * `dlsym` and `dlvsym`: when the handle is not RTLD_DEFAULT/RTLD_NEXT, the name is one that
 * dlhook wraps (the generated dlh_syms_<lib>[] tables) and the symbol the real dlsym finds lies
 * in that very library (not in, say, cuDNN's sub-library libcudnn_cnn.so.9), the wrapper is
 * returned instead, with its cache of the real function set to the symbol of that handle: a
 * library opened RTLD_LOCAL, invisible to RTLD_NEXT, is still forwarded to.
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

/* The default-version definition of `name` in one loaded object (GNU hash table only). */
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
#define FIX(p) if ((p) && (p) < info->dlpi_addr) (p) += info->dlpi_addr
  FIX(symtab); FIX(strtab); FIX(gnuhash); FIX(versym);
#undef FIX
  if (!symtab || !strtab || !gnuhash) return 0;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
  const char *strs = (const char *)strtab;
  const uint16_t *vs = (const uint16_t *)versym;
  const uint32_t *ht = (const uint32_t *)gnuhash;
  uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
  const ElfW(Addr) *bloom = (const ElfW(Addr) *)&ht[4];
  const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
  const uint32_t *chain = &buckets[nbuckets];
  if (!nbuckets) return 0;
  uint32_t h = gnu_hash(f->name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return 0;
  for (;; i++) {
    uint32_t h2 = chain[i - symoffset];
    if ((h | 1) == (h2 | 1) && bs_streq(strs + syms[i].st_name, f->name) &&
        syms[i].st_shndx != SHN_UNDEF && (!vs || !(vs[i] & 0x8000))) {
      f->found = (void *)(info->dlpi_addr + syms[i].st_value);
      return 1;
    }
    if (h2 & 1) break;
  }
  return 0;
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

/* ---------------------------------------------------------------- decisions */

static int from_self(void *caller) {
  static void *self_base;
  Dl_info di;
  void *b = __atomic_load_n(&self_base, __ATOMIC_RELAXED);
  if (!b) {
    if (!dladdr((void *)&ensure_real, &di)) return 0;
    b = di.dli_fbase;
    __atomic_store_n(&self_base, b, __ATOMIC_RELAXED);
  }
  return caller && dladdr(caller, &di) && di.dli_fbase == b;
}

/* Whether p is defined in the loaded library named soname. */
static int in_library(void *p, const char *soname) {
  Dl_info di;
  struct link_map *lm = NULL;
  if (!dladdr1(p, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return 0;
  void *h = dlh_real_dlopen ? dlh_real_dlopen(soname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  if (!h) return 0;
  int same = (void *)h == (void *)lm;
  dlclose(h);
  return same;
}

/* Called by the dlsym/dlvsym stubs (ver NULL for dlsym). Sets *done and returns the answer when
 * the lookup was made here; leaves *done 0 when the stub must jump to the real function. */
__attribute__((visibility("hidden"), used)) void *dlh_dlsym_pre(void *handle, const char *name,
                                                                const char *ver, void *caller,
                                                                int *done) {
  ensure_real();
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name || !dlh_real_dlsym) return NULL;
  if (strncmp(name, "cu", 2) && strncmp(name, "__cuda", 6) && strncmp(name, "nccl", 4)) return NULL;
  const dlh_sym *e = NULL;
  unsigned t = 0;
  for (; t < NTABLES && !e; t++) e = table_find(t, name);
  if (!e || from_self(caller)) return NULL;
  t--;
  /* An explicit handle: the lookup does not depend on the caller. */
  void *p = ver ? (dlh_real_dlvsym ? dlh_real_dlvsym(handle, name, ver) : NULL)
                : dlh_real_dlsym(handle, name);
  *done = 1;
  /* loaded by `dlhook attach`: the table's address may be the real function (attach.c) */
  void *wrapper = dlh_attach_mode ? dlh_attach_wrapper(name) : e->wrapper;
  if (!p || !wrapper || p == wrapper || !in_library(p, dlh_lib_sonames[tables[t].lib])) return p;
  void *expect = NULL;
  if (__atomic_compare_exchange_n(e->real, &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    dlh_pin_library(p); /* the cache outlives a dlclose of the handle */
  return wrapper;
}

/* Called by the dlopen stub before it jumps to the real dlopen. */
__attribute__((visibility("hidden"), used)) void dlh_dlopen_pre(const char *file, int flags) {
  ensure_real();
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
