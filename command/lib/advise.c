/* advise.c — the findings of `dlhook advise`: known causes of lost time, each with a stable class
 * id, an estimated cost per step, its evidence, the place in the user's code and the usual fix.
 *
 * Classes and their thresholds (a finding is reported only above both):
 *   sync-in-loop   host-device synchronizations (cudaStreamSynchronize, cudaDeviceSynchronize,
 *                  cudaEventSynchronize, cudaMemcpy, cuStreamSynchronize, cuCtxSynchronize,
 *                  cuMemcpyDtoH...) made repeatedly from one place: at least 3 calls and at least
 *                  one per step; cost = the host's time in those calls per step.
 *   pageable-h2d   host-to-device copies whose source is pageable memory (the CUPTI memcpy
 *                  record's src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), at least 3 from one
 *                  place; cost = the host's time in the calls that made them per step.
 *   malloc-in-loop cudaMalloc/cudaFree (and the driver's cuMemAlloc/cuMemFree) in the steady
 *                  state: after the first step (with steps), else every call of a place but its
 *                  first, at least 2 such calls from one place; cost = their time per step.
 * Every class also needs a cost of at least ADV_MIN_PCT % of the step time (malloc-in-loop:
 * ADV_MIN_PCT_MALLOC %, as any steady-state allocation is a defect worth naming).
 *
 * A step is an NVTX range named like one (rd_step_number); with steps only the calls inside them
 * count (not the set-up before the first), without steps the whole span of the trace's calls is
 * one step. The place of a call is the innermost frame of the user's Python code
 * (rd_torch_of), else the innermost frame in the program's own executable, else the innermost
 * frame that has a name. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_scan.h"

#ifndef ADV_MIN_PCT
#define ADV_MIN_PCT 1.0
#endif
#define ADV_MIN_PCT_MALLOC 0.1
#define ADV_MIN_CALLS 3

enum { A_SYNC, A_PAGEABLE, A_MALLOC, A_NCLASS };
static const struct {
  const char *id, *how, *fix;
} classes[A_NCLASS] = {
    {"sync-in-loop", "host time blocked in the synchronizing calls, divided by the steps",
     "avoid .item()/.cpu()/print(tensor) and synchronous copies in the loop: accumulate on the "
     "GPU and synchronize once every N steps"},
    {"pageable-h2d", "host time in the calls that copied from pageable memory, divided by the steps",
     "copy from pinned memory: pin_memory=True in the DataLoader with .to(device, "
     "non_blocking=True), or cudaMallocHost/cudaHostAlloc buffers in C"},
    {"malloc-in-loop", "host time in allocations and frees after the first step, divided by the steps",
     "allocate once before the loop and reuse the buffers: keep the caching allocator warm and "
     "do not call torch.cuda.empty_cache() in the loop"},
};

typedef struct acall {
  uint64_t start, dur, corr, calls;
  uint32_t stack, fn;
  int cls; /* A_*, or -1: a copy call (pageable-h2d is decided by its GPU record) */
} acall;

typedef struct afinding {
  int cls;
  char *trace, *place, *fns;
  uint64_t calls, ns, step_ns, nsteps, first;
} afinding;

struct rd_advise {
  acall *c;
  size_t n, cap;
  rd_u64map pageable; /* corr of a pageable HtoD memcpy record -> 1 */
  uint64_t *st_s, *st_e;
  size_t nst, capst;
  uint64_t lo, hi;
  afinding *f;
  size_t nf, capf;
  size_t ntraces;
  uint64_t nsteps_all, step_ns_all;
};

static int sync_fn(const char *n) {
  static const char *const names[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                      "cudaEventSynchronize", "cudaThreadSynchronize",
                                      "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol",
                                      "cuStreamSynchronize", "cuCtxSynchronize",
                                      "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyDtoH",
                                      "cuMemcpy", NULL};
  for (int i = 0; names[i]; i++)
    if (!strcmp(n, names[i])) return 1;
  return 0;
}
static int malloc_fn(const char *n) {
  static const char *const names[] = {"cudaMalloc", "cudaFree", "cudaMallocManaged",
                                      "cudaMallocPitch", "cuMemAlloc_v2", "cuMemFree_v2",
                                      "cuMemAlloc", "cuMemFree", NULL};
  for (int i = 0; names[i]; i++)
    if (!strcmp(n, names[i])) return 1;
  return 0;
}
static int copy_fn(const char *n) { return !strncmp(n, "cudaMemcpy", 10) || !strncmp(n, "cuMemcpy", 8); }

