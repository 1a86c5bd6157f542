/* attach.c — the in-process side of `dlhook attach PID` / `dlhook detach PID`
 * (command/cmd/attach.c is the injector that calls these entry points through ptrace).
 *
 * Loaded late, by dlopen from a thread of a running program, through a symlink named
 * libdlhook-attach.so: the constructor (runtime.c) sees that name (dlh_attach_detect, process.c)
 * and does nothing but its look-ups: no setting read from the program's environment, no
 * environment change (setenv would race with the program's own getenv), no signal handler.
 *
 * dlhook_attach_start(settings) then does what LD_PRELOAD and CUDA_INJECTION64_PATH would have
 * done at start-up, as far as a running process allows:
 *   - the settings (output directory, --stacks; --duration is kept by the session thread);
 *   - the run-time pieces of the constructor (dlh_runtime_late_init: thread key, stacks, fds);
 *   - GOT/PLT rewriting: every loaded module (dl_iterate_phdr) whose PT_DYNAMIC relocations
 *     (DT_JMPREL and DT_RELA: R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT) import a name that dlhook
 *     wraps gets dlhook's wrapper in that slot; the wrapper's cache of the real function is set
 *     to what the slot held (the originally bound definition), or resolved when the slot still
 *     points at its lazy-binding PLT stub. A read-only slot (full RELRO) is made writable for
 *     the store and put back. Stores are single aligned words: a thread calling through the
 *     slot at that moment takes either function, both valid;
 *   - libraries the program loads later: a session thread rescans every 0.5 s when the
 *     loader's count of loads changed (dl_iterate_phdr's dlpi_adds) and rewrites the new ones;
 *   - CUPTI subscribed late: callbacks for the calls made from now on (they also see statically
 *     linked cudart), activity from now on; CUPTI in use by another tool costs one warning;
 *   - the trace: ProcessInfo says it was attached and lists what could not be hooked.
 * dlhook_attach_stop(), or the end of the duration: recording off, every patched slot put back
 * (only where it still holds dlhook's wrapper), CUPTI flushed and unsubscribed, the trace
 * finished (Trailer.exit_reason 2), per-trace state reset so that a later attach writes a new
 * trace. The library stays mapped (-z nodelete): a thread still inside a wrapper finishes in
 * it, and later calls through any pointer to a wrapper pass straight through.
 *
 * dlsym/dlvsym imports are rewritten to dlhook's stubs (dlsym.c) too: a CUDA library's function
 * looked up by handle while attached is the wrapper, as under LD_PRELOAD.
 *
 * What cannot be reached this way (listed in the trace): function pointers the program took
 * before attach (dlsym results, cudaGetDriverEntryPoint tables, stored addresses), NVTX (each
 * module binds its NVTX injection at its first NVTX call), and the _exit/exec/signal
 * handling of a preloaded dlhook (a process that ends with _exit or a signal while attached
 * keeps the frames written so far: at most DLHOOK_FLUSH_MS of calls is lost). */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dlh_format.h"
#include "dlh_internal.h"
#include "dlh_sleep.h"
#include "dlh_hooks.h"

/* Results of the entry points (command/cmd/attach.c has the same numbers). */
enum { AT_OK = 0, AT_ALREADY = 1, AT_PRELOADED = 2, AT_FAILED = 3, AT_NOT_ATTACHED = 4 };


static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int active;                      /* a trace started by attach is being recorded */
static unsigned gen;                    /* attach sessions so far */
static int late_init_done;
static char last_trace[4096];

int dlhook_attach_stop_reason(char *out, unsigned long cap, int reason, unsigned only_gen);

/* Records left in the rings by calls that ended after the last trace was finished belong to no
 * trace: dropped before the next one starts (the writer is not running). A thread that was
 * between a CUPTI API enter and exit callback at the last detach never got the exit (the
 * subscription ended): its callback nesting starts over (CUPTI is not subscribed here yet). */
static void dlh_attach_discard_rings(void) {
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    t->cupti.depth = 0;
    t->cupti.rec = 0;
    if (atomic_load(&t->shared.state) != DLH_T_ACTIVE || !t->prod.buf) continue;
    dlh_ring_skip(t);
  }
}

