/* symbolize.c — the writer-thread side of call stacks: the module map (path, range, build-id of
 * every loaded object, from dl_iterate_phdr), the StackDef / ModuleDef / PyFrameDef packets a
 * stack needs, written as soon as the stack is first used, and the SymbolDef packets of its
 * return addresses, resolved afterwards within a time budget.
 *
 * Symbolization never holds a frame back: dlh_stacks_define() writes the stack as pcs (each pc
 * falls in a ModuleDef, so a reader can show module+offset at once) and queues its new pcs;
 * dlh_stacks_symbolize() resolves queued pcs until a deadline and appends their SymbolDefs.
 * What is still queued when the process exits (DLHOOK_EXIT_MS) stays unresolved in the trace
 * for `dlhook symbolize`.
 *
 * Names come from a sorted index of each module's .symtab/.dynsym (elfsym.c), built once per
 * module the first time one of its pcs is resolved (libtorch_cuda.so: ~236,000 symbols, tens of
 * ms), then a binary search per pc. file:line come from DWARF inside the object itself through
 * elfutils' libdwfl. elfutils (libdw.so.1, and libelf through it) is loaded at constructor
 * time with dlopen(RTLD_LOCAL), so that its symbols never mix with the program's. Separate debug
 * files (/usr/lib/debug, debuginfod) are not searched while recording (see find_debuginfo). */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_elfsym.h"
#include "dlh_format.h"
#include "dlh_sleep.h"
#include "unwind_int.h"

/* ---------------------------------------------------------------- module map */

typedef struct module {
  char *path;
  uintptr_t lo, hi, bias;
  uint8_t build_id[64];
  size_t build_id_len;
  uint32_t id;
  int emitted;                  /* ModuleDef written to the current encoder */
  int sym_state;                /* 0 = index not built, 1 = built, -1 = no symbols */
  int no_lines;                 /* libdwfl found no DWARF in it */
  int indexed;                  /* its index was built once: debug_bytes is known */
  int evicted;                  /* its index was given back once (idle_indexes): never again */
  uint64_t used_ns;             /* the last name looked up in its index (CLOCK_MONOTONIC) */
  uint64_t debug_bytes;         /* dlh_symtab_debug_bytes, kept when the index is given back */
  dlh_symtab *syms;
} module;

static pthread_mutex_t sym_mu = PTHREAD_MUTEX_INITIALIZER; /* the symbolizer's (see below) */
static module **mods;           /* every module ever seen, by id - 1 (ids are never reused) */
static size_t nmods, capmods;
static module **live;           /* the objects mapped at the last scan, sorted by lo */
static size_t nlive;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull; /* loader counters at the scan */

static void read_build_id(const struct dl_phdr_info *info, module *m) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      const char *name = p + sizeof *nh;
      const char *desc = name + ((nh->n_namesz + 3) & ~3u);
      const char *next = desc + ((nh->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
          nh->n_descsz <= sizeof m->build_id) {
        memcpy(m->build_id, desc, nh->n_descsz);
        m->build_id_len = nh->n_descsz;
        return;
      }
      p = next;
    }
  }
}

typedef struct scan_ctx {
  module **found;
  size_t n, cap;
  int added, failed;
} scan_ctx;

static int scan_one(struct dl_phdr_info *info, size_t size, void *data) {
  scan_ctx *c = data;
  unsigned long long v[2];
  if (!c->n && dlh_loader_counts(info, size, v)) {
    seen_adds = v[0];
    seen_subs = v[1];
  }
  uintptr_t lo, hi;
  dlh_object_range(info, &lo, &hi);
  if (hi <= lo) return 0;
  char exe[4096];
  const char *name = info->dlpi_name;
  if (!name || !*name) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    name = exe;
  }
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 64;
    module **f = realloc(c->found, nc * sizeof *f);
    if (!f) { c->failed = 1; return 1; }
    c->found = f;
    c->cap = nc;
  }
  module *m = NULL; /* the same object as before: same range, same path */
  for (size_t i = 0; i < nlive && !m; i++)
    if (live[i]->lo == lo && live[i]->hi == hi && !strcmp(live[i]->path, name)) m = live[i];
  if (!m) {
    if (nmods == capmods) {
      size_t nc = capmods ? capmods * 2 : 64;
      module **a = realloc(mods, nc * sizeof *a);
      if (!a) { c->failed = 1; return 1; }
      mods = a;
      capmods = nc;
    }
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(name))) { free(m); c->failed = 1; return 1; }
    m->lo = lo;
    m->hi = hi;
    m->bias = info->dlpi_addr;
    read_build_id(info, m);
    mods[nmods++] = m;
    m->id = (uint32_t)nmods;
    c->added++;
  }
  c->found[c->n++] = m;
  return 0;
}

