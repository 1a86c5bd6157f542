/* symbolize.c — `dlhook symbolize TRACE [-o OUT]`: names (and file:line) for the stack addresses
 * a recording left without a SymbolDef (its exit budget ran out, or the binary carried no
 * symbols and its debug file is elsewhere).
 *
 * Each module of the trace is looked for by build-id: in the --debug-dir directories (the
 * /usr/lib/debug/.build-id layout and the debuginfod cache layout), in the --path directories
 * (by file name), at the path it was recorded from, and in /usr/lib/debug. A file whose build-id
 * differs from the recorded one is never used (the names would be wrong). Names come from the
 * same sorted symbol index as in the recorder (unwind/elfsym.c); file:line from DWARF through
 * elfutils' libdwfl. The output is the input re-framed, every packet kept, with the new
 * SymbolDef packets before the trailer (whose pcs_unsymbolized is updated). Without -o the trace
 * is replaced (a new file renamed over it, as every output of the command: lib/output.c). */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlh_elfsym.h"
#include "export.h"
#include "rd.h"
#include "rd_opts.h"

static const dlh_elf_api ELF_API = {
    elf_version, elf_begin, elf_cntl, elf_end,   elf_nextscn,
    gelf_getshdr, elf_getdata, gelf_getsym, elf_strptr, gelf_getnote, elf_rawfile,
};

typedef struct smod {
  uint32_t id;
  char *path;
  uint64_t start, end, bias;
  uint8_t bid[64];
  size_t bid_len;
  int state;            /* 0 = not looked for, 1 = found, -1 = not found */
  char *file;           /* the file used */
  dlh_symtab *syms;
  dlh_symtab *dsyms;    /* the separate debug file's .symtab (local functions), if any */
  int dsyms_tried;
  Dwfl *dwfl;
  Dwfl_Module *dmod;
} smod;

typedef struct ctx {
  smod *mods;
  size_t nmods;
  uint64_t *pcs;        /* native pcs of all stacks (sorted, unique) */
  size_t npcs;
  uint64_t *named;      /* pcs that already have a SymbolDef with a function (sorted) */
  size_t nnamed;
  uint64_t *lined;      /* pcs that already have a SymbolDef with a file (sorted) */
  size_t nlined;
  const char **debug_dirs, **path_dirs;
  size_t ndebug, npath;
  int verbose;
} ctx;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static size_t uniq(uint64_t *v, size_t n) {
  if (!n) return 0; /* v may be NULL: a trace without stacks */
  rd_qsort(v, n, sizeof *v, cmp_u64);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!k || v[k - 1] != v[i]) v[k++] = v[i];
  return k;
}

static int has(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo < n && v[lo] == x;
}

static smod *mod_of(ctx *c, uint64_t pc) {
  smod *best = NULL; /* the last defined that covers pc */
  for (size_t i = 0; i < c->nmods; i++)
    if (pc >= c->mods[i].start && pc < c->mods[i].end) best = &c->mods[i];
  return best;
}

static int readable(const char *p) { return access(p, R_OK) == 0; }

/* Whether file `p` is the module (same build-id; a module recorded without one takes the file
 * at its own path only). */
static int matches(const smod *m, const char *p, int own_path) {
  if (!readable(p)) return 0;
  if (!m->bid_len) return own_path;
  uint8_t id[64];
  size_t n = dlh_elf_build_id(&ELF_API, p, id, sizeof id);
  return n == m->bid_len && !memcmp(id, m->bid, n);
}

static int try_file(smod *m, const char *p, int own_path) {
  if (!matches(m, p, own_path)) return 0;
  dlh_symtab *t = dlh_symtab_open(&ELF_API, p, m->bid_len ? m->bid : NULL, m->bid_len);
  Dwfl *d = NULL;
  Dwfl_Module *dm = NULL;
  static char *debuginfo_path = NULL;
  static const Dwfl_Callbacks cb = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .debuginfo_path = &debuginfo_path,
  };
  d = dwfl_begin(&cb);
  if (d) {
    dwfl_report_begin(d);
    dm = dwfl_report_elf(d, m->path, p, -1, m->bias, false);
    dwfl_report_end(d, NULL, NULL);
    if (!dm) {
      dwfl_end(d);
      d = NULL;
    }
  }
  if (!t && !d) return 0;
  m->syms = t;
  m->dwfl = d;
  m->dmod = dm;
  m->file = rd_xstrdup(p);
  return 1;
}

