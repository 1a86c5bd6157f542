/* flame.c — flame graphs of traces: `dlhook export --format folded|svg|speedscope|pprof` and
 * `dlhook diff`. Events are aggregated by stack into a tree while the trace streams past, so
 * memory grows with the number of distinct stacks, not of events.
 *
 * Weights (--weight):
 *   gpu    GPU time of each kernel, copy and memset, under the stack of the API call that
 *          launched it (joined by correlation id), with the kernel as leaf;
 *   cpu    time inside the outermost API calls, with the function as leaf;
 *   bytes  bytes allocated (API calls named *alloc* with a size argument) and bytes copied or
 *          set on the GPU (under the launching call).
 * The correlation join keeps the most recent CORR_LIMIT launches in a map; a GPU record whose
 * launch is not in it is kept aside and resolved by a second pass over the file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "pprof.pb-c.h"

#define CORR_LIMIT (1u << 20)
#define PENDING_LIMIT (1u << 22)

/* ---------------------------------------------------------------- frames and the tree */

typedef struct node {
  uint32_t parent, frame, child, sibling; /* child/sibling: index, 0 = none (0 is the root) */
  uint32_t depth;
  uint64_t self[2], total[2], count[2];
} node;

typedef struct flame {
  const ex_opts *o;
  int side;           /* 0 or 1 (diff: before, after) */
  /* frames: interned names */
  char **names;
  size_t nnames, capnames;
  ex_u64map name_ix;     /* hash of name -> chain head; collisions resolved by name_next */
  uint32_t *name_next;
  /* tree; node 0 is the root */
  node *nodes;
  size_t nnodes, capnodes;
  ex_u64map child_ix;    /* parent << 32 | frame -> node */
  /* per trace */
  ex_u64map leaf_ix;     /* stack << 32 | fn -> node of the call */
  ex_u64map corr;        /* correlation id -> node of the launching call */
  uint64_t *corr_ring;
  size_t corr_pos;
  /* GPU records whose launch was not seen yet */
  struct pend { uint64_t corr, w; uint32_t frame, next; } *pend; /* next: same corr */
  size_t npend, cappend, nresolved;
  int pass2;          /* second pass: only resolving pending records */
  ex_u64map pend_ix;  /* corr -> most recent pending index */
  ex_u64map ext;      /* CUPTI correlation id -> slot in ext_ring (library call not seen yet) */
  struct extc { uint64_t corr, ext; } *ext_ring; /* the last CORR_LIMIT such ids */
  size_t next;
  uint32_t unknown_frame, nolaunch_frame;
} flame;

static uint64_t hstr(const char *s) { return vx_hash_str(s); }

static uint32_t frame_intern(flame *f, const char *s);

/* Interns a frame name (';' and control characters made harmless for folded output). */
static uint32_t frame_id(flame *f, const char *name) {
  const unsigned char *q = (const unsigned char *)name;
  size_t k;
  while (*q && *q != ';' && *q >= 0x20 && *q != 0x7f && (k = vx_utf8_seq(q))) q += k;
  if (!*q) return frame_intern(f, name); /* the usual case: nothing to change */
  char *s = vx_utf8_dup(name); /* valid UTF-8 for SVG, speedscope JSON and pprof's proto3 */
  for (char *p = s; *p; p++)
    if (*p == ';') *p = ':';
    else if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  uint32_t r = frame_intern(f, s);
  free(s);
  return r;
}

static uint32_t frame_intern(flame *f, const char *s) {
  uint64_t h = hstr(s);
  uint32_t id;
  if (ex_m_get(&f->name_ix, h, &id)) {
    for (uint32_t i = id; i != UINT32_MAX; i = f->name_next[i])
      if (!strcmp(f->names[i], s)) return i;
  } else {
    id = UINT32_MAX;
  }
  if (f->nnames == f->capnames) {
    f->capnames = f->capnames ? f->capnames * 2 : 256;
    f->names = vx_xrealloc(f->names, f->capnames * sizeof *f->names);
    f->name_next = vx_xrealloc(f->name_next, f->capnames * sizeof *f->name_next);
  }
  char *c = vx_xstrdup(s);
  uint32_t n = (uint32_t)f->nnames++;
  f->names[n] = c;
  f->name_next[n] = id; /* chain: new head */
  ex_m_put(&f->name_ix, h, n);
  return n;
}

static uint32_t child(flame *f, uint32_t parent, uint32_t frame) {
  uint64_t k = (uint64_t)parent << 32 | frame;
  uint32_t n;
  if (ex_m_get(&f->child_ix, k, &n)) return n;
  if (f->nnodes == f->capnodes) {
    f->capnodes = f->capnodes ? f->capnodes * 2 : 1024;
    f->nodes = vx_xrealloc(f->nodes, f->capnodes * sizeof *f->nodes);
  }
  n = (uint32_t)f->nnodes++;
  node *d = &f->nodes[n];
  memset(d, 0, sizeof *d);
  d->parent = parent;
  d->frame = frame;
  d->depth = f->nodes[parent].depth + 1;
  d->sibling = f->nodes[parent].child;
  f->nodes[parent].child = n;
  ex_m_put(&f->child_ix, k, n);
  return n;
}