static void push_call(rd_advise *x, const dlh_api_event *e, int cls) {
  if (x->n == x->cap) {
    x->cap = x->cap ? x->cap * 2 : 1024;
    x->c = rd_xrealloc(x->c, x->cap * sizeof *x->c);
  }
  x->c[x->n++] = (acall){e->start_ns, e->dur_ns, e->corr, dlh_api_calls(e), e->stack, e->fn, cls};
}

static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  rd_advise *x = ctx;
  (void)tid;
  const rd_func *f = rd_trace_func(t, e->fn);
  if (!f || !f->name) return;
  if (f->domain == DLH__DOMAIN__DOMAIN_NVTX) {
    if (!e->nargs || rd_step_number(rd_trace_string(t, (uint32_t)e->args[0])) < 0) return;
    if (x->nst == x->capst) {
      x->capst = x->capst ? x->capst * 2 : 64;
      x->st_s = rd_xrealloc(x->st_s, x->capst * sizeof *x->st_s);
      x->st_e = rd_xrealloc(x->st_e, x->capst * sizeof *x->st_e);
    }
    x->st_s[x->nst] = e->start_ns;
    x->st_e[x->nst++] = e->start_ns + dlh_api_span(e);
    return;
  }
  if (e->depth) return;
  if (!x->lo || e->start_ns < x->lo) x->lo = e->start_ns;
  if (e->start_ns + dlh_api_span(e) > x->hi) x->hi = e->start_ns + dlh_api_span(e);
  if (sync_fn(f->name)) push_call(x, e, A_SYNC);
  if (malloc_fn(f->name)) push_call(x, e, A_MALLOC);
  if (copy_fn(f->name) && e->corr) push_call(x, e, -1);
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  rd_advise *x = ctx;
  (void)t;
  /* vals: bytes, copy_kind (1 = HtoD), src_kind (1 = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) */
  if (g->kind == RD_MEMCPY && g->nvals >= 3 && g->vals[1] == 1 && g->vals[2] == 1 && g->corr)
    rd_m_put(&x->pageable, g->corr, 1);
}