static int cmp_lo(const void *a, const void *b) {
  const module *x = *(module *const *)a, *y = *(module *const *)b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Rebuilds the map of the objects mapped now. Returns how many objects are new. */
static int scan_modules(void) {
  scan_ctx c = {0};
  pthread_mutex_lock(&dlh_dl_mutex);
  dl_iterate_phdr(scan_one, &c);
  pthread_mutex_unlock(&dlh_dl_mutex);
  if (c.failed) { /* keep the old map; what was added stays known by id */
    free(c.found);
    return c.added;
  }
  qsort(c.found, c.n, sizeof *c.found, cmp_lo);
  free(live);
  live = c.found;
  nlive = c.n;
  return c.added;
}

static int peek_counters(struct dl_phdr_info *info, size_t size, void *data) {
  dlh_loader_counts(info, size, data);
  return 1; /* the first object is enough */
}

/* Whether an object was loaded or unloaded since the last scan (the loader's own counters:
 * one callback, no walk over the objects). */
static int loader_changed(void) {
  unsigned long long v[2] = {~0ull - 1, ~0ull - 1};
  pthread_mutex_lock(&dlh_dl_mutex);
  dl_iterate_phdr(peek_counters, v);
  pthread_mutex_unlock(&dlh_dl_mutex);
  return v[0] != seen_adds || v[1] != seen_subs;
}

static module *find_module(uintptr_t pc) {
  size_t lo = 0, hi = nlive;
  while (lo < hi) { /* the last module with m->lo <= pc */
    size_t mid = lo + (hi - lo) / 2;
    if (live[mid]->lo <= pc) lo = mid + 1; else hi = mid;
  }
  if (!lo) return NULL;
  module *m = live[lo - 1];
  return pc < m->hi ? m : NULL;
}

/* ---------------------------------------------------------------- elfutils */

static struct {
  int state; /* 0 = not tried, 1 = ready, -1 = unavailable */
  Dwfl *dwfl;
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*report_begin)(Dwfl *);
  int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
                    void *);
  int (*proc_report)(Dwfl *, pid_t);
  Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
  Dwarf *(*getdwarf)(Dwfl_Module *, Dwarf_Addr *);
  Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
  const char *(*comp_dir)(Dwfl_Line *);
  Dwfl_Callbacks cb;
  dlh_elf_api elf;
  int elf_ok;
  int reported;  /* dwfl knows the objects of the current scan */
} D;

/* Separate debug files (/usr/lib/debug, debuginfod) are not searched while recording: loading
 * and inflating, say, libc's full debug info costs the writer a tenth of a second per process
 * (during which rings fill), and debuginfod would wait on the network. Objects that carry their
 * own DWARF (the program, built with -g) get file:line; `dlhook symbolize` can add the rest. */
static int find_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base,
                          const char *file, const char *link, GElf_Word crc, char **out) {
  (void)mod; (void)ud; (void)modname; (void)base; (void)file; (void)link; (void)crc; (void)out;
  return -1;
}

/* libdw keeps the ELF file of every module open for the life of the process, and every fd
 * counts against the program's RLIMIT_NOFILE wherever it is numbered. So the file is mapped
 * (ELF_C_READ_MMAP, as the symbol index does) and its fd closed: libdw gets the Elf, and no fd.
 * Where that fails, the fd goes above the program's range (settings.fd_move_up), so that the
 * program's low numbers stay free and a program that closes every fd or dup2()s over low
 * numbers never has libdw read its files. An Elf that libdw made itself (*elfp set: from
 * memory) is left as it is. */
static int (*proc_find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr, char **, Elf **);
static int find_elf_high(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base,
                         char **file, Elf **elfp) {
  int fd = proc_find_elf(mod, ud, name, base, file, elfp);
  if (fd < 0 || *elfp) return fd;
  Elf *e = D.elf_ok ? D.elf.begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
  if (e && D.elf.cntl(e, ELF_C_FDREAD) == 0) { /* all of it mapped (or read): fd not needed */
    close(fd);
    *elfp = e;
    return -1;
  }
  if (e) D.elf.end(e);
  return dlh_unwind_cfg.fd_move_up ? dlh_unwind_cfg.fd_move_up(fd) : fd;
}

static void dwfl_report_all(void) {
  D.report_begin(D.dwfl);
  D.proc_report(D.dwfl, getpid());
  D.report_end(D.dwfl, NULL, NULL);
  D.reported = 1;
}

