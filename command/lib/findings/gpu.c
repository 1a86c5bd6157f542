/* gpu.c — the findings of GPU work, per device in time order: launch-bound (kernels that ran
 * shorter than the host took between their launches, with the GPU idle before them for at most
 * 100 µs: it waited for the launch, not for a long host phase), low-occupancy (kernels, not
 * NCCL's, whose launch configuration leaves < 25 % of the device's warp slots filled: blocks per
 * SM that threads, registers and shared memory allow, and grids smaller than the device;
 * Kineto's estimate, gpuarch.c), comm-not-overlapped (NCCL kernel time that no other kernel of
 * the device overlaps). The family also measures the busiest device's busy time inside the steps
 * (actx.gpu_busy), which the GEMM and sample families read after it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

#define ADV_LAUNCH_GAP_NS 100000ull
#define ADV_LAUNCH_KERNEL_NS 20000ull
#define ADV_OCC_MIN_NS 10000ull
#define ADV_OCC_PCT 25.0
#define COMM_FLOOR_BW 25e9 /* bytes/s: the slowest links a collective crosses (200 Gb/s IB) */

static void gpu_trace(rd_advise *x, actx *a);
static const rd_finding_family gpu_family = {"GPU work", gpu_trace, NULL};

const rd_finding_class rdf_launch_bound = {
    .id = "launch-bound",
    .summary = "short kernels with the GPU idle waiting for their launches.",
    .what = "kernels shorter than 20 µs that ran shorter than the host took between their "
            "launches, with the GPU idle at most 100 µs before each (waiting for the launch)",
    .threshold = ">= 20 such kernels, >= 5%",
    .cost = "those idle gaps",
    .estimate = "GPU idle time before kernels that ran shorter than the host's time between "
                "launches, divided by the steps",
    .evidence = "GPU ops",
    .fix = "launch fewer, larger kernels: torch.compile, CUDA graphs (mode=\"reduce-overhead\"), "
           "foreach/fused optimizers (foreach=True, fused=True), larger batches",
    .min_calls = 20, .min_pct = ADV_MIN_PCT_GPU,
    .family = &gpu_family,
};

const rd_finding_class rdf_low_occupancy = {
    .id = "low-occupancy",
    .summary = "kernels whose launch configuration fills < 25% of the GPU.",
    .what = "kernels (not NCCL's, not launched by a library) of >= 10 µs whose launch "
            "configuration fills < 25 % of the device's warp slots (resident blocks per SM that "
            "threads, registers and shared memory allow, and grids smaller than the device: "
            "Kineto's estimate)",
    .threshold = ">= 5%",
    .cost = "their GPU time",
    .estimate = "GPU time of those kernels, divided by the steps (the time at stake)",
    .evidence = "GPU ops",
    .fix = "fill the GPU: larger grids (batch the work), fewer registers per thread "
           "(__launch_bounds__, -maxrregcount) or less shared memory per block",
    .min_pct = ADV_MIN_PCT_GPU,
    .family = &gpu_family,
};

const rd_finding_class rdf_comm_not_overlapped = {
    .id = "comm-not-overlapped",
    .summary = "NCCL kernel time no compute overlaps.",
    .what = "NCCL kernel time no other kernel of the device overlaps",
    .threshold = ">= 3 collectives from one place, >= 5%",
    .cost = "that exposed time (it includes waiting for late ranks)",
    .estimate = "NCCL kernel time not overlapped by other kernels, divided by the steps",
    .evidence = "GPU ops",
    .fix = "overlap communication with compute: DDP's bucketing (bucket_cap_mb), FSDP prefetching, "
           "async_op=True with work issued before wait()",
    .min_calls = ADV_MIN_CALLS, .min_pct = ADV_MIN_PCT_GPU,
    .family = &gpu_family,
};

/* ---------------------------------------------------------------- detection */

static int by_dev_start(const void *a, const void *b) {
  const gop *p = a, *q = b;
  if (p->dev != q->dev) return p->dev < q->dev ? -1 : 1;
  return p->s < q->s ? -1 : p->s > q->s;
}

/* What one device's pass keeps: the launch-bound kernels over the trace (for the detail), the
 * previous kernel's launch, the end of the GPU's work so far, and the merged intervals of its
 * non-NCCL kernels (for the overlap of collectives). */