/* ---------------------------------------------------------------- notes for the trace */

#define MAX_NOTES 64
static char *notes[MAX_NOTES];
static size_t nnotes;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  if (nnotes >= MAX_NOTES) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < nnotes; i++)
    if (!strcmp(notes[i], buf)) return;
  char *s = strdup(buf);
  if (s) notes[nnotes++] = s;
}

static void clear_notes(void) {
  for (size_t i = 0; i < nnotes; i++) free(notes[i]);
  nnotes = 0;
}


/* ---------------------------------------------------------------- memory protections */

typedef struct { uintptr_t lo, hi; int prot; } region;
static region *regions;
static size_t nregions;

static void load_regions(void) {
  free(regions);
  regions = NULL;
  nregions = 0;
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return;
  size_t cap = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char p[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) != 3) continue;
    if (nregions == cap) {
      size_t nc = cap ? cap * 2 : 256;
      region *r = realloc(regions, nc * sizeof *r);
      if (!r) break;
      regions = r;
      cap = nc;
    }
    regions[nregions++] = (region){lo, hi, (p[0] == 'r' ? PROT_READ : 0) |
                                           (p[1] == 'w' ? PROT_WRITE : 0) |
                                           (p[2] == 'x' ? PROT_EXEC : 0)};
  }
  fclose(f);
}

/* The protection of the page holding a, or -1 when it is not mapped. */
static int prot_of(uintptr_t a) {
  for (size_t i = 0; i < nregions; i++)
    if (a >= regions[i].lo && a < regions[i].hi) return regions[i].prot;
  return -1;
}

/* Stores v into *slot (one aligned word), making the page writable for the store when it is
 * not (full RELRO) and restoring its protection. Returns 0, or -1 (nothing written). */
static int store_slot(void **slot, void *v) {
  uintptr_t a = (uintptr_t)slot;
  if (a & (sizeof(void *) - 1)) return -1;
  int prot = prot_of(a);
  if (prot < 0 || !(prot & PROT_READ)) return -1;
  if (prot & PROT_WRITE) {
    __atomic_store_n(slot, v, __ATOMIC_RELEASE);
    return 0;
  }
  long pg = sysconf(_SC_PAGESIZE);
  void *page = (void *)(a & ~(uintptr_t)(pg - 1));
  if (mprotect(page, (size_t)pg, prot | PROT_WRITE) != 0) return -1;
  __atomic_store_n(slot, v, __ATOMIC_RELEASE);
  mprotect(page, (size_t)pg, prot);
  return 0;
}

/* ---------------------------------------------------------------- GOT/PLT rewriting */

typedef struct { void **slot; void *old, *val; } patch;
static patch *patches;
static size_t npatches, patches_cap;
static uintptr_t self_base;
static unsigned modules_patched;
/* Modules scanned in this session (load address, name): a later scan (libraries the program
 * loads while attached) rewrites only the new ones. */
static struct scanned { uintptr_t addr; const char *name; } *scanned;
static size_t nscanned, scanned_cap;
static unsigned long long last_adds;     /* dl_iterate_phdr's count of loads at the last scan */

static int scanned_before(const struct dl_phdr_info *info) {
  for (size_t i = 0; i < nscanned; i++)
    if (scanned[i].addr == info->dlpi_addr && scanned[i].name == info->dlpi_name) return 1;
  if (nscanned == scanned_cap) {
    size_t nc = scanned_cap ? scanned_cap * 2 : 64;
    struct scanned *n = realloc(scanned, nc * sizeof *n);
    if (!n) return 0;
    scanned = n;
    scanned_cap = nc;
  }
  scanned[nscanned++] = (struct scanned){info->dlpi_addr, info->dlpi_name};
  if (info->dlpi_adds > last_adds) last_adds = info->dlpi_adds;
  return 0;
}

static int add_patch(void **slot, void *old, void *val) {
  if (npatches == patches_cap) {
    size_t nc = patches_cap ? patches_cap * 2 : 256;
    patch *p = realloc(patches, nc * sizeof *p);
    if (!p) return -1;
    patches = p;
    patches_cap = nc;
  }
  patches[npatches++] = (patch){slot, old, val};
  return 0;
}

