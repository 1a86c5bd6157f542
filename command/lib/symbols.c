/* symbols.c — call stacks of a trace: StackDef, ModuleDef, SymbolDef and PyFrameDef packets
 * (format/dlhook.proto) turned into symbolized frames for dump and the exporters
 * (rd_stack_frames). StackDef, ModuleDef and PyFrameDef precede their first use in a trace;
 * SymbolDef packets may come later (the recorder resolves names in the background, `dlhook
 * symbolize` appends them), so rd_trace_open reads every definition in a first pass before any
 * event is looked at. A pc without a SymbolDef is shown as module+offset. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"


typedef struct rd_module {
  char *path;
  uint64_t start, end, bias;
  size_t order;     /* definition order: a later module wins over an earlier one in its range */
} rd_module;

typedef struct rd_symbol {
  uint64_t pc;
  char *function, *file;
  uint32_t line, module;
  int mangled;      /* function is a C++ name not yet demangled (frame_of does it at first use) */
} rd_symbol;

typedef struct rd_pyframe {
  char *function, *file;
  uint32_t line;
} rd_pyframe;

typedef struct rd_stack {
  size_t n;
  uint64_t *raw;
  int truncated;
  rd_frame *frames; /* built on first use */
} rd_stack;

typedef struct rd_stacks {
  rd_map modules;   /* ModuleDef.id -> rd_module* */
  rd_map pyframes;  /* PyFrameDef.id -> rd_pyframe* */
  rd_map stacks;    /* StackDef.id -> rd_stack* */
  rd_symbol *syms;  /* open addressing on pc; pc 0 = empty */
  size_t nsyms, capsyms;
  rd_module **modlist; /* in definition order (owns the modules) */
  size_t nmods;
  rd_module **bystart; /* sorted by start, then order: binary search (built on first lookup) */
  size_t nsorted;
  /* the stacks whose frames are built, and their frames in all (FRAME_CACHE) */
  rd_stack **built;
  size_t nbuilt, capbuilt, frames_built;
  struct chunk *chunks; /* where the stacks and their pcs live, freed with the trace */
} rd_stacks;

/* The stacks of a PyTorch program are tens of thousands of arrays of ~60 pcs, never freed
 * before the trace: one allocation per stack and its free at the end were a fifth of reading
 * them. They are carved from chunks of 1 MiB instead. */
typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) uint8_t mem[];
} chunk;

static void *carve(rd_stacks *s, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!s->chunks || s->chunks->cap - s->chunks->used < n) {
    size_t cap = n > (1u << 20) ? n : (1u << 20);
    chunk *c = rd_xmalloc(sizeof *c + cap);
    c->used = 0;
    c->cap = cap;
    c->next = s->chunks;
    s->chunks = c;
  }
  void *p = s->chunks->mem + s->chunks->used;
  s->chunks->used += n;
  return p;
}

/* Frames kept built at most (56 bytes each): past it the built frames of the other stacks are
 * freed and built again on their next use. A trace of 20,000 stacks of 256 frames would keep
 * 280 MiB of them; real programs' stacks fit many times over. */
#define FRAME_CACHE (1u << 19)

static rd_stacks *get(rd_trace *t) {
  if (!t->stacks) {
    t->stacks = rd_xmalloc(sizeof *t->stacks);
    memset(t->stacks, 0, sizeof *t->stacks);
  }
  return t->stacks;
}

static size_t pc_slot(uint64_t pc, size_t cap) { return (size_t)rd_hash64(pc) & (cap - 1); }

static rd_symbol *sym_find(const rd_stacks *s, uint64_t pc) {
  if (!s->capsyms || !pc) return NULL;
  for (size_t i = pc_slot(pc, s->capsyms);; i = (i + 1) & (s->capsyms - 1)) {
    if (!s->syms[i].pc) return NULL;
    if (s->syms[i].pc == pc) return &s->syms[i];
  }
}

static rd_symbol *sym_insert(rd_stacks *s, uint64_t pc) {
  if ((s->nsyms + 1) * 2 > s->capsyms) {
    size_t nc = s->capsyms ? s->capsyms * 2 : 1024;
    rd_symbol *n = calloc(nc, sizeof *n);
    if (!n) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
    for (size_t i = 0; i < s->capsyms; i++) {
      if (!s->syms[i].pc) continue;
      size_t j = pc_slot(s->syms[i].pc, nc);
      while (n[j].pc) j = (j + 1) & (nc - 1);
      n[j] = s->syms[i];
    }
    free(s->syms);
    s->syms = n;
    s->capsyms = nc;
  }
  size_t i = pc_slot(pc, s->capsyms);
  for (; s->syms[i].pc; i = (i + 1) & (s->capsyms - 1))
    if (s->syms[i].pc == pc) return &s->syms[i];
  s->syms[i].pc = pc;
  s->nsyms++;
  return &s->syms[i];
}

