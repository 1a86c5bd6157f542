/* advise.c — the findings of `dlhook advise`: known causes of lost time, each with a stable class
 * id, an estimated cost per step, its evidence, the place in the user's code and the usual fix.
 *
 * Classes and their thresholds (a finding is reported only above all of them):
 *   sync-in-loop   host-device synchronizations (cudaStreamSynchronize, cudaDeviceSynchronize,
 *                  cudaEventSynchronize, cudaMemcpy, cuStreamSynchronize, cuCtxSynchronize,
 *                  cuMemcpyDtoH..., and a copy into pageable memory, which returns only when
 *                  done) made repeatedly from one place: at least 3 calls and at least one per
 *                  step, >= 1 % of the step; cost = per call the smaller of its time and the
 *                  GPU's idle time in a step's length after it (blocking_cost: what the host's
 *                  head start on the GPU would save).
 *   pageable-h2d   host-to-device copies whose source is pageable memory (the CUPTI memcpy
 *                  record's src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), at least 3 from one
 *                  place, >= 1 %; cost = per call the GPU idle time after it (blocking_cost)
 *                  and 3/4 of the copy's GPU time (pinned copies run ~4x faster), at most the
 *                  call's time.
 *   malloc-in-loop cudaMalloc/cudaFree (and the driver's cuMemAlloc/cuMemFree) in the steady
 *                  state: after the first step, at least 2 such calls from one place, >= 0.1 %
 *                  (any steady-state allocation is a defect worth naming); cost as for
 *                  sync-in-loop (cudaFree synchronizes the device).
 *   launch-bound   kernels that ran shorter than the host took between their launches, with the
 *                  GPU idle before them for at most 100 µs (it waited for the launch, not for a
 *                  long host phase): at least 20 such kernels, >= 5 %; cost = those idle gaps.
 *   no-tensor-cores  GEMMs that cannot use tensor cores: float32 data computed in float32 (no
 *                  TF32 math mode on the cuBLAS handle, no *_FAST_* compute type), or half/bfloat16
 *                  with m, n or k not a multiple of 8; >= 5 %; cost = what faster kernels save:
 *                  their GPU time times 1 - 1/7.4 (TF32) or 1/2 (padding), times the share of
 *                  the step the GPU is busy.
 *   low-occupancy  kernels (not NCCL's) whose launch configuration leaves < 25 % of the device's
 *                  warp slots filled (blocks per SM that threads, registers and shared memory
 *                  allow, and grids smaller than the device: Kineto's estimate, gpuarch.c),
 *                  by kernel name, >= 5 %; cost = their GPU time.
 *   memory-near-capacity  a device's live allocations (the memory ledger) reached >= 90 % of its
 *                  memory; cost 0 (a risk, not lost time: ranked last).
 *   memory-leak    live memory at the step ends grew at >= 3/4 of them after the first step, by
 *                  >= 1 MiB in all (memfind.c); cost 0 but ranked first (it ends the run); place =
 *                  where the memory still live at the last step end was allocated.
 *   memory-fragmentation  PyTorch's default caching allocator, replayed over the tensors
 *                  (--torch-memory), reserves at the peak >= 1.5x the allocated bytes and >= 128
 *                  MiB more (memfind.c); cost 0, ranked first; place = where the requests were
 *                  made that created the idle segments.
 *   out-of-memory  a failed allocation (memfind.c): the request, what was live by place, the
 *                  largest free block; cost 0, ranked first; place = the failed request's.
 *   input-starved  host samples of the main thread (the one making most CUDA calls) inside the
 *                  DataLoader (a frame in torch/utils/data/) while the GPU was busy < 90 % of the
 *                  steps, >= 5 %; cost = the sampled time (on-CPU and wait) there. Needs samples.
 *   cpu-bound-python  one Python function (the innermost frame of user code) holds >= 20 % of the
 *                  step in on-CPU samples of the main thread, which is on CPU >= 50 % of the step
 *                  while the GPU is busy < 50 %; cost = its sampled CPU time. Needs samples.
 *   comm-not-overlapped  NCCL kernel time that no other kernel of the device overlaps, at least 3
 *                  collectives from one place, >= 5 %; cost = that exposed time.
 *   straggler-rank several ranks: the rank that arrived last at most collectives (ranks.c), at
 *                  least half of them, >= 1 % of its step; cost = the others' wait for it per
 *                  step; place = what that rank ran on the host before its collectives (its
 *                  samples), else the collective's own place.
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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_memfind.h"
#include "rd_selffind.h"
#include "rd_scan.h"

#define ADV_MIN_PCT 1.0
#define ADV_MIN_PCT_MALLOC 0.1
#define ADV_MIN_PCT_GPU 5.0
#define ADV_MIN_CALLS 3
#define ADV_LAUNCH_GAP_NS 100000ull
#define ADV_LAUNCH_KERNEL_NS 20000ull
#define ADV_OCC_MIN_NS 10000ull
#define ADV_LAUNCH_MIN 20
#define ADV_OCC_PCT 25.0
#define ADV_MEM_PCT 90.0

enum { A_SYNC, A_PAGEABLE, A_MALLOC, A_LAUNCH, A_TENSOR, A_OCC, A_MEM, A_INPUT, A_PYCPU, A_COMM,
       A_STRAGGLER, A_SELF, A_LEAK, A_FRAG, A_OOM, A_NCLASS };
static const struct {
  const char *id, *how, *fix;
} classes[A_NCLASS] = {
    {"sync-in-loop", "GPU idle time the synchronizing calls cause (the smaller of a call's time "
     "and the GPU's idle time in a step's length after it: what the host's head start would "
     "save), divided by the steps",
     "avoid .item()/.cpu()/print(tensor) and synchronous copies in the loop: accumulate on the "
     "GPU and synchronize once every N steps"},
    {"pageable-h2d", "what pinned memory saves per call: the GPU idle time after it (as for "
     "sync-in-loop) and 3/4 of the copy's GPU time, at most the call's time, divided by the "
     "steps",
     "copy from pinned memory: pin_memory=True in the DataLoader with .to(device, "
     "non_blocking=True), or cudaMallocHost/cudaHostAlloc buffers in C"},
    {"malloc-in-loop", "GPU idle time the allocations and frees after the first step cause (the "
     "smaller of a call's time and the GPU's idle time after it; cudaFree synchronizes the "
     "device), divided by the steps",
     "allocate once before the loop and reuse the buffers: keep the caching allocator warm and "
     "do not call torch.cuda.empty_cache() in the loop"},
    {"launch-bound", "GPU idle time before kernels that ran shorter than the host's time between "
     "launches, divided by the steps",
     "launch fewer, larger kernels: torch.compile, CUDA graphs (mode=\"reduce-overhead\"), "
     "foreach/fused optimizers (foreach=True, fused=True), larger batches"},
    {"no-tensor-cores", "what tensor cores would save of the GPU time of those GEMMs' kernels "
     "(TF32: 1 - 1/7.4 of it, the ratio of H100's dense peaks; padding half GEMMs: 1/2), times "
     "the share of the step the GPU is busy, divided by the steps",
     "use tensor cores: torch.backends.cuda.matmul.allow_tf32 = True (or "
     "torch.set_float32_matmul_precision(\"high\")), autocast to bf16/fp16, and shapes that are "
     "multiples of 8"},
    {"low-occupancy", "GPU time of those kernels, divided by the steps (the time at stake)",
     "fill the GPU: larger grids (batch the work), fewer registers per thread "
     "(__launch_bounds__, -maxrregcount) or less shared memory per block"},
    {"memory-near-capacity", "none: a risk of out-of-memory errors and allocator thrashing, not "
     "lost time",
     "leave headroom: smaller batches with gradient accumulation, activation checkpointing, "
     "bf16/fp16, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation"},
    {"input-starved", "sampled host time of the main thread in the DataLoader, divided by the "
     "steps",
     "feed the GPU ahead: DataLoader(num_workers>0, pin_memory=True, prefetch_factor, "
     "persistent_workers=True), and make the Dataset's __getitem__ cheaper"},
    {"cpu-bound-python", "sampled CPU time of the main thread in that function, divided by the "
     "steps",
     "move the work out of Python: vectorize it as tensor operations on the GPU, or "
     "torch.compile the function"},
    {"comm-not-overlapped", "NCCL kernel time not overlapped by other kernels, divided by the "
     "steps",
     "overlap communication with compute: DDP's bucketing (bucket_cap_mb), FSDP prefetching, "
     "async_op=True with work issued before wait()"},
    {"straggler-rank", "the other ranks' wait for this rank at the collectives it arrived last "
     "at, divided by its steps",
     "balance the ranks: even out data sharding and per-rank host work (logging, checkpointing, "
     "evaluation on rank 0), and check that rank's input pipeline and node"},
    {RD_SELFFIND_ID, RD_SELFFIND_HOW, RD_SELFFIND_FIX}, /* selffind.c */
    {"memory-leak", "none: live memory grows step over step until the run fails with an "
     "out-of-memory error (ranked first)",
     "do not keep tensors across steps: store loss.item() or tensor.detach().cpu() rather than "
     "the tensor (which holds its autograd graph), and clear caches and lists you append to"},
    {"memory-fragmentation", "none: PyTorch's caching allocator reserves memory it cannot reuse "
     "for the next requests, which ends in out-of-memory errors with memory free (ranked first)",
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place, so blocks of "
     "changing sizes reuse them); or pad changing shapes (sequence lengths, batch sizes) to a "
     "few bucket sizes so that freed blocks fit the next requests"},
    {"out-of-memory", "none: the run failed to allocate (ranked first)",
     "make room at the places that held the most then: smaller batches with gradient "
     "accumulation, activation checkpointing, bf16/fp16, freeing what is no longer needed "
     "(del, no lists of tensors); when free memory exceeded the request, "
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation"},
};

