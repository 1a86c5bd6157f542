/* ops.c — the operator, module and source-line tables of `dlhook stats` and `dlhook report`
 * (rd_ops in rd.h), from PyTorch's view of each call's stack (torch.c).
 *
 * Per row: instances (torch.c's rd_spans: an operator is seen from its first to its last
 * recorded call), host time (their spans; self = minus the spans of the operators inside),
 * calls recorded inside, and the GPU time of the kernels, copies and memsets those calls
 * launched (exact, through the correlation ids; a library call's kernels through CUPTI's
 * external correlation records), attributed to the innermost operator, the innermost module path
 * and the user's line of the launching call. GEMM and convolution shapes come from the library
 * calls' recorded arguments. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_scan.h"

#define NSHAPES 3

typedef struct orow {
  const char *name;     /* owned by the rd_ops (copied out of the trace) */
  uint64_t instances, host_ns, self_ns, calls, gpu_ns, kernels, gpu_records;
  struct { char *s; uint64_t n; } shape[NSHAPES + 1];
} orow;

typedef struct otab {
  orow *v;
  size_t n, cap;
  rd_u64map ix;         /* hash of name -> index */
} otab;

typedef struct pending { uint64_t corr, dur; uint32_t kind; } pending;

typedef struct tstate {  /* per thread during a pass: closed children's time by depth */
  uint64_t *csum;
  size_t cap;
} tstate;

struct rd_ops {
  otab ops, mods, lines;
  uint64_t traces, torch_traces, nostack, gpu_ns, gpu_attr_ns;
  /* the trace of the current pass */
  rd_trace *t;
  rd_spans *sp;
  rd_map threads;       /* tid -> tstate* */
  rd_u64map corr_at;    /* correlation id -> index into at of the call */
  struct cat { const char *op, *mod, *user; } *at;
  size_t nat, capat;
  rd_u64map ext;        /* CUPTI correlation id -> index into extv (the library call's id) */
  uint64_t *extv;
  size_t next, capext;
  pending *pend;
  size_t npend, cappend;
};

static orow *row_of(otab *tb, const char *name) {
  uint64_t h = rd_hash_str(name);
  uint32_t i;
  if (rd_m_get(&tb->ix, h, &i)) {
    if (!strcmp(tb->v[i].name, name)) return &tb->v[i];
    for (size_t k = 0; k < tb->n; k++) /* a hash collision with another name (rare) */
      if (!strcmp(tb->v[k].name, name)) return &tb->v[k];
  }
  if (tb->n == tb->cap) {
    tb->cap = tb->cap ? tb->cap * 2 : 64;
    tb->v = rd_xrealloc(tb->v, tb->cap * sizeof *tb->v);
  }
  orow *r = &tb->v[tb->n];
  memset(r, 0, sizeof *r);
  r->name = rd_utf8_dup(name);
  if (!rd_m_get(&tb->ix, h, &i)) rd_m_put(&tb->ix, h, (uint32_t)tb->n);
  tb->n++;
  return r;
}

