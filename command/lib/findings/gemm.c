/* gemm.c — no-tensor-cores: GEMMs that cannot use tensor cores, float32 data computed in
 * float32 (no TF32 math mode on the cuBLAS handle, no *_FAST_* compute type) or half/bfloat16
 * with m, n or k not a multiple of 8; their cost is what faster kernels save (their GPU time
 * times 1 - 1/7.4 for TF32 or 1/2 for padding), times the share of the step the GPU is busy
 * (actx.gpu_busy: the GPU family runs before). advise.c's sink keeps the GEMM calls (x->gm). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

static void gemm_trace(rd_advise *x, actx *a);
static const rd_finding_family gemm_family = {"GEMMs", gemm_trace, NULL};

const rd_finding_class rdf_no_tensor_cores = {
    .id = "no-tensor-cores",
    .summary = "float32 GEMMs without TF32, half GEMMs with shapes not multiples of 8.",
    .what = "float32 GEMMs computed in float32 (no `CUBLAS_TF32_TENSOR_OP_MATH` on the handle, no "
            "`*_FAST_*` compute type: `allow_tf32` off), half/bf16 GEMMs with m, n or k not a "
            "multiple of 8",
    .threshold = ">= 5%",
    .cost = "what faster kernels save: their GPU time × (1 − 1/7.4) for TF32 (H100's dense peaks), "
            "× 1/2 for padding, times the share of the step the GPU is busy",
    .estimate = "what tensor cores would save of the GPU time of those GEMMs' kernels (TF32: 1 - "
                "1/7.4 of it, the ratio of H100's dense peaks; padding half GEMMs: 1/2), times the "
                "share of the step the GPU is busy, divided by the steps",
    .evidence = "GPU ops",
    .fix = "use tensor cores: torch.backends.cuda.matmul.allow_tf32 = True (or "
           "torch.set_float32_matmul_precision(\"high\")), autocast to bf16/fp16, and shapes that "
           "are multiples of 8",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &gemm_family,
};

/* ---------------------------------------------------------------- detection */

/* What tensor cores save of such a GEMM's kernel time: float32 to TF32 runs at the ratio of the
 * dense peaks (H100 SXM 495 / 67 TFLOP/s; A100 156 / 19.5: about the same), a half/bfloat16
 * GEMM padded to multiples of 8 at about twice the speed of the unaligned one. */
#define TF32_SPEEDUP 7.4
#define ALIGN_SPEEDUP 2.0

/* Backward GEMMs run on the autograd thread, whose stacks have no Python frame: their finding
 * would name a libtorch frame. They are the gradients of the forward GEMMs of the same model,
 * under the same math mode: fold them into the forward place (a Python line) that holds the most
 * GEMM time, when the trace has one. */
static void fold_backward(rd_advise *x, size_t base) {
  size_t pi = SIZE_MAX;
  for (size_t k = base; k < x->nf; k++)
    if (x->f[k].cls == &rdf_no_tensor_cores && strstr(x->f[k].place, ".py:") && (pi == SIZE_MAX || x->f[k].ns > x->f[pi].ns))
      pi = k;
  if (pi == SIZE_MAX) return;
  size_t w = base;
  for (size_t k = base; k < x->nf; k++) {
    afinding *f = &x->f[k];
    if (f->cls == &rdf_no_tensor_cores && k != pi && !strstr(f->place, ".py:")) {
      x->f[pi].ns += f->ns;
      x->f[pi].calls += f->calls;
      if (f->fns) adv_add_fn(&x->f[pi].fns, f->fns);
      free(f->place); free(f->trace); free(f->fns); free(f->detail);
      continue;
    }
    if (k == pi) pi = w;
    x->f[w++] = *f;
  }
  x->nf = w;
}

/* GEMMs without tensor cores (no-tensor-cores): the time faster kernels would save, which is
 * their GPU time (else the call's time) less what they would still take, and of that the share
 * the GPU is busy in the steps (a GPU that waits for the host most of the step gains little from
 * faster kernels). */
static void gemm_trace(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
  uint64_t step_ns = a->step_ns;
  uint64_t in_lo = a->in_lo;
  uint64_t in_hi = a->in_hi;
  if (!x->ngm) return;
  rd_u64map gix = {0}; /* top call index -> gm index + 0 */
  uint64_t *gns = calloc(x->ngm, sizeof *gns);
  if (!gns) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  for (size_t i = 0; i < x->ngm; i++) rd_m_put(&gix, x->gm[i].call, (uint32_t)i);
  for (size_t i = 0; i < x->ng; i++) {
    const gop *o = &x->g[i];
    uint32_t li, gi;
    if (o->kind != RD_KERNEL || !o->corr || !rd_m_get(&x->corr_ix, o->corr, &li)) continue;
    if (rd_m_get(&gix, x->xc[li].top, &gi)) gns[gi] += o->e - o->s;
  }
  for (size_t i = 0; i < x->ngm; i++) {
    const agemm *a = &x->gm[i];
    const xcall *c = &x->xc[a->call];
    if (!adv_in_win(c->start, in_lo, in_hi)) continue;
    afinding *f = adv_finding(x, base, &rdf_no_tensor_cores, adv_place_of(t, c->stack), t, nsteps, step_ns);
    f->calls++;
    double sp = a->reason == 1 ? TF32_SPEEDUP : ALIGN_SPEEDUP;
    f->ns += (uint64_t)((double)(gns[i] ? gns[i] : c->end - c->start) * (1.0 - 1.0 / sp));
    adv_add_fn(&f->fns, adv_fname(t, c->fn));
    if (!f->detail)
      adv_detail(f, a->reason == 1 ? "float32 GEMM computed in float32 (no TF32), e.g. m=%" PRId64
                                 " n=%" PRId64 " k=%" PRId64
                               : "half/bfloat16 GEMM with a dimension not a multiple of 8, e.g. "
                                 "m=%" PRId64 " n=%" PRId64 " k=%" PRId64,
             a->m, a->n, a->k);
  }
  fold_backward(x, base);
  double busy = step_ns ? (double)a->gpu_busy / (double)step_ns : 1.0;
  for (size_t k = base; k < x->nf; k++)
    if (x->f[k].cls == &rdf_no_tensor_cores && busy < 1.0) x->f[k].ns = (uint64_t)((double)x->f[k].ns * busy);
  free(gns);
  rd_m_free(&gix);
}