static void add(flame *f, uint32_t n, uint64_t w) {
  f->nodes[n].self[f->side] += w;
  f->nodes[n].count[f->side]++;
}

static void flame_init(flame *f, const ex_opts *o) {
  memset(f, 0, sizeof *f);
  f->o = o;
  f->nodes = vx_xmalloc(1024 * sizeof *f->nodes);
  f->capnodes = 1024;
  f->nnodes = 1;
  memset(&f->nodes[0], 0, sizeof f->nodes[0]);
  f->unknown_frame = frame_id(f, "[launch not found]");
  f->nolaunch_frame = frame_id(f, "[no launching call]");
}

/* ---------------------------------------------------------------- per-trace definitions */

static void per_trace_reset(flame *f) {
  ex_m_free(&f->leaf_ix);
  ex_m_free(&f->corr);
  free(f->corr_ring);
  f->corr_ring = NULL;
  f->corr_pos = 0;
}

/* The node of an API call: its stack's frames (outermost first), then the function. */
static uint32_t call_node(flame *f, const vx_trace *t, uint32_t stack, uint32_t fn) {
  uint64_t k = (uint64_t)stack << 32 | fn;
  uint32_t n;
  if (ex_m_get(&f->leaf_ix, k, &n)) return n;
  n = 0;
  const vx_frame *fr = NULL;
  size_t nfr = stack ? vx_stack_frames(t, stack, &fr) : 0;
  for (size_t i = nfr; i-- > 0;) { /* outermost first */
    char buf[64];
    n = child(f, n, frame_id(f, ex_frame_name(&fr[i], buf, sizeof buf)));
  }
  n = child(f, n, frame_id(f, vx_func_name(t, fn)));
  ex_m_put(&f->leaf_ix, k, n);
  return n;
}

static void corr_remember(flame *f, uint64_t corr, uint32_t n) {
  if (!f->corr_ring) f->corr_ring = vx_xmalloc(CORR_LIMIT * sizeof *f->corr_ring);
  size_t slot = f->corr_pos % CORR_LIMIT;
  if (f->corr_pos >= CORR_LIMIT) ex_m_del(&f->corr, f->corr_ring[slot]);
  f->corr_ring[slot] = corr;
  f->corr_pos++;
  ex_m_put(&f->corr, corr, n);
}

static int is_alloc(const char *name) {
  return strstr(name, "alloc") || strstr(name, "Alloc");
}

static void on_api(void *ctx, const vx_trace *t, uint32_t tid, const dlh_api_event *ev) {
  flame *f = ctx;
  uint32_t i;
  if (ev->corr && f->pend_ix.n && ex_m_get(&f->pend_ix, ev->corr, &i)) {
    uint32_t n = call_node(f, t, ev->stack, ev->fn);
    for (; i != UINT32_MAX; i = f->pend[i].next) {
      add(f, child(f, n, f->pend[i].frame), f->pend[i].w);
      f->pend[i].w = UINT64_MAX; /* resolved */
      f->nresolved++;
    }
    ex_m_del(&f->pend_ix, ev->corr);
  }
  if (f->pass2) return;
  int w = f->o->weight;
  if (w == EX_W_CPU) {
    const vx_func *fd = vx_trace_func(t, ev->fn);
    if (ev->depth == 0 && !(fd && fd->domain == DLH__DOMAIN__DOMAIN_NVTX)) add(f, call_node(f, t, ev->stack, ev->fn), ev->dur_ns);
    return;
  }
  if (w == EX_W_BYTES) {
    uint64_t sz;
    if (is_alloc(vx_func_name(t, ev->fn)) && !strstr(vx_func_name(t, ev->fn), "Free") &&
        ex_arg(t, ev, "size|bytesize|bytes|sizeInBytes|byteSize", &sz) && sz)
      add(f, call_node(f, t, ev->stack, ev->fn), sz);
  }
  if (ev->corr) corr_remember(f, ev->corr, call_node(f, t, ev->stack, ev->fn));
}

/* Drops resolved pending records and rebuilds the index. */
static void pend_compact(flame *f) {
  size_t j = 0;
  ex_m_free(&f->pend_ix);
  for (size_t i = 0; i < f->npend; i++) {
    if (f->pend[i].w == UINT64_MAX) continue;
    f->pend[j] = f->pend[i];
    uint32_t head;
    f->pend[j].next = ex_m_get(&f->pend_ix, f->pend[j].corr, &head) ? head : UINT32_MAX;
    ex_m_put(&f->pend_ix, f->pend[j].corr, (uint32_t)j);
    j++;
  }
  f->npend = j;
  f->nresolved = 0;
}

/* Keeps a GPU record whose launching call was not read yet (usually it is in the same frame,
 * a few packets on). Returns -1 when too many are waiting. */