rd_ops *rd_ops_new(void) {
  rd_ops *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

static void tab_free(otab *tb) {
  for (size_t i = 0; i < tb->n; i++) {
    free((char *)tb->v[i].name);
    for (int k = 0; k < NSHAPES + 1; k++) free(tb->v[i].shape[k].s);
  }
  free(tb->v);
  rd_m_free(&tb->ix);
}

void rd_ops_free(rd_ops *x) {
  if (!x) return;
  tab_free(&x->ops);
  tab_free(&x->mods);
  tab_free(&x->lines);
  free(x);
}

int rd_ops_wanted(rd_ops *x, const rd_trace *t) {
  x->traces++;
  if (!rd_stacks_count(t)) { x->nostack++; return 0; } /* --stacks none: no modules either */
  if (!rd_stacks_have_module(t, "libtorch_cpu.")) return 0;
  x->torch_traces++;
  return 1;
}

/* ---------------------------------------------------------------- the pass */

static tstate *thread_of(rd_ops *x, uint32_t tid) { return rd_map_get_new(&x->threads, tid, sizeof(tstate)); }

static void tstate_free(void *p) {
  tstate *s = p;
  free(s->csum);
  free(s);
}

static void on_span(void *ctx, const rd_span *sp) {
  rd_ops *x = ctx;
  tstate *th = thread_of(x, sp->tid);
  if (th->cap < sp->depth + 2) {
    size_t nc = sp->depth + 16;
    th->csum = rd_xrealloc(th->csum, nc * sizeof *th->csum);
    memset(th->csum + th->cap, 0, (nc - th->cap) * sizeof *th->csum);
    th->cap = nc;
  }
  uint64_t dur = sp->end - sp->start, child = th->csum[sp->depth + 1];
  th->csum[sp->depth + 1] = 0;
  th->csum[sp->depth] += dur;
  const rd_layer *l = sp->layer;
  orow *r = NULL;
  char buf[512];
  if (l->kind == RD_LAYER_PY && l->module) {
    r = row_of(&x->mods, l->module);
    r->instances++;
    r->host_ns += dur;
    r->self_ns += dur > child ? dur - child : 0;
    return;
  }
  if (l->kind == RD_LAYER_OP) r = row_of(&x->ops, l->name);
  else if (l->kind == RD_LAYER_NODE) {
    snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: %s", l->name);
    r = row_of(&x->ops, buf);
  }
  if (!r) return;
  r->instances++;
  r->host_ns += dur;
  r->self_ns += dur > child ? dur - child : 0;
}

static void add_shape(orow *r, const char *s) {
  for (int k = 0; k < NSHAPES + 1 && r->shape[k].s; k++)
    if (!strcmp(r->shape[k].s, s)) {
      r->shape[k].n++;
      for (; k > 0 && r->shape[k].n > r->shape[k - 1].n; k--) { /* keep them by count */
        __typeof__(r->shape[0]) tmp = r->shape[k];
        r->shape[k] = r->shape[k - 1];
        r->shape[k - 1] = tmp;
      }
      return;
    }
  int k = 0;
  while (k < NSHAPES + 1 && r->shape[k].s) k++;
  if (k == NSHAPES + 1) { free(r->shape[NSHAPES].s); k = NSHAPES; } /* the last one rotates */
  r->shape[k].s = rd_xstrdup(s);
  r->shape[k].n = 1;
}

/* "m=.. n=.. k=.." of a GEMM, "N×C×H×W K×R×S" of a convolution, from the recorded args */
static int shape_of(const rd_trace *t, const dlh_api_event *ev, char *buf, size_t n) {
  uint64_t m, nn, k, b = 1, N, C, H, W, K, R, S;
  if (rd_arg(t, ev, "m", &m) && rd_arg(t, ev, "n", &nn) && rd_arg(t, ev, "k", &k)) {
    if (!rd_arg(t, ev, "batch", &b) || b <= 1)
      snprintf(buf, n, "gemm %" PRIu64 "x%" PRIu64 "x%" PRIu64, m, nn, k);
    else
      snprintf(buf, n, "gemm %" PRIu64 "x%" PRIu64 "x%" PRIu64 " batch %" PRIu64, m, nn, k, b);
    return 1;
  }
  if (rd_arg(t, ev, "N", &N) && rd_arg(t, ev, "C", &C) && rd_arg(t, ev, "H", &H) &&
      rd_arg(t, ev, "W", &W) && rd_arg(t, ev, "K", &K) && rd_arg(t, ev, "R", &R) &&
      rd_arg(t, ev, "S", &S)) {
    snprintf(buf, n, "conv %" PRIu64 "x%" PRIu64 "x%" PRIu64 "x%" PRIu64 " k%" PRIu64 " %" PRIu64
             "x%" PRIu64, N, C, H, W, K, R, S);
    return 1;
  }
  return 0;
}

/* The row names of a call: its operator (or autograd node), module path and user line, from
 * where rd_spans placed it (which knows the layers a truncated stack lost). */
static struct cat names_of(rd_ops *x, const rd_torch *t, const rd_span_at *at) {
  struct cat c = {NULL, NULL, NULL};
  char buf[512];
  if (at->op) c.op = at->op->name;
  else if (at->node) {
    snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: %s", at->node->name);
    c.op = row_of(&x->ops, buf)->name;
  }
  if (at->module_path) c.mod = row_of(&x->mods, at->module_path)->name;
  if (t->user) { /* the call's own line; a truncated stack: the line of its open frame */
    c.user = row_of(&x->lines, t->user)->name;
  } else if (at->user) {
    c.user = row_of(&x->lines, at->user->user)->name;
  }
  return c;
}

static void o_api(void *ctx, const rd_trace *ct, uint32_t tid, const dlh_api_event *ev) {
  rd_ops *x = ctx;
  if (!ev->stack) return;
  const rd_torch *c = rd_torch_of(x->t, ev->stack);
  (void)ct;
  if (!c->n) return;
  rd_span_at at;
  rd_spans_add(x->sp, tid, ev->start_ns, ev->start_ns + dlh_api_span(ev), c, &at);
  struct cat n = names_of(x, c, &at);
  if (ev->corr && (n.op || n.mod || n.user)) {
    if (x->nat == x->capat) {
      x->capat = x->capat ? x->capat * 2 : 1024;
      x->at = rd_xrealloc(x->at, x->capat * sizeof *x->at);
    }
    x->at[x->nat] = n;
    rd_m_put(&x->corr_at, ev->corr, (uint32_t)x->nat++);
  }
  char buf[512];
  if (n.op) {
    orow *r = row_of(&x->ops, n.op);
    r->calls += dlh_api_calls(ev);
    if (ev->depth == 0 && shape_of(x->t, ev, buf, sizeof buf)) add_shape(r, buf);
  }
  if (n.mod) row_of(&x->mods, n.mod)->calls += dlh_api_calls(ev);
  if (n.user) row_of(&x->lines, n.user)->calls += dlh_api_calls(ev);
}

static void o_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  rd_ops *x = ctx;
  (void)t;
  if (g->kind == RD_EXTCORR) {
    if (g->nvals < 2 || !g->corr || !g->vals[1]) return;
    uint32_t i;
    if (!rd_m_get(&x->ext, g->corr, &i)) {
      if (x->next == x->capext) {
        x->capext = x->capext ? x->capext * 2 : 256;
        x->extv = rd_xrealloc(x->extv, x->capext * sizeof *x->extv);
      }
      i = (uint32_t)x->next++;
      rd_m_put(&x->ext, g->corr, i);
    }
    x->extv[i] = g->vals[1];
    return;
  }
  if (!rd_gpu_busy(g->kind)) return;
  x->gpu_ns += g->dur;
  if (!g->corr) return;
  if (x->npend == x->cappend) {
    x->cappend = x->cappend ? x->cappend * 2 : 1024;
    x->pend = rd_xrealloc(x->pend, x->cappend * sizeof *x->pend);
  }
  x->pend[x->npend++] = (pending){g->corr, g->dur, g->kind};
}

