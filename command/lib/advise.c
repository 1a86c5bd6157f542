/* advise.c — the findings of `dlhook advise`: known causes of lost time, each with a stable class
 * id, an estimated cost per step, its evidence, the place in the user's code and the usual fix.
 *
 * The classes are a table of rules: each one a descriptor (id, what it finds, threshold, how its
 * cost is estimated, what its evidence counts, fix) and a detection in the file of its family
 * under findings/ (rd_findings.h): host.c (sync-in-loop, pageable-h2d, malloc-in-loop), gpu.c
 * (launch-bound, low-occupancy, comm-not-overlapped), gemm.c (no-tensor-cores), memory.c
 * (memory-near-capacity, memory-leak, memory-fragmentation, out-of-memory), samples.c
 * (input-starved, cpu-bound-python), ranks.c (straggler-rank, slow-network-rank), self.c
 * (dlhook-overhead). This file is the driver: it gathers a trace during its second pass (the
 * sink), finds its steps, runs each family over it in the order of CLASSES, applies each
 * class's thresholds from its descriptor, merges the same finding of several traces, ranks by
 * cost and prints. Adding a class: its descriptor and detection (a new file, or a function in
 * its family's file) and one line in CLASSES; docs/advise.md's table (`make advise-doc`),
 * `dlhook advise --help` and its manual page are written from the descriptors.
 *
 * Steps: an NVTX range named like one (rd_step_number). Without them the loop is found from the
 * calls: the count c >= 3 that most distinct (function, stack) pairs of outermost calls share is
 * the number of iterations, and the occurrences of the earliest such pair open the steps (the
 * last one as long as the median). Without either, the span of the trace's calls is one step.
 * Only calls, GPU work and samples inside the steps count.
 *
 * The place of a call is the innermost frame of the user's Python code (rd_torch_of), else the
 * innermost frame in the program's own executable, else the innermost frame that has a name. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "findings/rd_findings.h"
#include "rd.h"
#include "rd_ncclev.h"
#include "rd_opts.h"
#include "rd_scan.h"

/* Every class, one line each. The order is that of docs/advise.md's table and of `dlhook advise
 * --help`, it ranks findings of equal cost, and each family runs over a trace when its first
 * class comes up here (the GPU family before the GEMM and sample families: they read the GPU's
 * busy time it measures). */
#define CLASSES(X)                                    \
  X(rdf_sync_in_loop)         /* findings/host.c */    \
  X(rdf_pageable_h2d)         /* findings/host.c */    \
  X(rdf_malloc_in_loop)       /* findings/host.c */    \
  X(rdf_launch_bound)         /* findings/gpu.c */     \
  X(rdf_no_tensor_cores)      /* findings/gemm.c */    \
  X(rdf_low_occupancy)        /* findings/gpu.c */     \
  X(rdf_memory_near_capacity) /* findings/memory.c */  \
  X(rdf_input_starved)        /* findings/samples.c */ \
  X(rdf_cpu_bound_python)     /* findings/samples.c */ \
  X(rdf_comm_not_overlapped)  /* findings/gpu.c */     \
  X(rdf_straggler_rank)       /* findings/ranks.c */   \
  X(rdf_slow_network_rank)    /* findings/ranks.c */   \
  X(rdf_dlhook_overhead)      /* findings/self.c */    \
  X(rdf_memory_leak)          /* findings/memory.c */  \
  X(rdf_memory_fragmentation) /* findings/memory.c */  \
  X(rdf_out_of_memory)        /* findings/memory.c */

#define EXTERN(c) extern const rd_finding_class c;
CLASSES(EXTERN)
#define ENTRY(c) &c,
static const rd_finding_class *const classes[] = {CLASSES(ENTRY)};
#define NCLASSES (sizeof classes / sizeof *classes)

/* The class's place in classes[]. */
static size_t class_ix(const rd_finding_class *c) {
  for (size_t i = 0; i < NCLASSES; i++)
    if (classes[i] == c) return i;
  return NCLASSES;
}

/* Whether classes[i] is the first class of its family in classes[] (its family runs there). */
static int family_first(size_t i) {
  for (size_t j = 0; j < i; j++)
    if (classes[j]->family == classes[i]->family) return 0;
  return 1;
}