static void find_file(ctx *c, smod *m) {
  m->state = -1;
  char hex[129] = "", p[8192];
  for (size_t i = 0; i < m->bid_len; i++) snprintf(hex + 2 * i, 3, "%02x", m->bid[i]);
  const char *base = strrchr(m->path, '/');
  base = base ? base + 1 : m->path;
  const char *dirs_default[] = {"/usr/lib/debug"};
  for (int pass = 0; pass < 4; pass++) {
    const char **dirs = pass == 0 ? c->debug_dirs : pass == 1 ? c->path_dirs : dirs_default;
    size_t nd = pass == 0 ? c->ndebug : pass == 1 ? c->npath : pass == 3 ? 1 : 0;
    if (pass == 2) { /* the recorded path */
      if (m->path[0] == '/' && try_file(m, m->path, 1)) goto found;
      continue;
    }
    for (size_t i = 0; i < nd; i++) {
      if (pass == 1) {
        snprintf(p, sizeof p, "%s/%s", dirs[i], base);
        if (try_file(m, p, 0)) goto found;
        continue;
      }
      if (!m->bid_len) continue;
      const char *fmts[] = {"%s/.build-id/%.2s/%s.debug", "%s/%.2s/%s.debug"};
      for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, fmts[f], dirs[i], hex, hex + 2);
        if (try_file(m, p, 0)) goto found;
      }
      const char *leaf[] = {"debuginfo", "executable"};
      for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, "%s/%s/%s", dirs[i], hex, leaf[f]);
        if (try_file(m, p, 0)) goto found;
      }
    }
  }
  if (c->verbose)
    fprintf(stderr, "dlhook symbolize: %s (build-id %s): no matching file found\n", m->path,
            hex[0] ? hex : "none");
  return;
found:
  m->state = 1;
  if (c->verbose) fprintf(stderr, "dlhook symbolize: %s: using %s\n", m->path, m->file);
}

/* Resolves pc into a SymbolDef packet (strings malloc'd into *fn, *file). Returns 1 when a
 * name or a line was found. */