static char *dup_or_null(const char *v) { return v && *v ? rd_xstrdup(v) : NULL; }

static void pyframe_free(void *p) {
  rd_pyframe *f = p;
  free(f->function);
  free(f->file);
  free(f);
}

static void module_free(void *p) {
  rd_module *m = p;
  free(m->path);
  free(m);
}

void rd_stacks_define(rd_trace *t, const Dlh__Packet *p) {
  rd_stacks *s = get(t);
  switch (p->data_case) {
    case DLH__PACKET__DATA_STACK: {
      const Dlh__StackDef *d = p->stack;
      uint64_t *raw = carve(s, d->n_pc * sizeof *raw);
      if (d->n_pc) memcpy(raw, d->pc, d->n_pc * sizeof *raw);
      rd_stack *st = rd_map_get(&s->stacks, d->id);
      if (st) { /* redefined: in place, as `built` may point to it (the old pcs stay carved) */
        free(st->frames); /* an entry of `built` may stay, with no frames: harmless */
      } else {
        st = carve(s, sizeof *st);
        rd_map_put(&s->stacks, d->id, st);
      }
      st->n = d->n_pc;
      st->raw = raw;
      st->truncated = d->has_truncated && d->truncated;
      st->frames = NULL;
      break;
    }
    case DLH__PACKET__DATA_MODULE: {
      const Dlh__ModuleDef *d = p->module;
      rd_module *m = rd_xmalloc(sizeof *m);
      m->path = rd_xstrdup(d->path ? d->path : "");
      m->start = d->start;
      m->end = d->end;
      m->bias = d->has_offset ? d->offset : 0;
      m->order = s->nmods;
      s->modlist = rd_xrealloc(s->modlist, (s->nmods + 1) * sizeof *s->modlist);
      s->modlist[s->nmods++] = m;
      /* the map only indexes; modlist owns the modules */
      if (d->has_id) rd_map_put(&s->modules, d->id, m);
      break;
    }
    case DLH__PACKET__DATA_SYMBOL: {
      const Dlh__SymbolDef *d = p->symbol;
      if (!d->pc) break;
      rd_symbol *y = sym_insert(s, d->pc);
      free(y->function);
      free(y->file);
      /* demangled when a frame shows it: a PyTorch trace names 50 k pcs, few are ever shown */
      y->function = dup_or_null(d->function);
      y->mangled = y->function && !strncmp(y->function, "_Z", 2);
      y->file = dup_or_null(d->file);
      y->line = d->line;
      y->module = d->module;
      break;
    }
    case DLH__PACKET__DATA_PY_FRAME: {
      const Dlh__PyFrameDef *d = p->py_frame;
      rd_pyframe *f = rd_xmalloc(sizeof *f);
      f->function = dup_or_null(d->function);
      f->file = dup_or_null(d->file);
      f->line = d->line;
      rd_pyframe *old = rd_map_put(&s->pyframes, d->id, f);
      if (old) pyframe_free(old);
      break;
    }
    default:
      break;
  }
}

static int cmp_start(const void *a, const void *b) {
  const rd_module *x = *(rd_module *const *)a, *y = *(rd_module *const *)b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The module whose range holds pc: among those starting at or below pc, the latest defined
 * that still covers it (a range reused after dlclose), looking back at most 16 neighbours. */
static const rd_module *module_of(rd_stacks *s, uint64_t pc, uint32_t id) {
  if (id) {
    const rd_module *m = rd_map_get(&s->modules, id);
    if (m) return m;
  }
  if (s->nsorted != s->nmods) {
    free(s->bystart);
    s->bystart = rd_xmalloc(s->nmods * sizeof *s->bystart);
    memcpy(s->bystart, s->modlist, s->nmods * sizeof *s->bystart);
    rd_qsort(s->bystart, s->nmods, sizeof *s->bystart, cmp_start);
    s->nsorted = s->nmods;
  }
  size_t lo = 0, hi = s->nsorted;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->bystart[mid]->start <= pc) lo = mid + 1; else hi = mid;
  }
  const rd_module *best = NULL;
  for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
    const rd_module *m = s->bystart[i - 1];
    if (pc < m->end && (!best || m->order > best->order)) best = m;
  }
  return best;
}