/* 1 when the event may be kept; the trace's first event fixes its budget */
static int in_budget(rd_advise *x, const rd_trace *t) {
  if (!x->budget) x->budget = rd_default_event_limit(t->path, 2);
  if (x->events >= x->budget) {
    x->over = 1;
    return 0;
  }
  x->events++;
  return 1;
}

static void push_call(rd_advise *x, uint32_t tid, const dlh_api_event *e,
                      const rd_finding_class *cls) {
  PUSH(x->c, x->n, x->cap, 1024);
  x->c[x->n++] =
      (acall){e->start_ns, e->dur_ns, e->corr, dlh_api_calls(e), e->stack, e->fn, tid, cls};
}

static void on_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  rd_advise *x = ctx;
  if (x->memsink.packet) x->memsink.packet(x->memsink.ctx, t, p);
  if (p->data_case != DLH__PACKET__DATA_DEVICE || !p->device) return;
  for (size_t i = 0; i < x->ndev; i++)
    if (x->dev[i].d.id == p->device->id) { x->dev[i].d = *p->device; x->dev[i].d.name = NULL; return; }
  x->dev = rd_xrealloc(x->dev, (x->ndev + 1) * sizeof *x->dev);
  x->dev[x->ndev].d = *p->device;
  x->dev[x->ndev++].d.name = NULL;
}

static int64_t arg_or(const rd_trace *t, const dlh_api_event *e, const char *names, int64_t dflt) {
  uint64_t v;
  return rd_arg(t, e, names, &v) ? (int64_t)v : dflt;
}

/* What on_api looks for in a function, from its name: found once per function (by strcmp of
 * a dozen names, which cost more than the rest of on_api when done for every call). */
enum {
  FC_PUSH = 1, FC_LAUNCH = 2, FC_MATHMODE = 4, FC_COLLECTIVE = 8, FC_ALLREDUCE = 16, FC_SYNC = 32,
  FC_MALLOC = 64, FC_COPY = 128, FC_GEMM_NAME = 256, FC_LTMATMUL = 512, FC_KNOWN = 1u << 31
};

static uint32_t fn_class(const rd_func *f) {
  if (f->adv_class) return f->adv_class;
  const char *n = f->name;
  uint32_t c = FC_KNOWN;
  if (!strcmp(n, "__cudaPushCallConfiguration")) c |= FC_PUSH;
  if (!strcmp(n, "__cudaLaunchKernel") || !strcmp(n, "cudaLaunchKernel")) c |= FC_LAUNCH;
  if (f->domain == DLH__DOMAIN__DOMAIN_CUBLAS && !strcmp(n, "cublasSetMathMode")) c |= FC_MATHMODE;
  if (f->domain == DLH__DOMAIN__DOMAIN_NCCL && adv_collective_fn(n)) c |= FC_COLLECTIVE;
  if (!strcmp(n, "ncclAllReduce")) c |= FC_ALLREDUCE;
  if (adv_sync_fn(n)) c |= FC_SYNC;
  if (adv_malloc_fn(n)) c |= FC_MALLOC;
  if (adv_copy_fn(n)) c |= FC_COPY;
  if (f->domain == DLH__DOMAIN__DOMAIN_CUBLAS && strstr(n, "emm")) c |= FC_GEMM_NAME;
  if (f->domain == DLH__DOMAIN__DOMAIN_CUBLASLT && !strcmp(n, "cublasLtMatmul")) c |= FC_LTMATMUL;
  ((rd_func *)f)->adv_class = c; /* rd.h: a cache the analyses fill */
  return c;
}