static int pend_add(flame *f, uint64_t corr, uint64_t w, uint32_t fr) {
  uint32_t x, head;
  if (f->ext.n && ex_m_get(&f->ext, corr, &x)) { /* launched inside a library call */
    ex_m_del(&f->ext, corr);
    corr = f->ext_ring[x].ext;
    if (ex_m_get(&f->corr, corr, &head)) {
      add(f, child(f, head, fr), w);
      return 0;
    }
  }
  if (f->npend == f->cappend) {
    if (f->nresolved > f->npend / 2) pend_compact(f);
    if (f->npend == f->cappend) {
      if (f->cappend >= PENDING_LIMIT) return -1;
      f->cappend = f->cappend ? f->cappend * 2 : 4096;
      f->pend = vx_xrealloc(f->pend, f->cappend * sizeof *f->pend);
    }
  }
  uint32_t i = (uint32_t)f->npend++;
  f->pend[i] = (struct pend){corr, w, fr, ex_m_get(&f->pend_ix, corr, &head) ? head : UINT32_MAX};
  ex_m_put(&f->pend_ix, corr, i);
  return 0;
}

static void on_gpu(void *ctx, const vx_trace *t, const ex_gpu *g) {
  flame *f = ctx;
  if (f->pass2) return;
  if (g->kind == 7) { /* external correlation: the CUPTI id inherits the library call's node */
    uint32_t n;
    if (g->nvals < 2) return;
    if (ex_m_get(&f->corr, g->vals[1], &n)) {
      corr_remember(f, g->corr, n);
    } else {
      if (!f->ext_ring) f->ext_ring = vx_xmalloc(CORR_LIMIT * sizeof *f->ext_ring);
      size_t slot = f->next++ % CORR_LIMIT;
      uint32_t old;
      if (f->next > CORR_LIMIT && ex_m_get(&f->ext, f->ext_ring[slot].corr, &old) && old == slot)
        ex_m_del(&f->ext, f->ext_ring[slot].corr);
      f->ext_ring[slot] = (struct extc){g->corr, g->vals[1]};
      ex_m_put(&f->ext, g->corr, (uint32_t)slot);
    }
    return;
  }
  uint64_t w;
  if (f->o->weight == EX_W_GPU) {
    if (g->kind < 1 || g->kind > 3) return;
    w = g->dur;
  } else if (f->o->weight == EX_W_BYTES) {
    if ((g->kind != 2 && g->kind != 3) || g->nvals < 1) return;
    w = g->vals[0];
  } else {
    return;
  }
  char buf[64];
  uint32_t fr = frame_id(f, ex_gpu_name(t, g, buf, sizeof buf)), n;
  if (!g->corr) {
    add(f, child(f, child(f, 0, f->nolaunch_frame), fr), w);
  } else if (ex_m_get(&f->corr, g->corr, &n)) {
    add(f, child(f, n, fr), w);
  } else if (pend_add(f, g->corr, w, fr) < 0) {
    add(f, child(f, child(f, 0, f->unknown_frame), fr), w);
  }
}

/* Reads one trace into the tree (two passes when launches were missed). */
static int flame_read(flame *f, const char *path) {
  ex_sink s = {f, NULL, on_api, on_gpu};
  int rc = ex_scan(path, f->o, "reading", &s);
  if (f->npend > f->nresolved) { /* launches of library calls: their external id */
    for (size_t i = 0; i < f->npend; i++) {
      uint32_t x;
      if (f->pend[i].w != UINT64_MAX && ex_m_get(&f->ext, f->pend[i].corr, &x))
        f->pend[i].corr = f->ext_ring[x].ext;
    }
    pend_compact(f);
  }
  ex_m_free(&f->ext);
  f->next = 0;
  if (f->npend > f->nresolved && rc == VX_OK) {
    per_trace_reset(f);
    f->pass2 = 1;
    rc = ex_scan(path, f->o, "joining launches", &s);
    f->pass2 = 0;
  }
  for (size_t i = 0; i < f->npend; i++)
    if (f->pend[i].w != UINT64_MAX)
      add(f, child(f, child(f, 0, f->unknown_frame), f->pend[i].frame), f->pend[i].w);
  f->npend = f->nresolved = 0;
  ex_m_free(&f->pend_ix);
  per_trace_reset(f);
  return rc;
}

static void flame_free(flame *f) {
  per_trace_reset(f);
  for (size_t i = 0; i < f->nnames; i++) free(f->names[i]);
  free(f->names);
  free(f->name_next);
  ex_m_free(&f->name_ix);
  free(f->nodes);
  ex_m_free(&f->child_ix);
  free(f->pend);
  free(f->ext_ring);
}

/* Inclusive totals (children have larger indices than their parents). */
static void totals(flame *f) {
  for (size_t i = 0; i < f->nnodes; i++)
    for (int s = 0; s < 2; s++) f->nodes[i].total[s] = f->nodes[i].self[s];
  for (size_t i = f->nnodes; i-- > 1;)
    for (int s = 0; s < 2; s++) f->nodes[f->nodes[i].parent].total[s] += f->nodes[i].total[s];
}

/* Children of a node sorted by name, for stable output. */
static int by_name_ctx_cmp(const void *a, const void *b, void *ctx) {
  const flame *f = ctx;
  return strcmp(f->names[f->nodes[*(const uint32_t *)a].frame],
                f->names[f->nodes[*(const uint32_t *)b].frame]);
}

