/* host.c — the findings of host calls that block the host or the GPU: sync-in-loop (host-device
 * synchronizations: cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
 * cudaMemcpy, cuStreamSynchronize, cuCtxSynchronize, cuMemcpyDtoH..., and a copy into pageable
 * memory, which returns only when done, made repeatedly from one place), pageable-h2d
 * (host-to-device copies whose source is pageable memory: the CUPTI memcpy record's src_kind,
 * CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) and malloc-in-loop (cudaMalloc/cudaFree and the driver's
 * cuMemAlloc/cuMemFree in the steady state: after the first step; any steady-state allocation is
 * a defect worth naming). Their cost is blocking_cost: what the host's head start on the GPU
 * would save (cudaFree synchronizes the device); a pageable copy also saves 3/4 of its GPU time
 * (pinned copies run ~4x faster), at most the call's time. */
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

static void host_trace(rd_advise *x, actx *a);
static const rd_finding_family host_family = {"host calls", host_trace, NULL};

const rd_finding_class rdf_sync_in_loop = {
    .id = "sync-in-loop",
    .summary = "synchronizing calls (.item(), .cpu(), cudaStreamSynchronize) repeated from one "
               "place.",
    .what = "cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, synchronous "
            "cudaMemcpy and copies into pageable memory (`.item()`, `.cpu()`) and driver forms, "
            "repeated from one place",
    .threshold = ">= 3 calls and >= 1 per step, >= 1% of step time",
    .cost = "the GPU idle time they cause: per call the smaller of its time and the GPU's idle "
            "time in the step's length after it (the head start the host lost)",
    .estimate = "GPU idle time the synchronizing calls cause (the smaller of a call's time and the "
                "GPU's idle time in a step's length after it: what the host's head start would "
                "save), divided by the steps",
    .evidence = "calls",
    .fix = "avoid .item()/.cpu()/print(tensor) and synchronous copies in the loop: accumulate on "
           "the GPU and synchronize once every N steps",
    .min_calls = ADV_MIN_CALLS, .per_step = 1, .min_pct = ADV_MIN_PCT,
    .family = &host_family,
};

const rd_finding_class rdf_pageable_h2d = {
    .id = "pageable-h2d",
    .summary = "host-to-device copies from pageable memory.",
    .what = "host-to-device copies whose source is pageable memory (the CUPTI memcpy record's "
            "source memory kind)",
    .threshold = ">= 3 copies from one place, >= 1%",
    .cost = "per call the GPU idle time after it (as sync-in-loop) and 3/4 of the copy's GPU time, "
            "at most the call's time",
    .estimate = "what pinned memory saves per call: the GPU idle time after it (as for "
                "sync-in-loop) and 3/4 of the copy's GPU time, at most the call's time, divided by "
                "the steps",
    .evidence = "calls",
    .fix = "copy from pinned memory: pin_memory=True in the DataLoader with .to(device, "
           "non_blocking=True), or cudaMallocHost/cudaHostAlloc buffers in C",
    .min_calls = ADV_MIN_CALLS, .min_pct = ADV_MIN_PCT,
    .family = &host_family,
};

const rd_finding_class rdf_malloc_in_loop = {
    .id = "malloc-in-loop",
    .summary = "cudaMalloc/cudaFree after the first step.",
    .what = "cudaMalloc/cudaFree (cuMemAlloc/cuMemFree) after the first step "
            "(`torch.cuda.empty_cache()`)",
    .threshold = ">= 2 calls from one place, >= 0.1%",
    .cost = "as sync-in-loop (cudaFree synchronizes the device)",
    .estimate = "GPU idle time the allocations and frees after the first step cause (the smaller "
                "of a call's time and the GPU's idle time after it; cudaFree synchronizes the "
                "device), divided by the steps",
    .evidence = "calls",
    .fix = "allocate once before the loop and reuse the buffers: keep the caching allocator warm "
           "and do not call torch.cuda.empty_cache() in the loop",
    .min_calls = 2, .min_pct = 0.1,
    .family = &host_family,
};

