/* torch.c — PyTorch's view of a recorded stack (rd.h, "PyTorch"): the aten operators, the
 * autograd node, the Python frames and modules, and the user's own source line, derived from the
 * frames the recorder unwound, with no instrumentation of PyTorch.
 *
 *   operators   every frame at::_ops::<struct>::call(...) is one operator call through the
 *               dispatcher, the point where torch.profiler's RecordFunction opens its cpu_op
 *               (::redispatch frames are the same call passing a dispatch key, not a new op). The
 *               struct name is the schema name plus "_<overload>" (fill__Scalar is aten::fill_
 *               .Scalar); aten_ops.inc (scripts/gen-aten-ops, from a torch's schemas) maps it
 *               back, and for an op it does not know, the longest overload name it knows is cut
 *               off the end.
 *   autograd    torch::autograd::generated::<Node>::apply is the backward node torch.profiler
 *               names "autograd::engine::evaluate_function: <Node>"; other nodes
 *               (torch::autograd::AccumulateGrad, CopySlices, ...) keep their C++ name, as their
 *               name() does.
 *   Python      every Python frame (mixed stacks); those whose qualified name ends in ".forward"
 *               are modules (LM.forward > Block.forward). The user's frame is the innermost
 *               Python frame outside site-packages, dist-packages, the standard library
 *               (.../lib/pythonX.Y/), a torch/ tree and frozen modules.
 *
 * Each layer has a key that tells its instances apart: a hash of the frame's own identity (the
 * op or function, not the line or pc inside it), of the frames between it and the next layer
 * outside (its call site) and of that layer. Consecutive calls of a thread whose layers agree
 * from the outermost one down are in the same instances (rd_spans); a stack truncated at the
 * outer end (DLHOOK_STACK_DEPTH) is matched by the layers it still has. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"

typedef struct aten_op { const char *s, *name; } aten_op;
static const aten_op aten_ops[] = {
#include "aten_ops.inc"
};
#define NATEN (sizeof aten_ops / sizeof aten_ops[0])

/* ---------------------------------------------------------------- interned strings */

typedef struct intern {
  char **v;
  size_t cap, n;
} intern;

static const char *intern_n(intern *in, const char *s, size_t len) {
  if ((in->n + 1) * 2 > in->cap) {
    size_t nc = in->cap ? in->cap * 2 : 256;
    char **nv = calloc(nc, sizeof *nv);
    if (!nv) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
    for (size_t i = 0; i < in->cap; i++) {
      if (!in->v[i]) continue;
      size_t j = (size_t)rd_hash_str(in->v[i]) & (nc - 1);
      while (nv[j]) j = (j + 1) & (nc - 1);
      nv[j] = in->v[i];
    }
    free(in->v);
    in->v = nv;
    in->cap = nc;
  }
  /* looked up without a copy (a copy per lookup was a malloc and free per stack layer); the
   * string ends at len or at a NUL before it, hashed as rd_hash_str hashes it */
  len = strnlen(s, len);
  if (!rd_hash_seed[1]) rd_hash_seed_init();
  uint64_t h = 1469598103934665603ull ^ rd_hash_seed[0];
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  size_t j = (size_t)rd_hash64(h) & (in->cap - 1);
  for (; in->v[j]; j = (j + 1) & (in->cap - 1))
    if (!strncmp(in->v[j], s, len) && !in->v[j][len]) return in->v[j];
  char *tmp = rd_xmalloc(len + 1);
  memcpy(tmp, s, len);
  tmp[len] = 0;
  in->v[j] = tmp;
  in->n++;
  return tmp;
}
static const char *intern_s(intern *in, const char *s) { return intern_n(in, s, strlen(s)); }

static void intern_free(intern *in) {
  for (size_t i = 0; i < in->cap; i++) free(in->v[i]);
  free(in->v);
  memset(in, 0, sizeof *in);
}

/* ---------------------------------------------------------------- per trace */

typedef struct fclass {
  int kind;
  const char *name, *file;
  uint32_t line;
  const char *user;    /* a frame of the user's code: "file:line" */
} fclass;

typedef struct rd_torchs {
  rd_map by_stack;      /* stack id -> rd_torch* (the empty one for stacks without layers) */
  rd_u64map by_frame;   /* raw stack entry (pc or Python frame id) -> index into fc */
  fclass *fc;
  size_t nfc, capfc;
  intern names;
  int is_torch;         /* -1 unknown */
  rd_layer *scratch;    /* rd_torch_of's layers of the stack at hand */
  size_t capscratch;
} rd_torchs;