static uint32_t *sorted_children(const flame *f, uint32_t n, size_t *cnt) {
  size_t k = 0;
  for (uint32_t c = f->nodes[n].child; c; c = f->nodes[c].sibling) k++;
  uint32_t *v = vx_xmalloc((k ? k : 1) * sizeof *v);
  k = 0;
  for (uint32_t c = f->nodes[n].child; c; c = f->nodes[c].sibling) v[k++] = c;
  qsort_r(v, k, sizeof *v, by_name_ctx_cmp, (void *)f);
  *cnt = k;
  return v;
}

/* Visits the tree from `root` in pre-order, each node's children sorted by name, with an explicit
 * stack: the depth of the tree comes from the traces, so no recursion. visit() returns 0 to
 * leave out the node's subtree; kids(), when given, sees each visited node's sorted children. */
typedef struct walker {
  int (*visit)(void *ctx, uint32_t n);
  void (*kids)(void *ctx, uint32_t n, const uint32_t *c, size_t k);
  void *ctx;
} walker;

static void walk(const flame *f, uint32_t root, const walker *w) {
  size_t n = 0, cap = 64;
  uint32_t *st = vx_xmalloc(cap * sizeof *st);
  st[n++] = root;
  while (n) {
    uint32_t x = st[--n];
    if (!w->visit(w->ctx, x)) continue;
    size_t k;
    uint32_t *c = sorted_children(f, x, &k);
    if (w->kids) w->kids(w->ctx, x, c, k);
    if (n + k > cap) {
      while (n + k > cap) cap *= 2;
      st = vx_xrealloc(st, cap * sizeof *st);
    }
    for (size_t i = k; i-- > 0;) st[n++] = c[i]; /* first child on top */
    free(c);
  }
  free(st);
}

/* Writes "a;b;c" (the path of n) to out. */
static void path_of(const flame *f, uint32_t n, FILE *out) {
  uint32_t stack[4096];
  size_t k = 0;
  for (; n && k < 4096; n = f->nodes[n].parent) stack[k++] = n;
  for (size_t i = k; i-- > 0;) {
    fputs(f->names[f->nodes[stack[i]].frame], out);
    if (i) putc(';', out);
  }
}

/* ---------------------------------------------------------------- folded */

typedef struct foldctx {
  const flame *f;
  FILE *out;
  int diff;
} foldctx;

static int folded_visit(void *ctx, uint32_t n) {
  const foldctx *c = ctx;
  const node *d = &c->f->nodes[n];
  if (n && (c->diff ? (d->self[0] || d->self[1]) : d->self[c->f->side] != 0)) {
    path_of(c->f, n, c->out);
    if (c->diff) fprintf(c->out, " %" PRIu64 " %" PRIu64 "\n", d->self[0], d->self[1]);
    else fprintf(c->out, " %" PRIu64 "\n", d->self[c->f->side]);
  }
  return 1;
}

static void write_folded(const flame *f, FILE *out, int diff) {
  foldctx c = {f, out, diff};
  walker w = {folded_visit, NULL, &c};
  walk(f, 0, &w);
}

/* ---------------------------------------------------------------- SVG */

/* Text for XML: markup characters escaped, control characters dropped (XML 1.0 has no way to
 * write them), bytes that are not UTF-8 replaced by U+FFFD (one would make the SVG unreadable). */
static void xml_str(FILE *out, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t k = vx_utf8_seq(p);
    switch (*p) {
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '&': fputs("&amp;", out); break;
      case '"': fputs("&quot;", out); break;
      default:
        if (!k) fputs("\xef\xbf\xbd", out);
        else if (k > 1 || *p >= 0x20 || *p == '\t') fwrite(p, 1, k, out);
    }
    p += k ? k : 1;
  }
}

static const char *unit_of(int weight) {
  return weight == EX_W_BYTES ? "bytes" : "ns";
}

/* value with a unit, human readable */
static void fmt_val(char *buf, size_t n, uint64_t v, int weight) {
  double d = (double)v;
  if (weight == EX_W_BYTES) {
    if (d < 1024) snprintf(buf, n, "%" PRIu64 " B", v);
    else if (d < 1048576) snprintf(buf, n, "%.2f KiB", d / 1024);
    else if (d < 1073741824) snprintf(buf, n, "%.2f MiB", d / 1048576);
    else snprintf(buf, n, "%.2f GiB", d / 1073741824);
  } else {
    if (d < 1e3) snprintf(buf, n, "%" PRIu64 " ns", v);
    else if (d < 1e6) snprintf(buf, n, "%.2f us", d / 1e3);
    else if (d < 1e9) snprintf(buf, n, "%.2f ms", d / 1e6);
    else snprintf(buf, n, "%.3f s", d / 1e9);
  }
}

#define SVG_W 1200
#define ROW_H 17

typedef struct svgctx {
  const flame *f;
  FILE *out;
  int diff, side;
  uint64_t root;
  double minw;     /* smallest value drawn */
  uint32_t maxdepth;
  uint64_t *x;     /* left edge of each node */
} svgctx;