typedef struct gpass {
  uint64_t lb_n, lb_kns, lb_int;
  const xcall *prev_l;
  uint64_t until;
  uint64_t *ms, *me;
  size_t nm;
} gpass;

/* launch-bound: kernel o (launched by own, inside the outermost call l) idle before it, shorter
 * than the host's time between launches */
static void launch_bound(rd_advise *x, actx *a, gpass *p, const gop *o, const xcall *own,
                         const xcall *l) {
  const xcall *prev_l = p->prev_l;
  uint64_t until = p->until;
  if (own && prev_l && until && o->s > until && o->s - until <= ADV_LAUNCH_GAP_NS &&
      o->e - o->s < ADV_LAUNCH_KERNEL_NS &&
      own->start > prev_l->start && o->e - o->s < own->start - prev_l->start && l) {
    rd_trace *t = a->t;
    afinding *f = adv_finding(x, a->base, &rdf_launch_bound, adv_place_of(t, l->stack), t,
                              a->nsteps, a->step_ns);
    f->calls++;
    f->ns += o->s - until;
    adv_add_fn(&f->fns, rd_trace_func(t, own->fn) ? rd_trace_func(t, own->fn)->name : "?");
    p->lb_n++, p->lb_kns += o->e - o->s, p->lb_int += own->start - prev_l->start;
  }
}

/* low occupancy, by kernel name: kernel o, launched from the outermost call l */
static void low_occupancy(rd_advise *x, actx *a, const gop *o, const xcall *l) {
  rd_trace *t = a->t;
  const rd_func *lf = l ? rd_trace_func(t, l->fn) : NULL;
  int lib = lf && lf->domain != DLH__DOMAIN__DOMAIN_CUDART && lf->domain != DLH__DOMAIN__DOMAIN_DRIVER;
  if (o->nccl || lib || !(o->occ >= 0 && o->occ < ADV_OCC_PCT && o->e - o->s >= ADV_OCC_MIN_NS))
    return;
  const char *kn = rd_trace_string(t, o->name);
  char key[300];
  snprintf(key, sizeof key, "%s", kn && *kn ? kn : "[kernel]");
  char *dm = rd_demangle(key);
  afinding *f = adv_finding(x, a->base, &rdf_low_occupancy,
                            l ? adv_place_of(t, l->stack) : rd_xstrdup("[no call]"), t, a->nsteps,
                            a->step_ns);
  f->calls++;
  f->ns += o->e - o->s;
  adv_add_fn(&f->fns, dm ? dm : key);
  if (!f->detail || o->occ < (float)f->first / 100.0f) {
    f->first = (uint64_t)(o->occ * 100);
    adv_detail(f, "estimated occupancy %.1f %% (grid %ux%ux%u, block %ux%ux%u, %u registers, "
                  "%u B shared memory)", o->occ, o->v[0], o->v[1], o->v[2], o->v[3], o->v[4],
               o->v[5], o->v[6], o->v[7] + o->v[8]);
  }
  free(dm);
}

/* A kernel of the device dv: its occupancy, launch-bound and low-occupancy. */
static void kernel(rd_advise *x, actx *a, gpass *p, const Dlh__DeviceInfo *dv, gop *o, int in) {
  double bps, wps, occ;
  if (rd_occupancy(dv, (const uint64_t[9]){o->v[0], o->v[1], o->v[2], o->v[3], o->v[4],
                                           o->v[5], o->v[6], o->v[7], o->v[8]},
                   9, &bps, &wps, &occ))
    o->occ = (float)occ;
  const xcall *l = adv_launcher(x, o);
  uint32_t li;
  const xcall *own = o->corr && rd_m_get(&x->corr_ix, o->corr, &li) ? &x->xc[li] : NULL;
  if (in) launch_bound(x, a, p, o, own, l);
  if (own) p->prev_l = own;
  if (in) low_occupancy(x, a, o, l);
}

/* comm-not-overlapped: the device's collectives [d0, d1) not overlapped by its other kernels
 * (p's merged intervals) */