typedef struct acall {
  uint64_t start, dur, corr, calls;
  uint32_t stack, fn;
  int cls; /* A_*, or -1: a copy call (pageable-h2d is decided by its GPU record) */
} acall;

/* every call with a correlation id, and every outermost call */
typedef struct xcall {
  uint64_t start, end, corr;
  uint32_t stack, fn, tid, depth;
  uint32_t top; /* index of the outermost call it is inside (itself at depth 0) */
} xcall;

typedef struct gop {
  uint64_t s, e, corr;
  uint32_t dev, kind, name, nccl;
  uint32_t v[9]; /* kernels: grid, block, registers, static and dynamic shared memory */
  float occ;     /* kernels: estimated occupancy %, < 0 unknown */
} gop;

typedef struct agemm {
  uint32_t call; /* index into xc */
  int reason;    /* 1 float32 without TF32, 2 half/bf16 shape not a multiple of 8 */
  int64_t m, n, k;
} agemm;

typedef struct asample {
  uint64_t time, weight;
  uint32_t tid, stack, kind;
} asample;

typedef struct adev {
  Dlh__DeviceInfo d;
} adev;

typedef struct afinding {
  int cls;
  char *trace, *place, *fns, *detail;
  uint64_t calls, ns, step_ns, nsteps, first;
  int steps_from;
  uint32_t ntraces; /* > 1: found in that many traces (coalesced) */
} afinding;

typedef struct tally {
  char **k;
  uint64_t *w;
  size_t n;
} tally;

/* the steps of a trace, for advise --json's "steps" */
typedef struct asteps {
  char *path;
  uint64_t nsteps, step_ns;
  int from;
  uint64_t lo, hi; /* the steps' span (trace clock) */
} asteps;

/* what a trace's rank did on the host before its collectives (for straggler-rank) */
typedef struct precoll {
  char *path, *place;
  tally t;         /* the samples' places behind that place (for the differential) */
  uint64_t nsteps;
} precoll;

struct rd_advise {
  acall *c;
  size_t n, cap;
  xcall *xc;
  size_t nxc, capxc;
  rd_u64map corr_ix; /* corr -> index into xc */
  gop *g;
  size_t ng, capg;
  agemm *gm;
  size_t ngm, capgm;
  rd_u64map math; /* cuBLAS handle -> math mode */
  rd_u64map nccl_kb; /* corr of an NCCL collective call -> the KiB it moves over the links */
  rd_u64map push; /* tid -> stack of its last __cudaPushCallConfiguration */
  asample *sm;
  size_t nsm, capsm;
  adev *dev;
  size_t ndev;
  rd_memcol *mem;
  rd_sink memsink;
  rd_u64map pageable; /* corr of a memcpy record from (1) or into (2) pageable memory */
  rd_u64map copy_us;  /* corr of a pageable HtoD memcpy record -> its GPU time in µs */
  rd_stepfind *sf;      /* the trace's steps (stepfind.c) */
  rd_step_span *st;     /* after the pass: its steps, owned by sf */
  size_t nst;
  uint64_t lo, hi;
  afinding *f;
  size_t nf, capf;
  size_t ntraces;
  uint64_t nsteps_all, step_ns_all;
  int steps_from; /* of the last trace: RD_STEPS_* */
  asteps *ts;     /* every trace's steps */
  tally dataset;  /* user lines under the DataLoader's fetch, all traces */
  precoll *pc;
  size_t npc;
  /* the events of the trace being read, and the most kept (rd_event_limit, as for dlhook
   * advise): past it, the rest of the trace is passed over (over = 1) */
  uint64_t events, budget;
  int over;
};

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

