/* symbolize.c — the writer-thread side of call stacks: the module map (path, range, build-id of
 * every loaded object, from dl_iterate_phdr, rescanned when a stack refers to an address outside
 * every known object, e.g. after dlopen), symbols of the pcs that occur (function, demangled when
 * libstdc++'s demangler is in the process; file:line from DWARF through elfutils' libdwfl), and
 * the StackDef / ModuleDef / SymbolDef / PyFrameDef packets, each written once per trace file
 * before the first event that uses it.
 *
 * elfutils (libdw.so.1) is loaded with dlopen(RTLD_LOCAL) on the writer thread when the first
 * stack is defined, so that its symbols never mix with the program's; without it, function
 * names come from dladdr (exported symbols only) and no file:line. Only DWARF inside the
 * objects themselves is read (see find_debuginfo). */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"
#include "dlh_internal.h"
#include "unwind_int.h"

/* ---------------------------------------------------------------- module map */

typedef struct module {
  char *path;
  uintptr_t lo, hi, bias;
  uint8_t build_id[64];
  size_t build_id_len;
  uint32_t id;
  int emitted;                  /* ModuleDef written to the current writer */
} module;

static module *mods;
static size_t nmods, capmods;

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

static int scan_one(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  int *added = data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (hi <= lo) return 0;
  char exe[4096];
  const char *name = info->dlpi_name;
  if (!name || !*name) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    name = exe;
  }
  for (size_t i = 0; i < nmods; i++)
    if (mods[i].lo == lo && mods[i].hi == hi && !strcmp(mods[i].path, name)) return 0;
  if (nmods == capmods) {
    size_t nc = capmods ? capmods * 2 : 64;
    module *m = realloc(mods, nc * sizeof *m);
    if (!m) return 1;
    mods = m;
    capmods = nc;
  }
  module *m = &mods[nmods];
  memset(m, 0, sizeof *m);
  m->path = strdup(name);
  if (!m->path) return 1;
  m->lo = lo;
  m->hi = hi;
  m->bias = info->dlpi_addr;
  read_build_id(info, m);
  m->id = (uint32_t)++nmods;
  (*added)++;
  return 0;
}

/* Adds the objects loaded since the last scan. Returns how many were added. */
static int scan_modules(void) {
  int added = 0;
  pthread_mutex_lock(&dlh_dl_mutex);
  dl_iterate_phdr(scan_one, &added);
  pthread_mutex_unlock(&dlh_dl_mutex);
  return added;
}

static module *find_module(uintptr_t pc) {
  module *best = NULL; /* the latest one loaded wins when ranges were reused after dlclose */
  for (size_t i = 0; i < nmods; i++)
    if (pc >= mods[i].lo && pc < mods[i].hi) best = &mods[i];
  return best;
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
  const char *(*addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *, Elf **,
                          Dwarf_Addr *);
  Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
  const char *(*comp_dir)(Dwfl_Line *);
  Dwfl_Callbacks cb;
} D;

/* Separate debug files (/usr/lib/debug, debuginfod) are not searched while recording: loading
 * and inflating, say, libc's full debug info costs the writer a tenth of a second per process
 * (during which rings fill), and debuginfod would wait on the network. Objects that carry their
 * own DWARF (the program, built with -g) get file:line; others get function names from their
 * symbol tables (.symtab, .gnu_debugdata, .dynsym). */
static int find_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base,
                          const char *file, const char *link, GElf_Word crc, char **out) {
  (void)mod; (void)ud; (void)modname; (void)base; (void)file; (void)link; (void)crc; (void)out;
  return -1;
}

/* libdw keeps the ELF file of every module open for the life of the process: its fd goes above
 * the program's range (preload/fds.c), so that the program's low numbers stay free and a program
 * that closes every fd or dup2()s over low numbers never has libdw read its files. An Elf that
 * libdw made itself (*elfp set: from memory) holds its fd: left as it is. */
static int (*proc_find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr, char **, Elf **);
static int find_elf_high(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base,
                         char **file, Elf **elfp) {
  int fd = proc_find_elf(mod, ud, name, base, file, elfp);
  return fd >= 0 && !*elfp ? dlh_fd_move_up(fd) : fd;
}

static void dwfl_report_all(void) {
  D.report_begin(D.dwfl);
  D.proc_report(D.dwfl, getpid());
  D.report_end(D.dwfl, NULL, NULL);
}

/* Constructor time (dlh_stacks_init): loads libdw. dlopen must not run on the writer thread:
 * a fork() in another thread while the loader is mid-dlopen leaves the child's link map
 * inconsistent (its next dlopen aborts in ld.so). */
static void *libdw;
void dlh_symbolize_preload(void) {
  if (!libdw) libdw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
}

