/* samples.c — the findings of host samples: input-starved (samples of the main thread, the one
 * making most CUDA calls, inside the DataLoader, a frame in torch/utils/data/, while the GPU was
 * busy < 90 % of the steps; the Dataset's own line, from the samples under the DataLoader's
 * fetcher in any trace, is dataset_place) and cpu-bound-python (one Python function, the
 * innermost frame of user code, holds >= 20 % of the step in on-CPU samples of the main thread,
 * which is on CPU >= 50 % of the step while the GPU is busy < 50 %). The GPU's busy time is the
 * GPU family's (actx.gpu_busy). Both need samples (on by default, --sample-hz). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

static void samples_trace(rd_advise *x, actx *a);
static const rd_finding_family samples_family = {"host samples", samples_trace, NULL};

const rd_finding_class rdf_input_starved = {
    .id = "input-starved",
    .summary = "the main thread's samples in the DataLoader (needs samples).",
    .what = "host samples of the main thread (the one making most calls) inside the DataLoader "
            "(`torch/utils/data/`), while the GPU is busy < 90 % of the steps; `dataset_place` is "
            "the user line most sampled under the DataLoader's fetcher, in any trace (workers too)",
    .threshold = ">= 5%",
    .cost = "the sampled time (on-CPU and wait) there",
    .estimate = "sampled host time of the main thread in the DataLoader, divided by the steps",
    .evidence = "samples",
    .fix = "feed the GPU ahead: DataLoader(num_workers>0, pin_memory=True, prefetch_factor, "
           "persistent_workers=True), and make the Dataset's __getitem__ cheaper",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &samples_family,
};

const rd_finding_class rdf_cpu_bound_python = {
    .id = "cpu-bound-python",
    .summary = "one Python function dominating a host-bound step (needs samples).",
    .what = "each Python function of user code (the innermost user frame; a comprehension counts in "
            "its function) holding on-CPU samples of the main thread, which is on CPU >= 50 % of "
            "the steps while the GPU is busy < 50 %",
    .threshold = "the function >= 20%, >= 10 samples",
    .cost = "its sampled CPU time; the place is its most sampled line",
    .estimate = "sampled CPU time of the main thread in that function, divided by the steps",
    .evidence = "samples",
    .fix = "move the work out of Python: vectorize it as tensor operations on the GPU, or "
           "torch.compile the function",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &samples_family,
};

/* ---------------------------------------------------------------- detection */

/* Python frames of samples: is f a frame of the DataLoader / its fetcher? */
static int dl_frame(const rd_frame *f) { return f->python && f->file && strstr(f->file, "torch/utils/data/"); }
static int fetch_frame(const rd_frame *f) { return f->python && f->file && strstr(f->file, "torch/utils/data/_utils/fetch.py"); }
static char *py_place(const rd_frame *f) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s:%u", f->file, f->line);
  return rd_xstrdup(buf);
}


/* input-starved: the main thread's samples in the DataLoader (input: by the user line under it,
 * input_w in all) while the GPU is busy < 90 % of the steps (busy: its share of span) */
static void input_starved(rd_advise *x, actx *a, const tally *input, uint64_t input_w, double busy,
                          double span) {
  if (!(input->n && 100.0 * (double)input_w / span >= ADV_MIN_PCT_GPU && busy < 0.9)) return;
  size_t b = adv_tally_top(input);
  afinding *f = adv_finding(x, a->base, &rdf_input_starved, rd_xstrdup(input->k[b]), a->t,
                            a->nsteps, a->step_ns);
  f->ns = input_w;
  f->calls = 0;
  for (size_t i = 0; i < x->nsm; i++)
    f->calls += x->sm[i].tid == a->main_tid && adv_in_win(x->sm[i].time, a->in_lo, a->in_hi);
  adv_add_fn(&f->fns, "DataLoader.__next__");
  adv_detail(f, "the GPU was busy %.0f %% of the steps", busy * 100);
}

/* cpu-bound-python, one function b of fn: a finding at its most sampled line */
static void cpu_bound_fn(rd_advise *x, actx *a, const tally *fn, const uint64_t *fn_n, size_t b,
                         const tally *line) {
  size_t kl = strlen(fn->k[b]), bl = SIZE_MAX;
  for (size_t i = 0; i < line->n; i++)
    if (!strncmp(line->k[i], fn->k[b], kl) && line->k[i][kl] == '\t' &&
        (bl == SIZE_MAX || line->w[i] > line->w[bl]))
      bl = i;
  const char *pl = bl != SIZE_MAX ? strrchr(line->k[bl], '\t') + 1 : "[unknown]";
  afinding *f = adv_finding(x, a->base, &rdf_cpu_bound_python, rd_xstrdup(pl), a->t, a->nsteps,
                            a->step_ns);
  f->ns += fn->w[b];
  f->calls += fn_n[b];
  adv_add_fn(&f->fns, strchr(fn->k[b], '\t') + 1);
}

/* cpu-bound-python: each Python function of user code (fn: "file\tfunction" by on-CPU weight,
 * fn_n its samples; line: "file\tfunction\tplace") holding >= 20 % of the step while the main
 * thread is on CPU (main_cpu) >= 50 % of it and the GPU is busy < 50 %. On CPU, not "not
 * blocked": the time a thread waited for a CPU is not known from the samples (the sampler drops
 * short blocked waits when it finds the thread running, see preload/sample.c), and counting it
 * as demand made the tuned ViT, whose launches block briefly and often, "CPU-bound". */