static rd_torchs *state(rd_trace *t) {
  if (!t->torch) {
    t->torch = rd_xmalloc(sizeof *t->torch);
    memset(t->torch, 0, sizeof *t->torch);
    t->torch->is_torch = -1;
  }
  return t->torch;
}

static void torch_free_one(void *p) {
  rd_torch *x = p;
  free(x->l);
  free(x);
}

void rd_torch_free(rd_trace *t) {
  if (!t->torch) return;
  rd_map_free(&t->torch->by_stack, torch_free_one);
  rd_m_free(&t->torch->by_frame);
  free(t->torch->fc);
  free(t->torch->scratch);
  intern_free(&t->torch->names);
  free(t->torch);
  t->torch = NULL;
}

/* ---------------------------------------------------------------- names */

static int aten_cmp(const char *s, size_t n, const char *key) {
  int c = strncmp(s, key, n);
  if (c) return c;
  return key[n] ? -1 : 0;
}

static const aten_op *aten_find(const char *s, size_t n) {
  size_t lo = 0, hi = NATEN;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = aten_cmp(s, n, aten_ops[mid].s);
    if (!c) return &aten_ops[mid];
    if (c < 0) hi = mid; else lo = mid + 1;
  }
  return NULL;
}

/* Whether `ov` (n bytes) is an overload name of the table: some struct ends in "_" ov with its
 * name before it. */
static int known_overload(const char *ov, size_t n) {
  static const char **set;
  static size_t nset;
  if (!set) {
    set = rd_xmalloc(NATEN * sizeof *set + 1);
    for (size_t i = 0; i < NATEN; i++) {
      size_t ln = strlen(aten_ops[i].name);
      if (aten_ops[i].s[ln] == '_') set[nset++] = aten_ops[i].s + ln + 1;
    }
  }
  for (size_t i = 0; i < nset; i++)
    if (strlen(set[i]) == n && !memcmp(set[i], ov, n)) return 1;
  return 0;
}

size_t rd_aten_name(const char *s, size_t n, char *buf, size_t cap) {
  const aten_op *a = aten_find(s, n);
  size_t keep = n;
  if (a) {
    keep = strlen(a->name);
  } else { /* an op of another PyTorch: cut the longest known overload off the end */
    for (size_t i = 1; i + 1 < n; i++) {
      if (s[i] != '_' || s[i - 1] == '_') continue;
      if (known_overload(s + i + 1, n - i - 1)) { keep = i; break; }
    }
  }
  int w = snprintf(buf, cap, "aten::%.*s", (int)keep, s);
  return w < 0 ? 0 : (size_t)w;
}