static void on_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  rd_advise *x = ctx;
  if (x->memsink.api) x->memsink.api(x->memsink.ctx, t, tid, e);
  if (!in_budget(x, t)) return;
  rd_stepfind_api(x->sf, t, tid, e);
  const rd_func *f = rd_trace_func(t, e->fn);
  if (!f || !f->name) return;
  if (f->domain == DLH__DOMAIN__DOMAIN_NVTX) return;
  uint32_t stack = e->stack;
  /* nvcc's <<<>>>: __cudaPushCallConfiguration is called at the launch's line, the launch
   * itself from the kernel's stub, whose line is the kernel's declaration */
  uint32_t cls = fn_class(f);
  if (cls & FC_PUSH) rd_m_put(&x->push, tid, e->stack);
  else if (cls & FC_LAUNCH) {
    uint32_t ps;
    if (rd_m_get(&x->push, tid, &ps) && ps) stack = ps;
    rd_m_del(&x->push, tid);
  }
  if (e->corr || !e->depth) {
    PUSH(x->xc, x->nxc, x->capxc, 4096);
    x->xc[x->nxc] = (xcall){e->start_ns, e->start_ns + dlh_api_span(e), e->corr, stack, e->fn,
                            tid, e->depth, 0};
    if (e->corr) rd_m_put(&x->corr_ix, e->corr, (uint32_t)x->nxc);
    x->nxc++;
  }
  if (cls & FC_MATHMODE) {
    int64_t h = arg_or(t, e, "handle", 0), m = arg_or(t, e, "mode", 0);
    if (h) rd_m_put(&x->math, (uint64_t)h, (uint32_t)m);
  }
  if ((cls & FC_COLLECTIVE) && e->corr) {
    int64_t b = arg_or(t, e, "bytes", 0), n = arg_or(t, e, "nranks", 0);
    /* on the links: an all-reduce sends and receives 2 (n - 1) / n of its bytes, the others
     * at most their bytes */
    double wire = (cls & FC_ALLREDUCE) && n > 0 ? 2.0 * (double)b * (double)(n - 1) / (double)n
                                                          : (double)b;
    if (b > 0) rd_m_put(&x->nccl_kb, e->corr, (uint32_t)(wire / 1024 < UINT32_MAX ? wire / 1024 : UINT32_MAX));
  }
  if (e->depth) return;
  if (!x->lo || e->start_ns < x->lo) x->lo = e->start_ns;
  if (e->start_ns + dlh_api_span(e) > x->hi) x->hi = e->start_ns + dlh_api_span(e);
  if (cls & FC_SYNC) push_call(x, tid, e, &rdf_sync_in_loop);
  if (cls & FC_MALLOC) push_call(x, tid, e, &rdf_malloc_in_loop);
  if ((cls & FC_COPY) && e->corr) push_call(x, tid, e, NULL);
  int gemm = ((cls & FC_GEMM_NAME) && rd_arg(t, e, "flops", &(uint64_t){0})) || (cls & FC_LTMATMUL);
  if (gemm) {
    int64_t dt = arg_or(t, e, "dtype|atype|Atype", -1), comp = arg_or(t, e, "compute|computeType|compute_type", -1);
    int64_t m = arg_or(t, e, "m", 0), n = arg_or(t, e, "n", 0), k = arg_or(t, e, "k", 0);
    int reason = 0;
    if (dt == 0 /* CUDA_R_32F */) {
      uint32_t mode = 0;
      int64_t h = arg_or(t, e, "handle", 0);
      int tf32 = (h && rd_m_get(&x->math, (uint64_t)h, &mode) && (mode & 0xf) == 3) ||
                 comp == 74 || comp == 75 || comp == 77; /* CUBLAS_COMPUTE_32F_FAST_* */
      if (!tf32) reason = 1;
    } else if ((dt == 2 || dt == 14) && ((m % 8) || (n % 8) || (k % 8))) {
      reason = 2;
    }
    if (reason) {
      PUSH(x->gm, x->ngm, x->capgm, 256);
      x->gm[x->ngm++] = (agemm){(uint32_t)(x->nxc - 1), reason, m, n, k};
    }
  }
}

static void on_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  rd_advise *x = ctx;
  if (!in_budget(x, t)) return;
  /* vals: bytes, copy_kind (1 HtoD, 2 DtoH), src_kind, dst_kind (1 = pageable). A copy into
   * pageable memory returns only when the GPU has done it, also cudaMemcpyAsync (`.item()`,
   * `.cpu()`): the call is a synchronization (PAGEABLE_D2H) */
  if (g->kind == RD_MEMCPY && g->nvals >= 3 && g->vals[1] == 1 && g->vals[2] == 1 && g->corr) {
    rd_m_put(&x->pageable, g->corr, PAGEABLE_H2D);
    rd_m_put(&x->copy_us, g->corr, (uint32_t)(g->dur / 1000 < UINT32_MAX ? g->dur / 1000 : UINT32_MAX));
  }
  else if (g->kind == RD_MEMCPY && g->nvals >= 4 && g->vals[1] == 2 && g->vals[3] == 1 && g->corr)
    rd_m_put(&x->pageable, g->corr, PAGEABLE_D2H);
  if (!rd_gpu_busy(g->kind)) return;
  PUSH(x->g, x->ng, x->capg, 4096);
  gop *o = &x->g[x->ng++];
  memset(o, 0, sizeof *o);
  *o = (gop){g->start, g->start + g->dur, g->corr, g->device, g->kind, g->name,
             g->kind == RD_KERNEL && (rd_gpu_kflags(g) & RD_KF_NCCL), {0}, -1};
  if (g->kind == RD_KERNEL)
    for (uint32_t i = 0; i < 9 && i < g->nvals; i++) o->v[i] = (uint32_t)g->vals[i];
}