/* ---------------------------------------------------------------- detection */

/* The GPU's busy time as sorted, disjoint intervals (all devices), for blocking_cost(). */
typedef struct span { uint64_t s, e; } span;
static int by_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}
static span *gpu_busy_spans(const rd_advise *x, size_t *n) {
  span *v = rd_xmalloc((x->ng ? x->ng : 1) * sizeof *v);
  for (size_t i = 0; i < x->ng; i++) v[i] = (span){x->g[i].s, x->g[i].e};
  if (x->ng) rd_qsort(v, x->ng, sizeof *v, by_span);
  size_t w = 0;
  for (size_t i = 0; i < x->ng; i++) {
    if (w && v[i].s <= v[w - 1].e) {
      if (v[i].e > v[w - 1].e) v[w - 1].e = v[i].e;
    } else {
      v[w++] = v[i];
    }
  }
  *n = w;
  return v;
}

/* The GPU's idle time in [a, b), from the busy spans. */
static uint64_t idle_in(const span *v, size_t n, uint64_t a, uint64_t b) {
  uint64_t busy = 0;
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the first span that ends after a */
    size_t mid = (lo + hi) / 2;
    if (v[mid].e <= a) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i < n && v[i].s < b; i++) {
    uint64_t x = v[i].s > a ? v[i].s : a, y = v[i].e < b ? v[i].e : b;
    if (y > x) busy += y - x;
  }
  return b > a ? b - a - busy : 0;
}

/* What a blocking host call (a synchronization, an allocation or free: cudaFree synchronizes the
 * device) costs, which is what removing it saves: the host loses its head start on the GPU, the
 * time it waited, and the GPU starves after the call until the host is ahead again. So: the
 * GPU's idle time from the call's return up to `limit`, at most the call's
 * time. In a GPU-bound loop that is the bubble after the call; in a host-bound loop (the GPU idle
 * anyway, the wait short) the wait itself. `limit`: a step's length after the call. */
static uint64_t blocking_cost(const span *sp, size_t nsp, uint64_t s, uint64_t dur, uint64_t limit) {
  if (limit == UINT64_MAX) return dur;
  uint64_t idle = idle_in(sp, nsp, s + dur, limit);
  return idle < dur ? idle : dur;
}

/* How far after a blocking call at time t its cost is looked for: a step's length after it
 * (the length of the step that holds t; UINT64_MAX: no steps, or outside them). */
static uint64_t window_of(const rd_advise *x, uint64_t t, uint64_t dur) {
  for (size_t i = 0; i < x->nst; i++)
    if (t >= x->st[i].s && t < x->st[i].e) return t + dur + (x->st[i].e - x->st[i].s);
  return UINT64_MAX;
}

typedef struct blk { uint64_t start; size_t i; uint32_t tid; char *place; } blk;
static int by_tid_start(const void *p, const void *q) {
  const blk *a = p, *b = q;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  return a->start < b->start ? -1 : a->start > b->start;
}

/* For each call of x->c, the start of the next blocking call (a synchronization, an allocation
 * or free, a copy to pageable memory) of its thread from another place; UINT64_MAX: none.
 * What removing the blocking calls of one place saves ends there: the program blocks there
 * anyway, and the bubble after it is that place's own (two syncs a few ms apart share one
 * bubble, which removing the first leaves). Calls of the same place are one cause (.item() is
 * a copy and a synchronize; a batch's tensors, copied one after the other). */