/* Constructor time (dlh_stacks_init): loads libdw. dlopen must not run on the writer thread:
 * a fork() in another thread while the loader is mid-dlopen leaves the child's link map
 * inconsistent (its next dlopen aborts in ld.so). */
static void *libdw;
static void dwfl_lookup(void);
static void after_fork_child(void);
void dlh_symbolize_preload(void) {
  if (!libdw) libdw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libdw && !D.begin) dwfl_lookup();
  static int atfork_done; /* after capture.c's (child handlers run in that order) */
  if (!atfork_done) {
    atfork_done = 1;
    pthread_atfork(NULL, NULL, after_fork_child);
  }
}

/* Constructor time too: dlsym takes the loader's lock, which a program thread holds for the
 * whole of a dlopen (torch's libraries run thousands of CUDA registrations in their
 * constructors): on the writer or the symbolizer it would wait for that. */
static void dwfl_lookup(void) {
  void *h = libdw;
#define SYM(f, n) *(void **)&D.f = dlsym(h, n)
  /* libelf comes with libdw (its dependency): the symbol index reads the ELF through it */
  SYM(elf.version, "elf_version");
  SYM(elf.begin, "elf_begin");
  SYM(elf.cntl, "elf_cntl");
  SYM(elf.end, "elf_end");
  SYM(elf.nextscn, "elf_nextscn");
  SYM(elf.getshdr, "gelf_getshdr");
  SYM(elf.getdata, "elf_getdata");
  SYM(elf.getsym, "gelf_getsym");
  SYM(elf.strptr, "elf_strptr");
  SYM(elf.getnote, "gelf_getnote");
  SYM(elf.rawfile, "elf_rawfile");
  D.elf_ok = D.elf.version && D.elf.begin && D.elf.cntl && D.elf.end && D.elf.nextscn &&
             D.elf.getshdr && D.elf.getdata && D.elf.getsym && D.elf.strptr && D.elf.getnote;
  SYM(begin, "dwfl_begin");
  SYM(report_begin, "dwfl_report_begin");
  SYM(report_end, "dwfl_report_end");
  SYM(proc_report, "dwfl_linux_proc_report");
  SYM(addrmodule, "dwfl_addrmodule");
  SYM(getdwarf, "dwfl_module_getdwarf");
  SYM(getsrc, "dwfl_module_getsrc");
  SYM(lineinfo, "dwfl_lineinfo");
  SYM(comp_dir, "dwfl_line_comp_dir");
  SYM(cb.find_elf, "dwfl_linux_proc_find_elf");
#undef SYM
}

static void dwfl_setup(void) {
  D.state = -1;
  if (!libdw) return;
  if (!D.begin || !D.report_begin || !D.report_end || !D.proc_report || !D.addrmodule ||
      !D.getdwarf || !D.getsrc || !D.lineinfo || !D.cb.find_elf)
    return;
  if (D.cb.find_elf != find_elf_high) { /* dwfl_setup runs again in a fork child */
    proc_find_elf = D.cb.find_elf;
    D.cb.find_elf = find_elf_high;
  }
  D.cb.find_debuginfo = find_debuginfo;
  D.dwfl = D.begin(&D.cb);
  if (!D.dwfl) return;
  D.state = 1;
}

/* ---------------------------------------------------------------- symbols */

typedef struct sym {
  char function[1024];
  char file[1024];
  uint32_t line;
  uint64_t offset;
} sym;

