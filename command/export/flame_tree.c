/* flame_tree.c — the flame-graph tree: events aggregated by stack while a trace streams past,
 * so that memory grows with the number of distinct stacks, not of events.
 *
 * Weights (--weight):
 *   gpu    GPU time of each kernel, copy and memset, under the stack of the API call that
 *          launched it (joined by correlation id), with the kernel as leaf;
 *   cpu    time inside the outermost API calls, with the function as leaf;
 *   bytes  bytes allocated (API calls named *alloc* with a size argument) and bytes copied or
 *          set on the GPU (under the launching call);
 *   samples  the on-CPU host samples (SampleBatch): the CPU time each stands for, under its
 *          stack (the innermost frame is the leaf);
 *   wait   the wait samples: the wall time each stands for, under the waiting thread's Python
 *          frames, with what it waited in as leaf: the CUDA call in flight ("[in
 *          cudaStreamSynchronize]") and the system call ("[wait: futex]", rd_wait_label).
 * A folded event (count identical calls recorded once) weighs its calls' summed duration (cpu)
 * or count times its size (bytes), and counts count calls (pprof's count sample type).
 * The correlation join keeps the most recent CORR_LIMIT launches in a map; a GPU record whose
 * launch is not in it is kept aside and resolved by a second pass over the file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

#define CORR_LIMIT (1u << 20)
#define PENDING_LIMIT (1u << 22)

/* ---------------------------------------------------------------- frames and the tree */


static uint64_t hstr(const char *s) { return rd_hash_str(s); }

static uint32_t frame_intern(flame *f, const char *s);

/* Interns a frame name (';' and control characters made harmless for folded output). */
static uint32_t frame_id(flame *f, const char *name) {
  const unsigned char *q = (const unsigned char *)name;
  size_t k;
  while (*q && *q != ';' && *q >= 0x20 && *q != 0x7f && (k = rd_utf8_seq(q))) q += k;
  if (!*q) return frame_intern(f, name); /* the usual case: nothing to change */
  char *s = rd_utf8_dup(name); /* valid UTF-8 for SVG, speedscope JSON and pprof's proto3 */
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
  if (rd_m_get(&f->name_ix, h, &id)) {
    for (uint32_t i = id; i != UINT32_MAX; i = f->name_next[i])
      if (!strcmp(f->names[i], s)) return i;
  } else {
    id = UINT32_MAX;
  }
  /* a new name would make a new node, which the tree has no room for */
  if (f->nnodes >= FLAME_MAX_NODES && f->limit_frame) return f->limit_frame;
  if (f->nnames == f->capnames) {
    f->capnames = f->capnames ? f->capnames * 2 : 256;
    f->names = rd_xrealloc(f->names, f->capnames * sizeof *f->names);
    f->name_next = rd_xrealloc(f->name_next, f->capnames * sizeof *f->name_next);
  }
  char *c = rd_xstrdup(s);
  uint32_t n = (uint32_t)f->nnames++;
  f->names[n] = c;
  f->name_next[n] = id; /* chain: new head */
  rd_m_put(&f->name_ix, h, n);
  return n;
}

static uint32_t child(flame *f, uint32_t parent, uint32_t frame) {
  if (parent && f->limit_frame && f->nodes[parent].frame == f->limit_frame) return parent;
  uint64_t k = (uint64_t)parent << 32 | frame;
  uint32_t n;
  if (rd_m_get(&f->child_ix, k, &n)) return n;
  if (f->nnodes >= FLAME_MAX_NODES && frame != f->limit_frame) { /* one limit node per parent */
    f->limited = 1;
    return child(f, parent, f->limit_frame);
  }
  if (f->nnodes == f->capnodes) {
    f->capnodes = f->capnodes ? f->capnodes * 2 : 1024;
    f->nodes = rd_xrealloc(f->nodes, f->capnodes * sizeof *f->nodes);
  }
  n = (uint32_t)f->nnodes++;
  node *d = &f->nodes[n];
  memset(d, 0, sizeof *d);
  d->parent = parent;
  d->frame = frame;
  d->depth = f->nodes[parent].depth + 1;
  d->sibling = f->nodes[parent].child;
  f->nodes[parent].child = n;
  rd_m_put(&f->child_ix, k, n);
  return n;
}