/* Whether p lies inside one of the object's PT_LOAD segments (an unresolved lazy slot points at
 * the object's own PLT). */
static int in_object(const struct dl_phdr_info *info, uintptr_t p) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (p >= lo && p < lo + ph->p_memsz) return 1;
  }
  return 0;
}

static const char *short_name(const char *path) {
  if (!path || !*path) return "the program";
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* dlsym/dlvsym imports: rewritten to dlhook's stubs (dlsym.c) so that a CUDA library's function
 * looked up by handle after attach is dlhook's wrapper; the stubs keep the caller's return
 * address (RTLD_NEXT and the caller's scope work as before). */
static int patch_dlsym(const struct dl_phdr_info *info, const ElfW(Rela) *r, const char *name) {
  void *stub = dlsym(dlh_attach_handle, name);
  void **slot = (void **)(info->dlpi_addr + r->r_offset);
  if (!stub || prot_of((uintptr_t)slot) < 0) return 0;
  void *old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (old == stub) return 0;
  if (add_patch(slot, old, stub) != 0) return 0;
  if (store_slot(slot, stub) != 0) {
    npatches--;
    return 0;
  }
  return 1;
}

/* One relocation: rewrites the slot when it imports a wrapped name. Returns 1 when patched. */
static int patch_one(const struct dl_phdr_info *info, const ElfW(Rela) *r, const ElfW(Sym) *syms,
                     const char *strs) {
  unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
  if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) return 0;
  const ElfW(Sym) *s = &syms[ELF64_R_SYM(r->r_info)];
  if (s->st_shndx != SHN_UNDEF || !s->st_name) return 0; /* the module's own definition */
  const char *name = strs + s->st_name;
  if (!strcmp(name, "dlsym") || !strcmp(name, "dlvsym")) return patch_dlsym(info, r, name);
  if (strncmp(name, "cu", 2) && strncmp(name, "__cuda", 6) && strncmp(name, "nccl", 4)) return 0;
  int lib = -1;
  const dlh_sym *e = dlh_sym_find(name, &lib);
  if (!e) return 0;
  /* dlhook's own definition (the table's address may have been bound to the real library: a
   * late-loaded object's references are resolved in the global scope first). */
  void *wrapper = dlsym(dlh_attach_handle, name);
  if (!wrapper) return 0;
  void **slot = (void **)(info->dlpi_addr + r->r_offset);
  if (prot_of((uintptr_t)slot) < 0) return 0;
  void *old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (old == wrapper) return 0;
  void *target = old;
  if (!old || in_object(info, (uintptr_t)old)) { /* not bound yet (lazy binding) */
    target = dlh_resolve(name, lib);
    if (!target) {
      note("%s: %s: no definition found (not hooked)", short_name(info->dlpi_name), name);
      return 0;
    }
  }
  void *expect = NULL;
  if (!__atomic_compare_exchange_n(e->real, &expect, target, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
      expect != target) {
    note("%s: %s: bound to another definition than the other modules (not hooked)",
         short_name(info->dlpi_name), name);
    return 0;
  }
  if (expect == NULL) dlh_pin_library(target);
  if (add_patch(slot, old, wrapper) != 0) return 0;
  if (store_slot(slot, wrapper) != 0) {
    npatches--;
    note("%s: %s: its GOT entry cannot be written (not hooked)", short_name(info->dlpi_name), name);
    return 0;
  }
  return 1;
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  if (info->dlpi_addr == self_base && self_base) return 0;
  const char *nm = info->dlpi_name ? info->dlpi_name : "";
  if (strstr(nm, "linux-vdso") || strstr(nm, "ld-linux")) return 0;
  if (scanned_before(info)) return 0;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0;
  size_t pltrelsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
  long pltrel = DT_RELA;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = dyn->d_un.d_ptr; break;
      case DT_STRTAB: strtab = dyn->d_un.d_ptr; break;
      case DT_JMPREL: jmprel = dyn->d_un.d_ptr; break;
      case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
      case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
      case DT_RELA: rela = dyn->d_un.d_ptr; break;
      case DT_RELASZ: relasz = dyn->d_un.d_val; break;
      case DT_RELAENT: relaent = dyn->d_un.d_val; break;
    }
  }
  /* ld.so relocates these in place on x86-64; where it did not, add the base. */
#define FIX(p) if ((p) && (p) < info->dlpi_addr) (p) += info->dlpi_addr
  FIX(symtab); FIX(strtab); FIX(jmprel); FIX(rela);
#undef FIX
  if (!symtab || !strtab || relaent != sizeof(ElfW(Rela))) return 0;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
  const char *strs = (const char *)strtab;
  int n = 0;
  if (jmprel && pltrel == DT_RELA)
    for (size_t i = 0; i < pltrelsz / sizeof(ElfW(Rela)); i++)
      n += patch_one(info, (const ElfW(Rela) *)jmprel + i, syms, strs);
  if (rela)
    for (size_t i = 0; i < relasz / sizeof(ElfW(Rela)); i++)
      n += patch_one(info, (const ElfW(Rela) *)rela + i, syms, strs);
  if (n) modules_patched++;
  return 0;
}