static void demangle(char *name, size_t cap) {
  static char *(*cxa)(const char *, char *, size_t *, int *);
  if (strncmp(name, "_Z", 2) != 0) return;
  if (!cxa) *(void **)&cxa = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!cxa) return;
  int st = -1;
  char *d = cxa(name, NULL, NULL, &st);
  if (d && st == 0) snprintf(name, cap, "%s", d);
  free(d);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Large indexes of modules whose pcs stopped coming are given back. Samples land in libraries
 * that only start-up runs (libtriton.so, libcusparse and libcusolver during `import torch`):
 * their indexes (4.3 MB for libtriton.so's 268,000 symbols) and the pages of the string tables
 * that names were read from would stay resident for the rest of the run, for nothing. An index
 * of DLH_INDEX_KEEP_BYTES or more in which no name was looked up for DLH_INDEX_IDLE_NS is closed
 * by the symbolizer thread (between bursts, idle_indexes); a later pc in that module builds it
 * again, and then it stays, so that a module hit now and then costs one more build at most.
 * Touched only by the symbolizer thread (the writer grows mods[] without its lock). */
#define DLH_INDEX_IDLE_NS (3000000000ull)
#define DLH_INDEX_KEEP_BYTES (1u << 20)
static module **indexed;
static size_t nindexed, capindexed;

static void note_indexed(module *m) {
  if (m->evicted || dlh_symtab_bytes(m->syms) < DLH_INDEX_KEEP_BYTES) return;
  if (nindexed == capindexed) {
    size_t nc = capindexed ? capindexed * 2 : 16;
    module **a = realloc(indexed, nc * sizeof *a);
    if (!a) return; /* kept for the run, as before */
    indexed = a;
    capindexed = nc;
  }
  indexed[nindexed++] = m;
}

/* Closes the indexes idle since now - DLH_INDEX_IDLE_NS. Returns when the next one may be
 * (CLOCK_MONOTONIC ns), 0 when none is left to watch. Called without sym_mu. */
static uint64_t idle_indexes(uint64_t now) {
  uint64_t next = 0;
  size_t k = 0;
  for (size_t i = 0; i < nindexed; i++) {
    module *m = indexed[i];
    if (m->syms && now - m->used_ns < DLH_INDEX_IDLE_NS) {
      uint64_t due = m->used_ns + DLH_INDEX_IDLE_NS;
      if (!next || due < next) next = due;
      indexed[k++] = m;
      continue;
    }
    pthread_mutex_lock(&sym_mu); /* dlh_stacks_index_bytes */
    dlh_symtab *t = m->syms;
    m->syms = NULL;
    m->sym_state = 0;
    m->evicted = 1;
    pthread_mutex_unlock(&sym_mu);
    dlh_symtab_close(t);
  }
  nindexed = k;
  return next;
}

/* The module's symbol index, built the first time (the file at its path, if its build-id is
 * the mapped one's). */
static dlh_symtab *module_syms(module *m) {
  if (m->sym_state == 0) {
    m->sym_state = -1;
    const char *b = strrchr(m->path, '/');
    b = b ? b + 1 : m->path;
    if (D.elf_ok && m->path[0] == '/' && strncmp(b, "linux-vdso", 10) != 0) {
      dlh_symtab *t = dlh_symtab_open(&D.elf, m->path, m->build_id, m->build_id_len);
      pthread_mutex_lock(&sym_mu); /* dlh_stacks_index_bytes reads it on the writer */
      m->syms = t;
      pthread_mutex_unlock(&sym_mu);
      if (t) {
        m->sym_state = 1;
        m->indexed = 1;
        m->debug_bytes = dlh_symtab_debug_bytes(t);
        note_indexed(m);
      }
    }
  }
  return m->syms;
}

/* The function name of pc (cheap: a binary search in the module's index). */
static void resolve_name(uintptr_t pc, module *m, sym *s) {
  uintptr_t a = pc ? pc - 1 : 0; /* return address -> the call instruction */
  memset(s, 0, sizeof *s);
  if (!m) return;
  dlh_symtab *t = module_syms(m);
  if (t) m->used_ns = now_ns();
  uint64_t off = 0;
  const char *name = t ? dlh_symtab_lookup(t, a - m->bias, &off) : NULL;
  if (name) {
    snprintf(s->function, sizeof s->function, "%s", name);
    s->offset = off + 1;
  }
  char *at = strchr(s->function, '@'); /* "memcpy@@GLIBC_2.14" -> "memcpy" */
  if (at && at != s->function) *at = 0;
  demangle(s->function, sizeof s->function);
}

/* file:line of pc from the module's own DWARF (the first use in a module loads its DWARF,
 * which can take a while for a large object). Returns 1 when found. */
static int resolve_line(uintptr_t pc, module *m, sym *s) {
  uintptr_t a = pc ? pc - 1 : 0;
  if (D.state != 1 || !m || m->no_lines) return 0;
  if (!D.reported) dwfl_report_all();
  Dwfl_Module *dm = D.addrmodule(D.dwfl, a);
  Dwarf_Addr bias;
  if (!dm || !D.getdwarf(dm, &bias)) {
    m->no_lines = 1;
    return 0;
  }
  Dwfl_Line *l = D.getsrc(dm, a);
  if (!l) return 0;
  Dwarf_Addr la;
  int line = 0, col = 0;
  const char *file = D.lineinfo(l, &la, &line, &col, NULL, NULL);
  if (!file) return 0;
  const char *dir = file[0] != '/' && D.comp_dir ? D.comp_dir(l) : NULL;
  if (dir && *dir) snprintf(s->file, sizeof s->file, "%s/%s", dir, file);
  else snprintf(s->file, sizeof s->file, "%s", file);
  s->line = line > 0 ? (uint32_t)line : 0;
  return 1;
}

/* Whether file:line of the module's pcs are read while recording: not when its DWARF is large.
 * libdw keeps what it reads of a module for the life of the process, and the line tables of a
 * large compilation unit run to megabytes (a libpython built with -g, 12 MB of DWARF: 23 MB
 * more resident memory and 20 ms of system time, for the handful of pcs that samples of a
 * Python loop hit). Such pcs are named while recording; `dlhook symbolize` adds their lines. */
#define DLH_LINES_MAX_BYTES (2u << 20)
static int lines_here(module *m) {
  return !m->indexed || m->debug_bytes <= DLH_LINES_MAX_BYTES;
}

/* ---------------------------------------------------------------- the symbolizer thread
 * Resolving a pc can take long the first time in a module (its symbol index, or its DWARF: a
 * libpython built with -g has tens of MB), so it never runs on the writer thread, whose frames
 * and FLUSH_MS must not wait: the writer queues pcs (names first, queue 0; then file:line, queue
 * 1) and, at each turn of its loop, writes the SymbolDef packets of the results posted so far.
 * Everything below is guarded by sym_mu; the thread blocks every signal and records nothing. */

typedef struct pending { uint64_t pc; module *m; } pending;
typedef struct pqueue { pending *e; size_t head, n, cap; } pqueue;
typedef struct result {
  struct result *next;
  uint64_t pc, offset;
  uint32_t module, line;
  char *function, *file;
} result;

static pthread_cond_t sym_cv = PTHREAD_COND_INITIALIZER;
static pqueue Q[2];
static result *res_head, **res_tail = &res_head;
static size_t in_flight;                 /* taken from a queue, result not posted yet */
static int sym_started, sym_stop;
static int sym_running;                  /* a symbolizer thread exists (until it leaves its loop) */
static uint64_t n_resolved, n_unresolved;
static _Atomic int need_report;          /* the writer rescanned the modules: dwfl reports again */

static void enqueue(pqueue *q, uint64_t pc, module *m) {
  if (q->head + q->n == q->cap) {
    if (q->head) { /* slide the live part to the front */
      memmove(q->e, q->e + q->head, q->n * sizeof *q->e);
      q->head = 0;
    } else {
      size_t nc = q->cap ? q->cap * 2 : 4096;
      pending *e = realloc(q->e, nc * sizeof *e);
      if (!e) return; /* left as module+offset (names) or without a line */
      q->e = e;
      q->cap = nc;
    }
  }
  q->e[q->head + q->n++] = (pending){pc, m};
}

static int dequeue(pqueue *q, pending *out) {
  if (!q->n) return 0;
  *out = q->e[q->head++];
  if (!--q->n) q->head = 0;
  return 1;
}

static result *make_result(uint64_t pc, module *m, const sym *s) {
  result *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->pc = pc;
  r->module = m ? m->id : 0;
  r->line = s->line;
  r->offset = s->offset;
  r->function = s->function[0] ? strdup(s->function) : NULL;
  r->file = s->file[0] ? strdup(s->file) : NULL;
  return r;
}

/* The symbolizer thread's CPU time, as of its last wait for pcs and its end (the counters: what
 * dlhook cost). Read once per burst of pcs: a thread's CPU clock is a system call. */
static _Atomic uint64_t sym_cpu;
static void publish_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    atomic_store_explicit(&sym_cpu, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
                          memory_order_relaxed);
}
uint64_t dlh_stacks_symbolizer_cpu_ns(void) { return atomic_load(&sym_cpu); }