static int name_in(const char *n, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (!strcmp(n, names[i])) return 1;
  return 0;
}
static int sync_fn(const char *n) {
  static const char *const names[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                      "cudaEventSynchronize", "cudaThreadSynchronize",
                                      "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol",
                                      "cuStreamSynchronize", "cuCtxSynchronize",
                                      "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyDtoH",
                                      "cuMemcpy", NULL};
  return name_in(n, names);
}
static int malloc_fn(const char *n) {
  static const char *const names[] = {"cudaMalloc", "cudaFree", "cudaMallocManaged",
                                      "cudaMallocPitch", "cuMemAlloc_v2", "cuMemFree_v2",
                                      "cuMemAlloc", "cuMemFree", NULL};
  return name_in(n, names);
}
static int copy_fn(const char *n) { return !strncmp(n, "cudaMemcpy", 10) || !strncmp(n, "cuMemcpy", 8); }
static int collective_fn(const char *n) {
  static const char *const names[] = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce",
                                      "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll",
                                      "ncclGather", "ncclScatter", "ncclGroupEnd", NULL};
  return name_in(n, names);
}
static int nccl_kernel(const char *k) { return k && (!strncmp(k, "nccl", 4) || strstr(k, "ncclDevKernel") || strstr(k, "ncclKernel")); }

#define PUSH(arr, n, cap, init)                                 \
  do {                                                          \
    if ((n) == (cap)) {                                         \
      (cap) = (cap) ? (cap) / 2 * 3 : (init);                   \
      (arr) = rd_xrealloc((arr), (cap) * sizeof *(arr));        \
    }                                                           \
  } while (0)