static void color(const svgctx *c, const node *d, char *buf, size_t n) {
  const char *name = c->f->names[d->frame];
  if (c->diff) {
    double a = c->f->nodes[0].total[0] ? (double)d->total[0] / (double)c->f->nodes[0].total[0] : 0;
    double b = c->f->nodes[0].total[1] ? (double)d->total[1] / (double)c->f->nodes[0].total[1] : 0;
    double dl = b - a, m = dl < 0 ? -dl : dl;
    int k = (int)(255 - (m * 4 > 1 ? 1 : m * 4) * 200);
    if (dl > 0) snprintf(buf, n, "rgb(255,%d,%d)", k, k);
    else if (dl < 0) snprintf(buf, n, "rgb(%d,%d,255)", k, k);
    else snprintf(buf, n, "rgb(230,230,230)");
    return;
  }
  uint64_t h = hstr(name);
  int r, g, b;
  if (!d->child && c->f->o->weight != EX_W_CPU && d->depth > 1) { /* GPU work: greens */
    r = 60 + (int)(h % 60); g = 170 + (int)(h / 7 % 60); b = 80 + (int)(h / 13 % 40);
  } else if (!strncmp(name, "cuda", 4) || !strncmp(name, "cu", 2) || !strncmp(name, "nccl", 4) ||
             !strncmp(name, "cublas", 6) || !strncmp(name, "cudnn", 5)) { /* API: oranges */
    r = 230 + (int)(h % 25); g = 120 + (int)(h / 7 % 70); b = 30 + (int)(h / 13 % 30);
  } else { /* user frames: reds/yellows */
    r = 205 + (int)(h % 50); g = 80 + (int)(h / 7 % 120); b = 40 + (int)(h / 13 % 40);
  }
  snprintf(buf, n, "rgb(%d,%d,%d)", r, g, b);
}

static int svg_visit(void *ctx, uint32_t n) {
  svgctx *c = ctx;
  const node *d = &c->f->nodes[n];
  uint64_t w = d->total[c->side], x = c->x[n];
  if (n && (double)w < c->minw) return 0;
  if (n) {
    char col[40], v0[32], v1[32];
    if (d->depth > c->maxdepth) c->maxdepth = d->depth;
    fprintf(c->out, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\">"
                    "<title>", x, w, d->depth);
    xml_str(c->out, c->f->names[d->frame]);
    int wt = c->f->o->weight;
    fmt_val(v1, sizeof v1, w, wt);
    if (c->diff) {
      fmt_val(v0, sizeof v0, d->total[0], wt);
      double pa = c->f->nodes[0].total[0] ? 100.0 * (double)d->total[0] /
                                                 (double)c->f->nodes[0].total[0] : 0;
      double pb = c->root ? 100.0 * (double)w / (double)c->root : 0;
      fprintf(c->out, " (before %s, %.2f%%; after %s, %.2f%%; %+.2f%%)", v0, pa, v1, pb, pb - pa);
    } else {
      fprintf(c->out, " (%s, %.2f%%)", v1, c->root ? 100.0 * (double)w / (double)c->root : 0);
    }
    color(c, d, col, sizeof col);
    fprintf(c->out, "</title><rect height=\"%d\" rx=\"2\" fill=\"%s\"/><text></text></g>\n",
            ROW_H - 1, col);
  }
  return 1;
}

/* Children are laid out left to right from their parent's x. */
static void svg_kids(void *ctx, uint32_t n, const uint32_t *ch, size_t k) {
  svgctx *c = ctx;
  uint64_t cx = c->x[n];
  for (size_t i = 0; i < k; i++) {
    c->x[ch[i]] = cx;
    cx += c->f->nodes[ch[i]].total[c->side];
  }
}