rd_sink rd_ops_sink(rd_ops *x, rd_trace *t) {
  x->t = t;
  x->sp = rd_spans_new(on_span, x, NULL);
  return (rd_sink){x, NULL, o_api, o_gpu, 0, NULL};
}

void rd_ops_trace_end(rd_ops *x) {
  rd_spans_free(x->sp);
  x->sp = NULL;
  rd_map_free(&x->threads, tstate_free);
  for (size_t i = 0; i < x->npend; i++) {
    const pending *p = &x->pend[i];
    uint32_t ai, e;
    if (!rd_m_get(&x->corr_at, p->corr, &ai) &&
        !(rd_m_get(&x->ext, p->corr, &e) && rd_m_get(&x->corr_at, x->extv[e], &ai)))
      continue;
    const struct cat *n = &x->at[ai];
    orow *rows[3] = {n->op ? row_of(&x->ops, n->op) : NULL, n->mod ? row_of(&x->mods, n->mod) : NULL,
                     n->user ? row_of(&x->lines, n->user) : NULL};
    x->gpu_attr_ns += p->dur;
    for (int k = 0; k < 3; k++) {
      if (!rows[k]) continue;
      rows[k]->gpu_ns += p->dur;
      rows[k]->gpu_records++;
      rows[k]->kernels += p->kind == RD_KERNEL;
    }
  }
  free(x->pend);
  x->pend = NULL;
  x->npend = x->cappend = 0;
  free(x->extv);
  x->extv = NULL;
  x->next = x->capext = 0;
  rd_m_free(&x->ext);
  rd_m_free(&x->corr_at);
  free(x->at);
  x->at = NULL;
  x->nat = x->capat = 0;
  x->t = NULL;
}

/* ---------------------------------------------------------------- output */

static int by_gpu_then_host(const void *a, const void *b) {
  const orow *x = a, *y = b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns < y->gpu_ns ? 1 : -1;
  if (x->host_ns != y->host_ns) return x->host_ns < y->host_ns ? 1 : -1;
  if (x->calls != y->calls) return x->calls < y->calls ? 1 : -1;
  return strcmp(x->name, y->name);
}

static void sort_tab(otab *tb) {
  if (tb->n) rd_qsort(tb->v, tb->n, sizeof *tb->v, by_gpu_then_host);
  rd_m_free(&tb->ix);
  memset(&tb->ix, 0, sizeof tb->ix);
}

