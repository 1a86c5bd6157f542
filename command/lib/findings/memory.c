/* memory.c — the memory findings, from the memory ledger (memory.c of command/lib) and its
 * analyses (memfind.c): memory-near-capacity (a device's live allocations reached >= 90 % of
 * its memory: a risk, not lost time, ranked last), memory-leak (live memory at the step ends
 * grew at >= 3/4 of them after the first step, by >= 1 MiB in all; the place holds the memory
 * still live at the last step end), memory-fragmentation (PyTorch's default caching allocator,
 * replayed over the tensors of a --torch-memory trace, reserves at the peak >= 1.5x the
 * allocated bytes and >= 128 MiB more; the place made the requests that created the idle segments),
 * out-of-memory (a failed allocation: the request, what was live by place, the largest free
 * block). The last three cost nothing but are ranked first: they end the run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"
#include "rd_memfind.h"

#define ADV_MEM_PCT 90.0

static void memory_trace(rd_advise *x, actx *a);
static const rd_finding_family memory_family = {"memory", memory_trace, NULL};

const rd_finding_class rdf_memory_near_capacity = {
    .id = "memory-near-capacity",
    .summary = "live device memory >= 90% of the device's.",
    .what = "a device's live allocations (the memory ledger) at >= 90 % of its memory",
    .threshold = "the peak",
    .cost = "none (a risk, ranked last); the place is the allocation that reached the peak",
    .estimate = "none: a risk of out-of-memory errors and allocator thrashing, not lost time",
    .evidence = "calls",
    .fix = "leave headroom: smaller batches with gradient accumulation, activation checkpointing, "
           "bf16/fp16, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation",
    .always = 1,
    .family = &memory_family,
};

const rd_finding_class rdf_memory_leak = {
    .id = "memory-leak",
    .summary = "live memory grows step over step (ranked first).",
    .what = "live memory at the step ends grows step over step after the first "
            "([memory.md](memory.md#findings-dlhook-advise))",
    .threshold = ">= 3/4 of the step ends, >= 1 MiB",
    .cost = "none (ranked first: it ends the run); the place is the line that holds the most of "
            "the growth",
    .estimate = "none: live memory grows step over step until the run fails with an out-of-memory "
                "error (ranked first)",
    .evidence = "calls",
    .fix = "do not keep tensors across steps: store loss.item() or tensor.detach().cpu() rather "
           "than the tensor (which holds its autograd graph), and clear caches and lists you "
           "append to",
    .always = 1, .first = 1,
    .family = &memory_family,
};

const rd_finding_class rdf_memory_fragmentation = {
    .id = "memory-fragmentation",
    .summary = "PyTorch's caching allocator reserves much more than is allocated at the peak "
               "(--torch-memory; ranked first).",
    .what = "PyTorch's default caching allocator, replayed over the tensors of a `--torch-memory` "
            "trace, holds much more reserved than allocated at the peak "
            "([memory.md](memory.md#findings-dlhook-advise))",
    .threshold = "reserved >= 1.5x allocated and >= 128 MiB more",
    .cost = "none (ranked first); the place is the line whose requests made the idle segments",
    .estimate = "none: PyTorch's caching allocator reserves memory it cannot reuse for the next "
                "requests, which ends in out-of-memory errors with memory free (ranked first)",
    .evidence = "calls",
    .fix = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place, so blocks of "
           "changing sizes reuse them); or pad changing shapes (sequence lengths, batch sizes) to "
           "a few bucket sizes so that freed blocks fit the next requests",
    .always = 1, .first = 1,
    .family = &memory_family,
};

const rd_finding_class rdf_out_of_memory = {
    .id = "out-of-memory",
    .summary = "a failed allocation, what was live by place, the largest free block (ranked "
               "first).",
    .what = "a failed device allocation: the request, what was live by place, the largest free "
            "block ([memory.md](memory.md#findings-dlhook-advise))",
    .threshold = "any",
    .cost = "none (ranked first); the place is the failed request's line",
    .estimate = "none: the run failed to allocate (ranked first)",
    .evidence = "calls",
    .fix = "make room at the places that held the most then: smaller batches with gradient "
           "accumulation, activation checkpointing, bf16/fp16, freeing what is no longer needed "
           "(del, no lists of tensors); when free memory exceeded the request, "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation",
    .always = 1, .first = 1,
    .family = &memory_family,
};

/* ---------------------------------------------------------------- detection */

/* memory-leak (memfind.c): live memory that grows step over step, at the place that holds the
 * most of it. */
static void leak_class(rd_advise *x, actx *a, const rd_mem_sample *ms, long nms) {
  rd_memleak lk[16];
  size_t nl = rd_memleaks(a->t, ms, nms, x->st, x->nst, lk, 16);
  for (size_t i = 0; i < nl && i < 3; i++) {
    afinding *f = adv_finding(x, a->base, &rdf_memory_leak, adv_place_of(a->t, lk[i].stack), a->t, a->nsteps, a->step_ns);
    f->calls = lk[i].allocs;
    f->first = 1;
    adv_add_fn(&f->fns, "allocations");
    adv_detail(f, "live memory grew by %.2f MiB over %" PRIu64 " steps (at %" PRIu64 " of %" PRIu64
              " step ends); %.2f MiB allocated here after the first step are still live at the "
              "last",
           (double)lk[i].growth / 1048576.0, lk[i].steps, lk[i].grew, lk[i].steps - 1,
           (double)lk[i].bytes / 1048576.0);
  }
}