static void on_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  rd_advise *x = ctx;
  if (!in_budget(x, t)) return;
  PUSH(x->sm, x->nsm, x->capsm, 1024);
  x->sm[x->nsm++] = (asample){s->time, s->weight, s->tid, s->stack, s->kind};
}

rd_advise *rd_advise_new(void) {
  rd_advise *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  x->sf = rd_stepfind_new();
  return x;
}

rd_sink rd_advise_sink(rd_advise *x) {
  if (!x->mem) {
    x->mem = rd_memcol_new();
    x->memsink = rd_memory_sink(x->mem);
  }
  /* unwindowed: the memory ledger must see every allocation (as its own sink asks) */
  return (rd_sink){x, on_packet, on_api, on_gpu, 0, on_sample};
}


/* Costliest first; a class ranked first (it ends the run) before the others; equal costs in
 * the order of classes[]. */
static int by_cost(const void *a, const void *b) {
  const afinding *p = a, *q = b;
  if (p->cls->first != q->cls->first) return p->cls->first ? -1 : 1;
  double cp = (double)p->ns / (double)(p->nsteps ? p->nsteps : 1);
  double cq = (double)q->ns / (double)(q->nsteps ? q->nsteps : 1);
  return cp < cq ? 1 : cp > cq ? -1 : (int)class_ix(p->cls) - (int)class_ix(q->cls);
}

/* The trace's steps (stepfind.c): a->nsteps, step_ns, after, in_lo and in_hi. Without steps the
 * span of its outermost calls is one step and everything counts. */
static void trace_steps(rd_advise *x, actx *a) {
  a->nsteps = 1;
  a->step_ns = x->hi > x->lo ? x->hi - x->lo : 0;
  a->after = 0;
  a->in_lo = 0;
  a->in_hi = UINT64_MAX;
  x->nst = rd_stepfind_end(x->sf, &x->steps_from, &x->st);
  if (!x->nst) return;
  /* the first iteration of a loop found in PyTorch's structure is its warm-up (lazy
   * initialization, autotuning, the caching allocator's growth, DDP's first bucket pass): with
   * three or more, it does not count, as torch.profiler's schedule(warmup=...) leaves it out */
  if (x->nst >= 3 && x->steps_from >= RD_STEPS_OPTIMIZER && x->steps_from <= RD_STEPS_TRAINING_STEP) {
    memmove(&x->st[0], &x->st[1], (x->nst - 1) * sizeof *x->st);
    x->nst--;
  }
  a->in_lo = UINT64_MAX;
  a->in_hi = 0;
  a->nsteps = x->nst;
  a->step_ns = 0;
  a->after = UINT64_MAX;
  for (size_t i = 0; i < x->nst; i++) {
    if (x->st[i].s < a->in_lo) a->in_lo = x->st[i].s;
    if (x->st[i].e > a->in_hi) a->in_hi = x->st[i].e;
    a->step_ns += x->st[i].e - x->st[i].s;
    if (x->st[i].e < a->after) a->after = x->st[i].e; /* the end of the first step */
  }
  if (x->nst < 2) a->after = UINT64_MAX; /* one step: no steady state to tell */
}

/* Links every call to the outermost call it is inside (xcall.top), and sets a->main_tid: the
 * thread with the most outermost calls. */