/* Adds weight w of `count` events (calls, GPU records) to node n. */
static void add_n(flame *f, uint32_t n, uint64_t w, uint64_t count) {
  f->nodes[n].self[f->side] += w;
  f->nodes[n].count[f->side] += count;
}
static void add(flame *f, uint32_t n, uint64_t w) { add_n(f, n, w, 1); }

void flame_init(flame *f, const rd_opts *o) {
  memset(f, 0, sizeof *f);
  f->o = o;
  f->nodes = rd_xmalloc(1024 * sizeof *f->nodes);
  f->capnodes = 1024;
  f->nnodes = 1;
  memset(&f->nodes[0], 0, sizeof f->nodes[0]);
  f->unknown_frame = frame_id(f, "[launch not found]");
  f->nolaunch_frame = frame_id(f, "[no launching call]");
  f->limit_frame = frame_id(f, "[flame graph node limit]");
}

/* ---------------------------------------------------------------- per-trace definitions */

static void per_trace_reset(flame *f) {
  rd_m_free(&f->leaf_ix);
  rd_m_free(&f->samp_ix);
  rd_m_free(&f->corr);
  free(f->corr_ring);
  f->corr_ring = NULL;
  f->corr_pos = 0;
}

/* --fold op|module|line: the node of stack's PyTorch layers (rd_torch_of), outermost first;
 * a stack without any goes under one "[no ...]" frame, so that totals are kept. */
static uint32_t torch_nodes(flame *f, const rd_trace *t, uint32_t stack) {
  const rd_torch *x = rd_torch_of((rd_trace *)t, stack); /* derived once per stack */
  uint32_t n = 0;
  int fold = f->o->fold, any = 0;
  char buf[512];
  if (fold == RD_FOLD_LINE && x->user) {
    /* the Python frames outside the innermost user frame, then that frame as FILE:LINE */
    uint32_t last = UINT32_MAX;
    for (uint32_t i = 0; i < x->n; i++)
      if (x->l[i].user) last = i; /* a frame of the user's code (torch.c) */
    for (uint32_t i = 0; last != UINT32_MAX && i < last; i++)
      if (x->l[i].kind == RD_LAYER_PY) n = child(f, n, frame_id(f, x->l[i].name));
    n = child(f, n, frame_id(f, x->user));
    return n;
  }
  for (uint32_t i = 0; i < x->n; i++) {
    const rd_layer *l = &x->l[i];
    if (fold == RD_FOLD_OP && l->kind == RD_LAYER_OP) {
      n = child(f, n, frame_id(f, l->name));
      any = 1;
    } else if (fold == RD_FOLD_OP && l->kind == RD_LAYER_NODE) {
      rd_torch t1 = *x;
      t1.node = (int)i;
      n = child(f, n, frame_id(f, rd_torch_node_label(&t1, buf, sizeof buf)));
      any = 1;
    } else if (fold == RD_FOLD_MODULE && l->kind == RD_LAYER_PY && l->module) {
      n = child(f, n, frame_id(f, l->name));
      any = 1;
    }
  }
  if (!any)
    n = child(f, 0, frame_id(f, fold == RD_FOLD_OP ? "[no operator]" :
                                fold == RD_FOLD_MODULE ? "[no module]" : "[no user line]"));
  return n;
}

/* The node of a stack's frames, outermost first (for --fold, torch_nodes' frames instead), no
 * leaf: a host sample's. Kept per stack in samp_ix. */
static uint32_t stack_node(flame *f, const rd_trace *t, uint32_t stack) {
  uint32_t n;
  if (rd_m_get(&f->samp_ix, stack, &n)) return n;
  n = 0;
  if (f->o->fold != RD_FOLD_STACK) {
    n = torch_nodes(f, t, stack);
  } else {
    const rd_frame *fr = NULL;
    size_t nfr = stack ? rd_stack_frames(t, stack, &fr) : 0;
    for (size_t i = nfr; i-- > 0;) {
      char buf[64];
      n = child(f, n, frame_id(f, rd_frame_name(&fr[i], buf, sizeof buf)));
    }
  }
  rd_m_put(&f->samp_ix, stack, n);
  return n;
}

