/* stepfind.c — where a trace's training steps are, for every output that divides time by step
 * (dlhook advise, the steps of stats and report, the Parquet "steps" table, analyze). The first
 * of these that gives steps:
 *
 *   nvtx           NVTX ranges named like a step ("ProfilerStep#3", "step 3": rd_step_number).
 *   optimizer      PyTorch's own loop, found in the Python frames of the calls' stacks: one
 *                  iteration per Optimizer.step call (a frame in a file under torch/optim/, not
 *                  lr_scheduler.py, whose function is `step` or ends in `.step`, or
 *                  GradScaler.step in amp/grad_scaler.py). Consecutive outermost calls of one
 *                  thread whose stacks hold such a frame are one run; step k spans from the end
 *                  of run k-1 to the end of run k, so that N runs give N-1 steps and neither the
 *                  set-up before the first iteration nor what follows the last optimizer step
 *                  is ever inside a step. The thread with the most runs counts.
 *   backward       the same per autograd run (`backward` in torch/_tensor.py or
 *                  torch/autograd/__init__.py, `_engine_run_backward` in torch/autograd/graph.py).
 *   training_step  the same per training_step frame (Trainer.training_step of transformers, or a
 *                  `training_step` method called by Lightning: a stack with a frame under
 *                  lightning/ or pytorch_lightning/).
 *                  Of optimizer, backward and training_step the first with at least 2 steps is
 *                  taken, else the first with one.
 *   detected       programs without Python frames (C, C++): the loop found from the repeating
 *                  calls. Of the counts c >= 3 of distinct (function, stack) pairs of outermost
 *                  calls, the largest that divides the counts of at least 90 % as many pairs as
 *                  the best one does is the number of iterations; every (count / iterations)-th
 *                  call of the earliest such pair opens a step (the last one as long as the
 *                  median step, at most to the trace's last call).
 *   trace          none of these: no steps (dlhook advise then takes the span of the trace's
 *                  calls as one step).
 *
 * Each stack is classified once (a u64 map from stack id to the kinds of frames it holds), so a
 * call costs a map lookup. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rd.h"

enum { K_OPT, K_BWD, K_TSTEP, NK };

/* Stack classes: bits 1 << K_*, and PYTHON when the stack holds any Python frame. */
#define PYTHON (1u << NK)

/* The ends of one thread's runs of one kind. */
typedef struct runs {
  uint64_t *end;
  size_t n, cap;
  int open; /* the thread's last outermost call was of the run */
} runs;

typedef struct pthread_runs {
  uint32_t tid;
  runs r[NK];
} pthread_runs;

/* An outermost call with a stack, for the detection from repeating calls. */
typedef struct dcall {
  uint64_t key, start; /* key: function << 32 | stack */
} dcall;

/* Outermost calls kept at most for that detection (16 bytes each). */
#define MAX_DCALLS (4u << 20)

struct rd_stepfind {
  rd_u64map cls; /* stack id -> its class bits */
  rd_u64map fcls; /* Python frame (raw) -> its class bits (classify_frame) */
  rd_u64map thr; /* tid -> index into th */
  pthread_runs *th;
  size_t nth;
  int python;    /* a stack held a Python frame */
  rd_step_span *nvtx;
  size_t nnvtx, capnvtx;
  dcall *dc;
  size_t ndc, capdc;
  uint64_t hi;     /* the end of the last outermost call */
  rd_step_span *out;
  size_t nout;
};

const char *rd_steps_from_name(int from) {
  static const char *const names[] = {"trace", "nvtx", "optimizer", "backward", "training_step",
                                      "detected"};
  return from >= 0 && from <= RD_STEPS_DETECTED ? names[from] : "trace";
}

rd_stepfind *rd_stepfind_new(void) { return rd_xcalloc(1, sizeof(rd_stepfind)); }

/* Step number of an NVTX range name, -1 when the name does not look like a step. */
long rd_step_number(const char *name) {
  if (!name) return -1;
  const char *p = name;
  if (!strncmp(p, "ProfilerStep#", 13)) p += 13;
  else if (!strncasecmp(p, "step", 4)) {
    p += 4;
    while (*p == ' ' || *p == '#' || *p == '_' || *p == '-' || *p == '=') p++;
  } else {
    return -1;
  }
  if (*p < '0' || *p > '9') return -1;
  char *end;
  long v = strtol(p, &end, 10);
  return *end ? -1 : v;
}

/* ---------------------------------------------------------------- Python frames */

static int ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && !strcmp(s + a - b, tail);
}

/* The function is `name` or a method `X.name`. */
static int named(const char *fn, const char *name) {
  size_t a = strlen(fn), b = strlen(name);
  return !strcmp(fn, name) || (a > b && fn[a - b - 1] == '.' && !strcmp(fn + a - b, name));
}