static void link_tops(rd_advise *x, actx *a) {
  uint32_t main_tid = 0;
  {
    uint32_t *o = rd_xmalloc((x->nxc ? x->nxc : 1) * sizeof *o);
    for (size_t i = 0; i < x->nxc; i++) o[i] = (uint32_t)i;
    adv_sort_tid_start(o, x->nxc, x->xc);
    uint32_t top = UINT32_MAX, cur_tid = 0, best_n = 0, n = 0;
    for (size_t j = 0; j < x->nxc; j++) {
      xcall *c = &x->xc[o[j]];
      if (j == 0 || c->tid != cur_tid) {
        if (n > best_n) best_n = n, main_tid = cur_tid;
        cur_tid = c->tid, n = 0, top = UINT32_MAX;
      }
      if (!c->depth) { top = o[j]; n++; }
      c->top = (c->depth && top != UINT32_MAX && c->start <= x->xc[top].end) ? top : o[j];
    }
    if (n > best_n) main_tid = cur_tid;
    free(o);
  }
  a->main_tid = main_tid;
}

/* The GPU's busy time as sorted, disjoint intervals (all devices), for blocking_cost(). */
/* Whether a finding passes its class's thresholds (the descriptor's). */
static int above(const afinding *f) {
  const rd_finding_class *c = f->cls;
  double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
  if (c->always) return 1;
  return f->calls >= c->min_calls && (!c->per_step || f->calls >= f->nsteps) && pct >= c->min_pct;
}

/* Drops the trace's findings below their thresholds. */
static void thresholds(rd_advise *x, actx *a) {
  size_t w = a->base;
  for (size_t k = a->base; k < x->nf; k++) {
    afinding *f = &x->f[k];
    if (above(f)) x->f[w++] = *f;
    else adv_finding_free(f);
  }
  x->nf = w;
}

/* The same finding in several traces (ranks, workers): one, its cost over all their steps. */
static void coalesce(rd_advise *x, actx *a) {
  size_t base = a->base, w = base;
  for (size_t k = base; k < x->nf; k++) {
    afinding *f = &x->f[k], *o = NULL;
    for (size_t j = 0; j < base && !o; j++)
      if (x->f[j].cls == f->cls && !strcmp(x->f[j].place, f->place)) o = &x->f[j];
    if (!o) { x->f[w++] = *f; continue; }
    o->calls += f->calls, o->ns += f->ns, o->nsteps += f->nsteps, o->step_ns += f->step_ns;
    o->ntraces = (o->ntraces ? o->ntraces : 1) + 1;
    if (f->fns) adv_add_fn(&o->fns, f->fns);
    adv_finding_free(f);
  }
  x->nf = w;
}

void rd_advise_trace_end(rd_advise *x, rd_trace *t) {
  if (x->over)
    rd_error("%s: advise: the findings are of the first %" PRIu64 " events (the limit for a file of "
             "this size: dlhook advise --help, --max-events)", t->path, x->budget);
  x->events = x->budget = 0;
  x->over = 0;
  actx a = {.t = t, .base = x->nf};
  trace_steps(x, &a);
  x->ts = rd_xrealloc(x->ts, (x->ntraces + 1) * sizeof *x->ts);
  x->ts[x->ntraces] = (asteps){rd_xstrdup(t->path), a.nsteps, a.step_ns, x->steps_from, a.in_lo, a.in_hi};
  x->ntraces++;
  x->nsteps_all += a.nsteps;
  x->step_ns_all += a.step_ns;
  link_tops(x, &a);
  for (size_t i = 0; i < NCLASSES; i++)
    if (family_first(i) && classes[i]->family->trace) classes[i]->family->trace(x, &a);
  thresholds(x, &a);
  coalesce(x, &a);
  if (x->nf) rd_qsort(x->f, x->nf, sizeof *x->f, by_cost);
  x->n = x->nst = x->nxc = x->ng = x->ngm = x->nsm = x->ndev = 0;
  x->lo = x->hi = 0;
  rd_m_free(&x->pageable);
  rd_m_free(&x->copy_us);
  rd_m_free(&x->nccl_kb);
  rd_m_free(&x->corr_ix);
  rd_m_free(&x->math);
  rd_m_free(&x->push);
  memset(&x->push, 0, sizeof x->push);
  memset(&x->pageable, 0, sizeof x->pageable);
  memset(&x->copy_us, 0, sizeof x->copy_us);
  memset(&x->nccl_kb, 0, sizeof x->nccl_kb);
  memset(&x->corr_ix, 0, sizeof x->corr_ix);
  memset(&x->math, 0, sizeof x->math);
}