static void on_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  flame *f = ctx;
  if (f->pass2) return;
  if (f->o->weight == RD_W_SAMPLES && s->kind == RD_SAMPLE_CPU) {
    uint32_t n = stack_node(f, t, s->stack);
    if (!n) n = child(f, 0, frame_id(f, "[no stack]"));
    add(f, n, s->weight);
  } else if (f->o->weight == RD_W_WAIT && s->kind == RD_SAMPLE_WAIT) {
    char buf[256];
    uint32_t n = stack_node(f, t, s->stack);
    if (s->api_fn) {
      snprintf(buf, sizeof buf, "[in %s]", rd_func_name(t, s->api_fn));
      n = child(f, n, frame_id(f, buf));
    }
    n = child(f, n, frame_id(f, rd_wait_state_label(s->state, buf, sizeof buf)));
    add(f, n, s->weight);
  }
}

/* The node of an API call: its stack's frames (outermost first), then the function (for
 * --fold, torch_nodes' frames instead of the stack's). */
static uint32_t call_node(flame *f, const rd_trace *t, uint32_t stack, uint32_t fn) {
  uint64_t k = (uint64_t)stack << 32 | fn;
  uint32_t n;
  if (rd_m_get(&f->leaf_ix, k, &n)) return n;
  n = 0;
  if (f->o->fold != RD_FOLD_STACK) {
    n = torch_nodes(f, t, stack);
    /* the kernel is the leaf of GPU weights; the API function otherwise */
    if (f->o->weight != RD_W_GPU) n = child(f, n, frame_id(f, rd_func_name(t, fn)));
    rd_m_put(&f->leaf_ix, k, n);
    return n;
  }
  const rd_frame *fr = NULL;
  size_t nfr = stack ? rd_stack_frames(t, stack, &fr) : 0;
  for (size_t i = nfr; i-- > 0;) { /* outermost first */
    char buf[64];
    n = child(f, n, frame_id(f, rd_frame_name(&fr[i], buf, sizeof buf)));
  }
  n = child(f, n, frame_id(f, rd_func_name(t, fn)));
  rd_m_put(&f->leaf_ix, k, n);
  return n;
}

static void corr_remember(flame *f, uint64_t corr, uint32_t n) {
  if (!f->corr_ring) f->corr_ring = rd_xmalloc(CORR_LIMIT * sizeof *f->corr_ring);
  size_t slot = f->corr_pos % CORR_LIMIT;
  if (f->corr_pos >= CORR_LIMIT) rd_m_del(&f->corr, f->corr_ring[slot]);
  f->corr_ring[slot] = corr;
  f->corr_pos++;
  rd_m_put(&f->corr, corr, n);
}

static int is_alloc(const char *name) {
  return strstr(name, "alloc") || strstr(name, "Alloc");
}

static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  flame *f = ctx;
  uint32_t i;
  if (ev->corr && f->pend_ix.n && rd_m_get(&f->pend_ix, ev->corr, &i)) {
    uint32_t n = call_node(f, t, ev->stack, ev->fn);
    for (; i != UINT32_MAX; i = f->pend[i].next) {
      add(f, child(f, n, f->pend[i].frame), f->pend[i].w);
      f->pend[i].w = UINT64_MAX; /* resolved */
      f->nresolved++;
    }
    rd_m_del(&f->pend_ix, ev->corr);
  }
  if (f->pass2) return;
  int w = f->o->weight;
  if (w == RD_W_SAMPLES || w == RD_W_WAIT) return; /* the samples alone */
  if (w == RD_W_CPU) {
    const rd_func *fd = rd_trace_func(t, ev->fn);
    if (ev->depth == 0 && !(fd && fd->domain == DLH__DOMAIN__DOMAIN_NVTX))
      add_n(f, call_node(f, t, ev->stack, ev->fn), ev->dur_ns, dlh_api_calls(ev));
    return;
  }
  if (w == RD_W_BYTES) {
    uint64_t sz;
    if (is_alloc(rd_func_name(t, ev->fn)) && !strstr(rd_func_name(t, ev->fn), "Free") &&
        rd_arg(t, ev, "size|bytesize|bytes|sizeInBytes|byteSize", &sz) && sz)
      add_n(f, call_node(f, t, ev->stack, ev->fn), sz * dlh_api_calls(ev), dlh_api_calls(ev));
  }
  if (ev->corr) corr_remember(f, ev->corr, call_node(f, t, ev->stack, ev->fn));
}