/* memory-fragmentation and out-of-memory (memfind.c): the caching allocator's idle reserve at
 * the peak, by the place that made it; each failed allocation with what was live then. */
static void frag_oom_classes(rd_advise *x, actx *a, const rd_mem_sample *ms, long nms,
                             const rd_mem_fail *fl, size_t nfl) {
  rd_memfrag fr[8];
  size_t nf = rd_memfrag_places(a->t, ms, nms, fr, 8);
  for (size_t i = 0; i < nf && i < 3; i++) {
    afinding *f = adv_finding(x, a->base, &rdf_memory_fragmentation, adv_place_of(a->t, fr[i].stack), a->t, a->nsteps, a->step_ns);
    f->calls = fr[i].segments;
    f->first = 1;
    adv_add_fn(&f->fns, "segments");
    adv_detail(f, "at the peak PyTorch's default caching allocator holds %.1f MiB reserved for %.1f "
              "MiB of tensors; %.1f MiB of it idle in %" PRIu64 " segments made for requests here",
           (double)fr[i].reserved / 1048576.0, (double)fr[i].allocated / 1048576.0,
           (double)fr[i].idle / 1048576.0, fr[i].segments);
  }
  rd_memoom oo[4];
  const Dlh__DeviceInfo *dv = nfl ? adv_device(x, fl[0].device) : NULL;
  size_t no = rd_memooms(a->t, ms, nms, fl, nfl, dv ? dv->total_mem : 0, oo, 4);
  for (size_t i = 0; i < no; i++) {
    afinding *f = adv_finding(x, a->base, &rdf_out_of_memory, adv_place_of(a->t, oo[i].fail.stack), a->t, a->nsteps, a->step_ns);
    f->calls = oo[i].fail.calls;
    f->first = 1;
    adv_add_fn(&f->fns, adv_fname(a->t, oo[i].fail.fn));
    char *by = NULL;
    size_t blen = 0;
    FILE *m = open_memstream(&by, &blen);
    for (size_t k = 0; m && k < oo[i].nplaces; k++) {
      char *pl = adv_place_of(a->t, oo[i].place[k].stack);
      fprintf(m, "%s%s %.1f MiB (%" PRIu64 ")", k ? ", " : "", pl,
              (double)oo[i].place[k].bytes / 1048576.0, oo[i].place[k].allocs);
      free(pl);
    }
    if (m) fclose(m);
    adv_detail(f, "%.1f MiB requested with %.1f MiB live of %.1f MiB; largest free block %.1f MiB%s; "
              "live by place: %s",
           (double)oo[i].fail.bytes / 1048576.0, (double)oo[i].live / 1048576.0,
           (double)oo[i].capacity / 1048576.0, (double)oo[i].largest_free / 1048576.0,
           oo[i].model ? " (PyTorch's default caching allocator)" : "", by ? by : "");
    free(by);
  }
}

/* Memory near capacity (memory-near-capacity): the ledger's peak per device. */
static void memory_trace(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
  uint64_t step_ns = a->step_ns;
  if (!x->mem) return;
  rd_mem_sample *ms = NULL;
  rd_mem_fail *fl = NULL;
  size_t nfl = 0;
  long nms = rd_memcol_replay(x->mem, &ms, &fl, &nfl, 0);
  x->mem = NULL;
  memset(&x->memsink, 0, sizeof x->memsink);
  for (size_t d = 0; d < x->ndev; d++) {
    const Dlh__DeviceInfo *dv = &x->dev[d].d;
    if (!dv->total_mem) continue;
    uint64_t peak = 0, at = 0;
    for (long i = 0; i < nms; i++)
      if (ms[i].device == dv->id && ms[i].device_live_bytes > peak) peak = ms[i].device_live_bytes, at = ms[i].ts_ns;
    double pct = 100.0 * (double)peak / (double)dv->total_mem;
    if (pct < ADV_MEM_PCT) continue;
    /* the allocation that made the peak: the allocating call around that moment */
    const acall *best = NULL;
    for (size_t i = 0; i < x->n; i++) {
      const acall *c = &x->c[i];
      if (c->cls != &rdf_malloc_in_loop || c->start > at || !strstr(adv_fname(t, c->fn), "lloc")) continue;
      if (!best || c->start > best->start) best = c;
    }
    afinding *f = adv_finding(x, base, &rdf_memory_near_capacity, best ? adv_place_of(t, best->stack) : rd_xstrdup("[unknown]"),
                          t, nsteps, step_ns);
    f->calls = 1;
    f->first = 1; /* kept whatever its (zero) cost */
    if (best) adv_add_fn(&f->fns, adv_fname(t, best->fn));
    adv_detail(f, "device %u: %.2f GiB of %.2f GiB live at the peak (%.1f %%)", dv->id,
           (double)peak / 1073741824.0, (double)dv->total_mem / 1073741824.0, pct);
  }
  leak_class(x, a, ms, nms);
  frag_oom_classes(x, a, ms, nms, fl, nfl);
  free(fl);
  free(ms);
}