static void cpu_bound_python(rd_advise *x, actx *a, const tally *fn, const uint64_t *fn_n,
                             const tally *line, uint64_t main_cpu, double busy, double span) {
  if (!(fn->n && busy < 0.5 && (double)main_cpu >= 0.5 * span)) return;
  size_t first = x->nf;
  for (size_t b = 0; b < fn->n; b++)
    if (fn_n[b] >= ADV_MIN_SAMPLES && 100.0 * (double)fn->w[b] / span >= 20.0)
      cpu_bound_fn(x, a, fn, fn_n, b, line);
  for (size_t k = first; k < x->nf; k++)
    adv_detail(&x->f[k], "the main thread was on CPU %.0f %% of the steps, the GPU busy %.0f %%",
               100.0 * (double)main_cpu / span, busy * 100);
}

/* A Python function's name for cpu-bound-python: a comprehension or generator expression is
 * part of the function it is written in (CPython 3.12 inlines comprehensions, PEP 709; 3.10 and
 * 3.11 give them frames "f.<locals>.<listcomp>"), so that the same code weighs the same on every
 * version. */
static void py_function_name(char *out, size_t n, const char *qual) {
  snprintf(out, n, "%s", qual ? qual : "?");
  static const char *const comp[] = {".<locals>.<listcomp>", ".<locals>.<dictcomp>",
                                     ".<locals>.<setcomp>", ".<locals>.<genexpr>"};
  size_t l = strlen(out);
  for (size_t i = 0; i < sizeof comp / sizeof *comp; i++) {
    size_t c = strlen(comp[i]);
    if (l > c && !strcmp(out + l - c, comp[i])) { out[l - c] = 0; break; }
  }
}

/* From the samples: the DataLoader (input-starved) and the Python functions of the main thread
 * (cpu-bound-python). */
static void samples_trace(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  uint64_t step_ns = a->step_ns;
  uint64_t in_lo = a->in_lo;
  uint64_t in_hi = a->in_hi;
  uint32_t main_tid = a->main_tid;
  uint64_t gpu_busy = a->gpu_busy;
  if (!x->nsm) return;
  rd_u64map six = {0};
  struct agg { uint32_t stack, kind; uint64_t w, n; } *ag = NULL;
  uint64_t *fn_n = NULL;
  size_t nag = 0;
  uint64_t main_cpu = 0;
  for (size_t i = 0; i < x->nsm; i++) {
    const asample *s = &x->sm[i];
    if (s->kind == RD_SAMPLE_CPU && s->stack) { /* the Dataset's line, any thread */
      const rd_frame *fr;
      size_t n = rd_stack_frames(t, s->stack, &fr);
      for (size_t j = 0; j < n; j++) {
        if (!fetch_frame(&fr[j])) continue;
        for (size_t u = j; u-- > 0;)
          if (fr[u].python && rd_torch_user_file(fr[u].file)) {
            char *p = py_place(&fr[u]);
            adv_tally_add(&x->dataset, p, s->weight);
            free(p);
            break;
          }
        break;
      }
    }
    if (s->tid != main_tid || !adv_in_win(s->time, in_lo, in_hi)) continue;
    if (s->kind == RD_SAMPLE_CPU) main_cpu += s->weight;
    uint64_t key = (uint64_t)s->kind << 32 | s->stack;
    uint32_t k;
    if (!rd_m_get(&six, key, &k)) {
      k = (uint32_t)nag++;
      rd_m_put(&six, key, k);
      ag = rd_xrealloc(ag, nag * sizeof *ag);
      ag[k] = (struct agg){s->stack, s->kind, 0, 0};
    }
    ag[k].w += s->weight;
    ag[k].n++;
  }
  tally input = {0}, fn = {0}, line = {0};
  uint64_t input_w = 0;
  for (size_t i = 0; i < nag; i++) {
    const rd_frame *fr;
    size_t n = rd_stack_frames(t, ag[i].stack, &fr);
    size_t dl = SIZE_MAX;
    for (size_t j = n; j-- > 0;) /* the outermost DataLoader frame */
      if (dl_frame(&fr[j])) { dl = j; break; }
    if (dl != SIZE_MAX) {
      input_w += ag[i].w;
      size_t u = dl + 1;
      while (u < n && !(fr[u].python && rd_torch_user_file(fr[u].file))) u++;
      char *p = u < n ? py_place(&fr[u]) : rd_xstrdup("[DataLoader]");
      adv_tally_add(&input, p, ag[i].w);
      free(p);
      continue;
    }
    if (ag[i].kind != RD_SAMPLE_CPU) continue;
    for (size_t j = 0; j < n; j++) {
      if (!fr[j].python || !rd_torch_user_file(fr[j].file)) continue;
      char k[1024], fname[512];
      py_function_name(fname, sizeof fname, fr[j].function);
      snprintf(k, sizeof k, "%s\t%s", fr[j].file, fname);
      size_t before = fn.n;
      adv_tally_add(&fn, k, ag[i].w);
      if (fn.n > before) { fn_n = rd_xrealloc(fn_n, fn.n * sizeof *fn_n); fn_n[fn.n - 1] = 0; }
      for (size_t q = 0; q < fn.n; q++)
        if (!strcmp(fn.k[q], k)) { fn_n[q] += ag[i].n; break; }
      snprintf(k, sizeof k, "%s\t%s\t%s:%u", fr[j].file, fname, fr[j].file, fr[j].line);
      adv_tally_add(&line, k, ag[i].w);
      break;
    }
  }
  double span = (double)(step_ns ? step_ns : 1);
  double busy = (double)gpu_busy / span;
  input_starved(x, a, &input, input_w, busy, span);
  cpu_bound_python(x, a, &fn, fn_n, &line, main_cpu, busy, span);
  adv_tally_free(&input);
  adv_tally_free(&fn);
  adv_tally_free(&line);
  free(fn_n);
  free(ag);
  rd_m_free(&six);
}