static void comm_not_overlapped(rd_advise *x, actx *a, const gpass *p, size_t d0, size_t d1) {
  rd_trace *t = a->t;
  const uint64_t *ms = p->ms, *me = p->me;
  size_t nm = p->nm, m = 0;
  for (size_t i = d0; i < d1; i++) {
    gop *o = &x->g[i];
    if (!o->nccl || !adv_in_win(o->s, a->in_lo, a->in_hi)) continue;
    while (m > 0 && ms[m - 1] > o->s) m--;
    while (m < nm && me[m] <= o->s) m++;
    uint64_t cov = 0;
    for (size_t j = m; j < nm && ms[j] < o->e; j++) {
      uint64_t s = ms[j] > o->s ? ms[j] : o->s, e = me[j] < o->e ? me[j] : o->e;
      if (e > s) cov += e - s;
    }
    uint64_t dur = o->e - o->s;
    if (dur <= cov) continue;
    const xcall *l = adv_launcher(x, o);
    uint32_t kb;
    uint64_t exposed = dur - cov;
    /* a collective's kernel also waits for the other ranks to arrive (straggler-rank): what
     * overlap can hide is at most the time its data takes over slow links */
    if (l && l->corr && rd_m_get(&x->nccl_kb, l->corr, &kb)) {
      uint64_t need = (uint64_t)((double)kb * 1024.0 / COMM_FLOOR_BW * 1e9);
      if (exposed > need) exposed = need;
    }
    if (!exposed) continue;
    afinding *f = adv_finding(x, a->base, &rdf_comm_not_overlapped,
                              l ? adv_place_of(t, l->stack) : rd_xstrdup("[no call]"), t,
                              a->nsteps, a->step_ns);
    f->calls++;
    f->ns += exposed;
    if (l && rd_trace_func(t, l->fn)) adv_add_fn(&f->fns, rd_trace_func(t, l->fn)->name);
  }
}

/* One device's ops [d0, d1) in time order; returns its busy time inside the steps. */
static uint64_t device_ops(rd_advise *x, actx *a, gpass *p, size_t d0, size_t d1) {
  const Dlh__DeviceInfo *dv = adv_device(x, x->g[d0].dev);
  uint64_t busy = 0, cov_s = 0, cov_e = 0;
  p->prev_l = NULL;
  p->until = 0;
  p->ms = p->me = NULL;
  p->nm = 0;
  for (size_t i = d0; i < d1; i++) {
    gop *o = &x->g[i];
    int in = adv_in_win(o->s, a->in_lo, a->in_hi);
    /* busy time (union) */
    if (in) {
      if (o->s > cov_e) { busy += cov_e - cov_s; cov_s = o->s; cov_e = o->e; }
      else if (o->e > cov_e) cov_e = o->e;
    }
    /* merged intervals of non-NCCL kernels, for the overlap of collectives */
    if (o->kind == RD_KERNEL && !o->nccl) {
      if (p->nm && o->s <= p->me[p->nm - 1]) { if (o->e > p->me[p->nm - 1]) p->me[p->nm - 1] = o->e; }
      else {
        p->ms = rd_xrealloc(p->ms, (p->nm + 1) * sizeof *p->ms);
        p->me = rd_xrealloc(p->me, (p->nm + 1) * sizeof *p->me);
        p->ms[p->nm] = o->s, p->me[p->nm++] = o->e;
      }
    }
    if (o->kind == RD_KERNEL) kernel(x, a, p, dv, o, in);
    if (o->e > p->until) p->until = o->e;
  }
  busy += cov_e - cov_s;
  comm_not_overlapped(x, a, p, d0, d1);
  free(p->ms);
  free(p->me);
  return busy;
}

/* The findings of GPU work, per device in time order; sets a->gpu_busy. */
static void gpu_trace(rd_advise *x, actx *a) {
  if (x->ng) rd_qsort(x->g, x->ng, sizeof *x->g, by_dev_start);
  uint64_t gpu_busy = 0; /* the busiest device's busy time inside the steps */
  gpass p = {0};
  size_t d0 = 0;
  while (d0 < x->ng) {
    size_t d1 = d0;
    while (d1 < x->ng && x->g[d1].dev == x->g[d0].dev) d1++;
    uint64_t busy = device_ops(x, a, &p, d0, d1);
    if (busy > gpu_busy) gpu_busy = busy;
    d0 = d1;
  }
  for (size_t k = a->base; k < x->nf; k++)
    if (x->f[k].cls == &rdf_launch_bound && p.lb_n)
      adv_detail(&x->f[k], "over the trace: %" PRIu64 " such kernels, %.1f us long on average, "
                           "launched %.1f us apart",
                 p.lb_n, (double)p.lb_kns / (double)p.lb_n / 1e3, (double)p.lb_int / (double)p.lb_n / 1e3);
  a->gpu_busy = gpu_busy;
}