static void push_call(rd_advise *x, const dlh_api_event *e, int cls) {
  PUSH(x->c, x->n, x->cap, 1024);
  x->c[x->n++] = (acall){e->start_ns, e->dur_ns, e->corr, dlh_api_calls(e), e->stack, e->fn, cls};
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
  if (!strcmp(f->name, "__cudaPushCallConfiguration")) rd_m_put(&x->push, tid, e->stack);
  else if (!strcmp(f->name, "__cudaLaunchKernel") || !strcmp(f->name, "cudaLaunchKernel")) {
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
  if (f->domain == DLH__DOMAIN__DOMAIN_CUBLAS && !strcmp(f->name, "cublasSetMathMode")) {
    int64_t h = arg_or(t, e, "handle", 0), m = arg_or(t, e, "mode", 0);
    if (h) rd_m_put(&x->math, (uint64_t)h, (uint32_t)m);
  }
  if (f->domain == DLH__DOMAIN__DOMAIN_NCCL && e->corr && collective_fn(f->name)) {
    int64_t b = arg_or(t, e, "bytes", 0), n = arg_or(t, e, "nranks", 0);
    /* on the links: an all-reduce sends and receives 2 (n - 1) / n of its bytes, the others
     * at most their bytes */
    double wire = !strcmp(f->name, "ncclAllReduce") && n > 0 ? 2.0 * (double)b * (double)(n - 1) / (double)n
                                                          : (double)b;
    if (b > 0) rd_m_put(&x->nccl_kb, e->corr, (uint32_t)(wire / 1024 < UINT32_MAX ? wire / 1024 : UINT32_MAX));
  }
  if (e->depth) return;
  if (!x->lo || e->start_ns < x->lo) x->lo = e->start_ns;
  if (e->start_ns + dlh_api_span(e) > x->hi) x->hi = e->start_ns + dlh_api_span(e);
  if (sync_fn(f->name)) push_call(x, e, A_SYNC);
  if (malloc_fn(f->name)) push_call(x, e, A_MALLOC);
  if (copy_fn(f->name) && e->corr) push_call(x, e, -1);
  int gemm = (f->domain == DLH__DOMAIN__DOMAIN_CUBLAS && strstr(f->name, "emm") &&
              rd_arg(t, e, "flops", &(uint64_t){0})) ||
             (f->domain == DLH__DOMAIN__DOMAIN_CUBLASLT && !strcmp(f->name, "cublasLtMatmul"));
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

enum { PAGEABLE_H2D = 1, PAGEABLE_D2H = 2 }; /* the values of rd_advise.pageable */
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
             g->kind == RD_KERNEL && nccl_kernel(g->kname), {0}, -1};
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

/* ---------------------------------------------------------------- places */

/* A frame of code the user did not write, though it is in the program: nvcc's launch stubs and
 * the inline functions of the CUDA headers (cuda_runtime.h's cudaLaunchKernel<T>). */
static int generated(const rd_frame *f) {
  return (f->function && (!strncmp(f->function, "__device_stub", 13) || strstr(f->function, "__device_stub_"))) ||
         (f->file && strstr(f->file, "/include/"));
}

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
    if (!m || generated(&fr[i])) continue;
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

static void tally_add(tally *y, const char *k, uint64_t w) {
  for (size_t i = 0; i < y->n; i++)
    if (!strcmp(y->k[i], k)) { y->w[i] += w; return; }
  y->k = rd_xrealloc(y->k, (y->n + 1) * sizeof *y->k);
  y->w = rd_xrealloc(y->w, (y->n + 1) * sizeof *y->w);
  y->k[y->n] = rd_xstrdup(k);
  y->w[y->n++] = w;
}
static size_t tally_top(const tally *y) {
  size_t b = 0;
  for (size_t i = 1; i < y->n; i++)
    if (y->w[i] > y->w[b]) b = i;
  return b;
}
static void tally_free(tally *y) {
  for (size_t i = 0; i < y->n; i++) free(y->k[i]);
  free(y->k);
  free(y->w);
  memset(y, 0, sizeof *y);
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

/* The finding of class cls at place (taken over) in this trace, new or the one there is. */
static afinding *finding(rd_advise *x, size_t base, int cls, char *place, const rd_trace *t,
                         uint64_t nsteps, uint64_t step_ns) {
  for (size_t k = base; k < x->nf; k++)
    if (x->f[k].cls == cls && !strcmp(x->f[k].place, place)) { free(place); return &x->f[k]; }
  PUSH(x->f, x->nf, x->capf, 16);
  afinding *f = &x->f[x->nf++];
  memset(f, 0, sizeof *f);
  f->cls = cls;
  f->place = place;
  f->trace = rd_xstrdup(t->path);
  f->nsteps = nsteps;
  f->step_ns = step_ns;
  f->steps_from = x->steps_from;
  return f;
}

static int by_cost(const void *a, const void *b) {
  const afinding *p = a, *q = b;
  if ((p->cls >= A_LEAK) != (q->cls >= A_LEAK)) return p->cls >= A_LEAK ? -1 : 1; /* memory: ends the run */
  double cp = (double)p->ns / (double)(p->nsteps ? p->nsteps : 1);
  double cq = (double)q->ns / (double)(q->nsteps ? q->nsteps : 1);
  return cp < cq ? 1 : cp > cq ? -1 : p->cls - q->cls;
}

/* ---------------------------------------------------------------- per-trace analysis */

static int by_tid_start(const void *a, const void *b, void *ctx) {
  const xcall *v = ctx;
  const xcall *p = &v[*(const uint32_t *)a], *q = &v[*(const uint32_t *)b];
  if (p->tid != q->tid) return p->tid < q->tid ? -1 : 1;
  if (p->start != q->start) return p->start < q->start ? -1 : 1;
  return (int)p->depth - (int)q->depth;
}
static int by_sample_time(const void *a, const void *b, void *ctx) {
  const asample *v = ctx;
  uint64_t p = v[*(const uint32_t *)a].time, q = v[*(const uint32_t *)b].time;
  return p < q ? -1 : p > q;
}
static int by_dev_start(const void *a, const void *b) {
  const gop *p = a, *q = b;
  if (p->dev != q->dev) return p->dev < q->dev ? -1 : 1;
  return p->s < q->s ? -1 : p->s > q->s;
}

static const Dlh__DeviceInfo *device(const rd_advise *x, uint32_t id) {
  for (size_t i = 0; i < x->ndev; i++)
    if (x->dev[i].d.id == id) return &x->dev[i].d;
  return NULL;
}

/* the outermost call that launched GPU op o, or NULL */
static const xcall *launcher(const rd_advise *x, const gop *o) {
  uint32_t i;
  if (!o->corr || !rd_m_get(&x->corr_ix, o->corr, &i)) return NULL;
  return &x->xc[x->xc[i].top];
}

static const char *fname(const rd_trace *t, uint32_t fn) {
  const rd_func *f = rd_trace_func(t, fn);
  return f && f->name ? f->name : "?";
}

static int in_win(uint64_t t, uint64_t lo, uint64_t hi) { return t >= lo && t < hi; }

static void detail(afinding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void detail(afinding *f, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(f->detail);
  f->detail = rd_xstrdup(buf);
}

/* Python frames of samples: is f a frame of the DataLoader / its fetcher? */
static int dl_frame(const rd_frame *f) { return f->python && f->file && strstr(f->file, "torch/utils/data/"); }
static int fetch_frame(const rd_frame *f) { return f->python && f->file && strstr(f->file, "torch/utils/data/_utils/fetch.py"); }
static char *py_place(const rd_frame *f) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s:%u", f->file, f->line);
  return rd_xstrdup(buf);
}

/* What the analyses of one trace share (rd_advise_trace_end). */
typedef struct actx {
  rd_trace *t;
  size_t base;              /* the trace's first finding in x->f */
  uint64_t nsteps, step_ns; /* its steps and their summed time */
  uint64_t after;           /* the end of the first step (UINT64_MAX: no steady state to tell) */
  uint64_t in_lo, in_hi;    /* with steps: only what is inside [in_lo, in_hi) counts */
  uint32_t main_tid;        /* the thread with the most outermost calls */
  uint64_t gpu_busy;        /* the busiest device's busy time inside the steps */
} actx;

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
    if (x->nxc) qsort_r(o, x->nxc, sizeof *o, by_tid_start, x->xc);
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
typedef struct span { uint64_t s, e; } span;
static int by_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}
static span *gpu_busy_spans(const rd_advise *x, size_t *n) {
  span *v = rd_xmalloc((x->ng ? x->ng : 1) * sizeof *v);
  for (size_t i = 0; i < x->ng; i++) v[i] = (span){x->g[i].s, x->g[i].e};
  if (x->ng) qsort(v, x->ng, sizeof *v, by_span);
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

/* The findings of host calls: sync-in-loop, pageable-h2d, malloc-in-loop. */
static void host_classes(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
  uint64_t step_ns = a->step_ns;
  uint64_t after = a->after;
  uint64_t in_lo = a->in_lo;
  uint64_t in_hi = a->in_hi;
  size_t nsp;
  span *sp = gpu_busy_spans(x, &nsp);
  for (size_t i = 0; i < x->n; i++) {
    acall *c = &x->c[i];
    int cls = c->cls;
    uint32_t one;
    if (!in_win(c->start, in_lo, in_hi)) continue;
    if (cls < 0) {
      if (!rd_m_get(&x->pageable, c->corr, &one)) continue;
      if (one == PAGEABLE_D2H && sync_fn(fname(t, c->fn))) continue; /* counted as one */
      cls = one == PAGEABLE_D2H ? A_SYNC : A_PAGEABLE;
    }
    afinding *f = finding(x, base, cls, place_of(t, c->stack), t, nsteps, step_ns);
    if (cls == A_MALLOC) {
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
      f->ns += blocking_cost(sp, nsp, c->start, d, window_of(x, c->start, d));
    } else if (cls == A_SYNC) {
      f->calls += c->calls;
      f->ns += blocking_cost(sp, nsp, c->start, c->dur, window_of(x, c->start, c->dur));
    } else if (cls == A_PAGEABLE) {
      /* from pinned memory with non_blocking the host no longer waits (its bubble is saved) and
       * the copy itself runs about 4x faster (PCIe Gen5: ~12 GB/s pageable, ~50 pinned); in a
       * host-bound loop that is the call's whole time */
      uint32_t us = 0;
      rd_m_get(&x->copy_us, c->corr, &us);
      uint64_t save = blocking_cost(sp, nsp, c->start, c->dur, window_of(x, c->start, c->dur)) +
                      (uint64_t)us * 1000 * 3 / 4;
      f->calls += c->calls;
      f->ns += save < c->dur ? save : c->dur;
    } else {
      f->calls += c->calls;
      f->ns += c->dur;
    }
    add_fn(&f->fns, fname(t, c->fn));
  }
  free(sp);
}

/* The findings of GPU work, per device in time order: launch-bound, low-occupancy, comm-not-
 * overlapped; sets a->gpu_busy, the busiest device's busy time inside the steps. */
#define COMM_FLOOR_BW 25e9 /* bytes/s: the slowest links a collective crosses (200 Gb/s IB) */
static void gpu_classes(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
  uint64_t step_ns = a->step_ns;
  uint64_t in_lo = a->in_lo;
  uint64_t in_hi = a->in_hi;
  if (x->ng) qsort(x->g, x->ng, sizeof *x->g, by_dev_start);
  uint64_t gpu_busy = 0; /* the busiest device's busy time inside the steps */
  {
    uint64_t lb_n = 0, lb_kns = 0, lb_int = 0;
    size_t d0 = 0;
    while (d0 < x->ng) {
      size_t d1 = d0;
      while (d1 < x->ng && x->g[d1].dev == x->g[d0].dev) d1++;
      const Dlh__DeviceInfo *dv = device(x, x->g[d0].dev);
      uint64_t busy = 0, until = 0, cov_s = 0, cov_e = 0;
      const xcall *prev_l = NULL;
      /* merged intervals of non-NCCL kernels, for the overlap of collectives */
      uint64_t *ms = NULL, *me = NULL;
      size_t nm = 0;
      for (size_t i = d0; i < d1; i++) {
        gop *o = &x->g[i];
        int in = in_win(o->s, in_lo, in_hi);
        /* busy time (union) */
        if (in) {
          if (o->s > cov_e) { busy += cov_e - cov_s; cov_s = o->s; cov_e = o->e; }
          else if (o->e > cov_e) cov_e = o->e;
        }
        if (o->kind == RD_KERNEL && !o->nccl) {
          if (nm && o->s <= me[nm - 1]) { if (o->e > me[nm - 1]) me[nm - 1] = o->e; }
          else {
            ms = rd_xrealloc(ms, (nm + 1) * sizeof *ms);
            me = rd_xrealloc(me, (nm + 1) * sizeof *me);
            ms[nm] = o->s, me[nm++] = o->e;
          }
        }
        if (o->kind == RD_KERNEL) {
          double bps, wps, occ;
          if (rd_occupancy(dv, (const uint64_t[9]){o->v[0], o->v[1], o->v[2], o->v[3], o->v[4],
                                                   o->v[5], o->v[6], o->v[7], o->v[8]},
                           9, &bps, &wps, &occ))
            o->occ = (float)occ;
          const xcall *l = launcher(x, o);
          uint32_t li;
          const xcall *own = o->corr && rd_m_get(&x->corr_ix, o->corr, &li) ? &x->xc[li] : NULL;
          /* launch-bound: idle before it, shorter than the host's time between launches */
          if (in && own && prev_l && until && o->s > until && o->s - until <= ADV_LAUNCH_GAP_NS &&
              o->e - o->s < ADV_LAUNCH_KERNEL_NS &&
              own->start > prev_l->start && o->e - o->s < own->start - prev_l->start && l) {
            afinding *f = finding(x, base, A_LAUNCH, place_of(t, l->stack), t, nsteps, step_ns);
            f->calls++;
            f->ns += o->s - until;
            add_fn(&f->fns, rd_trace_func(t, own->fn) ? rd_trace_func(t, own->fn)->name : "?");
            lb_n++, lb_kns += o->e - o->s, lb_int += own->start - prev_l->start;
          }
          if (own) prev_l = own;
          /* low occupancy, by kernel name */
          const rd_func *lf = l ? rd_trace_func(t, l->fn) : NULL;
          int lib = lf && lf->domain != DLH__DOMAIN__DOMAIN_CUDART && lf->domain != DLH__DOMAIN__DOMAIN_DRIVER;
          if (in && !o->nccl && !lib && o->occ >= 0 && o->occ < ADV_OCC_PCT && o->e - o->s >= ADV_OCC_MIN_NS) {
            const char *kn = rd_trace_string(t, o->name);
            char key[300];
            snprintf(key, sizeof key, "%s", kn && *kn ? kn : "[kernel]");
            char *dm = rd_demangle(key);
            afinding *f = finding(x, base, A_OCC, l ? place_of(t, l->stack) : rd_xstrdup("[no call]"),
                                  t, nsteps, step_ns);
            f->calls++;
            f->ns += o->e - o->s;
            add_fn(&f->fns, dm ? dm : key);
            if (!f->detail || o->occ < (float)f->first / 100.0f) {
              f->first = (uint64_t)(o->occ * 100);
              detail(f, "estimated occupancy %.1f %% (grid %ux%ux%u, block %ux%ux%u, %u registers, "
                        "%u B shared memory)", o->occ, o->v[0], o->v[1], o->v[2], o->v[3], o->v[4],
                     o->v[5], o->v[6], o->v[7] + o->v[8]);
            }
            free(dm);
          }
        }
        if (o->e > until) until = o->e;
      }
      busy += cov_e - cov_s;
      if (busy > gpu_busy) gpu_busy = busy;
      /* collectives not overlapped by the device's other kernels */
      size_t m = 0;
      for (size_t i = d0; i < d1; i++) {
        gop *o = &x->g[i];
        if (!o->nccl || !in_win(o->s, in_lo, in_hi)) continue;
        while (m > 0 && ms[m - 1] > o->s) m--;
        while (m < nm && me[m] <= o->s) m++;
        uint64_t cov = 0;
        for (size_t j = m; j < nm && ms[j] < o->e; j++) {
          uint64_t a = ms[j] > o->s ? ms[j] : o->s, b = me[j] < o->e ? me[j] : o->e;
          if (b > a) cov += b - a;
        }
        uint64_t dur = o->e - o->s;
        if (dur <= cov) continue;
        const xcall *l = launcher(x, o);
        uint32_t kb;
        uint64_t exposed = dur - cov;
        /* a collective's kernel also waits for the other ranks to arrive (straggler-rank): what
         * overlap can hide is at most the time its data takes over slow links */
        if (l && l->corr && rd_m_get(&x->nccl_kb, l->corr, &kb)) {
          uint64_t need = (uint64_t)((double)kb * 1024.0 / COMM_FLOOR_BW * 1e9);
          if (exposed > need) exposed = need;
        }
        if (!exposed) continue;
        afinding *f = finding(x, base, A_COMM, l ? place_of(t, l->stack) : rd_xstrdup("[no call]"),
                              t, nsteps, step_ns);
        f->calls++;
        f->ns += exposed;
        if (l && rd_trace_func(t, l->fn)) add_fn(&f->fns, rd_trace_func(t, l->fn)->name);
      }
      free(ms);
      free(me);
      d0 = d1;
    }
    for (size_t k = base; k < x->nf; k++)
      if (x->f[k].cls == A_LAUNCH && lb_n)
        detail(&x->f[k], "over the trace: %" PRIu64 " such kernels, %.1f us long on average, "
                         "launched %.1f us apart",
               lb_n, (double)lb_kns / (double)lb_n / 1e3, (double)lb_int / (double)lb_n / 1e3);
  }
  a->gpu_busy = gpu_busy;
}

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
    if (x->f[k].cls == A_TENSOR && strstr(x->f[k].place, ".py:") && (pi == SIZE_MAX || x->f[k].ns > x->f[pi].ns))
      pi = k;
  if (pi == SIZE_MAX) return;
  size_t w = base;
  for (size_t k = base; k < x->nf; k++) {
    afinding *f = &x->f[k];
    if (f->cls == A_TENSOR && k != pi && !strstr(f->place, ".py:")) {
      x->f[pi].ns += f->ns;
      x->f[pi].calls += f->calls;
      if (f->fns) add_fn(&x->f[pi].fns, f->fns);
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
static void gemm_classes(rd_advise *x, actx *a) {
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
    if (!in_win(c->start, in_lo, in_hi)) continue;
    afinding *f = finding(x, base, A_TENSOR, place_of(t, c->stack), t, nsteps, step_ns);
    f->calls++;
    double sp = a->reason == 1 ? TF32_SPEEDUP : ALIGN_SPEEDUP;
    f->ns += (uint64_t)((double)(gns[i] ? gns[i] : c->end - c->start) * (1.0 - 1.0 / sp));
    add_fn(&f->fns, fname(t, c->fn));
    if (!f->detail)
      detail(f, a->reason == 1 ? "float32 GEMM computed in float32 (no TF32), e.g. m=%" PRId64
                                 " n=%" PRId64 " k=%" PRId64
                               : "half/bfloat16 GEMM with a dimension not a multiple of 8, e.g. "
                                 "m=%" PRId64 " n=%" PRId64 " k=%" PRId64,
             a->m, a->n, a->k);
  }
  fold_backward(x, base);
  double busy = step_ns ? (double)a->gpu_busy / (double)step_ns : 1.0;
  for (size_t k = base; k < x->nf; k++)
    if (x->f[k].cls == A_TENSOR && busy < 1.0) x->f[k].ns = (uint64_t)((double)x->f[k].ns * busy);
  free(gns);
  rd_m_free(&gix);
}

/* memory-leak (memfind.c): live memory that grows step over step, at the place that holds the
 * most of it. */
static void leak_class(rd_advise *x, actx *a, const rd_mem_sample *ms, long nms) {
  rd_memleak lk[16];
  size_t nl = rd_memleaks(a->t, ms, nms, x->st, x->nst, lk, 16);
  for (size_t i = 0; i < nl && i < 3; i++) {
    afinding *f = finding(x, a->base, A_LEAK, place_of(a->t, lk[i].stack), a->t, a->nsteps, a->step_ns);
    f->calls = lk[i].allocs;
    f->first = 1;
    add_fn(&f->fns, "allocations");
    detail(f, "live memory grew by %.2f MiB over %" PRIu64 " steps (at %" PRIu64 " of %" PRIu64
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
    afinding *f = finding(x, a->base, A_FRAG, place_of(a->t, fr[i].stack), a->t, a->nsteps, a->step_ns);
    f->calls = fr[i].segments;
    f->first = 1;
    add_fn(&f->fns, "segments");
    detail(f, "at the peak PyTorch's default caching allocator holds %.1f MiB reserved for %.1f "
              "MiB of tensors; %.1f MiB of it idle in %" PRIu64 " segments made for requests here",
           (double)fr[i].reserved / 1048576.0, (double)fr[i].allocated / 1048576.0,
           (double)fr[i].idle / 1048576.0, fr[i].segments);
  }
  rd_memoom oo[4];
  const Dlh__DeviceInfo *dv = nfl ? device(x, fl[0].device) : NULL;
  size_t no = rd_memooms(a->t, ms, nms, fl, nfl, dv ? dv->total_mem : 0, oo, 4);
  for (size_t i = 0; i < no; i++) {
    afinding *f = finding(x, a->base, A_OOM, place_of(a->t, oo[i].fail.stack), a->t, a->nsteps, a->step_ns);
    f->calls = oo[i].fail.calls;
    f->first = 1;
    add_fn(&f->fns, fname(a->t, oo[i].fail.fn));
    char *by = NULL;
    size_t blen = 0;
    FILE *m = open_memstream(&by, &blen);
    for (size_t k = 0; m && k < oo[i].nplaces; k++) {
      char *pl = place_of(a->t, oo[i].place[k].stack);
      fprintf(m, "%s%s %.1f MiB (%" PRIu64 ")", k ? ", " : "", pl,
              (double)oo[i].place[k].bytes / 1048576.0, oo[i].place[k].allocs);
      free(pl);
    }
    if (m) fclose(m);
    detail(f, "%.1f MiB requested with %.1f MiB live of %.1f MiB; largest free block %.1f MiB%s; "
              "live by place: %s",
           (double)oo[i].fail.bytes / 1048576.0, (double)oo[i].live / 1048576.0,
           (double)oo[i].capacity / 1048576.0, (double)oo[i].largest_free / 1048576.0,
           oo[i].model ? " (PyTorch's default caching allocator)" : "", by ? by : "");
    free(by);
  }
}

/* Memory near capacity (memory-near-capacity): the ledger's peak per device. */
static void memory_class(rd_advise *x, actx *a) {
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
      if (c->cls != A_MALLOC || c->start > at || !strstr(fname(t, c->fn), "lloc")) continue;
      if (!best || c->start > best->start) best = c;
    }
    afinding *f = finding(x, base, A_MEM, best ? place_of(t, best->stack) : rd_xstrdup("[unknown]"),
                          t, nsteps, step_ns);
    f->calls = 1;
    f->first = 1; /* kept whatever its (zero) cost */
    if (best) add_fn(&f->fns, fname(t, best->fn));
    detail(f, "device %u: %.2f GiB of %.2f GiB live at the peak (%.1f %%)", dv->id,
           (double)peak / 1073741824.0, (double)dv->total_mem / 1073741824.0, pct);
  }
  leak_class(x, a, ms, nms);
  frag_oom_classes(x, a, ms, nms, fl, nfl);
  free(fl);
  free(ms);
}

/* From the samples: the DataLoader (input-starved) and the Python functions of the main thread
 * (cpu-bound-python). */
static void sample_classes(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  size_t base = a->base;
  uint64_t nsteps = a->nsteps;
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
            tally_add(&x->dataset, p, s->weight);
            free(p);
            break;
          }
        break;
      }
    }
    if (s->tid != main_tid || !in_win(s->time, in_lo, in_hi)) continue;
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
      tally_add(&input, p, ag[i].w);
      free(p);
      continue;
    }
    if (ag[i].kind != RD_SAMPLE_CPU) continue;
    for (size_t j = 0; j < n; j++) {
      if (!fr[j].python || !rd_torch_user_file(fr[j].file)) continue;
      char k[1024];
      snprintf(k, sizeof k, "%s\t%s", fr[j].file, fr[j].function ? fr[j].function : "?");
      size_t before = fn.n;
      tally_add(&fn, k, ag[i].w);
      if (fn.n > before) { fn_n = rd_xrealloc(fn_n, fn.n * sizeof *fn_n); fn_n[fn.n - 1] = 0; }
      for (size_t q = 0; q < fn.n; q++)
        if (!strcmp(fn.k[q], k)) { fn_n[q] += ag[i].n; break; }
      snprintf(k, sizeof k, "%s\t%s\t%s:%u", fr[j].file, fr[j].function ? fr[j].function : "?",
               fr[j].file, fr[j].line);
      tally_add(&line, k, ag[i].w);
      break;
    }
  }
  double span = (double)(step_ns ? step_ns : 1);
  double busy = (double)gpu_busy / span;
  if (input.n && 100.0 * (double)input_w / span >= ADV_MIN_PCT_GPU && busy < 0.9) {
    size_t b = tally_top(&input);
    afinding *f = finding(x, base, A_INPUT, rd_xstrdup(input.k[b]), t, nsteps, step_ns);
    f->ns = input_w;
    f->calls = 0;
    for (size_t i = 0; i < x->nsm; i++) f->calls += x->sm[i].tid == main_tid && in_win(x->sm[i].time, in_lo, in_hi);
    add_fn(&f->fns, "DataLoader.__next__");
    detail(f, "the GPU was busy %.0f %% of the steps", busy * 100);
  }
  if (fn.n && busy < 0.5 && (double)main_cpu >= 0.5 * span) {
    size_t b = tally_top(&fn);
    if (100.0 * (double)fn.w[b] / span >= 20.0) {
      /* its most sampled line */
      size_t kl = strlen(fn.k[b]), bl = SIZE_MAX;
      for (size_t i = 0; i < line.n; i++)
        if (!strncmp(line.k[i], fn.k[b], kl) && line.k[i][kl] == '\t' &&
            (bl == SIZE_MAX || line.w[i] > line.w[bl]))
          bl = i;
      const char *pl = bl != SIZE_MAX ? strrchr(line.k[bl], '\t') + 1 : "[unknown]";
      afinding *f = finding(x, base, A_PYCPU, rd_xstrdup(pl), t, nsteps, step_ns);
      f->ns = fn.w[b];
      f->calls = fn_n[b];
      add_fn(&f->fns, strchr(fn.k[b], '\t') + 1);
      detail(f, "the main thread was on CPU %.0f %% of the steps, the GPU busy %.0f %%",
             100.0 * (double)main_cpu / span, busy * 100);
    }
  }
  tally_free(&input);
  tally_free(&fn);
  tally_free(&line);
  free(fn_n);
  free(ag);
  rd_m_free(&six);
}