/* The viewer: lays the frames out from data-x/data-w/data-d, zooms on click, searches,
 * shows the tooltip title. Written for dlhook. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var W=" "1200" ",RH=17,TOP=40,PAD=10;\n"
    "var frames=[],total=0,zx=0,zw=0,zd=0,svg=document.documentElement,H=0,maxd=0;\n"
    "function init(){\n"
    "  var gs=document.querySelectorAll('g.f');\n"
    "  for(var i=0;i<gs.length;i++){var g=gs[i];var f={g:g,x:+g.getAttribute('data-x'),"
    "w:+g.getAttribute('data-w'),d:+g.getAttribute('data-d'),"
    "name:g.firstChild.textContent.replace(/ \\([^()]*\\)$/,'')};frames.push(f);"
    "if(f.d>maxd)maxd=f.d;if(f.d==1)total+=f.w;"
    "g.addEventListener('click',(function(f){return function(e){zoom(f);e.stopPropagation();};})(f));"
    "g.addEventListener('mouseover',(function(f){return function(){"
    "document.getElementById('details').textContent=f.g.firstChild.textContent;};})(f));}\n"
    "  H=+svg.getAttribute('height');zx=0;zw=total;zd=0;draw();\n"
    "  document.getElementById('reset').addEventListener('click',function(){zoom(null);});\n"
    "  document.getElementById('search').addEventListener('click',search);\n"
    "  document.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key=='f')"
    "{e.preventDefault();search();}if(e.key=='Escape')zoom(null);});\n"
    "}\n"
    "function draw(){\n"
    "  var sc=(W-2*PAD)/(zw||1);\n"
    "  for(var i=0;i<frames.length;i++){var f=frames[i],g=f.g,r=g.childNodes[1],t=g.childNodes[2];\n"
    "    var vis=f.x+f.w>zx&&f.x<zx+zw&&(f.d>zd||(f.x<=zx&&f.x+f.w>=zx+zw));\n"
    "    var x=PAD+(Math.max(f.x,zx)-zx)*sc,w=(Math.min(f.x+f.w,zx+zw)-Math.max(f.x,zx))*sc;\n"
    "    if(!vis||w<0.3){g.style.display='none';continue;}g.style.display='';\n"
    "    var y=H-PAD-RH*f.d-20;r.setAttribute('x',x);r.setAttribute('y',y);r.setAttribute('width',w);\n"
    "    r.style.opacity=f.d<=zd?0.5:1;\n"
    "    t.setAttribute('x',x+3);t.setAttribute('y',y+RH-5);var n=Math.floor((w-6)/7);\n"
    "    t.textContent=n<3?'':(f.name.length<=n?f.name:f.name.substr(0,n-2)+'..');}\n"
    "}\n"
    "function zoom(f){if(!f||f.d==0){zx=0;zw=total;zd=0;}else{zx=f.x;zw=f.w;zd=f.d-1;}"
    "document.getElementById('reset').style.display=f?'':'none';draw();}\n"
    "function search(){var re=prompt('Search (regular expression)','');if(re===null)return;\n"
    "  var m=0,rx;try{rx=new RegExp(re);}catch(e){alert(e);return;}var iv=[];\n"
    "  for(var i=0;i<frames.length;i++){var f=frames[i],r=f.g.childNodes[1];\n"
    "    if(!r.getAttribute('data-fill'))r.setAttribute('data-fill',r.getAttribute('fill'));\n"
    "    if(re!==''&&rx.test(f.name)){r.setAttribute('fill','rgb(230,0,230)');iv.push([f.x,f.x+f.w]);}\n"
    "    else r.setAttribute('fill',r.getAttribute('data-fill'));}\n"
    "  iv.sort(function(a,b){return a[0]-b[0];});var end=-1;\n"
    "  for(var j=0;j<iv.length;j++){if(iv[j][0]>=end){m+=iv[j][1]-iv[j][0];end=iv[j][1];}"
    "else if(iv[j][1]>end){m+=iv[j][1]-end;end=iv[j][1];}}\n"
    "  document.getElementById('matched').textContent=re===''?'':'Matched: '+"
    "(total?(100*m/total).toFixed(2):0)+'%';}\n"
    "window.addEventListener('load',init);\n"
    "]]></script>\n";

static void write_svg(const flame *f, FILE *out, int diff, const char *title) {
  svgctx c = {f, out, diff, diff ? 1 : f->side, f->nodes[0].total[diff ? 1 : f->side], 0, 0,
              NULL};
  c.minw = (double)c.root * 0.3 / SVG_W; /* frames narrower than 0.3 px are left out */
  uint32_t maxdepth = 0;
  for (size_t i = 0; i < f->nnodes; i++)
    if ((double)f->nodes[i].total[c.side] >= c.minw && f->nodes[i].depth > maxdepth)
      maxdepth = f->nodes[i].depth;
  int h = (int)(maxdepth + 1) * ROW_H + 80;
  fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
               "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\">\n", SVG_W, h, SVG_W, h);
  fputs("<style type=\"text/css\">text{font-family:monospace;font-size:12px;fill:#000}"
        "g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
        "#title{font-size:17px;text-anchor:middle}.btn{cursor:pointer;fill:#36c}</style>\n",
        out);
  fputs(svg_script, out);
  fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", SVG_W, h);
  fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", SVG_W / 2);
  xml_str(out, title);
  char tv[32];
  fmt_val(tv, sizeof tv, c.root, f->o->weight);
  fprintf(out, " — total %s</text>\n", tv);
  fputs("<text id=\"reset\" class=\"btn\" x=\"10\" y=\"24\" style=\"display:none\">Reset zoom"
        "</text>\n", out);
  fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\">Search</text>\n", SVG_W - 60);
  fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", SVG_W - 160, h - 5);
  fprintf(out, "<text id=\"details\" x=\"10\" y=\"%d\"></text>\n", h - 5);
  c.x = vx_xmalloc(f->nnodes * sizeof *c.x);
  c.x[0] = 0;
  walker w = {svg_visit, svg_kids, &c};
  walk(f, 0, &w);
  free(c.x);
  fputs("</svg>\n", out);
}

/* ---------------------------------------------------------------- speedscope */

typedef struct ssctx {
  const flame *f;
  FILE *out;
  uint32_t *stk;   /* frames of the path, outermost first */
  int first, weights;
} ssctx;