static void *symbolizer_main(void *arg) {
  (void)arg;
  atomic_store(&sym_cpu, 0);
  pthread_setname_np(pthread_self(), "dlhook-symbols"); /* `dlhook attach` never picks it */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  if (dlh_unwind_cfg.thread_enter) dlh_unwind_cfg.thread_enter(); /* nothing it calls is recorded */
  static sym s; /* 2 KiB: not on this thread's stack */
  pthread_mutex_lock(&sym_mu);
  for (;;) {
    if (!sym_stop && !Q[0].n && !Q[1].n) publish_cpu(); /* once per burst: a syscall */
    while (!sym_stop && !Q[0].n && !Q[1].n) {
      if (!nindexed) {
        pthread_cond_wait(&sym_cv, &sym_mu);
        continue;
      }
      pthread_mutex_unlock(&sym_mu);
      uint64_t now = now_ns(), due = idle_indexes(now);
      pthread_mutex_lock(&sym_mu);
      if (!due || sym_stop || Q[0].n || Q[1].n) continue;
      struct timespec at; /* the condition variable waits on CLOCK_REALTIME */
      clock_gettime(CLOCK_REALTIME, &at);
      uint64_t ns = (uint64_t)at.tv_nsec + (due > now ? due - now : 0) + 1000000;
      at.tv_sec += (time_t)(ns / 1000000000u);
      at.tv_nsec = (long)(ns % 1000000000u);
      pthread_cond_timedwait(&sym_cv, &sym_mu, &at);
    }
    if (sym_stop) break;
    pending e = {0};
    int phase = dequeue(&Q[0], &e) ? 0 : (dequeue(&Q[1], &e), 1);
    in_flight++;
    pthread_mutex_unlock(&sym_mu);
    result *r = NULL;
    int named = 0, want_line = 0;
    if (atomic_exchange(&need_report, 0) && D.state == 1) D.reported = 0;
    resolve_name((uintptr_t)e.pc, e.m, &s);
    named = s.function[0] != 0;
    if (phase == 0) {
      if (named) r = make_result(e.pc, e.m, &s);
      want_line = D.state == 1 && e.m && !e.m->no_lines && lines_here(e.m);
    } else if (resolve_line((uintptr_t)e.pc, e.m, &s)) {
      r = make_result(e.pc, e.m, &s); /* complete: replaces the first SymbolDef */
    }
    pthread_mutex_lock(&sym_mu);
    in_flight--;
    if (phase == 0) {
      if (named) n_resolved++; else n_unresolved++;
      if (want_line) enqueue(&Q[1], e.pc, e.m);
    } else if (r && !named) {
      n_unresolved--;
      n_resolved++;
    }
    if (r) {
      *res_tail = r;
      res_tail = &r->next;
    }
  }
  publish_cpu();
  sym_running = 0;
  pthread_mutex_unlock(&sym_mu);
  return NULL;
}