rd_advise *rd_advise_new(void) {
  rd_advise *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

rd_sink rd_advise_sink(rd_advise *x) { return (rd_sink){x, NULL, on_api, on_gpu, 0, NULL}; }

/* The place of a stack in the user's code (malloc'd). */
static char *place_of(rd_trace *t, uint32_t stack) {
  char buf[1024];
  if (!stack) return rd_xstrdup("[no stack]");
  const rd_torch *tc = rd_torch_of(t, stack);
  if (tc && tc->user) return rd_xstrdup(tc->user);
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  const rd_frame *best = NULL;
  for (size_t i = 0; i < n && t->exe[0]; i++) {
    const char *m = fr[i].module;
    if (!m) continue;
    const char *b = strrchr(m, '/');
    b = b ? b + 1 : m;
    if (!strcmp(b, t->exe)) { best = &fr[i]; break; }
  }
  for (size_t i = 0; !best && i < n; i++)
    if (fr[i].function || (fr[i].python && fr[i].file)) best = &fr[i];
  if (!best) return rd_xstrdup("[unknown]");
  if (best->file && best->line) {
    const char *b = strrchr(best->file, '/');
    snprintf(buf, sizeof buf, "%s:%u%s%s%s", b ? b + 1 : best->file, best->line,
             best->function ? " (" : "", best->function ? best->function : "",
             best->function ? ")" : "");
  } else {
    char nb[256];
    snprintf(buf, sizeof buf, "%s", rd_frame_name(best, nb, sizeof nb));
    if (best->module && best->has_modoff) {
      const char *b = strrchr(best->module, '/');
      size_t l = strlen(buf);
      snprintf(buf + l, sizeof buf - l, " (%s+0x%" PRIx64 ")", b ? b + 1 : best->module,
               best->modoff);
    }
  }
  return rd_xstrdup(buf);
}

static void add_fn(char **fns, const char *name) {
  if (!*fns) { *fns = rd_xstrdup(name); return; }
  size_t l = strlen(name);
  for (const char *p = *fns; (p = strstr(p, name)); p += l)
    if ((p == *fns || p[-1] == ',') && (p[l] == ',' || !p[l])) return;
  size_t m = strlen(*fns);
  *fns = rd_xrealloc(*fns, m + l + 2);
  (*fns)[m] = ',';
  memcpy(*fns + m + 1, name, l + 1);
}

static int by_cost(const void *a, const void *b) {
  const afinding *p = a, *q = b;
  double cp = (double)p->ns / (double)(p->nsteps ? p->nsteps : 1);
  double cq = (double)q->ns / (double)(q->nsteps ? q->nsteps : 1);
  return cp < cq ? 1 : cp > cq ? -1 : p->cls - q->cls;
}

void rd_advise_trace_end(rd_advise *x, rd_trace *t) {
  uint64_t nsteps = 1, step_ns = x->hi > x->lo ? x->hi - x->lo : 0, after = 0;
  uint64_t in_lo = 0, in_hi = UINT64_MAX; /* with steps: only calls inside them count */
  if (x->nst) {
    in_lo = UINT64_MAX;
    in_hi = 0;
    for (size_t i = 0; i < x->nst; i++) {
      if (x->st_s[i] < in_lo) in_lo = x->st_s[i];
      if (x->st_e[i] > in_hi) in_hi = x->st_e[i];
    }
    nsteps = x->nst;
    step_ns = 0;
    after = UINT64_MAX;
    for (size_t i = 0; i < x->nst; i++) {
      step_ns += x->st_e[i] - x->st_s[i];
      if (x->st_e[i] < after) after = x->st_e[i]; /* the end of the first step */
    }
    if (x->nst < 2) after = UINT64_MAX; /* one step: no steady state to tell */
  }
  x->ntraces++;
  x->nsteps_all += nsteps;
  x->step_ns_all += step_ns;
  size_t base = x->nf;
  for (size_t i = 0; i < x->n; i++) {
    acall *c = &x->c[i];
    int cls = c->cls;
    uint32_t one;
    if (c->start < in_lo || c->start >= in_hi) continue;
    if (cls < 0) {
      if (!rd_m_get(&x->pageable, c->corr, &one)) continue;
      cls = A_PAGEABLE;
    }
    char *place = place_of(t, c->stack);
    afinding *f = NULL;
    for (size_t k = base; k < x->nf; k++)
      if (x->f[k].cls == cls && !strcmp(x->f[k].place, place)) { f = &x->f[k]; break; }
    if (!f) {
      if (x->nf == x->capf) {
        x->capf = x->capf ? x->capf * 2 : 16;
        x->f = rd_xrealloc(x->f, x->capf * sizeof *x->f);
      }
      f = &x->f[x->nf++];
      memset(f, 0, sizeof *f);
      f->cls = cls;
      f->place = place;
      f->trace = rd_xstrdup(t->path);
      f->nsteps = nsteps;
      f->step_ns = step_ns;
    } else {
      free(place);
    }
    if (cls == A_MALLOC) {
      /* steady state: after the first step, or (no steps) every call of the place but its first */
      uint64_t n = c->calls;
      if (x->nst) {
        if (c->start < after) continue;
      } else if (!f->first) {
        f->first = 1;
        if (n-- <= 1) continue;
      }
      f->calls += n;
      f->ns += n == c->calls ? c->dur : c->dur / c->calls * n;
    } else {
      f->calls += c->calls;
      f->ns += c->dur;
    }
    add_fn(&f->fns, rd_trace_func(t, c->fn)->name);
  }
  /* thresholds: drop what is below them */
  size_t w = base;
  for (size_t k = base; k < x->nf; k++) {
    afinding *f = &x->f[k];
    uint64_t min_calls = f->cls == A_MALLOC ? 2 : ADV_MIN_CALLS;
    if (f->cls == A_SYNC && f->calls < f->nsteps) min_calls = f->nsteps;
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    if (f->calls >= min_calls && pct >= (f->cls == A_MALLOC ? ADV_MIN_PCT_MALLOC : ADV_MIN_PCT)) x->f[w++] = *f;
    else { free(f->place); free(f->trace); free(f->fns); }
  }
  x->nf = w;
  if (x->nf) qsort(x->f, x->nf, sizeof *x->f, by_cost);
  x->n = x->nst = 0;
  x->lo = x->hi = 0;
  rd_m_free(&x->pageable);
  memset(&x->pageable, 0, sizeof x->pageable);
}

size_t rd_advise_count(const rd_advise *x) { return x ? x->nf : 0; }

void rd_advise_json(FILE *out, rd_advise *x) {
  fputs("[", out);
  for (size_t k = 0; k < x->nf; k++) {
    const afinding *f = &x->f[k];
    double ms = (double)f->ns / 1e6 / (double)f->nsteps;
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    fprintf(out, "%s{\"rank\":%zu,\"class\":", k ? "," : "", k + 1);
    rd_json_str(out, classes[f->cls].id);
    fputs(",\"cost_ms_per_step\":", out);
    rd_json_double(out, ms);
    fputs(",\"cost_pct\":", out);
    rd_json_double(out, pct);
    fputs(",\"estimate\":", out);
    rd_json_str(out, classes[f->cls].how);
    fprintf(out, ",\"evidence\":{\"calls\":%" PRIu64 ",\"ns\":%" PRIu64 ",\"functions\":", f->calls,
            f->ns);
    rd_json_str(out, f->fns);
    fprintf(out, ",\"steps\":%" PRIu64 ",\"step_ns\":%" PRIu64 "},\"place\":", f->nsteps, f->step_ns);
    rd_json_str(out, f->place);
    fputs(",\"trace\":", out);
    rd_json_str(out, f->trace);
    fputs(",\"fix\":", out);
    rd_json_str(out, classes[f->cls].fix);
    fputs("}", out);
  }
  fputs("]", out);
}

void rd_advise_table(FILE *out, rd_advise *x) {
  fputs("Findings\n", out);
  if (!x->nf) {
    fprintf(out, "  no findings above the thresholds (%zu trace%s, %" PRIu64 " step%s)\n",
            x->ntraces, x->ntraces == 1 ? "" : "s", x->nsteps_all, x->nsteps_all == 1 ? "" : "s");
    return;
  }
  for (size_t k = 0; k < x->nf; k++) {
    const afinding *f = &x->f[k];
    double ms = (double)f->ns / 1e6 / (double)f->nsteps;
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    char cell[512];
    rd_term_fit(cell, sizeof cell, 60, f->place);
    fprintf(out, "  %zu. %-15s %8.3f ms/step (%5.1f%%)  at %s\n", k + 1, classes[f->cls].id, ms,
            pct, cell);
    fprintf(out, "     evidence: %" PRIu64 " calls of %s, %.3f ms in all, over %" PRIu64
                 " step%s of %.3f ms\n",
            f->calls, f->fns, (double)f->ns / 1e6, f->nsteps, f->nsteps == 1 ? "" : "s",
            (double)f->step_ns / 1e6 / (double)f->nsteps);
    fprintf(out, "     estimated: %s\n     fix: %s\n", classes[f->cls].how, classes[f->cls].fix);
  }
}

void rd_advise_free(rd_advise *x) {
  if (!x) return;
  for (size_t k = 0; k < x->nf; k++) {
    free(x->f[k].place);
    free(x->f[k].trace);
    free(x->f[k].fns);
  }
  free(x->f);
  free(x->c);
  free(x->st_s);
  free(x->st_e);
  rd_m_free(&x->pageable);
  free(x);
}