/* Drops resolved pending records and rebuilds the index. */
static void pend_compact(flame *f) {
  size_t j = 0;
  rd_m_free(&f->pend_ix);
  for (size_t i = 0; i < f->npend; i++) {
    if (f->pend[i].w == UINT64_MAX) continue;
    f->pend[j] = f->pend[i];
    uint32_t head;
    f->pend[j].next = rd_m_get(&f->pend_ix, f->pend[j].corr, &head) ? head : UINT32_MAX;
    rd_m_put(&f->pend_ix, f->pend[j].corr, (uint32_t)j);
    j++;
  }
  f->npend = j;
  f->nresolved = 0;
}

/* Keeps a GPU record whose launching call was not read yet (usually it is in the same frame,
 * a few packets on). Returns -1 when too many are waiting. */
static int pend_add(flame *f, uint64_t corr, uint64_t w, uint32_t fr) {
  uint32_t x, head;
  if (f->ext.n && rd_m_get(&f->ext, corr, &x)) { /* launched inside a library call */
    rd_m_del(&f->ext, corr);
    corr = f->ext_ring[x].ext;
    if (rd_m_get(&f->corr, corr, &head)) {
      add(f, child(f, head, fr), w);
      return 0;
    }
  }
  if (f->npend == f->cappend) {
    if (f->nresolved > f->npend / 2) pend_compact(f);
    if (f->npend == f->cappend) {
      if (f->cappend >= PENDING_LIMIT) return -1;
      f->cappend = f->cappend ? f->cappend * 2 : 4096;
      f->pend = rd_xrealloc(f->pend, f->cappend * sizeof *f->pend);
    }
  }
  uint32_t i = (uint32_t)f->npend++;
  f->pend[i] = (struct pend){corr, w, fr, rd_m_get(&f->pend_ix, corr, &head) ? head : UINT32_MAX};
  rd_m_put(&f->pend_ix, corr, i);
  return 0;
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  flame *f = ctx;
  if (f->pass2) return;
  if (g->kind == RD_EXTCORR) { /* external correlation: the CUPTI id inherits the library call's node */
    uint32_t n;
    if (g->nvals < 2) return;
    if (rd_m_get(&f->corr, g->vals[1], &n)) {
      corr_remember(f, g->corr, n);
    } else {
      if (!f->ext_ring) f->ext_ring = rd_xmalloc(CORR_LIMIT * sizeof *f->ext_ring);
      size_t slot = f->next++ % CORR_LIMIT;
      uint32_t old;
      if (f->next > CORR_LIMIT && rd_m_get(&f->ext, f->ext_ring[slot].corr, &old) && old == slot)
        rd_m_del(&f->ext, f->ext_ring[slot].corr);
      f->ext_ring[slot] = (struct extc){g->corr, g->vals[1]};
      rd_m_put(&f->ext, g->corr, (uint32_t)slot);
    }
    return;
  }
  uint64_t w;
  if (f->o->weight == RD_W_GPU) {
    if (!rd_gpu_busy(g->kind)) return;
    w = g->dur;
  } else if (f->o->weight == RD_W_BYTES) {
    if ((g->kind != RD_MEMCPY && g->kind != RD_MEMSET) || g->nvals < 1) return;
    w = g->vals[0];
  } else {
    return;
  }
  char buf[64];
  uint32_t fr = frame_id(f, rd_gpu_name(t, g, buf, sizeof buf)), n;
  if (!g->corr) {
    add(f, child(f, child(f, 0, f->nolaunch_frame), fr), w);
  } else if (rd_m_get(&f->corr, g->corr, &n)) {
    add(f, child(f, n, fr), w);
  } else if (pend_add(f, g->corr, w, fr) < 0) {
    add(f, child(f, child(f, 0, f->unknown_frame), fr), w);
  }
}

rd_sink flame_sink(flame *f) { return (rd_sink){f, NULL, on_api, on_gpu, 0, on_sample}; }

/* GPU records still waiting for their call: launched inside a library call (their external
 * id), and calls seen before their records whose node is still remembered. */