/* Started with the writer, by the thread that starts the writer (pthread_create may need the
 * loader's TLS lock, held by a thread inside dlopen: the writer must never wait for that). */
void dlh_stacks_start_symbolizer(void) {
  if (!dlh_stack_mode || !dlh_unwind_cfg.symbolize) return;
  pthread_mutex_lock(&sym_mu);
  int start = !sym_started && !sym_stop;
  sym_started = 1;
  if (start) sym_running = 1;
  pthread_mutex_unlock(&sym_mu);
  if (!start) return;
  if (D.state == 0) dwfl_setup();
  pthread_attr_t attr;
  pthread_t tid;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (dlh_unwind_cfg.thread_stack) pthread_attr_setstacksize(&attr, dlh_unwind_cfg.thread_stack);
  /* created with every signal blocked: a signal arriving before the thread blocks them itself
   * must go to one of the program's threads, never run the program's handler on this one */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&tid, &attr, symbolizer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0 && !(sym_running = 0))
    dlh_warn("cannot start the symbolizer thread; stacks keep module+offset frames "
             "(`dlhook symbolize` names them)");
  pthread_attr_destroy(&attr);
}

/* Writer thread: queues pc for its name. */
static void queue_pc(uint64_t pc, module *m) {
  pthread_mutex_lock(&sym_mu);
  enqueue(&Q[0], pc, m);
  pthread_cond_signal(&sym_cv);
  pthread_mutex_unlock(&sym_mu);
}

/* fork child: the symbolizer does not exist here and may have held its lock or been inside
 * libdw; start over with fresh state (the old is leaked). */
static void after_fork_child(void) {
  pthread_mutex_init(&sym_mu, NULL);
  pthread_cond_init(&sym_cv, NULL);
  memset(Q, 0, sizeof Q);
  res_head = NULL;
  res_tail = &res_head;
  in_flight = 0;
  sym_started = sym_stop = 0;
  n_resolved = n_unresolved = 0;
  if (D.state == 1) D.state = 0; /* a new Dwfl (dwfl_setup): the old one may be half-updated */
  D.reported = 0;
  for (size_t i = 0; i < nmods; i++) {
    if (mods[i]->sym_state == -1 && !mods[i]->syms) mods[i]->sym_state = 0; /* maybe unfinished */
  }
  /* the idle indexes' list, which the parent's symbolizer may have been growing (leaked) */
  indexed = NULL;
  nindexed = capindexed = 0;
}

/* ---------------------------------------------------------------- per-writer state */

static struct dlh_encoder *cur_enc;
static uint8_t *stack_done, *pyf_done;   /* bitmaps over ids */
static uint64_t *pc_set;                 /* open addressing; 0 = empty */
static size_t pc_cap, pc_n;