static int optimizer_frame(const char *file, const char *fn) {
  if (strstr(file, "torch/optim/") && !strstr(file, "lr_scheduler")) return named(fn, "step");
  return ends_with(file, "amp/grad_scaler.py") && named(fn, "GradScaler.step");
}

static int backward_frame(const char *file, const char *fn) {
  if (ends_with(file, "torch/_tensor.py") || ends_with(file, "torch/autograd/__init__.py"))
    return named(fn, "backward");
  return ends_with(file, "torch/autograd/graph.py") && !strcmp(fn, "_engine_run_backward");
}

/* Frame classes beyond the stack's: a training_step function, a frame of a trainer's file. */
#define F_TSTEP (1u << (NK + 1))
#define F_TRAINER (1u << (NK + 2))

/* The kinds of one Python frame (K_* bits, F_TSTEP, F_TRAINER). */
static unsigned classify_frame(const rd_trace *t, uint64_t raw) {
  rd_frame f;
  rd_frame_of(t, raw, &f);
  unsigned bits = 0;
  if (!f.file || !f.function) return 0;
  if (optimizer_frame(f.file, f.function)) bits |= 1u << K_OPT;
  if (backward_frame(f.file, f.function)) bits |= 1u << K_BWD;
  if (named(f.function, "training_step")) bits |= F_TSTEP;
  if (strstr(f.file, "lightning/") || ends_with(f.file, "transformers/trainer.py")) bits |= F_TRAINER;
  return bits;
}

/* The kinds of frames in a stack (bits 1 << K_*, and PYTHON). Each Python frame is classified
 * once (x->fcls): the stacks of a PyTorch program hold a few hundred distinct Python frames in
 * tens of thousands of stacks. */
static unsigned classify_stack(rd_stepfind *x, const rd_trace *t, uint32_t stack) {
  const uint64_t *raw;
  int truncated;
  size_t n = rd_stack_raw(t, stack, &raw, &truncated);
  unsigned bits = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(raw[i] & DLH_PYFRAME_TAG)) continue;
    uint32_t v;
    if (!rd_m_get(&x->fcls, raw[i], &v)) {
      v = classify_frame(t, raw[i]);
      rd_m_put(&x->fcls, raw[i], v);
    }
    bits |= PYTHON | v;
  }
  if ((bits & (F_TSTEP | F_TRAINER)) == (F_TSTEP | F_TRAINER)) bits |= 1u << K_TSTEP;
  return bits & ~(F_TSTEP | F_TRAINER);
}

static unsigned stack_class(rd_stepfind *x, const rd_trace *t, uint32_t stack) {
  uint32_t v;
  if (!stack) return 0;
  if (rd_m_get(&x->cls, stack, &v)) return v;
  v = classify_stack(x, t, stack);
  rd_m_put(&x->cls, stack, v);
  return v;
}

/* ---------------------------------------------------------------- gathering */

static pthread_runs *thread_runs(rd_stepfind *x, uint32_t tid) {
  uint32_t i;
  if (rd_m_get(&x->thr, tid, &i)) return &x->th[i];
  x->th = rd_xrealloc(x->th, (x->nth + 1) * sizeof *x->th);
  memset(&x->th[x->nth], 0, sizeof *x->th);
  x->th[x->nth].tid = tid;
  rd_m_put(&x->thr, tid, (uint32_t)x->nth);
  return &x->th[x->nth++];
}

/* One outermost call of thread tid ending at end, whose stack is of class bits. */
static void add_to_runs(rd_stepfind *x, uint32_t tid, uint64_t end, unsigned bits) {
  if (!(bits & ((1u << NK) - 1))) {
    /* a call outside every run closes the thread's open runs, without a lookup when none */
    uint32_t i;
    if (x->nth && rd_m_get(&x->thr, tid, &i))
      for (int k = 0; k < NK; k++) x->th[i].r[k].open = 0;
    return;
  }
  pthread_runs *p = thread_runs(x, tid);
  for (int k = 0; k < NK; k++) {
    runs *r = &p->r[k];
    if (!(bits & 1u << k)) { r->open = 0; continue; }
    if (!r->open) {
      if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->end = rd_xrealloc(r->end, r->cap * sizeof *r->end);
      }
      r->end[r->n++] = end;
      r->open = 1;
    } else if (end > r->end[r->n - 1]) {
      r->end[r->n - 1] = end;
    }
  }
}