/* 1 when time t lies inside one of the calls o[0..no) (top-level calls of one thread, sorted by
 * start: they do not overlap) */
static int in_calls(const rd_advise *x, const uint32_t *o, size_t no, uint64_t t) {
  size_t lo = 0, hi = no;
  while (lo < hi) { /* the first call that starts after t */
    size_t mid = (lo + hi) / 2;
    if (x->xc[o[mid]].start <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && t < x->xc[o[lo - 1]].end;
}

/* What this rank did on the host before its collectives (for straggler-rank). */
static void before_collectives(rd_advise *x, actx *a) {
  rd_trace *t = a->t;
  uint32_t main_tid = a->main_tid;
  tally pre = {0};
  const xcall *prev = NULL, *widest = NULL;
  uint64_t wgap = 0;
  uint32_t *o = rd_xmalloc((x->nxc ? x->nxc : 1) * sizeof *o);
  size_t no = 0, nms = 0;
  uint32_t *msi = rd_xmalloc((x->nsm ? x->nsm : 1) * sizeof *msi);
  for (size_t i = 0; i < x->nsm; i++)
    if (x->sm[i].tid == main_tid && x->sm[i].kind == RD_SAMPLE_CPU) msi[nms++] = (uint32_t)i;
  if (nms) qsort_r(msi, nms, sizeof *msi, by_sample_time, x->sm);
  for (size_t i = 0; i < x->nxc; i++)
    if (!x->xc[i].depth && x->xc[i].tid == main_tid) o[no++] = (uint32_t)i;
  if (no) qsort_r(o, no, sizeof *o, by_tid_start, x->xc);
  /* before each collective: the widest host gap between two calls since the previous one
   * (where the rank was busy on the host without calling CUDA), and the samples in it */
  uint64_t ga = 0, gb = 0;
  for (size_t j = 0; j < no; j++) {
    const xcall *c = &x->xc[o[j]];
    const rd_func *f = rd_trace_func(t, c->fn);
    if (prev && c->start > prev->end && c->start - prev->end > gb - ga) ga = prev->end, gb = c->start;
    if (f && f->domain == DLH__DOMAIN__DOMAIN_NCCL && collective_fn(f->name) && gb > ga &&
        in_win(c->start, a->in_lo, a->in_hi)) {
      if (gb - ga > wgap) wgap = gb - ga, widest = c;
      size_t lo = 0, hi = nms;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->sm[msi[mid]].time < ga) lo = mid + 1;
        else hi = mid;
      }
      for (size_t i = lo; i < nms && x->sm[msi[i]].time <= gb; i++) {
        const asample *s = &x->sm[msi[i]];
        char *p = place_of(t, s->stack);
        tally_add(&pre, p, s->weight);
        free(p);
      }
      ga = gb = 0;
    }
    prev = c;
  }
  /* collectives issued by another thread (DDP's reducer runs on the autograd thread): the main
   * thread's own place, where its samples inside the steps are: on the CPU, or waiting outside
   * CUDA (blocking I/O: a log written or sent synchronously; a wait inside a CUDA call is the
   * GPU's pace, not the rank's own work) */
  if (!pre.n && !widest)
    for (size_t i = 0; i < x->nsm; i++) {
      const asample *s = &x->sm[i];
      if (s->tid != main_tid || !in_win(s->time, a->in_lo, a->in_hi)) continue;
      if (s->kind != RD_SAMPLE_CPU && (s->kind != RD_SAMPLE_WAIT || in_calls(x, o, no, s->time)))
        continue;
      char *p = place_of(t, s->stack);
      tally_add(&pre, p, s->weight);
      free(p);
    }
  free(o);
  free(msi);
  if (pre.n || widest) {
    x->pc = rd_xrealloc(x->pc, (x->npc + 1) * sizeof *x->pc);
    precoll *pc = &x->pc[x->npc++];
    pc->path = rd_xstrdup(t->path);
    pc->place = pre.n ? rd_xstrdup(pre.k[tally_top(&pre)]) : place_of(t, widest->stack);
    pc->t = pre; /* kept: rd_advise_ranks compares the ranks' places */
    pc->nsteps = a->nsteps ? a->nsteps : 1;
    memset(&pre, 0, sizeof pre);
  }
  tally_free(&pre);
}