static int bit_test_set(uint8_t *b, uint32_t i) {
  int was = (b[i >> 3] >> (i & 7)) & 1;
  b[i >> 3] |= (uint8_t)(1u << (i & 7));
  return was;
}

/* Returns 1 when pc was already in the set, else adds it (0); -1 on allocation failure. */
static int pc_seen(uint64_t pc) {
  if ((pc_n + 1) * 2 > pc_cap) {
    size_t nc = pc_cap ? pc_cap * 2 : 4096;
    uint64_t *n = calloc(nc, sizeof *n);
    if (!n) return -1;
    for (size_t i = 0; i < pc_cap; i++) {
      if (!pc_set[i]) continue;
      size_t j = (pc_set[i] * 0x9e3779b97f4a7c15ull) >> 20 & (nc - 1);
      while (n[j]) j = (j + 1) & (nc - 1);
      n[j] = pc_set[i];
    }
    free(pc_set);
    pc_set = n;
    pc_cap = nc;
  }
  size_t j = (pc * 0x9e3779b97f4a7c15ull) >> 20 & (pc_cap - 1);
  for (; pc_set[j]; j = (j + 1) & (pc_cap - 1))
    if (pc_set[j] == pc) return 1;
  pc_set[j] = pc;
  pc_n++;
  return 0;
}

static void put(struct dlh_encoder *w, Dlh__Packet *p) { (void)dlh_enc_packet(w, p); }

static void emit_module(struct dlh_encoder *w, module *m) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__ModuleDef md = DLH__MODULE_DEF__INIT;
  md.path = m->path;
  md.has_start = md.has_end = md.has_offset = md.has_id = 1;
  md.start = m->lo;
  md.end = m->hi;
  md.offset = m->bias;
  md.id = m->id;
  if (m->build_id_len) {
    md.has_build_id = 1;
    md.build_id.data = m->build_id;
    md.build_id.len = m->build_id_len;
  }
  p.data_case = DLH__PACKET__DATA_MODULE;
  p.module = &md;
  put(w, &p);
  m->emitted = 1;
}

static void emit_result(struct dlh_encoder *w, const result *r) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__SymbolDef sd = DLH__SYMBOL_DEF__INIT;
  sd.has_pc = 1;
  sd.pc = r->pc;
  sd.function = r->function;
  sd.file = r->file;
  if (r->line) { sd.has_line = 1; sd.line = r->line; }
  if (r->module) { sd.has_module = 1; sd.module = r->module; }
  if (r->offset) { sd.has_offset = 1; sd.offset = r->offset; }
  p.data_case = DLH__PACKET__DATA_SYMBOL;
  p.symbol = &sd;
  put(w, &p);
}

static void emit_pyframe(struct dlh_encoder *w, uint32_t id) {
  const dlh_pyf_rec *r = dlh_pyf_recs[id];
  if (!r) return;
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__PyFrameDef pf = DLH__PY_FRAME_DEF__INIT;
  pf.has_id = pf.has_line = 1;
  pf.id = id;
  pf.function = (char *)r->s;
  pf.file = (char *)r->s + r->fn_len + 1;
  pf.line = r->line;
  p.data_case = DLH__PACKET__DATA_PY_FRAME;
  p.py_frame = &pf;
  put(w, &p);
  if (dlh_inductor_file(pf.file)) dlh_inductor_note(w, pf.file); /* what torch.compile fused */
}

static int new_encoder(struct dlh_encoder *w) {
  if (!stack_done) stack_done = calloc(1, (dlh_stack_max_id + 8) / 8 + 1);
  if (!pyf_done) pyf_done = calloc(1, (dlh_pyf_max_id + 8) / 8 + 1);
  if (!stack_done || !pyf_done) return -1;
  memset(stack_done, 0, (dlh_stack_max_id + 8) / 8 + 1);
  memset(pyf_done, 0, (dlh_pyf_max_id + 8) / 8 + 1);
  if (pc_set) memset(pc_set, 0, pc_cap * sizeof *pc_set);
  pc_n = 0;
  pthread_mutex_lock(&sym_mu); /* a new trace (fork child): everything defined again */
  Q[0].head = Q[0].n = Q[1].head = Q[1].n = 0;
  n_resolved = n_unresolved = 0;
  pthread_mutex_unlock(&sym_mu);
  scan_modules();
  atomic_store(&need_report, 1);
  for (size_t i = 0; i < nmods; i++) mods[i]->emitted = 0;
  for (size_t i = 0; i < nlive; i++) emit_module(w, live[i]); /* the map at start */
  cur_enc = w;
  return 0;
}