const char *rd_ops_none(const rd_ops *x) {
  if (x->ops.n || x->mods.n || x->lines.n) return NULL;
  if (x->traces && x->nostack == x->traces)
    return "recorded without call stacks (--stacks none): nothing to derive operators from";
  if (!x->torch_traces) return "no PyTorch in these traces (no libtorch loaded): nothing to derive";
  return "no call inside a PyTorch operator, module or user line";
}

static void json_tab(FILE *f, const char *key, const otab *tb, int shapes) {
  fprintf(f, ",\"%s\":[", key);
  for (size_t i = 0; i < tb->n; i++) {
    const orow *r = &tb->v[i];
    fputs(i ? ",{\"name\":" : "{\"name\":", f);
    rd_json_str(f, r->name);
    fprintf(f, ",\"instances\":%" PRIu64 ",\"host_ns\":%" PRIu64 ",\"self_host_ns\":%" PRIu64
            ",\"calls\":%" PRIu64 ",\"gpu_ns\":%" PRIu64 ",\"kernels\":%" PRIu64
            ",\"gpu_records\":%" PRIu64, r->instances, r->host_ns, r->self_ns, r->calls,
            r->gpu_ns, r->kernels, r->gpu_records);
    if (shapes) {
      fputs(",\"shapes\":[", f);
      for (int k = 0; k < NSHAPES && r->shape[k].s; k++) {
        fputs(k ? ",{\"shape\":" : "{\"shape\":", f);
        rd_json_str(f, r->shape[k].s);
        fprintf(f, ",\"calls\":%" PRIu64 "}", r->shape[k].n);
      }
      fputc(']', f);
    }
    fputc('}', f);
  }
  fputc(']', f);
}

void rd_ops_json(FILE *f, rd_ops *x) {
  sort_tab(&x->ops);
  sort_tab(&x->mods);
  sort_tab(&x->lines);
  const char *none = rd_ops_none(x);
  fprintf(f, ",\"pytorch\":{\"traces\":%" PRIu64 ",\"torch_traces\":%" PRIu64
          ",\"gpu_ns\":%" PRIu64 ",\"gpu_attributed_ns\":%" PRIu64 ",\"none\":",
          x->traces, x->torch_traces, x->gpu_ns, x->gpu_attr_ns);
  rd_json_str(f, none);
  json_tab(f, "operators", &x->ops, 1);
  json_tab(f, "modules", &x->mods, 0);
  json_tab(f, "lines", &x->lines, 0);
  fputc('}', f);
}

static const char *fmt_ns(char *buf, size_t n, uint64_t ns) {
  if (ns >= 10000000000ull) snprintf(buf, n, "%.1f s", (double)ns / 1e9);
  else if (ns >= 10000000) snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
  else if (ns >= 10000) snprintf(buf, n, "%.1f us", (double)ns / 1e3);
  else snprintf(buf, n, "%" PRIu64 " ns", ns);
  return buf;
}

/* The cells of rows [from, from + n) of a module table: their paths shortened from the outside
 * in, distinct (names.c); each malloc'd, as the array. */
static char **module_cells(const otab *tb, size_t from, size_t n, size_t width) {
  const char **nm = rd_xmalloc((n ? n : 1) * sizeof *nm);
  char **cell = rd_xmalloc((n ? n : 1) * sizeof *cell);
  for (size_t i = 0; i < n; i++) nm[i] = tb->v[from + i].name;
  rd_names_modules(nm, n, width, cell);
  free(nm);
  return cell;
}

static void table(FILE *f, const char *title, const char *col, const otab *tb, int shapes, size_t max) {
  if (!tb->n) return;
  int modules = !strcmp(col, "module");
  char name[4 * 48 + 4], a[32], b[32], c[32], sh[4 * 30 + 4];
  fprintf(f, "\n%s\n", title);
  rd_term_fit(name, sizeof name, 48, col);
  fprintf(f, "  %s %8s %10s %10s %10s %7s%s\n", name, "count", "host", "host self", "GPU", "kernels",
          shapes ? "  top shape" : "");
  size_t nshow = tb->n < max ? tb->n : max;
  char **mcell = modules ? module_cells(tb, 0, nshow, 48) : NULL;
  for (size_t i = 0; i < nshow; i++) {
    const orow *r = &tb->v[i];
    if (mcell) {
      memcpy(name, mcell[i], strlen(mcell[i]) + 1);
      free(mcell[i]);
    } else {
      rd_term_fit(name, sizeof name, 48, r->name);
    }
    sh[0] = 0;
    if (shapes && r->shape[0].s) rd_term_fit(sh, sizeof sh, 30, r->shape[0].s);
    for (size_t k = strlen(sh); k > 0 && sh[k - 1] == ' '; k--) sh[k - 1] = 0;
    /* lines have no instances: their count is the calls made from them, no host time */
    fprintf(f, "  %s %8" PRIu64 " %10s %10s %10s %7" PRIu64 "%s%s\n", name,
            r->instances ? r->instances : r->calls,
            r->instances ? fmt_ns(a, sizeof a, r->host_ns) : "-",
            r->instances ? fmt_ns(b, sizeof b, r->self_ns) : "-", fmt_ns(c, sizeof c, r->gpu_ns),
            r->kernels, sh[0] ? "  " : "", sh);
  }
  free(mcell);
  if (tb->n > max) fprintf(f, "  ... %zu more (--json has them all)\n", tb->n - max);
}