static int resolve(ctx *c, uint64_t pc, Dlh__SymbolDef *sd, char **fn, char **file) {
  smod *m = mod_of(c, pc);
  if (!m) return 0;
  if (m->state == 0) find_file(c, m);
  if (m->state != 1) return 0;
  uint64_t a = pc - 1, off = 0;
  const char *name = m->syms ? dlh_symtab_lookup(m->syms, a - m->bias, &off) : NULL;
  if (!name && m->dmod && !m->dsyms_tried) { /* local functions: the debug file's .symtab */
    m->dsyms_tried = 1;
    Dwarf_Addr dbias;
    const char *debugfile = NULL;
    if (dwfl_module_getdwarf(m->dmod, &dbias))
      dwfl_module_info(m->dmod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
    if (debugfile && strcmp(debugfile, m->file) != 0)
      m->dsyms = dlh_symtab_open(&ELF_API, debugfile, NULL, 0);
  }
  if (!name && m->dsyms) name = dlh_symtab_lookup(m->dsyms, a - m->bias, &off);
  *fn = *file = NULL;
  if (name) {
    *fn = rd_xstrdup(name);
    char *at = strchr(*fn, '@');
    if (at && at != *fn) *at = 0;
    sd->function = *fn;
    sd->has_offset = 1;
    sd->offset = off + 1;
  }
  if (m->dmod) {
    Dwfl_Line *l = dwfl_module_getsrc(m->dmod, a);
    int line = 0;
    const char *f = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
    if (f) {
      const char *dir = f[0] != '/' ? dwfl_line_comp_dir(l) : NULL;
      size_t n = strlen(f) + (dir ? strlen(dir) + 1 : 0) + 1;
      *file = rd_xmalloc(n);
      if (dir && *dir) snprintf(*file, n, "%s/%s", dir, f);
      else snprintf(*file, n, "%s", f);
      sd->file = *file;
      if (line > 0) { sd->has_line = 1; sd->line = (uint32_t)line; }
    }
  }
  if (!sd->function && !sd->file) return 0;
  sd->has_pc = 1;
  sd->pc = pc;
  sd->has_module = 1;
  sd->module = m->id;
  return 1;
}

/* Whether the module of pc may give its line: its file found and known to libdwfl (which looks
 * for DWARF in it and in its separate debug file); otherwise a named pc is left as it is. */
static int has_dwarf(ctx *c, uint64_t pc) {
  smod *m = mod_of(c, pc);
  if (!m) return 0;
  if (m->state == 0) find_file(c, m);
  return m->state == 1 && m->dmod;
}

enum { OPT_DEBUG_DIR = RD_KEY(0), OPT_PATH };
static const rd_option options[] = {
    {"output", 'o', "OUT", "write OUT (default: replace TRACE)", NULL, 0},
    {"debug-dir", OPT_DEBUG_DIR, "DIR",
     "look for debug files in DIR (repeatable): DIR/.build-id/xx/rest.debug, DIR/xx/rest.debug, "
     "or the debuginfod cache layout DIR/BUILDID/debuginfo and DIR/BUILDID/executable", NULL, 0},
    {"path", OPT_PATH, "DIR",
     "look for DIR/NAME for a module recorded as .../NAME (repeatable; binaries copied from the "
     "machine that recorded the trace)", NULL, 0},
    {"verbose", 'v', NULL, "say which file each module was resolved from", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_symbolize_spec = {
    .name = "symbolize",
    .synopsis = "[-o OUT] [--debug-dir DIR]... [--path DIR]... [-v] TRACE",
    .summary = "add names to the stack addresses a recording left unresolved",
    .about = "Adds function names and file:line to the stack addresses of TRACE that the "
             "recording left unresolved (shown as module+0xoffset until then). Modules are "
             "matched by build-id: in the --debug-dir directories, in the --path directories, "
             "then at the recorded path and in /usr/lib/debug. A file with another build-id is "
             "never used.",
    .examples = " dlhook symbolize --debug-dir ~/.cache/debuginfod_client trace.dlh\n"
                " dlhook symbolize --path ./bin -o named.dlh trace.dlh",
    .options = options,
};

/* Pass 1 over trace `in`: its modules, the pcs of its stacks and the pcs already named, into c
 * (pcs and named sorted, each once). Returns 0, 1 when the trace is damaged (what was read
 * before is kept, after a message), or -1 when it cannot be opened (after a message). */
static int read_pcs(ctx *c, const char *in) {
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(in, &err);
  if (!r) {
    rd_error("%s: %s", in, err ? err : "cannot open");
    free(err);
    return -1;
  }
  size_t cap_pcs = 0, cap_named = 0, cap_lined = 0, cap_mods = 0;
  const Dlh__Packet *p;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_MODULE) {
      const Dlh__ModuleDef *d = p->module;
      if (c->nmods == cap_mods) {
        cap_mods = cap_mods ? cap_mods * 2 : 64;
        c->mods = rd_xrealloc(c->mods, cap_mods * sizeof *c->mods);
      }
      smod *m = &c->mods[c->nmods++];
      memset(m, 0, sizeof *m);
      m->id = d->id;
      m->path = rd_xstrdup(d->path ? d->path : "");
      m->start = d->start;
      m->end = d->end;
      m->bias = d->offset;
      if (d->has_build_id && d->build_id.len <= sizeof m->bid) {
        memcpy(m->bid, d->build_id.data, d->build_id.len);
        m->bid_len = d->build_id.len;
      }
    } else if (p->data_case == DLH__PACKET__DATA_STACK) {
      const Dlh__StackDef *d = p->stack;
      for (size_t i = 0; i < d->n_pc; i++) {
        if (d->pc[i] >> 63) continue; /* a Python frame */
        if (c->npcs == cap_pcs) {
          cap_pcs = cap_pcs ? cap_pcs * 2 : 4096;
          c->pcs = rd_xrealloc(c->pcs, cap_pcs * sizeof *c->pcs);
        }
        c->pcs[c->npcs++] = d->pc[i];
      }
    } else if (p->data_case == DLH__PACKET__DATA_SYMBOL && p->symbol->function &&
               p->symbol->function[0]) {
      if (c->nnamed == cap_named) {
        cap_named = cap_named ? cap_named * 2 : 4096;
        c->named = rd_xrealloc(c->named, cap_named * sizeof *c->named);
      }
      c->named[c->nnamed++] = p->symbol->pc;
      if (p->symbol->file && p->symbol->file[0]) {
        if (c->nlined == cap_lined) {
          cap_lined = cap_lined ? cap_lined * 2 : 4096;
          c->lined = rd_xrealloc(c->lined, cap_lined * sizeof *c->lined);
        }
        c->lined[c->nlined++] = p->symbol->pc;
      }
    }
  }
  if (rc < 0)
    rd_error("%s: damaged trace: %s (%" PRIu64 " complete frames read before it; they are kept)",
             in, dlh_reader_error(r) ? dlh_reader_error(r) : "read error", dlh_reader_frames(r));
  dlh_reader_close(r);
  c->npcs = uniq(c->pcs, c->npcs);
  c->nnamed = uniq(c->named, c->nnamed);
  c->nlined = uniq(c->lined, c->nlined);
  return rc < 0 ? 1 : 0;
}

/* Pass 2: trace `in` rewritten to dst (a new file renamed into place: lib/output.c's rules for
 * outputs) with the symbols defs[0..nres) added before the trailer, whose count of unresolved
 * pcs becomes `unresolved`. Returns 0, or -1 after a message. */
static int rewrite(const char *in, const char *dst, Dlh__SymbolDef *defs, size_t nres,
                   size_t unresolved) {
  char *err = NULL;
  const Dlh__Packet *p;
  FILE *of = rd_create(dst, 0);
  if (!of) return -1;
  dlh_reader *r = dlh_reader_open(in, &err);
  dlh_encoder *w = r ? dlh_enc_create(fileno(of), 3) : NULL;
  if (!r || !w) {
    rd_error("%s: %s", in, err ? err : "cannot rewrite");
    free(err);
    dlh_reader_close(r);
    fclose(of);
    return -1;
  }
  /* the trailer goes last: kept packed (it refers to memory of its packet, e.g. mem_parts,
   * which the next read frees), unpacked again to write it */
  uint8_t *tbuf = NULL;
  size_t tlen = 0;
  while (dlh_reader_next(r, &p) == 1) {
    if (p->data_case == DLH__PACKET__DATA_TRAILER) {
      free(tbuf);
      tlen = dlh__trailer__get_packed_size(p->trailer);
      tbuf = rd_xmalloc(tlen ? tlen : 1);
      dlh__trailer__pack(p->trailer, tbuf);
      continue;
    }
    dlh_enc_packet(w, p); /* as they are: folded events keep their count and span */
  }
  for (size_t i = 0; i < nres; i++) {
    Dlh__Packet sp = DLH__PACKET__INIT;
    sp.data_case = DLH__PACKET__DATA_SYMBOL;
    sp.symbol = &defs[i];
    dlh_enc_packet(w, &sp);
  }
  Dlh__Trailer *trailer = tbuf ? dlh__trailer__unpack(NULL, tlen, tbuf) : NULL;
  if (trailer) {
    Dlh__Packet tp = DLH__PACKET__INIT;
    trailer->has_pcs_unsymbolized = 1;
    trailer->pcs_unsymbolized = unresolved;
    tp.data_case = DLH__PACKET__DATA_TRAILER;
    tp.trailer = trailer;
    dlh_enc_packet(w, &tp);
    dlh__trailer__free_unpacked(trailer, NULL);
  }
  free(tbuf);
  int wrc = dlh_enc_flush(w);
  dlh_enc_free(w);
  dlh_reader_close(r);
  if (wrc != 0) rd_error("%s: cannot write: %s", dst, strerror(errno));
  if (rd_close(of, dst) < 0 || wrc != 0) return -1;
  return 0;
}

int cmd_symbolize(int argc, char **argv) {
  ctx c;
  memset(&c, 0, sizeof c);
  const char *out = NULL, *in = NULL;
  c.debug_dirs = rd_xmalloc((size_t)argc * sizeof *c.debug_dirs);
  c.path_dirs = rd_xmalloc((size_t)argc * sizeof *c.path_dirs);
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, &cmd_symbolize_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    switch (opt) {
      case 'o': out = g.arg; break;
      case OPT_DEBUG_DIR: c.debug_dirs[c.ndebug++] = g.arg; break;
      case OPT_PATH: c.path_dirs[c.npath++] = g.arg; break;
      case 'v': c.verbose = 1; break;
      case RD_OPERAND:
        if (in) return rd_usage_error("symbolize", "one trace at a time ('%s' and '%s')", in, g.arg);
        in = g.arg;
        break;
    }
  }
  if (opt < 0) return g.status;
  if (!in) return rd_usage_error("symbolize", "no trace given");

  int damaged = read_pcs(&c, in);
  if (damaged < 0) return RD_BAD_INPUT;

  /* resolve what is missing */
  size_t ntodo = 0, nres = 0;
  Dlh__SymbolDef *defs = rd_xmalloc((c.npcs + 1) * sizeof *defs);
  char **strs = rd_xmalloc((2 * c.npcs + 1) * sizeof *strs);
  size_t nstrs = 0;
  size_t nlines = 0;
  for (size_t i = 0; i < c.npcs; i++) {
    /* a pc named while recording without its line: its module's DWARF was too large to read
     * there (unwind/symbolize.c); a SymbolDef with the line replaces the first */
    int named = has(c.named, c.nnamed, c.pcs[i]);
    if (named && (has(c.lined, c.nlined, c.pcs[i]) || !has_dwarf(&c, c.pcs[i]))) continue;
    ntodo += !named;
    Dlh__SymbolDef *sd = &defs[nres];
    dlh__symbol_def__init(sd);
    char *fn = NULL, *file = NULL;
    if (resolve(&c, c.pcs[i], sd, &fn, &file) && (!named || file)) {
      nres++;
      nlines += named;
    }
    if (fn) strs[nstrs++] = fn;
    if (file) strs[nstrs++] = file;
  }
  nres -= nlines; /* the names resolved now, for the trailer and the message */

  const char *dst = out ? out : in;
  if (rewrite(in, dst, defs, nres + nlines, ntodo - nres) < 0) return RD_BAD_INPUT;
  printf("%s: %zu stack addresses, %zu without a name before, %zu resolved now, %zu left", dst,
         c.npcs, ntodo, nres, ntodo - nres);
  if (nlines) printf("; file:line added to %zu named while recording", nlines);
  printf("\n");

  for (size_t i = 0; i < nstrs; i++) free(strs[i]);
  free(strs);
  free(defs);
  for (size_t i = 0; i < c.nmods; i++) {
    free(c.mods[i].path);
    free(c.mods[i].file);
    dlh_symtab_close(c.mods[i].syms);
    dlh_symtab_close(c.mods[i].dsyms);
    if (c.mods[i].dwfl) dwfl_end(c.mods[i].dwfl);
  }
  free(c.mods);
  free(c.pcs);
  free(c.named);
  free(c.lined);
  free(c.debug_dirs);
  free(c.path_dirs);
  return damaged ? RD_BAD_INPUT : RD_OK;
}