static int ss_visit(void *ctx, uint32_t n) {
  ssctx *c = ctx;
  const node *d = &c->f->nodes[n];
  if (!n || !d->self[c->f->side]) return 1;
  fputs(c->first ? "" : ",", c->out);
  c->first = 0;
  if (c->weights) {
    fprintf(c->out, "%" PRIu64, d->self[c->f->side]);
    return 1;
  }
  size_t depth = 0;
  for (uint32_t x = n; x; x = c->f->nodes[x].parent) depth++;
  size_t i = depth;
  for (uint32_t x = n; x; x = c->f->nodes[x].parent) c->stk[--i] = c->f->nodes[x].frame;
  putc('[', c->out);
  for (i = 0; i < depth; i++) fprintf(c->out, i ? ",%u" : "%u", c->stk[i]);
  putc(']', c->out);
  return 1;
}

static void write_speedscope(const flame *f, FILE *out, const char *title) {
  fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":", out);
  vx_json_str(out, title);
  fprintf(out, ",\"exporter\":\"dlhook %s\",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[",
          DLHOOK_VERSION);
  for (size_t i = 0; i < f->nnames; i++) {
    fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
    vx_json_str(out, f->names[i]);
    putc('}', out);
  }
  fputs("]},\n\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
  vx_json_str(out, title);
  fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
          f->o->weight == EX_W_BYTES ? "bytes" : "nanoseconds", f->nodes[0].total[f->side]);
  uint32_t maxd = 0;
  for (size_t i = 0; i < f->nnodes; i++)
    if (f->nodes[i].depth > maxd) maxd = f->nodes[i].depth;
  ssctx c = {f, out, vx_xmalloc(((size_t)maxd + 1) * sizeof *c.stk), 1, 0};
  walker w = {ss_visit, NULL, &c};
  walk(f, 0, &w);
  fputs("],\n\"weights\":[", out);
  c.first = 1;
  c.weights = 1;
  walk(f, 0, &w);
  fputs("]}]}\n", out);
  free(c.stk);
}

/* ---------------------------------------------------------------- pprof */

typedef struct strtab {
  char **v;
  size_t n, cap;
} strtab;

static int64_t st_add(strtab *s, const char *str) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = vx_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n] = (char *)str;
  return (int64_t)s->n++;
}

static int write_pprof(const flame *f, const char *path, const char *title) {
  Dlhpprof__Profile pr = DLHPPROF__PROFILE__INIT;
  strtab st = {0};
  st_add(&st, "");
  const char *wname = f->o->weight == EX_W_GPU ? "gpu_time" : f->o->weight == EX_W_CPU ?
                      "cpu_time" : "bytes";
  const char *cname = f->o->weight == EX_W_CPU ? "calls" : f->o->weight == EX_W_GPU ?
                      "gpu_ops" : "allocations_and_copies";
  Dlhpprof__ValueType vt[2] = {DLHPPROF__VALUE_TYPE__INIT, DLHPPROF__VALUE_TYPE__INIT};
  Dlhpprof__ValueType *vtp[2] = {&vt[0], &vt[1]};
  vt[0].has_type = vt[0].has_unit = vt[1].has_type = vt[1].has_unit = 1;
  vt[0].type = st_add(&st, cname);
  vt[0].unit = st_add(&st, "count");
  vt[1].type = st_add(&st, wname);
  vt[1].unit = st_add(&st, f->o->weight == EX_W_BYTES ? "bytes" : "nanoseconds");
  pr.n_sample_type = 2;
  pr.sample_type = vtp;
  pr.has_default_sample_type = 1;
  pr.default_sample_type = vt[1].type;
  pr.period_type = &vt[1];
  pr.has_period = 1;
  pr.period = 1;
  char *title_ok = vx_utf8_dup(title);
  int64_t cm = st_add(&st, title_ok);
  pr.n_comment = 1;
  pr.comment = &cm;
  /* one function and one location per frame name */
  size_t nf = f->nnames;
  Dlhpprof__Function *fn = vx_xmalloc((nf ? nf : 1) * sizeof *fn);
  Dlhpprof__Function **fnp = vx_xmalloc((nf ? nf : 1) * sizeof *fnp);
  Dlhpprof__Location *loc = vx_xmalloc((nf ? nf : 1) * sizeof *loc);
  Dlhpprof__Location **locp = vx_xmalloc((nf ? nf : 1) * sizeof *locp);
  Dlhpprof__Line *ln = vx_xmalloc((nf ? nf : 1) * sizeof *ln);
  Dlhpprof__Line **lnp = vx_xmalloc((nf ? nf : 1) * sizeof *lnp);
  for (size_t i = 0; i < nf; i++) {
    dlhpprof__function__init(&fn[i]);
    fn[i].has_id = fn[i].has_name = fn[i].has_system_name = 1;
    fn[i].id = i + 1;
    fn[i].name = fn[i].system_name = st_add(&st, f->names[i]);
    fnp[i] = &fn[i];
    dlhpprof__line__init(&ln[i]);
    ln[i].has_function_id = 1;
    ln[i].function_id = i + 1;
    lnp[i] = &ln[i];
    dlhpprof__location__init(&loc[i]);
    loc[i].has_id = 1;
    loc[i].id = i + 1;
    loc[i].n_line = 1;
    loc[i].line = &lnp[i];
    locp[i] = &loc[i];
  }
  pr.n_function = pr.n_location = nf;
  pr.function = fnp;
  pr.location = locp;
  /* samples: one per node with a weight */
  size_t ns = 0;
  for (size_t i = 1; i < f->nnodes; i++) ns += f->nodes[i].self[f->side] != 0;
  Dlhpprof__Sample *sm = vx_xmalloc((ns ? ns : 1) * sizeof *sm);
  Dlhpprof__Sample **smp = vx_xmalloc((ns ? ns : 1) * sizeof *smp);
  int64_t *vals = vx_xmalloc((ns ? ns : 1) * 2 * sizeof *vals);
  size_t nlocs = 0;
  for (size_t i = 1; i < f->nnodes; i++)
    if (f->nodes[i].self[f->side]) nlocs += f->nodes[i].depth;
  uint64_t *locids = vx_xmalloc((nlocs ? nlocs : 1) * sizeof *locids);
  size_t k = 0, lp = 0;
  for (size_t i = 1; i < f->nnodes; i++) {
    const node *d = &f->nodes[i];
    if (!d->self[f->side]) continue;
    dlhpprof__sample__init(&sm[k]);
    sm[k].location_id = locids + lp;
    for (uint32_t n = (uint32_t)i; n; n = f->nodes[n].parent) locids[lp++] = f->nodes[n].frame + 1;
    sm[k].n_location_id = (size_t)(locids + lp - sm[k].location_id);
    vals[2 * k] = (int64_t)d->count[f->side];
    vals[2 * k + 1] = (int64_t)d->self[f->side];
    sm[k].n_value = 2;
    sm[k].value = vals + 2 * k;
    smp[k] = &sm[k];
    k++;
  }
  pr.n_sample = k;
  pr.sample = smp;
  pr.n_string_table = st.n;
  pr.string_table = st.v;
  size_t len = dlhpprof__profile__get_packed_size(&pr);
  uint8_t *buf = vx_xmalloc(len ? len : 1);
  dlhpprof__profile__pack(&pr, buf);
  int rc = VX_OK;
  FILE *z = ex_create(path, 1);
  if (!z) {
    rc = VX_BAD_INPUT;
  } else {
    if (len) fwrite(buf, 1, len, z);
    if (ex_close(z, path) < 0) rc = VX_BAD_INPUT;
  }
  free(buf);
  free(locids);
  free(vals);
  free(sm);
  free(smp);
  free(fn);
  free(fnp);
  free(loc);
  free(locp);
  free(ln);
  free(lnp);
  free(st.v);
  free(title_ok);
  return rc;
}