/* "at::_ops::<struct>::call(" -> the struct (pointer into f, length), else NULL */
static const char *op_struct(const char *f, size_t *n) {
  static const char pre[] = "at::_ops::";
  if (strncmp(f, pre, sizeof pre - 1)) return NULL;
  const char *s = f + sizeof pre - 1, *e = strstr(s, "::");
  if (!e || e == s || strncmp(e, "::call(", 7)) return NULL;
  for (const char *p = s; p < e; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      return NULL;
  *n = (size_t)(e - s);
  return s;
}

/* An autograd node's apply(): the name torch.profiler gives it, written into buf, else 0. */
static size_t node_name(const char *f, char *buf, size_t cap) {
  static const char pre[] = "torch::autograd::", gen[] = "generated::";
  if (strncmp(f, pre, sizeof pre - 1)) return 0;
  const char *s = f + sizeof pre - 1;
  int generated = !strncmp(s, gen, sizeof gen - 1);
  if (generated) s += sizeof gen - 1;
  const char *e = strstr(s, "::");
  if (!e || e == s || strncmp(e, "::apply(", 8)) return 0;
  for (const char *p = s; p < e; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      return 0;
  if (!generated && (!strncmp(s, "Node::", 6) || !strncmp(s, "Engine::", 8))) return 0;
  int w = snprintf(buf, cap, "%s%.*s", generated ? "" : pre, (int)(e - s), s);
  return w < 0 || (size_t)w >= cap ? 0 : (size_t)w;
}

/* A torch source tree outside site-packages (a development install): .../torch/<one of these> */
static const char *const torch_parts[] = {
    "nn/", "optim/", "autograd/", "utils/", "cuda/", "amp/", "distributed/", "_dynamo/",
    "_inductor/", "fx/", "jit/", "profiler/", "backends/", "_subclasses/", "_functorch/",
    "_prims/", "_refs/", "_decomp/", "export/", "compiler/", "_higher_order_ops/", "__init__.py",
    "_tensor.py", "functional.py", "_ops.py", "overrides.py", "_compile.py", "_jit_internal.py",
    "serialization.py", "random.py", "storage.py", NULL};

int rd_torch_user_file(const char *file) {
  if (!file || !*file || file[0] == '<') return 0;
  if (rd_inductor_file(file)) return 0; /* torch.compile's generated code */
  if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/")) return 0;
  for (const char *p = file; (p = strstr(p, "torch/")) != NULL; p += 6) {
    if (p != file && p[-1] != '/') continue;
    for (int i = 0; torch_parts[i]; i++)
      if (!strncmp(p + 6, torch_parts[i], strlen(torch_parts[i]))) return 0;
  }
  const char *p = strstr(file, "/lib/python");
  if (p && p[11] >= '0' && p[11] <= '9') return 0; /* .../lib/python3.11/ */
  return 1;
}

/* ---------------------------------------------------------------- derivation */

static uint64_t mix(uint64_t h, uint64_t v) { return rd_hash64(h * 0x9e3779b97f4a7c15ull ^ v); }

/* What one frame is: an operator, an autograd node, a Python frame, or nothing (kind 0). A
 * line of torch.compile's generated code that launches a Triton kernel (InductorKernel) is an
 * operator of its own, named by the kernel and the aten ops Inductor fused into it. */
static fclass classify(const rd_trace *t, rd_torchs *ts, const rd_frame *f, char *buf, size_t cap) {
  fclass c = {0, NULL, NULL, 0, NULL};
  const rd_inductor_kernel *ik;
  if (f->python && f->file && rd_inductor_file(f->file) &&
      (ik = rd_inductor_at(t, f->file, f->line)) != NULL) {
    c.kind = RD_LAYER_OP;
    if (*ik->aten_ops) snprintf(buf, cap, "%s \u2190 %s", ik->kernel, ik->aten_ops);
    else snprintf(buf, cap, "%s", ik->kernel);
    c.name = intern_s(&ts->names, buf);
    return c;
  }
  if (f->python) {
    if (f->function || f->file) {
      c.kind = RD_LAYER_PY;
      c.name = intern_s(&ts->names, f->function ? f->function : "?");
      c.file = f->file ? intern_s(&ts->names, f->file) : NULL;
      c.line = f->line;
      if (rd_torch_user_file(c.file)) {
        snprintf(buf, cap, "%s:%u", c.file, c.line);
        c.user = intern_s(&ts->names, buf);
      }
    }
  } else if (f->function) {
    size_t sn;
    const char *s = op_struct(f->function, &sn);
    if (s) {
      size_t w = rd_aten_name(s, sn, buf, cap);
      if (w && w < cap) {
        c.kind = RD_LAYER_OP;
        c.name = intern_n(&ts->names, buf, w);
      }
    } else {
      size_t w = node_name(f->function, buf, cap);
      if (w) {
        c.kind = RD_LAYER_NODE;
        c.name = intern_n(&ts->names, buf, w);
      }
    }
  }
  return c;
}

static const rd_torch empty_torch = {.op = -1, .node = -1};

const rd_torch *rd_torch_of(rd_trace *t, uint32_t stack_id) {
  if (!stack_id) return &empty_torch;
  rd_torchs *ts = state(t);
  rd_torch *x = rd_map_get(&ts->by_stack, stack_id);
  if (x) return x;
  const uint64_t *raw;
  int truncated = 0;
  size_t n = rd_stack_raw(t, stack_id, &raw, &truncated);
  x = rd_xmalloc(sizeof *x);
  *x = empty_torch;
  if (n) {
    if (n > ts->capscratch) { /* the layers are built here, then copied out at their size */
      free(ts->scratch);
      ts->capscratch = n;
      ts->scratch = rd_xmalloc(n * sizeof *ts->scratch);
    }
    rd_layer *l = ts->scratch;
    size_t nl = 0;
    /* a layer's key: its own identity, the frames between it and the next layer outside (its
     * call site) and that layer's identity; the outermost layer of a truncated stack has lost
     * that context (cut: rd_spans matches it by name) */
    const uint64_t seed = 0x51ed270b27d8c5a3ull;
    uint64_t since = seed, outer_id = seed;
    char buf[512];
    for (size_t k = n; k-- > 0;) { /* outermost first */
      rd_layer y;
      memset(&y, 0, sizeof y);
      uint32_t ci;
      if (!rd_m_get(&ts->by_frame, raw[k], &ci)) { /* each frame is classified once */
        rd_frame fr;
        rd_frame_of(t, raw[k], &fr);
        fclass fc = classify(t, ts, &fr, buf, sizeof buf);
        if (ts->nfc == ts->capfc) {
          ts->capfc = ts->capfc ? ts->capfc * 2 : 1024;
          ts->fc = rd_xrealloc(ts->fc, ts->capfc * sizeof *ts->fc);
        }
        ci = (uint32_t)ts->nfc;
        ts->fc[ts->nfc++] = fc;
        rd_m_put(&ts->by_frame, raw[k], ci);
      }
      y.kind = ts->fc[ci].kind;
      y.name = ts->fc[ci].name;
      y.file = ts->fc[ci].file;
      y.line = ts->fc[ci].line;
      const char *user = ts->fc[ci].user;
      if (!y.kind) {
        since = mix(since, raw[k]);
        continue;
      }
      uint64_t id = mix((uint64_t)(uintptr_t)y.name, (uint64_t)(uintptr_t)y.file);
      y.cut = nl == 0 && truncated;
      y.key = mix(mix(outer_id, since), id);
      y.user = user;
      l[nl++] = y;
      outer_id = id;
      since = mix(seed, raw[k]);
    }
    x->n = (uint32_t)nl;
    x->l = nl ? memcpy(rd_xmalloc(nl * sizeof *l), l, nl * sizeof *l) : NULL;
    /* the derived views */
    char mod[2048], ops[2048];
    size_t nmod = 0, nops = 0;
    mod[0] = ops[0] = 0;
    for (size_t i = 0; i < nl; i++) {
      rd_layer *y = &x->l[i];
      if (y->kind == RD_LAYER_OP) {
        x->op = (int)i;
        int w = snprintf(ops + nops, sizeof ops - nops, "%s%s", nops ? " > " : "", y->name);
        if (w > 0 && (size_t)w < sizeof ops - nops) nops += (size_t)w;
      } else if (y->kind == RD_LAYER_NODE) {
        x->node = (int)i;
      } else if (y->kind == RD_LAYER_PY) {
        size_t ln = strlen(y->name);
        if (ln > 8 && !strcmp(y->name + ln - 8, ".forward")) {
          int w = snprintf(mod + nmod, sizeof mod - nmod, "%s%s", nmod ? " > " : "", y->name);
          if (w > 0 && (size_t)w < sizeof mod - nmod) nmod += (size_t)w;
          y->module = intern_n(&ts->names, mod, nmod);
        }
        if (y->user) x->user = y->user;
      }
    }
    x->module = nmod ? intern_n(&ts->names, mod, nmod) : NULL;
    x->op_path = nops ? intern_n(&ts->names, ops, nops) : NULL;
  }
  rd_map_put(&ts->by_stack, stack_id, x);
  return x;
}

const char *rd_torch_node_label(const rd_torch *x, char *buf, size_t cap) {
  if (x->node < 0) return NULL;
  snprintf(buf, cap, "autograd::engine::evaluate_function: %s", x->l[x->node].name);
  return buf;
}

/* ---------------------------------------------------------------- instances on a thread */

typedef struct open_layer {
  const rd_layer *l;
  uint64_t start, end;
  uint32_t id;
} open_layer;

typedef struct thread_open {
  uint32_t tid;
  open_layer *v;
  size_t n, cap;
} thread_open;

struct rd_spans {
  rd_span_fn emit, open;
  void *ctx;
  uint32_t *next_id;
  uint32_t own_next;
  rd_map threads;  /* tid -> thread_open* */
  char path[2048]; /* rd_span_at.module_path */
  thread_open **all;
  size_t nall;
};

rd_spans *rd_spans_new(rd_span_fn emit, void *ctx, uint32_t *next_id) {
  rd_spans *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  x->emit = emit;
  x->ctx = ctx;
  x->next_id = next_id ? next_id : &x->own_next;
  return x;
}

void rd_spans_on_open(rd_spans *x, rd_span_fn open) { x->open = open; }

static void opened(rd_spans *x, thread_open *th, size_t i) {
  if (!x->open) return;
  const open_layer *o = &th->v[i];
  rd_span s = {th->tid, (uint32_t)i, o->l, o->start, o->end, o->id, i ? th->v[i - 1].id : 0};
  x->open(x->ctx, &s);
}

static void close_from(rd_spans *x, thread_open *th, size_t from) {
  while (th->n > from) {
    open_layer *o = &th->v[th->n - 1];
    rd_span s = {th->tid, (uint32_t)(th->n - 1), o->l, o->start, o->end, o->id,
                 th->n > 1 ? th->v[th->n - 2].id : 0};
    if (x->emit) x->emit(x->ctx, &s);
    th->n--;
  }
}

/* Where the new call's layers c->l[0..] meet the open ones: c->l[0] is th->v[*p] (or, *q > 0,
 * th->v[0] is c->l[*q], when the open instance came from a truncated stack). Returns the
 * number of layers that agree from there. */
static size_t align(const thread_open *th, const rd_torch *c, size_t *p, size_t *q) {
  size_t best = 0;
  *p = th->n;
  *q = 0;
  for (size_t i = 0; i < th->n; i++) {
    size_t j = 0;
    while (i + j < th->n && j < c->n &&
           (th->v[i + j].l->key == c->l[j].key ||
            ((th->v[i + j].l->cut || c->l[j].cut) && th->v[i + j].l->name == c->l[j].name)))
      j++;
    if (j > best) { best = j; *p = i; }
    if (best && i == 0) break; /* the usual case: the same outermost layer */
  }
  if (!best) *p = 0; /* nothing in common: every open layer ends */
  if (best || !th->n || !th->v[0].l->cut) return best;
  for (size_t k = 1; k < c->n; k++) { /* the open instance was cut: find it in c */
    size_t j = 0;
    while (j < th->n && k + j < c->n &&
           (th->v[j].l->key == c->l[k + j].key ||
            (!j && th->v[0].l->name == c->l[k].name)))
      j++;
    if (j) { *p = 0; *q = k; return j; }
  }
  return 0;
}

uint32_t rd_spans_add(rd_spans *x, uint32_t tid, uint64_t start, uint64_t end, const rd_torch *c,
                      rd_span_at *at) {
  thread_open *th = rd_map_get(&x->threads, tid);
  if (!th) {
    th = rd_xmalloc(sizeof *th);
    memset(th, 0, sizeof *th);
    th->tid = tid;
    rd_map_put(&x->threads, tid, th);
    x->all = rd_xrealloc(x->all, (x->nall + 1) * sizeof *x->all);
    x->all[x->nall++] = th;
  }
  if (th->cap < th->n + c->n + 1) {
    th->cap = th->n + c->n + 8;
    th->v = rd_xrealloc(th->v, th->cap * sizeof *th->v);
  }
  size_t p, q, j = align(th, c, &p, &q);
  if (q) { /* c's layers 0..q-1 enclose the open ones: they began with them */
    memmove(th->v + q, th->v, th->n * sizeof *th->v);
    for (size_t i = 0; i < q; i++)
      th->v[i] = (open_layer){&c->l[i], th->v[q].start, th->v[q].end, ++*x->next_id};
    th->n += q;
    for (size_t i = 0; i < q; i++) opened(x, th, i);
    th->v[q].l = &c->l[q]; /* the full context replaces the cut one */
    p = 0;
    j += q;
  }
  close_from(x, th, p + j);
  for (size_t i = 0; i < th->n; i++) {
    if (start < th->v[i].start) th->v[i].start = start;
    if (end > th->v[i].end) th->v[i].end = end;
  }
  for (size_t i = j; i < c->n; i++) {
    uint32_t id = ++*x->next_id;
    th->v[th->n++] = (open_layer){&c->l[i], start, end, id};
    opened(x, th, th->n - 1);
  }
  uint32_t inner = th->n ? th->v[th->n - 1].id : 0;
  if (at) {
    memset(at, 0, sizeof *at);
    for (size_t i = th->n; i-- > 0;) {
      const open_layer *o = &th->v[i];
      int k = o->l->kind;
      if ((k == RD_LAYER_OP || k == RD_LAYER_NODE) && !at->op_id) { /* the innermost of them */
        at->op_id = o->id;
        if (k == RD_LAYER_OP) at->op = o->l; else at->node = o->l;
      }
      if (k == RD_LAYER_PY && o->l->module && !at->module) at->module = o->l;
      if (k == RD_LAYER_PY && !at->user && o->l->user) at->user = o->l;
    }
    size_t n = 0; /* the module path of the open layers */
    x->path[0] = 0;
    for (size_t i = 0; i < th->n; i++) {
      const rd_layer *l = th->v[i].l;
      if (l->kind != RD_LAYER_PY || !l->module) continue;
      int w = snprintf(x->path + n, sizeof x->path - n, "%s%s", n ? " > " : "", l->name);
      if (w < 0 || (size_t)w >= sizeof x->path - n) break;
      n += (size_t)w;
    }
    at->module_path = n ? x->path : NULL;
  }
  return inner;
}

void rd_spans_free(rd_spans *x) {
  if (!x) return;
  for (size_t i = 0; i < x->nall; i++) {
    close_from(x, x->all[i], 0);
    free(x->all[i]->v);
    free(x->all[i]);
  }
  free(x->all);
  rd_map_free(&x->threads, NULL);
  free(x);
}