static void add_nvtx(rd_stepfind *x, const rd_trace *t, const dlh_api_event *e) {
  if (!e->nargs) return;
  const char *msg = rd_trace_string(t, (uint32_t)e->args[0]);
  long num = rd_step_number(msg);
  if (num < 0) return;
  if (x->nnvtx == x->capnvtx) {
    x->capnvtx = x->capnvtx ? x->capnvtx * 2 : 64;
    x->nvtx = rd_xrealloc(x->nvtx, x->capnvtx * sizeof *x->nvtx);
  }
  x->nvtx[x->nnvtx++] = (rd_step_span){e->start_ns, e->start_ns + dlh_api_span(e), num,
                                       rd_xstrdup(msg)};
}

void rd_stepfind_api(rd_stepfind *x, const rd_trace *t, uint32_t tid, const dlh_api_event *e) {
  const rd_func *f = rd_trace_func(t, e->fn);
  if (!f || !f->name) return;
  if (f->domain == DLH__DOMAIN__DOMAIN_NVTX) { add_nvtx(x, t, e); return; }
  if (e->depth) return;
  uint64_t end = e->start_ns + dlh_api_span(e);
  if (end > x->hi) x->hi = end;
  unsigned bits = stack_class(x, t, e->stack);
  if (bits & PYTHON) x->python = 1;
  add_to_runs(x, tid, end, bits);
  if (x->python || !e->stack || x->ndc >= MAX_DCALLS) return;
  if (x->ndc == x->capdc) {
    x->capdc = x->capdc ? x->capdc / 2 * 3 : 4096;
    x->dc = rd_xrealloc(x->dc, x->capdc * sizeof *x->dc);
  }
  x->dc[x->ndc++] = (dcall){(uint64_t)e->fn << 32 | e->stack, e->start_ns};
}

/* ---------------------------------------------------------------- steps from the runs */

static void out_push(rd_stepfind *x, uint64_t s, uint64_t e, long num) {
  /* room for 16, then doubling at each power of 2 (a realloc per step was quadratic) */
  if (x->nout == 0 || (x->nout >= 16 && (x->nout & (x->nout - 1)) == 0))
    x->out = rd_xrealloc(x->out, (x->nout ? 2 * x->nout : 16) * sizeof *x->out);
  x->out[x->nout++] = (rd_step_span){s, e, num, NULL};
}

/* The runs of kind k of the thread with the most of them (NULL when none). */
static const runs *most_runs(const rd_stepfind *x, int k) {
  const runs *best = NULL;
  for (size_t i = 0; i < x->nth; i++)
    if (!best || x->th[i].r[k].n > best->n) best = &x->th[i].r[k];
  return best;
}

/* Steps from the runs: the first kind with at least `min` steps; returns its RD_STEPS_*, or 0. */
static int steps_from_runs(rd_stepfind *x, size_t min) {
  static const int from[NK] = {RD_STEPS_OPTIMIZER, RD_STEPS_BACKWARD, RD_STEPS_TRAINING_STEP};
  for (int k = 0; k < NK; k++) {
    const runs *r = most_runs(x, k);
    if (!r || r->n < min + 1) continue;
    for (size_t i = 1; i < r->n; i++) out_push(x, r->end[i - 1], r->end[i], (long)i);
    return from[k];
  }
  return 0;
}

/* ---------------------------------------------------------------- steps from repeating calls */

static int by_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}
static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The number of iterations from the counts of the keys (see the top of the file), 0 if none. */
static uint32_t iterations(const uint32_t *cnt, size_t nk) {
  uint32_t best = 0, best_keys = 0;
  uint32_t *sorted = rd_xmalloc((nk ? nk : 1) * sizeof *sorted);
  if (nk) memcpy(sorted, cnt, nk * sizeof *sorted);
  if (nk) rd_qsort(sorted, nk, sizeof *sorted, by_u32);
  size_t ncand = 0;
  struct cand { uint32_t c, score; } cand[256];
  for (size_t i = 0, j; i < nk && ncand < 256; i = j) {
    for (j = i; j < nk && sorted[j] == sorted[i]; j++) {}
    if (sorted[i] < 3) continue;
    uint32_t score = 0;
    for (size_t k = 0; k < nk; k++) score += sorted[k] % sorted[i] == 0;
    cand[ncand++] = (struct cand){sorted[i], score};
    if (score > best_keys) best_keys = score;
  }
  /* the largest candidate that divides nearly as many: the period, not a divisor of it */
  for (size_t i = 0; i < ncand; i++)
    if (10 * cand[i].score >= 9 * best_keys && cand[i].c > best) best = cand[i].c;
  free(sorted);
  return best_keys < 2 ? 0 : best;
}

/* A training step takes milliseconds (a test loop's, tens of microseconds): a "step" found from
 * the repeating calls that lasts less than this (median) is a tight loop's iteration (a million
 * of them in a second), not a step. */
#define DETECTED_MIN_STEP_NS 10000u

/* Steps opening at every `every`-th call of key; the last one lasts the median step. Returns 0
 * (and makes none) when the median is below DETECTED_MIN_STEP_NS. */