static void resolve_pending(flame *f) {
  if (f->npend <= f->nresolved) return;
  for (size_t i = 0; i < f->npend; i++) {
    uint32_t x, n;
    if (f->pend[i].w == UINT64_MAX) continue;
    if (rd_m_get(&f->ext, f->pend[i].corr, &x)) f->pend[i].corr = f->ext_ring[x].ext;
    if (rd_m_get(&f->corr, f->pend[i].corr, &n)) {
      add(f, child(f, n, f->pend[i].frame), f->pend[i].w);
      f->pend[i].w = UINT64_MAX;
      f->nresolved++;
    }
  }
  pend_compact(f);
}

int flame_trace_end(flame *f, rd_trace *t, int rc) {
  resolve_pending(f);
  rd_m_free(&f->ext);
  f->next = 0;
  if (f->npend > f->nresolved && rc == RD_OK) {
    /* calls no longer remembered (more than CORR_LIMIT launches before their GPU records):
     * once more over the calls, the only case that reads a trace a third time */
    per_trace_reset(f);
    f->pass2 = 1;
    rd_sink s = flame_sink(f);
    rc = rd_scan(t->path, f->o, "joining launches", &s);
    f->pass2 = 0;
  }
  for (size_t i = 0; i < f->npend; i++)
    if (f->pend[i].w != UINT64_MAX)
      add(f, child(f, child(f, 0, f->unknown_frame), f->pend[i].frame), f->pend[i].w);
  f->npend = f->nresolved = 0;
  rd_m_free(&f->pend_ix);
  per_trace_reset(f);
  return rc;
}

/* Reads one trace into the tree. */
int flame_read(flame *f, const char *path) {
  rd_trace t;
  if (rd_open(&t, path, f->o, NULL) != RD_OK && t.opens == 0) return RD_BAD_INPUT;
  rd_sink s = flame_sink(f);
  int rc = rd_pass(&t, f->o, "reading", &s);
  rc = flame_trace_end(f, &t, rc);
  rd_trace_close(&t);
  return rc;
}

void flame_free(flame *f) {
  per_trace_reset(f);
  for (size_t i = 0; i < f->nnames; i++) free(f->names[i]);
  free(f->names);
  free(f->name_next);
  rd_m_free(&f->name_ix);
  free(f->nodes);
  rd_m_free(&f->child_ix);
  free(f->pend);
  free(f->ext_ring);
}

/* Inclusive totals (children have larger indices than their parents). */
void flame_totals(flame *f) {
  if (f->limited == 1) {
    rd_error("flame graph: over %u nodes (distinct stack paths): the frames of later stacks "
             "below their known part are merged into \"[flame graph node limit]\" (weights "
             "kept)", FLAME_MAX_NODES);
    f->limited = 2;
  }
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

uint32_t *flame_children(const flame *f, uint32_t n, size_t *cnt) {
  size_t k = 0;
  for (uint32_t c = f->nodes[n].child; c; c = f->nodes[c].sibling) k++;
  uint32_t *v = rd_xmalloc((k ? k : 1) * sizeof *v);
  k = 0;
  for (uint32_t c = f->nodes[n].child; c; c = f->nodes[c].sibling) v[k++] = c;
  qsort_r(v, k, sizeof *v, by_name_ctx_cmp, (void *)f);
  *cnt = k;
  return v;
}


void flame_walk(const flame *f, uint32_t root, const walker *w) {
  size_t n = 0, cap = 64;
  uint32_t *st = rd_xmalloc(cap * sizeof *st);
  st[n++] = root;
  while (n) {
    uint32_t x = st[--n];
    if (!w->visit(w->ctx, x)) continue;
    size_t k;
    uint32_t *c = flame_children(f, x, &k);
    if (w->kids) w->kids(w->ctx, x, c, k);
    if (n + k > cap) {
      while (n + k > cap) cap *= 2;
      st = rd_xrealloc(st, cap * sizeof *st);
    }
    for (size_t i = k; i-- > 0;) st[n++] = c[i]; /* first child on top */
    free(c);
  }
  free(st);
}

/* Writes "a;b;c" (the path of n) to out. */
void flame_path(const flame *f, uint32_t n, FILE *out) {
  uint32_t stack[4096];
  size_t k = 0;
  for (; n && k < 4096; n = f->nodes[n].parent) stack[k++] = n;
  for (size_t i = k; i-- > 0;) {
    fputs(f->names[f->nodes[stack[i]].frame], out);
    if (i) putc(';', out);
  }
}