static uint64_t *next_blocking(rd_advise *x, rd_trace *t) {
  blk *b = rd_xmalloc((x->n + 1) * sizeof *b);
  uint64_t *nx = rd_xmalloc((x->n + 1) * sizeof *nx);
  size_t m = 0;
  for (size_t i = 0; i < x->n; i++) {
    uint32_t one;
    nx[i] = UINT64_MAX;
    /* an asynchronous copy from pageable memory to the device returns once staged (no wait
     * for the device); one to pageable memory waits for its data */
    if (x->c[i].cls || (rd_m_get(&x->pageable, x->c[i].corr, &one) && one == PAGEABLE_D2H))
      b[m++] = (blk){x->c[i].start, i, x->c[i].tid, adv_place_of(t, x->c[i].stack)};
  }
  rd_qsort(b, m, sizeof *b, by_tid_start);
  for (size_t k = m; k-- > 1;) {
    if (b[k - 1].tid != b[k].tid) continue;
    nx[b[k - 1].i] = strcmp(b[k - 1].place, b[k].place) ? b[k].start : nx[b[k].i];
  }
  for (size_t k = 0; k < m; k++) free(b[k].place);
  free(b);
  return nx;
}

/* The end of a blocking call's window (window_of), cut at the next blocking call of its thread
 * (next: its start), when there is a window */
static uint64_t until_next(const rd_advise *x, uint64_t t, uint64_t dur, uint64_t next) {
  uint64_t w = window_of(x, t, dur);
  return w != UINT64_MAX && next > t && next < w ? next : w;
}

/* The findings of host calls: sync-in-loop, pageable-h2d, malloc-in-loop. */
static void host_trace(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
  uint64_t step_ns = a->step_ns;
  uint64_t after = a->after;
  uint64_t in_lo = a->in_lo;
  uint64_t in_hi = a->in_hi;
  size_t nsp;
  span *sp = gpu_busy_spans(x, &nsp);
  uint64_t *nx = next_blocking(x, t);
  for (size_t i = 0; i < x->n; i++) {
    acall *c = &x->c[i];
    const rd_finding_class *cls = c->cls;
    uint32_t one;
    if (!adv_in_win(c->start, in_lo, in_hi)) continue;
    if (!cls) {
      if (!rd_m_get(&x->pageable, c->corr, &one)) continue;
      if (one == PAGEABLE_D2H && adv_sync_fn(adv_fname(t, c->fn))) continue; /* counted as one */
      cls = one == PAGEABLE_D2H ? &rdf_sync_in_loop : &rdf_pageable_h2d;
    }
    afinding *f = adv_finding(x, base, cls, adv_place_of(t, c->stack), t, nsteps, step_ns);
    if (cls == &rdf_malloc_in_loop) {
      /* steady state: after the first step, or (no steps) every call of a place but its first */
      uint64_t n = c->calls;
      if (x->nst) {
        if (c->start < after) continue;
      } else if (!f->first) {
        f->first = 1;
        if (n-- <= 1) continue;
      }
      f->calls += n;
      uint64_t d = n == c->calls ? c->dur : c->dur / c->calls * n;
      f->ns += blocking_cost(sp, nsp, c->start, d, until_next(x, c->start, d, nx[i]));
    } else if (cls == &rdf_sync_in_loop) {
      f->calls += c->calls;
      f->ns += blocking_cost(sp, nsp, c->start, c->dur, until_next(x, c->start, c->dur, nx[i]));
    } else if (cls == &rdf_pageable_h2d) {
      /* from pinned memory with non_blocking the host no longer waits (its bubble is saved) and
       * the copy itself runs about 4x faster (PCIe Gen5: ~12 GB/s pageable, ~50 pinned); in a
       * host-bound loop that is the call's whole time */
      uint32_t us = 0;
      rd_m_get(&x->copy_us, c->corr, &us);
      uint64_t save = blocking_cost(sp, nsp, c->start, c->dur,
                                    until_next(x, c->start, c->dur, nx[i])) +
                      (uint64_t)us * 1000 * 3 / 4;
      f->calls += c->calls;
      f->ns += save < c->dur ? save : c->dur;
    } else {
      f->calls += c->calls;
      f->ns += c->dur;
    }
    adv_add_fn(&f->fns, adv_fname(t, c->fn));
  }
  free(nx);
  free(sp);
}