static int steps_at(rd_stepfind *x, uint64_t key, uint32_t every) {
  uint64_t seen = 0;
  uint64_t *st = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < x->ndc; i++) {
    if (x->dc[i].key != key || seen++ % every) continue;
    if (n == cap) { /* doubling: a realloc per step was quadratic (ASan's realloc copies) */
      cap = cap ? 2 * cap : 256;
      st = rd_xrealloc(st, cap * sizeof *st);
    }
    st[n++] = x->dc[i].start;
  }
  rd_qsort(st, n, sizeof *st, by_u64);
  uint64_t *d = rd_xmalloc(n * sizeof *d);
  for (size_t i = 0; i + 1 < n; i++) d[i] = st[i + 1] - st[i];
  rd_qsort(d, n - 1, sizeof *d, by_u64);
  uint64_t med = d[(n - 1) / 2];
  free(d);
  if (med < DETECTED_MIN_STEP_NS) {
    free(st);
    return 0;
  }
  for (size_t i = 0; i + 1 < n; i++) out_push(x, st[i], st[i + 1], (long)i);
  uint64_t end = st[n - 1] + med;
  out_push(x, st[n - 1], end < x->hi ? end : x->hi, (long)n - 1);
  free(st);
  return 1;
}

/* Steps from the repeating calls; returns RD_STEPS_DETECTED when found, else 0. */
static int detect_steps(rd_stepfind *x) {
  rd_u64map ix = {0};
  uint32_t *cnt = NULL, *first = NULL;
  size_t nk = 0;
  for (size_t i = 0; i < x->ndc; i++) {
    uint32_t k;
    if (!rd_m_get(&ix, x->dc[i].key, &k)) {
      k = (uint32_t)nk++;
      rd_m_put(&ix, x->dc[i].key, k);
      cnt = rd_xrealloc(cnt, nk * sizeof *cnt);
      first = rd_xrealloc(first, nk * sizeof *first);
      cnt[k] = 0;
      first[k] = (uint32_t)i;
    }
    cnt[k]++;
  }
  uint32_t best = iterations(cnt, nk);
  if (best >= 3) {
    /* the steps open at every (count / best)-th call of the earliest such key */
    size_t anchor = SIZE_MAX;
    uint32_t every = 1;
    for (size_t k = 0; k < nk; k++)
      if (cnt[k] >= best && cnt[k] % best == 0 &&
          (anchor == SIZE_MAX || x->dc[first[k]].start < x->dc[anchor].start))
        anchor = first[k], every = cnt[k] / best;
    if (!steps_at(x, x->dc[anchor].key, every)) best = 0;
  }
  free(cnt);
  free(first);
  rd_m_free(&ix);
  return best >= 3 ? RD_STEPS_DETECTED : 0;
}

/* ---------------------------------------------------------------- the trace's steps */

static int by_start(const void *a, const void *b) {
  const rd_step_span *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}

/* What the last trace left: its steps and everything gathered. */
static void reset(rd_stepfind *x) {
  for (size_t i = 0; i < x->nout; i++) free(x->out[i].name);
  free(x->out);
  for (size_t i = 0; i < x->nnvtx; i++) free(x->nvtx[i].name);
  free(x->nvtx);
  for (size_t i = 0; i < x->nth; i++)
    for (int k = 0; k < NK; k++) free(x->th[i].r[k].end);
  free(x->th);
  free(x->dc);
  rd_m_free(&x->cls);
  rd_m_free(&x->fcls);
  rd_m_free(&x->thr);
  memset(x, 0, sizeof *x);
}

size_t rd_stepfind_end(rd_stepfind *x, int *from, rd_step_span **out) {
  for (size_t i = 0; i < x->nout; i++) free(x->out[i].name); /* the previous trace's steps */
  free(x->out);
  x->out = NULL;
  x->nout = 0;
  int f = 0;
  if (x->nnvtx) {
    x->out = x->nvtx, x->nout = x->nnvtx;
    x->nvtx = NULL, x->nnvtx = 0;
    rd_qsort(x->out, x->nout, sizeof *x->out, by_start);
    f = RD_STEPS_NVTX;
  } else if (!(f = steps_from_runs(x, 2)) && !(f = steps_from_runs(x, 1)) && !x->python) {
    f = detect_steps(x);
  }
  /* everything but the steps goes; they stay until the next trace's end */
  rd_step_span *keep = x->out;
  size_t n = x->nout;
  x->out = NULL, x->nout = 0;
  reset(x);
  x->out = keep, x->nout = n;
  *from = f;
  *out = keep;
  return n;
}

void rd_stepfind_free(rd_stepfind *x) {
  if (!x) return;
  reset(x);
  free(x);
}