/* One entry of a stack (pc, or tagged Python frame id) as a frame. */
static void frame_of(rd_stacks *s, uint64_t v, rd_frame *f) {
  memset(f, 0, sizeof *f);
  if (v & DLH_PYFRAME_TAG) {
    const rd_pyframe *py = rd_map_get(&s->pyframes, (uint32_t)v);
    f->python = 1;
    if (py) {
      f->function = py->function;
      f->file = py->file;
      f->line = py->line;
    }
    return;
  }
  f->pc = v;
  rd_symbol *y = sym_find(s, v);
  if (y && y->mangled) {
    char *dm = rd_demangle(y->function);
    if (dm) {
      free(y->function);
      y->function = dm;
    }
    y->mangled = 0;
  }
  const rd_module *m = module_of(s, v, y ? y->module : 0);
  if (y) {
    f->function = y->function;
    f->file = y->file;
    f->line = y->line;
  }
  f->module = m && m->path[0] ? m->path : NULL;
  if (m && v >= m->bias) {
    f->modoff = v - m->bias; /* the address in the file: addr2line -e module 0xmodoff */
    f->has_modoff = 1;
  }
}

void rd_frame_of(const rd_trace *t, uint64_t raw, rd_frame *out) {
  if (!t->stacks) { memset(out, 0, sizeof *out); out->python = !!(raw & DLH_PYFRAME_TAG); return; }
  frame_of(t->stacks, raw, out);
}

size_t rd_stack_frames(const rd_trace *t, uint32_t stack_id, const rd_frame **out) {
  if (out) *out = NULL;
  rd_stacks *s = t->stacks;
  if (!s || !stack_id) return 0;
  rd_stack *st = rd_map_get(&s->stacks, stack_id);
  if (!st || !st->n) return 0;
  if (!st->frames) {
    if (s->frames_built + st->n > FRAME_CACHE) {
      for (size_t i = 0; i < s->nbuilt; i++) {
        free(s->built[i]->frames);
        s->built[i]->frames = NULL;
      }
      s->nbuilt = 0;
      s->frames_built = 0;
    }
    if (s->nbuilt == s->capbuilt) {
      s->capbuilt = s->capbuilt ? s->capbuilt * 2 : 256;
      s->built = rd_xrealloc(s->built, s->capbuilt * sizeof *s->built);
    }
    s->built[s->nbuilt++] = st;
    s->frames_built += st->n;
    st->frames = rd_xmalloc(st->n * sizeof *st->frames);
    for (size_t i = 0; i < st->n; i++) frame_of(s, st->raw[i], &st->frames[i]);
  }
  if (out) *out = st->frames;
  return st->n;
}

int rd_stacks_have_module(const rd_trace *t, const char *part) {
  const rd_stacks *s = t->stacks;
  if (!s) return 0;
  for (size_t i = 0; i < s->nmods; i++)
    if (strstr(s->modlist[i]->path, part)) return 1;
  return 0;
}

size_t rd_stacks_count(const rd_trace *t) { return t->stacks ? t->stacks->stacks.n : 0; }

size_t rd_stack_raw(const rd_trace *t, uint32_t stack_id, const uint64_t **out, int *truncated) {
  *out = NULL;
  *truncated = 0;
  rd_stacks *s = t->stacks;
  if (!s || !stack_id) return 0;
  rd_stack *st = rd_map_get(&s->stacks, stack_id);
  if (!st) return 0;
  *out = st->raw;
  *truncated = st->truncated;
  return st->n;
}

void rd_stacks_free(rd_trace *t) {
  rd_stacks *s = t->stacks;
  if (!s) return;
  /* every stack with frames is in `built` (once per building: NULL after its free) */
  for (size_t i = 0; i < s->nbuilt; i++) {
    free(s->built[i]->frames);
    s->built[i]->frames = NULL;
  }
  rd_map_free(&s->stacks, NULL);
  for (chunk *c = s->chunks, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(s->built);
  rd_map_free(&s->pyframes, pyframe_free);
  rd_map_free(&s->modules, NULL);
  for (size_t i = 0; i < s->nmods; i++) module_free(s->modlist[i]);
  free(s->modlist);
  free(s->bystart);
  for (size_t i = 0; i < s->capsyms; i++) {
    free(s->syms[i].function);
    free(s->syms[i].file);
  }
  free(s->syms);
  free(s);
  t->stacks = NULL;
}