/* The straggler's place: where its host time per step exceeds the other ranks' the most (a
 * wait or a computation only it has: the rank-0 logging, the checkpoint), else its own top
 * place. */
static const char *straggler_place(const rd_advise *x, const char *path) {
  const precoll *me = NULL;
  for (size_t i = 0; i < x->npc; i++)
    if (!strcmp(x->pc[i].path, path)) me = &x->pc[i];
  if (!me) return "[unknown]";
  double best = 0;
  const char *pl = me->place;
  for (size_t k = 0; k < me->t.n; k++) {
    double mine = (double)me->t.w[k] / (double)me->nsteps, others = 0;
    size_t n = 0;
    for (size_t i = 0; i < x->npc; i++) {
      const precoll *o = &x->pc[i];
      if (o == me) continue;
      n++;
      for (size_t j = 0; j < o->t.n; j++)
        if (!strcmp(o->t.k[j], me->t.k[k])) { others += (double)o->t.w[j] / (double)o->nsteps; break; }
    }
    double excess = mine - (n ? others / (double)n : 0);
    if (excess > best) best = excess, pl = me->t.k[k];
  }
  return pl;
}

/* Drops the trace's findings below their thresholds. */
static void thresholds(rd_advise *x, actx *a) {
  size_t base = a->base;
  size_t w = base;
  for (size_t k = base; k < x->nf; k++) {
    afinding *f = &x->f[k];
    double pct = f->step_ns ? 100.0 * (double)f->ns / (double)f->step_ns : 0;
    int keep;
    switch (f->cls) {
    case A_SYNC:
      keep = f->calls >= ADV_MIN_CALLS && f->calls >= f->nsteps && pct >= ADV_MIN_PCT;
      break;
    case A_PAGEABLE: keep = f->calls >= ADV_MIN_CALLS && pct >= ADV_MIN_PCT; break;
    case A_MALLOC: keep = f->calls >= 2 && pct >= ADV_MIN_PCT_MALLOC; break;
    case A_LAUNCH: keep = f->calls >= ADV_LAUNCH_MIN && pct >= ADV_MIN_PCT_GPU; break;
    case A_COMM: keep = f->calls >= ADV_MIN_CALLS && pct >= ADV_MIN_PCT_GPU; break;
    case A_SELF: keep = pct >= RD_SELFFIND_MIN_PCT; break;
    case A_MEM: case A_LEAK: case A_FRAG: case A_OOM: keep = 1; break;
    default: keep = pct >= ADV_MIN_PCT_GPU; break;
    }
    if (keep) x->f[w++] = *f;
    else { free(f->place); free(f->trace); free(f->fns); free(f->detail); }
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
    if (f->fns) add_fn(&o->fns, f->fns);
    free(f->place); free(f->trace); free(f->fns); free(f->detail);
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
  host_classes(x, &a);
  gpu_classes(x, &a);
  gemm_classes(x, &a);
  memory_class(x, &a);
  sample_classes(x, &a);
  before_collectives(x, &a);
  rd_selffind sf; /* dlhook's own cost: its writer's waits (selffind.c) */
  if (rd_selffind_trace(t, a.in_lo, a.in_hi, a.main_tid, a.step_ns, &sf)) {
    afinding *f = finding(x, a.base, A_SELF, rd_xstrdup(sf.place), t, a.nsteps, a.step_ns);
    f->ns = sf.ns, f->calls = sf.waits, f->fns = rd_xstrdup(RD_SELFFIND_FNS);
    detail(f, "%s", sf.detail);
  }
  thresholds(x, &a);
  coalesce(x, &a);
  if (x->nf) qsort(x->f, x->nf, sizeof *x->f, by_cost);
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

/* 1 when a trace-clock time of the trace at `path` lies inside its steps (rd_ranks_straggler_in) */
static int in_trace_steps(void *ctx, const char *path, int64_t t) {
  const rd_advise *x = ctx;
  for (size_t i = 0; i < x->ntraces; i++)
    if (!strcmp(x->ts[i].path, path))
      return x->ts[i].nsteps && t >= 0 && in_win((uint64_t)t, x->ts[i].lo, x->ts[i].hi);
  return 0;
}

/* Several ranks (after rd_ranks_finish): the straggler, as a finding of its trace. A rank is a
 * straggler when, at the collectives of the steps, the others waited for it at least twice as
 * long as for any other rank and it arrived last at two thirds of them at least (ranks that
 * take turns arriving last are noise, not a straggler); its cost is that wait per step. */
void rd_advise_ranks(rd_advise *x) {
  rd_straggler_wait s;
  if (!x || !rd_ranks_straggler_in(&s, in_trace_steps, x) || !s.path || s.last_count == 0) return;
  if (s.caused_ns < 2 * s.other_ns || 3 * s.last_count < 2 * s.ncoll || s.delay_ns <= 0) return;
  const asteps *ts = NULL;
  for (size_t i = 0; i < x->ntraces; i++)
    if (!strcmp(x->ts[i].path, s.path)) ts = &x->ts[i];
  if (!ts || !ts->nsteps) return;
  uint64_t ns = (uint64_t)s.caused_ns;
  double pct = ts->step_ns ? 100.0 * (double)ns / (double)ts->step_ns : 0;
  if (pct < ADV_MIN_PCT_GPU) return;
  const char *pl = straggler_place(x, s.path);
  PUSH(x->f, x->nf, x->capf, 16);
  afinding *f = &x->f[x->nf++];
  memset(f, 0, sizeof *f);
  f->cls = A_STRAGGLER;
  f->steps_from = ts->from;
  f->place = rd_xstrdup(pl);
  f->trace = rd_xstrdup(s.path);
  f->nsteps = ts->nsteps;
  f->step_ns = ts->step_ns;
  f->ns = ns;
  f->calls = s.last_count;
  f->fns = rd_xstrdup("collectives");
  detail(f, "rank %d arrived last at %" PRIu64 " of the %zu collectives of the steps (%zu ranks), "
            "%.3f ms after the others; the others waited %.3f ms for it in all, %.3f ms at most "
            "for another rank",
         s.rank, s.last_count, s.ncoll, s.nranks, s.delay_ns / 1e6, s.caused_ns / 1e6,
         s.other_ns / 1e6);
  qsort(x->f, x->nf, sizeof *x->f, by_cost);
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
    rd_json_str(out, f->fns ? f->fns : "");
    fprintf(out, ",\"steps\":%" PRIu64 ",\"step_ns\":%" PRIu64 ",\"steps_from\":\"%s\"",
            f->nsteps, f->step_ns, rd_steps_from_name(f->steps_from));
    if (f->detail) {
      fputs(",\"detail\":", out);
      rd_json_str(out, f->detail);
    }
    fputs("},\"place\":", out);
    rd_json_str(out, f->place);
    if (f->cls == A_INPUT && x->dataset.n) {
      fputs(",\"dataset_place\":", out);
      rd_json_str(out, x->dataset.k[tally_top(&x->dataset)]);
    }
    fputs(",\"trace\":", out);
    rd_json_str(out, f->trace);
    fprintf(out, ",\"traces\":%u", f->ntraces ? f->ntraces : 1);
    fputs(",\"fix\":", out);
    rd_json_str(out, classes[f->cls].fix);
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
    fprintf(out, "  %zu. %-20s %8.3f ms/step (%5.1f%%)  %s\n", k + 1, classes[f->cls].id,
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
    fprintf(out, "  %zu. %-15s %8.3f ms/step (%5.1f%%)  at %s\n", k + 1, classes[f->cls].id, ms,
            pct, place_cell(f->place, 60));
    fprintf(out, "     evidence: %" PRIu64 " %s of %s, %.3f ms in all, over %" PRIu64
                 " step%s of %.3f ms\n",
            f->calls, f->cls == A_INPUT || f->cls == A_PYCPU ? "samples" : f->cls == A_TENSOR || f->cls == A_LAUNCH || f->cls == A_OCC || f->cls == A_COMM ? "GPU ops" : "calls",
            f->fns ? f->fns : "", (double)f->ns / 1e6, f->nsteps, f->nsteps == 1 ? "" : "s",
            (double)f->step_ns / 1e6 / (double)f->nsteps);
    if (f->detail) fprintf(out, "     %s\n", f->detail);
    if (f->ntraces > 1) fprintf(out, "     in %u traces (cost over all their steps; first: %s)\n", f->ntraces, f->trace);
    if (f->cls == A_INPUT && x->dataset.n)
      fprintf(out, "     the Dataset's time: %s\n", x->dataset.k[tally_top(&x->dataset)]);
    fprintf(out, "     estimated: %s\n     fix: %s\n", classes[f->cls].how, classes[f->cls].fix);
  }
}

void rd_advise_free(rd_advise *x) {
  if (!x) return;
  for (size_t k = 0; k < x->nf; k++) {
    free(x->f[k].place);
    free(x->f[k].trace);
    free(x->f[k].fns);
    free(x->f[k].detail);
  }
  for (size_t i = 0; i < x->npc; i++) free(x->pc[i].path), free(x->pc[i].place), tally_free(&x->pc[i].t);
  free(x->pc);
  for (size_t i = 0; i < x->ntraces; i++) free(x->ts[i].path);
  free(x->ts);
  tally_free(&x->dataset);
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