static void patch_all(void) {
  Dl_info di;
  if (dladdr((void *)patch_all, &di)) {
    self_base = (uintptr_t)di.dli_fbase;
    if (!dlh_attach_handle && di.dli_fname) dlh_attach_handle = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  if (!dlh_attach_handle) {
    note("dlhook could not find its own handle: no GOT entry rewritten (CUPTI only)");
    return;
  }
  load_regions();
  dl_iterate_phdr(patch_module, NULL);
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  *(unsigned long long *)arg = info->dlpi_adds;
  return 1;
}

/* Whether libraries were loaded since the last scan. */
static int loads_since_scan(void) {
  unsigned long long adds = 0;
  dl_iterate_phdr(count_adds, &adds);
  return adds != last_adds;
}

/* Puts back every slot that still holds dlhook's wrapper. */
static void unpatch_all(void) {
  load_regions();
  size_t kept = 0;
  for (size_t i = npatches; i-- > 0;) {
    patch *p = &patches[i];
    if (prot_of((uintptr_t)p->slot) < 0) continue; /* its module was unloaded */
    if (__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) != p->val) { kept++; continue; }
    if (store_slot(p->slot, p->old) != 0) kept++;
  }
  if (kept)
    dlh_warn("detach: %zu GOT entries were changed by someone else meanwhile and are left as "
             "they are", kept);
  npatches = 0;
}

/* ---------------------------------------------------------------- settings */

static const char *setting(const char *settings, const char *key, char *buf, size_t cap) {
  size_t kl = strlen(key);
  for (const char *p = settings; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      size_t vl = len - kl - 1;
      if (vl >= cap) vl = cap - 1;
      memcpy(buf, p + kl + 1, vl);
      buf[vl] = 0;
      return buf;
    }
    p = nl ? nl + 1 : NULL;
  }
  buf[0] = 0;
  return buf;
}

/* ---------------------------------------------------------------- the session's thread */

static uint64_t deadline_ns;             /* --duration: the session ends then (0: never) */

/* One per session: every 0.5 s, rewrites the GOT entries of libraries the program loaded since
 * (a plugin, cuDNN's sub-libraries opened on first use); ends the session at the deadline. */
static void *timer_main(void *arg) {
  unsigned my = (unsigned)(uintptr_t)arg;
  pthread_setname_np(pthread_self(), "dlhook-attach"); /* `dlhook attach` never picks it */
  static struct dlh_thread self_blocked; /* nothing this thread calls is recorded */
  self_blocked.hot.blocked = 1;
  dlh_self = &self_blocked;
  pthread_mutex_lock(&mu);
  while (active && gen == my) {
    uint64_t now = dlh_mono_ns();
    if (deadline_ns && now >= deadline_ns) break;
    uint64_t wake = now + 500000000ull;
    if (deadline_ns && deadline_ns < wake) wake = deadline_ns;
    struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
    pthread_cond_timedwait(&cv, &mu, &ts);
    if (active && gen == my && loads_since_scan()) patch_all();
  }
  int stop = active && gen == my && deadline_ns && dlh_mono_ns() >= deadline_ns;
  pthread_mutex_unlock(&mu);
  if (stop) {
    char out[4096];
    dlhook_attach_stop_reason(out, sizeof out, 1, my);
  }
  return NULL;
}