void rd_ops_table(FILE *f, rd_ops *x) {
  sort_tab(&x->ops);
  sort_tab(&x->mods);
  sort_tab(&x->lines);
  const char *none = rd_ops_none(x);
  if (none) {
    fprintf(f, "\nPyTorch operators: %s\n", none);
    return;
  }
  table(f, "PyTorch operators (innermost op of each call; GPU time of the work it launched):",
        "operator", &x->ops, 1, 25);
  table(f, "Modules (Python forward() frames, innermost last; \xe2\x80\xa6: outer ones left out):",
        "module", &x->mods, 0, 15);
  table(f, "Source lines (innermost frame of the user's code; count: calls made from it):", "line",
        &x->lines, 0, 15);
}

/* ---------------------------------------------------------------- the first screen */

static int by_self(const void *a, const void *b) {
  const orow *x = *(const orow *const *)a, *y = *(const orow *const *)b;
  if (x->self_ns != y->self_ns) return x->self_ns < y->self_ns ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* One summary row: name (already a cell of 52 columns), count, GPU and host time (host first
 * when host_first). A row without instances (its calls' stacks lost the frame's start) counts
 * its calls and has no host time, as in the full table. */
static void sum_row(FILE *f, const char *cell, const orow *r, uint64_t host, int host_first) {
  char x[32], y[32];
  fmt_ns(x, sizeof x, r->gpu_ns);
  if (r->instances) fmt_ns(y, sizeof y, host);
  else snprintf(y, sizeof y, "-");
  fprintf(f, "  %s %7" PRIu64 " %10s %10s\n", cell, r->instances ? r->instances : r->calls,
          host_first ? y : x, host_first ? x : y);
}

size_t rd_ops_summary(FILE *f, rd_ops *x, size_t nops, size_t nmods) {
  sort_tab(&x->ops);
  sort_tab(&x->mods);
  sort_tab(&x->lines);
  if (rd_ops_none(x) || !x->ops.n) return 0;
  char cell[4 * 52 + 4];
  size_t lines = 0, n = x->ops.n < nops ? x->ops.n : nops;
  fprintf(f, "%-54s %7s %10s %10s\n", "Operators by GPU time", "count", "GPU", "host");
  for (size_t i = 0; i < n && x->ops.v[i].gpu_ns; i++, lines++) {
    rd_term_fit(cell, sizeof cell, 52, x->ops.v[i].name);
    sum_row(f, cell, &x->ops.v[i], x->ops.v[i].host_ns, 0);
  }
  const orow **by = rd_xmalloc(x->ops.n * sizeof *by);
  for (size_t i = 0; i < x->ops.n; i++) by[i] = &x->ops.v[i];
  rd_qsort(by, x->ops.n, sizeof *by, by_self);
  fprintf(f, "%-54s %7s %10s %10s\n", "Operators by host time (self)", "count", "host self", "GPU");
  for (size_t i = 0; i < n && by[i]->self_ns; i++, lines++) {
    rd_term_fit(cell, sizeof cell, 52, by[i]->name);
    sum_row(f, cell, by[i], by[i]->self_ns, 1);
  }
  free(by);
  lines += 2;
  size_t nm = x->mods.n < nmods ? x->mods.n : nmods;
  if (nm) {
    char **mc = module_cells(&x->mods, 0, nm, 52);
    fprintf(f, "%-54s %7s %10s %10s\n", "Modules by GPU time", "count", "GPU", "host");
    for (size_t i = 0; i < nm; i++) {
      sum_row(f, mc[i], &x->mods.v[i], x->mods.v[i].host_ns, 0);
      free(mc[i]);
    }
    free(mc);
    lines += nm + 1;
  }
  return lines;
}