void dlh_stacks_define(struct dlh_encoder *w, uint32_t id) {
  if (!w || !id || id > dlh_stack_max_id) return;
  if (w != cur_enc && new_encoder(w) != 0) return;
  if (bit_test_set(stack_done, id)) return;
  const dlh_stack_rec *r = dlh_stack_recs[id];
  if (!r) return;
  int rescanned = 0;
  for (uint32_t i = 0; i < r->n; i++) {
    uint64_t f = r->frames[i];
    if (f & DLH_PYFRAME_TAG) {
      uint32_t pid = (uint32_t)f;
      if (pid && pid <= dlh_pyf_max_id && !bit_test_set(pyf_done, pid)) emit_pyframe(w, pid);
      continue;
    }
    if (pc_seen(f) != 0) continue;
    module *m = find_module((uintptr_t)f);
    if (!m && !rescanned) { /* loaded after the last scan (dlopen)? */
      rescanned = 1;
      if (loader_changed()) {
        scan_modules();
        atomic_store(&need_report, 1);
        m = find_module((uintptr_t)f);
      }
    }
    if (m && !m->emitted) emit_module(w, m);
    queue_pc(f, m);
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__StackDef sd = DLH__STACK_DEF__INIT;
  sd.has_id = 1;
  sd.id = id;
  sd.n_pc = r->n;
  sd.pc = (uint64_t *)r->frames;
  if (r->truncated) { sd.has_truncated = 1; sd.truncated = 1; }
  p.data_case = DLH__PACKET__DATA_STACK;
  p.stack = &sd;
  put(w, &p);
}

/* Writes the SymbolDefs of the results posted so far; returns the pcs still to do. */
static size_t collect(struct dlh_encoder *w) {
  pthread_mutex_lock(&sym_mu);
  result *r = res_head;
  res_head = NULL;
  res_tail = &res_head;
  size_t left = Q[0].n + Q[1].n + in_flight;
  if (!dlh_unwind_cfg.symbolize) left = Q[0].n;
  pthread_mutex_unlock(&sym_mu);
  while (r) {
    result *next = r->next;
    emit_result(w, r);
    free(r->function);
    free(r->file);
    free(r);
    r = next;
  }
  return left;
}

size_t dlh_stacks_symbolize(struct dlh_encoder *w, uint64_t deadline_ns) {
  if (!w || w != cur_enc) return 0;
  size_t left = collect(w);
  while (left && dlh_unwind_cfg.symbolize && dlh_unwind_now_ns() < deadline_ns) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    left = collect(w);
  }
  return left;
}

void dlh_stacks_symbolize_stop(void) {
  pthread_mutex_lock(&sym_mu);
  sym_stop = 1;
  pthread_cond_signal(&sym_cv);
  pthread_mutex_unlock(&sym_mu);
}

void dlh_stacks_symbol_counts(uint64_t *resolved, uint64_t *unresolved, uint64_t *pending_n) {
  pthread_mutex_lock(&sym_mu);
  if (resolved) *resolved = n_resolved;
  if (unresolved) *unresolved = n_unresolved;
  if (pending_n) *pending_n = Q[0].n + in_flight; /* pcs without a name attempt yet */
  pthread_mutex_unlock(&sym_mu);
}

size_t dlh_stacks_index_bytes(void) {
  size_t b = 0;
  pthread_mutex_lock(&sym_mu);
  for (size_t i = 0; i < nmods; i++) b += dlh_symtab_bytes(mods[i]->syms);
  pthread_mutex_unlock(&sym_mu);
  return b;
}

void dlh_stacks_reset_for_attach(void) {
  pthread_mutex_lock(&sym_mu);
  for (int i = 0; i < 2000 && sym_running; i++) { /* the old symbolizer leaves after its pc */
    pthread_mutex_unlock(&sym_mu);
    dlh_sleep_ns(1000000); /* in the thread `dlhook detach` runs its call in (dlh_sleep.h) */
    pthread_mutex_lock(&sym_mu);
  }
  if (!sym_running) {
    Q[0].head = Q[0].n = Q[1].head = Q[1].n = 0;
    while (res_head) {
      result *r = res_head;
      res_head = r->next;
      free(r->function);
      free(r->file);
      free(r);
    }
    res_tail = &res_head;
    in_flight = 0;
    sym_started = sym_stop = 0;
    n_resolved = n_unresolved = 0;
  }
  pthread_mutex_unlock(&sym_mu);
  cur_enc = NULL;
}