static int start_timer(uint64_t dur_ns) {
  deadline_ns = dur_ns ? dlh_mono_ns() + dur_ns : 0;
  pthread_t th;
  pthread_attr_t a;
  sigset_t all, old;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the timer thread takes no signals */
  int rc = pthread_create(&th, &a, timer_main, (void *)(uintptr_t)gen);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
  return rc;
}

/* ---------------------------------------------------------------- entry points */

static void put_out(char *out, unsigned long cap, const char *s) {
  if (out && cap) snprintf(out, cap, "%s", s);
}

/* Starts recording in a process this library was injected into by `dlhook attach`.
 * settings: "key=value" lines: output (directory, ending in '/'), duration (seconds, empty =
 * until detach), stacks (none|native|python|mixed, empty = default). On return, out holds the
 * trace's path (AT_OK, AT_ALREADY) or why it failed (AT_FAILED). Returns AT_*. */
DLH_EXPORT int dlhook_attach_start(const char *settings, char *out, unsigned long cap) {
  if (!dlh_attach_mode) {
    put_out(out, cap, "dlhook was loaded at start-up");
    return AT_PRELOADED;
  }
  struct dlh_thread *me = dlh_self;
  if (me) me->hot.blocked++;
  int rc = AT_OK;
  pthread_mutex_lock(&mu);
  if (active) {
    put_out(out, cap, dlh_cfg.output);
    rc = AT_ALREADY;
    goto done;
  }
  if (!late_init_done) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  char buf[4096], dur[64], stk[32];
  dlh_config_load(); /* defaults (and the program's own DLHOOK_* tuning, if it has any) */
  dlh_cfg.enabled = 1;
  dlh_cfg.signals = 0;            /* no signal handler, no alternate stacks: nothing to undo */
  dlh_cfg.capture_range[0] = 0;   /* the attach window is the capture window */
  dlh_cfg.delay_ns = dlh_cfg.duration_ns = 0;
  dlh_cfg.ctl_signal_set = 0;
  setting(settings, "stacks", stk, sizeof stk);
  if (stk[0]) {
    static const char *const modes[] = {"none", "native", "python", "mixed"};
    for (int i = 0; i < 4; i++)
      if (!strcasecmp(stk, modes[i])) dlh_cfg.stacks = i;
  }
  setting(settings, "output", buf, sizeof buf);
  if (buf[0]) dlh_config_set_output(buf);
  uint64_t dur_ns = 0;
  if (setting(settings, "duration", dur, sizeof dur)[0]) {
    double v = strtod(dur, NULL);
    if (v > 0 && v < 1e7) dur_ns = (uint64_t)(v * 1e9);
  }
  if (!late_init_done) {
    if (dlh_runtime_late_init() != 0) {
      put_out(out, cap, "cannot set up dlhook's per-thread state");
      rc = AT_FAILED;
      goto done;
    }
    late_init_done = 1;
    /* for wait_calls_out's barrier (failing is fine: it falls back) */
    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
  } else if (dlh_cfg.stacks == DLH_STACKS_NONE) {
    dlh_stack_mode = 0;
  }
  gen++;
  clear_notes();
  nscanned = 0;
  last_adds = 0;
  modules_patched = 0;
  dlh_attach_discard_rings();
  /* Hooks first, with recording still off: the notes are complete before the trace starts. */
  patch_all();
  if (dlh_cupti_attach() != 0)
    note("CUPTI: not available or in use by another tool: no GPU activity; calls of "
         "statically linked cudart are not seen");
  note("function pointers obtained before attach (dlsym, cudaGetDriverEntryPoint, stored "
       "addresses) call the real functions: those calls are not recorded");
  note("NVTX ranges are not recorded (each module binds NVTX at its first NVTX call)");
  dlh_writer_attached(notes, nnotes); /* the trace says it was attached, and what is missed */
  active = 1;
  dlh_recording = 1;
  if (dlh_writer_ensure() != 0) {
    active = 0;
    dlh_recording = 0;
    unpatch_all();
    dlh_cupti_detach();
    snprintf(buf, sizeof buf, "cannot write the trace %.3000s (%s)", dlh_cfg.output, strerror(errno));
    put_out(out, cap, buf);
    rc = AT_FAILED;
    goto done;
  }
  snprintf(last_trace, sizeof last_trace, "%s", dlh_cfg.output);
  put_out(out, cap, dlh_cfg.output);
  dlh_info("attached: recording to %s (%zu GOT entries in %u modules hooked)", dlh_cfg.output,
           npatches, modules_patched);
  if (start_timer(dur_ns) != 0)
    dlh_warn("cannot start dlhook's session thread: %slibraries loaded from now on are not hooked",
             dur_ns ? "no --duration (recording until `dlhook detach`); " : "");
done:
  pthread_mutex_unlock(&mu);
  if (me) me->hot.blocked--;
  return rc;
}