/* Several ranks (after rd_ranks_finish): the findings that compare the traces (straggler-rank),
 * ranked in. */
void rd_advise_ranks(rd_advise *x) {
  if (!x) return;
  size_t added = 0;
  for (size_t i = 0; i < NCLASSES; i++)
    if (family_first(i) && classes[i]->family->ranks) added += classes[i]->family->ranks(x);
  if (added) rd_qsort(x->f, x->nf, sizeof *x->f, by_cost);
}

size_t rd_advise_count(const rd_advise *x) { return x ? x->nf : 0; }

void rd_advise_json(FILE *out, rd_advise *x) {
  fputs("[", out);
  for (size_t k = 0; k < x->nf; k++) {
    const afinding *f = &x->f[k];
    double ms = (double)f->ns / 1e6 / (double)f->nsteps;
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    fprintf(out, "%s{\"rank\":%zu,\"class\":", k ? "," : "", k + 1);
    rd_json_str(out, f->cls->id);
    fputs(",\"cost_ms_per_step\":", out);
    rd_json_double(out, ms);
    fputs(",\"cost_pct\":", out);
    rd_json_double(out, pct);
    fputs(",\"estimate\":", out);
    rd_json_str(out, f->cls->estimate);
    fprintf(out, ",\"evidence\":{\"calls\":%" PRIu64 ",\"ns\":%" PRIu64 ",\"functions\":", f->calls,
            f->ns);
    rd_json_str(out, f->fns ? f->fns : "");
    fprintf(out, ",\"steps\":%" PRIu64 ",\"step_ns\":%" PRIu64 ",\"steps_from\":\"%s\"",
            f->nsteps, f->step_ns, rd_steps_from_name(f->steps_from));
    if (f->detail) {
      fputs(",\"detail\":", out);
      rd_json_str(out, f->detail);
    }
    fputs("},\"place\":", out);
    rd_json_str(out, f->place);
    if (f->cls == &rdf_input_starved && x->dataset.n) {
      fputs(",\"dataset_place\":", out);
      rd_json_str(out, x->dataset.k[adv_tally_top(&x->dataset)]);
    }
    fputs(",\"trace\":", out);
    rd_json_str(out, f->trace);
    fprintf(out, ",\"traces\":%u", f->ntraces ? f->ntraces : 1);
    fputs(",\"fix\":", out);
    rd_json_str(out, f->cls->fix);
    fputs("}", out);
  }
  fputs("]", out);
}

void rd_advise_steps_json(FILE *out, const rd_advise *x) {
  fputs("[", out);
  for (size_t i = 0; i < x->ntraces; i++) {
    const asteps *a = &x->ts[i];
    fputs(i ? ",{\"trace\":" : "{\"trace\":", out);
    rd_json_str(out, a->path);
    fprintf(out, ",\"steps\":%" PRIu64 ",\"step_ns\":%" PRIu64 ",\"steps_from\":\"%s\"}",
            a->nsteps, a->step_ns, rd_steps_from_name(a->from));
  }
  fputs("]", out);
}

/* How the steps of a trace were found, for the line that says there is no finding. */
static const char *steps_said(int from) {
  switch (from) {
  case RD_STEPS_OPTIMIZER: return ", one per Optimizer.step";
  case RD_STEPS_BACKWARD: return ", one per backward()";
  case RD_STEPS_TRAINING_STEP: return ", one per training_step";
  case RD_STEPS_DETECTED: return ", detected from the repeating calls";
  default: return "";
  }
}

/* A finding's place for a line that ends with it: relative to the working directory, safe
 * for a terminal, at most `w` (≤ 60) columns with its end (the line number) kept, no trailing
 * blanks. */
static const char *place_cell(const char *place, size_t w) {
  static char cell[4 * 60 + 8];
  if (w > 60) w = 60;
  const char *p = rd_place_short(place);
  size_t n = strlen(p);
  if (n > w) p += n - (w - 3); /* "..." and the last w - 3 bytes */
  rd_term_fit(cell + (n > w ? 3 : 0), sizeof cell - 3, w - 3 + (n > w ? 0 : 3), p);
  if (n > w) memcpy(cell, "...", 3);
  for (size_t k = strlen(cell); k > 0 && cell[k - 1] == ' '; k--) cell[k - 1] = 0;
  return cell;
}