static void dwfl_setup(void) {
  D.state = -1;
  void *h = libdw;
  if (!h) return;
#define SYM(f, n) *(void **)&D.f = dlsym(h, n)
  SYM(begin, "dwfl_begin");
  SYM(report_begin, "dwfl_report_begin");
  SYM(report_end, "dwfl_report_end");
  SYM(proc_report, "dwfl_linux_proc_report");
  SYM(addrmodule, "dwfl_addrmodule");
  SYM(addrinfo, "dwfl_module_addrinfo");
  SYM(getsrc, "dwfl_module_getsrc");
  SYM(lineinfo, "dwfl_lineinfo");
  SYM(comp_dir, "dwfl_line_comp_dir");
  SYM(cb.find_elf, "dwfl_linux_proc_find_elf");
#undef SYM
  if (!D.begin || !D.report_begin || !D.report_end || !D.proc_report || !D.addrmodule ||
      !D.addrinfo || !D.getsrc || !D.lineinfo || !D.cb.find_elf)
    return;
  proc_find_elf = D.cb.find_elf;
  D.cb.find_elf = find_elf_high;
  D.cb.find_debuginfo = find_debuginfo;
  D.dwfl = D.begin(&D.cb);
  if (!D.dwfl) return;
  dwfl_report_all();
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

static void resolve(uintptr_t pc, sym *s) {
  uintptr_t a = pc ? pc - 1 : 0; /* return address -> the call instruction */
  memset(s, 0, sizeof *s);
  if (D.state == 1) {
    Dwfl_Module *m = D.addrmodule(D.dwfl, a);
    if (m) {
      GElf_Off off = 0;
      GElf_Sym es;
      const char *name = D.addrinfo(m, a, &off, &es, NULL, NULL, NULL);
      if (name) {
        snprintf(s->function, sizeof s->function, "%s", name);
        s->offset = off + 1;
      }
      Dwfl_Line *l = D.getsrc(m, a);
      if (l) {
        Dwarf_Addr la;
        int line = 0, col = 0;
        const char *file = D.lineinfo(l, &la, &line, &col, NULL, NULL);
        const char *dir = file && file[0] != '/' && D.comp_dir ? D.comp_dir(l) : NULL;
        if (dir && *dir) snprintf(s->file, sizeof s->file, "%s/%s", dir, file);
        else if (file) snprintf(s->file, sizeof s->file, "%s", file);
        s->line = line > 0 ? (uint32_t)line : 0;
      }
    }
  }
  if (!s->function[0]) {
    Dl_info di;
    if (dladdr((void *)a, &di) && di.dli_sname) {
      snprintf(s->function, sizeof s->function, "%s", di.dli_sname);
      s->offset = pc - (uintptr_t)di.dli_saddr;
    }
  }
  char *at = strchr(s->function, '@'); /* "memcpy@@GLIBC_2.14" -> "memcpy" */
  if (at && at != s->function) *at = 0;
  demangle(s->function, sizeof s->function);
}

/* ---------------------------------------------------------------- per-writer state */

static struct dlh_writer *cur_w;
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

static void put(struct dlh_writer *w, Dlh__Packet *p) { (void)dlh_writer_packet(w, p); }

static void emit_module(struct dlh_writer *w, module *m) {
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

static void emit_symbol(struct dlh_writer *w, uint64_t pc, module *m) {
  sym s;
  resolve((uintptr_t)pc, &s);
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__SymbolDef sd = DLH__SYMBOL_DEF__INIT;
  sd.has_pc = 1;
  sd.pc = pc;
  if (s.function[0]) sd.function = s.function;
  if (s.file[0]) sd.file = s.file;
  if (s.line) { sd.has_line = 1; sd.line = s.line; }
  if (m) { sd.has_module = 1; sd.module = m->id; }
  if (s.offset) { sd.has_offset = 1; sd.offset = s.offset; }
  p.data_case = DLH__PACKET__DATA_SYMBOL;
  p.symbol = &sd;
  put(w, &p);
}

static void emit_pyframe(struct dlh_writer *w, uint32_t id) {
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
}

static int new_writer(struct dlh_writer *w) {
  if (!stack_done) stack_done = calloc(1, (dlh_stack_max_id + 8) / 8 + 1);
  if (!pyf_done) pyf_done = calloc(1, (dlh_pyf_max_id + 8) / 8 + 1);
  if (!stack_done || !pyf_done) return -1;
  memset(stack_done, 0, (dlh_stack_max_id + 8) / 8 + 1);
  memset(pyf_done, 0, (dlh_pyf_max_id + 8) / 8 + 1);
  if (pc_set) memset(pc_set, 0, pc_cap * sizeof *pc_set);
  pc_n = 0;
  if (D.state == 0) dwfl_setup();
  scan_modules();
  for (size_t i = 0; i < nmods; i++) mods[i].emitted = 0;
  for (size_t i = 0; i < nmods; i++) emit_module(w, &mods[i]); /* the map at start */
  cur_w = w;
  return 0;
}

void dlh_stacks_define(struct dlh_writer *w, uint32_t id) {
  if (!w || !id || id > dlh_stack_max_id) return;
  if (w != cur_w && new_writer(w) != 0) return;
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
    if (!m && !rescanned) { /* loaded after the last scan (dlopen) */
      rescanned = 1;
      if (scan_modules() && D.state == 1) dwfl_report_all();
      m = find_module((uintptr_t)f);
    }
    if (m && !m->emitted) emit_module(w, m);
    emit_symbol(w, f, m);
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