/* Calls that began while recording was on store their record when they return: waits (at most
 * 500 ms: a thread may be blocked in a long synchronisation) until no other thread is inside
 * one, so that the trace holds them and the GPU work they launched links to them. */
/* A full memory barrier on every thread of the process. A thread entering a call stores its
 * depth and then loads dlh_recording (in dlh_call_begin, again in the CUPTI callback); without a
 * fence between the two (none on the hot path), the load may pass the store: the thread sees
 * recording still on, keeps its call's correlation id and goes on, while the detaching thread,
 * which cleared dlh_recording, reads its depth still 0 and finishes the trace without the call
 * (its kernel then came without it). After this barrier, a thread that saw recording on has its
 * depth visible. */
static void barrier_all_threads(void) {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
  dlh_sleep_ns(5000000); /* no membarrier: store buffers drain in far less */
}

static void wait_calls_out(const struct dlh_thread *me) {
  barrier_all_threads();
  for (int i = 0; i < 500; i++) {
    int busy = 0;
    for (struct dlh_thread *t = atomic_load(&dlh_threads); t && !busy; t = t->next)
      if (t != me && atomic_load(&t->shared.state) == DLH_T_ACTIVE &&
          (__atomic_load_n(&t->hot.depth, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&t->cupti.rec, __ATOMIC_ACQUIRE)))
        busy = 1;
    if (!busy) return;
    dlh_sleep_ns(1000000);
  }
}

/* Stops what dlhook_attach_start started (reason 0: detach, 1: the duration ended; only_gen:
 * stop only that session, 0 = the current one). out: the trace's path. Returns AT_*. */
int dlhook_attach_stop_reason(char *out, unsigned long cap, int reason, unsigned only_gen) {
  struct dlh_thread *me = dlh_self;
  if (me) me->hot.blocked++;
  pthread_mutex_lock(&mu);
  int rc = AT_OK;
  if (!active || (only_gen && only_gen != gen)) {
    put_out(out, cap, last_trace);
    rc = AT_NOT_ATTACHED;
    goto done;
  }
  dlh_recording = 0;     /* wrappers and callbacks pass through from here on */
  wait_calls_out(me);
  unpatch_all();
  dlh_cupti_detach();    /* flushes the activity buffers, then unsubscribes */
  dlh_writer_stop(2, 0);
  dlh_writer_reset_for_attach();
  active = 0;
  pthread_cond_broadcast(&cv); /* a duration timer of this session ends */
  put_out(out, cap, last_trace);
  dlh_info("%s: wrote %s", reason ? "duration ended" : "detached", last_trace);
done:
  pthread_mutex_unlock(&mu);
  if (me) me->hot.blocked--;
  return rc;
}

DLH_EXPORT int dlhook_attach_stop(char *out, unsigned long cap) {
  if (!dlh_attach_mode) {
    put_out(out, cap, "dlhook was loaded at start-up, not attached");
    return AT_PRELOADED;
  }
  return dlhook_attach_stop_reason(out, cap, 0, 0);
}