/* ---------------------------------------------------------------- entry points */

static const char *default_title(const ex_opts *o, int diff) {
  if (o->title) return o->title;
  if (diff) return o->weight == EX_W_GPU ? "GPU time, differential" :
                   o->weight == EX_W_CPU ? "API time, differential" : "Bytes, differential";
  return o->weight == EX_W_GPU ? "GPU time by launching stack" :
         o->weight == EX_W_CPU ? "Time in API calls" : "Bytes allocated and copied";
}

int ex_flame(const ex_opts *o, char **files, size_t n) {
  flame f;
  flame_init(&f, o);
  int rc = VX_OK;
  for (size_t i = 0; i < n; i++)
    if (flame_read(&f, files[i]) != VX_OK) rc = VX_BAD_INPUT;
  totals(&f);
  const char *title = default_title(o, 0);
  if (!strcmp(o->format, "pprof")) {
    if (write_pprof(&f, o->out, title) != VX_OK) rc = VX_BAD_INPUT;
  } else {
    FILE *out = ex_create(o->out, 0);
    if (!out) {
      rc = VX_BAD_INPUT;
    } else {
      if (!strcmp(o->format, "folded")) write_folded(&f, out, 0);
      else if (!strcmp(o->format, "svg")) write_svg(&f, out, 0, title);
      else write_speedscope(&f, out, title);
      if (ex_close(out, o->out) < 0) rc = VX_BAD_INPUT;
    }
  }
  flame_free(&f);
  (void)unit_of;
  return rc;
}

int ex_flame_diff(const ex_opts *o, const char *a, const char *b) {
  flame f;
  flame_init(&f, o);
  int rc = VX_OK;
  f.side = 0;
  if (flame_read(&f, a) != VX_OK) rc = VX_BAD_INPUT;
  f.side = 1;
  if (flame_read(&f, b) != VX_OK) rc = VX_BAD_INPUT;
  totals(&f);
  size_t l = strlen(o->out);
  int svg = l >= 4 && !strcmp(o->out + l - 4, ".svg");
  FILE *out = ex_create(o->out, 0);
  if (!out) {
    rc = VX_BAD_INPUT;
  } else {
    if (svg) write_svg(&f, out, 1, default_title(o, 1));
    else write_folded(&f, out, 1);
    if (ex_close(out, o->out) < 0) rc = VX_BAD_INPUT;
  }
  flame_free(&f);
  return rc;
}