size_t rd_advise_headlines(FILE *out, rd_advise *x, size_t max) {
  size_t k = 0;
  for (; x && k < x->nf && k < max; k++) {
    const afinding *f = &x->f[k];
    fprintf(out, "  %zu. %-20s %8.3f ms/step (%5.1f%%)  %s\n", k + 1, f->cls->id,
            (double)f->ns / 1e6 / (double)f->nsteps,
            f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0, place_cell(f->place, 46));
  }
  return k;
}

void rd_advise_table(FILE *out, rd_advise *x) {
  fputs("Findings\n", out);
  if (!x->nf) {
    fprintf(out, "  no findings above the thresholds (%zu trace%s, %" PRIu64 " step%s%s)\n",
            x->ntraces, x->ntraces == 1 ? "" : "s", x->nsteps_all, x->nsteps_all == 1 ? "" : "s",
            x->ntraces == 1 ? steps_said(x->steps_from) : "");
    return;
  }
  for (size_t k = 0; k < x->nf; k++) {
    const afinding *f = &x->f[k];
    double ms = (double)f->ns / 1e6 / (double)f->nsteps;
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    fprintf(out, "  %zu. %-15s %8.3f ms/step (%5.1f%%)  at %s\n", k + 1, f->cls->id, ms,
            pct, place_cell(f->place, 60));
    fprintf(out, "     evidence: %" PRIu64 " %s of %s, %.3f ms in all, over %" PRIu64
                 " step%s of %.3f ms\n",
            f->calls, f->cls->evidence,
            f->fns ? f->fns : "", (double)f->ns / 1e6, f->nsteps, f->nsteps == 1 ? "" : "s",
            (double)f->step_ns / 1e6 / (double)f->nsteps);
    if (f->detail) fprintf(out, "     %s\n", f->detail);
    if (f->ntraces > 1) fprintf(out, "     in %u traces (cost over all their steps; first: %s)\n", f->ntraces, f->trace);
    if (f->cls == &rdf_input_starved && x->dataset.n)
      fprintf(out, "     the Dataset's time: %s\n", x->dataset.k[adv_tally_top(&x->dataset)]);
    fprintf(out, "     estimated: %s\n     fix: %s\n", f->cls->estimate, f->cls->fix);
  }
}

void rd_advise_free(rd_advise *x) {
  if (!x) return;
  for (size_t k = 0; k < x->nf; k++) adv_finding_free(&x->f[k]);
  for (size_t i = 0; i < x->npc; i++) free(x->pc[i].path), free(x->pc[i].place), adv_tally_free(&x->pc[i].t);
  free(x->pc);
  rd_ncclstats_free(x->nccl);
  for (size_t i = 0; i < x->nnr; i++) free(x->nr[i].place);
  free(x->nr);
  for (size_t i = 0; i < x->ntraces; i++) free(x->ts[i].path);
  free(x->ts);
  adv_tally_free(&x->dataset);
  rd_memcol_free(x->mem);
  free(x->f);
  free(x->c);
  free(x->xc);
  free(x->g);
  free(x->gm);
  free(x->sm);
  free(x->dev);
  rd_stepfind_free(x->sf);
  rd_m_free(&x->pageable);
  rd_m_free(&x->copy_us);
  rd_m_free(&x->nccl_kb);
  rd_m_free(&x->corr_ix);
  rd_m_free(&x->math);
  rd_m_free(&x->push);
  free(x);
}

/* ---------------------------------------------------------------- the classes, for the docs */

void rd_advise_classes_help(FILE *f, int man) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return;
  fputs("Classes (thresholds: docs/advise.md):\n\n", m);
  for (size_t i = 0; i < NCLASSES; i++)
    fprintf(m, "%s %s: %s", i ? "\n" : "", classes[i]->id, classes[i]->summary);
  fclose(m);
  rd_help_text(f, text, man);
  free(text);
}

void rd_advise_classes_doc(FILE *f) {
  fputs("| class | what | threshold | cost estimated as |\n|---|---|---|---|\n", f);
  for (size_t i = 0; i < NCLASSES; i++)
    fprintf(f, "| `%s` | %s | %s | %s |\n", classes[i]->id, classes[i]->what, classes[i]->threshold,
            classes[i]->cost);
}
