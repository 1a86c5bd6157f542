/* gentrace — writes a synthetic training-like trace for the exporter tests and `make bench`.
 * usage: gentrace OUT [--rank R] [--world W] [--pid N] [--threads T] [--steps S]
 *                     [--events N] [--slow K] [--gpu-first] [--coll-late US,US,...]
 *                     [--poll N]
 *
 * Each thread runs steps; a step is an NVTX range "step N" containing these calls (depth 0;
 * NVTX ranges do not count as API nesting):
 *   cudaMalloc(size 1 MiB)                        stack main;train;alloc_buffers
 *   cudaMemcpyAsync(HtoD 4096 B)      corr        stack main;train;load_batch
 *   2 x cudaLaunchKernel              corr        stack main;train;forward  -> _Z7forwardPf
 *   cublasSgemm_v2 (external corr), inner cuLaunchKernel at depth 1 -> _Z4gemmPKfS0_Pf
 *   cudaLaunchKernel                  corr        stack main;train;backward -> _Z8backwardPf
 *   cudaMemsetAsync(256 B)            corr        stack main;train;zero_grad
 *   cudaStreamSynchronize                          stack main;train;sync   (+ a sync record)
 * Kernel durations are 1000 + 100*k ns (k = kernel number in the step) on device 0; streams
 * 7 (compute) and 13 (copies). --slow K multiplies backward kernels by K (for diff tests).
 * --events N: as many steps as needed for about N events (API + GPU) in total.
 * --gpu-first: GPU records of a step are written before its API calls (tests the 2-pass join).
 * --coll-late: after the step's work, an NCCL all-reduce kernel (stream 21) that starts the
 * given number of microseconds late (the list is cycled over the steps) and ends 1 ms after the
 * step's work on every rank, as a collective ends when the last rank arrives (straggler tests).
 * --poll N: before the cudaStreamSynchronize, cudaStreamQuery(stream 0x13) polled N times
 * while the copy runs (cudaErrorNotReady, 600), recorded as one folded event (format version 2)
 * when N > 1: count N, dur 40 ns per call (their sum), span 100 ns per call, stack main;train;
 * sync; the trailer then has calls (API calls, folded ones included) and folded (N - 1 per
 * step and thread).
 * Threads are pid, pid+1, ... Stacks and symbols are defined before use. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"

static dlh_encoder *w;

static void pkt(Dlh__Packet *p) {
  if (dlh_enc_packet(w, p) < 0) { fprintf(stderr, "gentrace: packet failed\n"); exit(1); }
}

static void func(uint32_t id, const char *name, Dlh__Domain dom, int n, const char **names,
                 const uint32_t *types) {
  Dlh__ArgDesc a[8], *ap[8];
  for (int i = 0; i < n; i++) {
    dlh__arg_desc__init(&a[i]);
    a[i].name = (char *)names[i];
    a[i].has_type = 1;
    a[i].type = types[i];
    ap[i] = &a[i];
  }
  Dlh__FunctionDesc f = DLH__FUNCTION_DESC__INIT;
  f.has_id = 1; f.id = id; f.name = (char *)name; f.has_domain = 1; f.domain = dom;
  f.n_args = (size_t)n; f.args = ap;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_FUNCTION; p.function = &f;
  pkt(&p);
}

static void str(uint32_t id, const char *s) {
  Dlh__StringDef d = DLH__STRING_DEF__INIT;
  d.has_id = 1; d.id = id; d.value = (char *)s;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_STRING; p.string = &d;
  pkt(&p);
}

static void sym(uint64_t pc, const char *fn) {
  Dlh__SymbolDef s = DLH__SYMBOL_DEF__INIT;
  s.has_pc = 1; s.pc = pc; s.function = (char *)fn; s.file = "train.c"; s.has_line = 1;
  s.line = (uint32_t)(pc & 0xff);
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_SYMBOL; p.symbol = &s;
  pkt(&p);
}

/* stack id -> innermost pc; outer frames train (0x2000), main (0x1000) */
static void stack(uint32_t id, uint64_t leaf) {
  uint64_t pcs[3] = {leaf, 0x2000, 0x1000};
  Dlh__StackDef s = DLH__STACK_DEF__INIT;
  s.has_id = 1; s.id = id; s.n_pc = 3; s.pc = pcs;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_STACK; p.stack = &s;
  pkt(&p);
}

/* GPU records buffered per flush */
enum { GMAX = 4096 };
static uint32_t gkind[GMAX], gstream[GMAX], gname[GMAX], gnvals[GMAX], gdev[GMAX], gctx[GMAX];
static int64_t gdelta[GMAX];
static uint64_t gdur[GMAX], gcorr[GMAX], gvals[GMAX * 10];
static size_t ng, ngv;
static uint64_t gbase, glast;

static void gpu_flush(void) {
  if (!ng) return;
  Dlh__GpuBatch g = DLH__GPU_BATCH__INIT;
  g.has_base_start_ns = 1; g.base_start_ns = gbase;
  g.n_kind = ng; g.kind = gkind; g.n_start_delta = ng; g.start_delta = gdelta;
  g.n_dur = ng; g.dur = gdur; g.n_corr = ng; g.corr = gcorr; g.n_stream = ng; g.stream = gstream;
  g.n_name = ng; g.name = gname; g.n_nvals = ng; g.nvals = gnvals; g.n_vals = ngv; g.vals = gvals;
  g.n_devices = ng; g.devices = gdev; g.n_context = ng; g.context = gctx;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_GPU; p.gpu = &g;
  pkt(&p);
  ng = ngv = 0;
}

static void gpu(Dlh__GpuRecordKind kind, uint64_t start, uint64_t dur, uint64_t corr,
                uint32_t stream, uint32_t name, int nv, const uint64_t *v) {
  if (ng == GMAX || ngv + (size_t)nv > GMAX * 10) gpu_flush();
  if (!ng) { gbase = start; glast = start; }
  gkind[ng] = kind; gdelta[ng] = (int64_t)(start - glast); glast = start;
  gdur[ng] = dur; gcorr[ng] = corr; gstream[ng] = stream; gname[ng] = name;
  gnvals[ng] = (uint32_t)nv; gdev[ng] = 0; gctx[ng] = 1;
  memcpy(gvals + ngv, v, (size_t)nv * sizeof *v);
  ngv += (size_t)nv;
  ng++;
}

static uint64_t nevents;

static uint64_t ncalls, nfolded; /* API calls (a folded event counts its calls), folded calls */

/* One API event; count > 1 makes it a folded event of count calls (dur: their summed
 * durations, span: first start to last end). */
static void call_n(uint32_t tid, uint64_t start, uint32_t fn, uint64_t dur, uint64_t corr,
                   uint32_t stk, uint32_t depth, uint32_t n, const uint64_t *args, int64_t ret,
                   uint64_t count, uint64_t span) {
  dlh_api_event ev = {.start_ns = start, .dur_ns = dur, .fn = fn, .ret = ret, .corr = corr,
                      .stack = stk, .depth = depth, .nargs = n, .args = args,
                      .count = count > 1 ? count : 0, .span_ns = count > 1 ? span : 0};
  if (dlh_enc_api(w, tid, &ev) < 0) { fprintf(stderr, "gentrace: event failed\n"); exit(1); }
  nevents++;
  ncalls += count > 1 ? count : 1;
  nfolded += count > 1 ? count - 1 : 0;
}

static void call(uint32_t tid, uint64_t start, uint32_t fn, uint64_t dur, uint64_t corr,
                 uint32_t stk, uint32_t depth, uint32_t n, const uint64_t *args) {
  call_n(tid, start, fn, dur, corr, stk, depth, n, args, 0, 1, 0);
}

/* What the command line asks for (the usage above). */
typedef struct gen_opts {
  int rank, world, threads, gpu_first;
  uint32_t pid;
  unsigned long steps, events, slow, poll;
  unsigned long late[256];
  size_t nlate;
} gen_opts;

/* Reads the options after OUT into o; returns -1, or 2 after a message on a bad one. */
static int gen_options(gen_opts *o, int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--rank") && i + 1 < argc) o->rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--world") && i + 1 < argc) o->world = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pid") && i + 1 < argc) o->pid = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) o->threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) o->steps = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--events") && i + 1 < argc) o->events = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--slow") && i + 1 < argc) o->slow = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--gpu-first")) o->gpu_first = 1;
    else if (!strcmp(argv[i], "--poll") && i + 1 < argc) o->poll = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--coll-late") && i + 1 < argc) {
      for (char *q = argv[++i]; *q && o->nlate < 256; q += *q == ',') o->late[o->nlate++] = strtoul(q, &q, 10);
    }
    else { fprintf(stderr, "gentrace: bad argument %s\n", argv[i]); return 2; }
  }
  return -1;
}

/* The definitions, before any event: the process, its clock anchor, threads, device, functions,
 * strings, symbols and stacks. */
static void write_defs(const gen_opts *o, uint64_t t0) {
  char *cmdline[] = {"./train", "--epochs=1"};
  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = 1; pi.pid = o->pid; pi.host = "genhost"; pi.n_cmdline = 2; pi.cmdline = cmdline;
  pi.exe = "/opt/train"; pi.has_rank = 1; pi.rank = o->rank; pi.has_world_size = 1;
  pi.world_size = o->world; pi.dlhook_version = DLHOOK_VERSION; pi.has_format_version = 1;
  pi.format_version = DLH_FORMAT_VERSION; pi.has_start_ns = 1; pi.start_ns = t0;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_PROCESS; p.process = &pi;
  pkt(&p);
  Dlh__ClockAnchor an = DLH__CLOCK_ANCHOR__INIT;
  an.has_trace_ns = 1; an.trace_ns = t0; an.has_realtime_ns = 1;
  an.realtime_ns = 1764400000000000000ull; an.has_kind = 1;
  an.kind = DLH__CLOCK_ANCHOR_KIND__START;
  p.data_case = DLH__PACKET__DATA_ANCHOR; p.anchor = &an;
  pkt(&p);
  for (int t = 0; t < o->threads; t++) {
    char name[32];
    snprintf(name, sizeof name, t ? "worker-%d" : "main", t);
    Dlh__ThreadInfo ti = DLH__THREAD_INFO__INIT;
    ti.has_tid = 1; ti.tid = o->pid + (uint32_t)t; ti.name = name;
    p.data_case = DLH__PACKET__DATA_THREAD; p.thread = &ti;
    pkt(&p);
  }
  Dlh__DeviceInfo di = DLH__DEVICE_INFO__INIT;
  di.has_id = 1; di.id = 0; di.name = "Simulated GPU"; di.has_total_mem = 1;
  di.total_mem = 80ull << 30; di.has_sm_count = 1; di.sm_count = 132; di.has_cc_major = 1;
  di.cc_major = 9; di.has_cc_minor = 1; di.cc_minor = 0;
  p.data_case = DLH__PACKET__DATA_DEVICE; p.device = &di;
  pkt(&p);

  const char *n_sz[] = {"devPtr", "size"};          const uint32_t ty_sz[] = {2, 1};
  const char *n_cp[] = {"dst", "src", "count", "kind", "stream"};
  const uint32_t ty_cp[] = {2, 2, 1, 0, 2};
  const char *n_la[] = {"func", "gridDim", "blockDim", "stream"};
  const uint32_t ty_la[] = {2, 1, 1, 2};
  const char *n_ms[] = {"devPtr", "value", "count", "stream"};
  const uint32_t ty_ms[] = {2, 0, 1, 2};
  const char *n_sy[] = {"stream"};                    const uint32_t ty_sy[] = {2};
  const char *n_nv[] = {"message"};                   const uint32_t ty_nv[] = {4};
  const char *n_ge[] = {"handle", "m", "n", "k"};     const uint32_t ty_ge[] = {2, 0, 0, 0};
  func(1, "cudaMalloc", DLH__DOMAIN__DOMAIN_CUDART, 2, n_sz, ty_sz);
  func(2, "cudaMemcpyAsync", DLH__DOMAIN__DOMAIN_CUDART, 5, n_cp, ty_cp);
  func(3, "cudaLaunchKernel", DLH__DOMAIN__DOMAIN_CUDART, 4, n_la, ty_la);
  func(4, "cudaMemsetAsync", DLH__DOMAIN__DOMAIN_CUDART, 4, n_ms, ty_ms);
  func(5, "cudaStreamSynchronize", DLH__DOMAIN__DOMAIN_CUDART, 1, n_sy, ty_sy);
  func(6, "nvtxRangePushA", DLH__DOMAIN__DOMAIN_NVTX, 1, n_nv, ty_nv);
  func(7, "cublasSgemm_v2", DLH__DOMAIN__DOMAIN_CUBLAS, 4, n_ge, ty_ge);
  func(8, "cuLaunchKernel", DLH__DOMAIN__DOMAIN_DRIVER, 4, n_la, ty_la);
  if (o->poll) func(9, "cudaStreamQuery", DLH__DOMAIN__DOMAIN_CUDART, 1, n_sy, ty_sy);
  str(1, "_Z7forwardPf");
  str(2, "_Z4gemmPKfS0_Pf");
  str(3, "_Z8backwardPf");
  if (o->nlate) str(4, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  sym(0x1000, "main");
  sym(0x2000, "train");
  static const char *const leaves[] = {"alloc_buffers", "load_batch", "forward", "gemm_layer",
                                       "backward", "zero_grad", "sync"};
  for (int i = 0; i < 7; i++) {
    sym(0x3000 + 0x100 * (uint64_t)i, leaves[i]);
    stack((uint32_t)i + 1, 0x3000 + 0x100 * (uint64_t)i);
  }
}

/* What the steps carry from one to the next: the next free string id, the last correlation and
 * external correlation ids, and the time the next step starts. */
typedef struct gen_state {
  uint32_t next_str;
  uint64_t corr, ext, now;
} gen_state;

/* Step s of thread t: its NVTX range, calls and GPU records (the table at the top). */
static void write_step(const gen_opts *o, gen_state *g, unsigned long s, int t) {
  uint32_t tid = o->pid + (uint32_t)t;
  char msg[32];
  snprintf(msg, sizeof msg, "step %lu", s);
  uint32_t sid = 0;
  if (s < 64) { sid = g->next_str++; str(sid, msg); } /* later steps reuse one name */
  else sid = 99;
  if (s == 64) str(99, "iteration");
  uint64_t st = g->now, c = g->now + 100;
  uint64_t a_sz[] = {0x7f0000000000ull, 1 << 20};
  uint64_t a_cp[] = {0x7f0000000000ull, 0x5500000000ull, 4096, 1, 0x13};
  uint64_t a_la[] = {0x401000, 128, 256, 0x7};
  uint64_t a_ms[] = {0x7f0000000000ull, 0, 256, 0x7};
  uint64_t a_sy[] = {0x7};
  uint64_t a_ge[] = {0x9000, 512, 512, 512};
  uint64_t kv[10] = {128, 1, 1, 256, 1, 1, 32, 0, 1024, 0};
  uint64_t cv[6] = {4096, 1, 1, 3, 1, 0};
  uint64_t mv[5] = {256, 0, 3, 1, 0};
  uint64_t sv[2] = {3, 0};
  uint64_t gt = g->now + 2000; /* GPU timeline of the step */
  uint64_t k = 0;
  /* the API calls (written after the GPU records with --gpu-first) */
  struct {
    uint32_t fn; uint64_t dur, corr; uint32_t stk, depth, n; const uint64_t *a;
    int64_t ret; uint64_t count, span;  /* count > 1: a folded event over span ns */
  } cl[10];
  int ncl = 0;
#define CALL(F, D, C, S, DEP, N, A) cl[ncl++] = (typeof(cl[0])){F, D, C, S, DEP, N, A, 0, 1, D}
  CALL(1, 300, 0, 1, 0, 2, a_sz);
  uint64_t c_cp = ++g->corr;
  CALL(2, 200, c_cp, 2, 0, 5, a_cp);
  uint64_t c_f1 = ++g->corr, c_f2 = ++g->corr;
  CALL(3, 150, c_f1, 3, 0, 4, a_la);
  CALL(3, 150, c_f2, 3, 0, 4, a_la);
  uint64_t c_ge = ++g->ext, c_gi = ++g->corr;
  CALL(7, 600, c_ge, 4, 0, 4, a_ge);
  CALL(8, 100, 0, 4, 1, 4, a_la); /* inner launch: its CUPTI id arrives in an EXTERNAL_CORRELATION record */
  uint64_t c_b = ++g->corr;
  CALL(3, 150, c_b, 5, 0, 4, a_la);
  uint64_t c_m = ++g->corr;
  CALL(4, 120, c_m, 6, 0, 4, a_ms);
  uint64_t a_q[] = {0x13};
  if (o->poll) /* cudaErrorNotReady while the copy runs */
    cl[ncl++] = (typeof(cl[0])){9, 40 * o->poll, 0, 7, 0, 1, a_q, 600, o->poll, 100 * o->poll};
  CALL(5, 5000, 0, 7, 0, 1, a_sy);
  uint64_t gpu_end;
  {
    uint64_t x = gt;
    if (o->gpu_first) gpu_flush();
    gpu(DLH__GPU_RECORD_KIND__MEMCPY, x, 400, c_cp, 13, 0, 6, cv); x += 500;
    gpu(DLH__GPU_RECORD_KIND__KERNEL, x, 1000 + 100 * k, c_f1, 7, 1, 10, kv);
    x += 1000 + 100 * k + 50; k++;
    gpu(DLH__GPU_RECORD_KIND__KERNEL, x, 1000 + 100 * k, c_f2, 7, 1, 10, kv);
    x += 1000 + 100 * k + 50; k++;
    uint64_t ev7[2] = {2, c_ge};
    gpu(DLH__GPU_RECORD_KIND__EXTERNAL_CORRELATION, 0, 0, c_gi, 0, 0, 2, ev7);
    gpu(DLH__GPU_RECORD_KIND__KERNEL, x, 1000 + 100 * k, c_gi, 7, 2, 10, kv);
    x += 1000 + 100 * k + 50; k++;
    uint64_t bd = (1000 + 100 * k) * o->slow;
    gpu(DLH__GPU_RECORD_KIND__KERNEL, x, bd, c_b, 7, 3, 10, kv); x += bd + 50; k++;
    gpu(DLH__GPU_RECORD_KIND__MEMSET, x, 100, c_m, 7, 0, 5, mv); x += 150;
    gpu(DLH__GPU_RECORD_KIND__SYNC, x, 10, 0, 7, 0, 2, sv); x += 10;
    if (o->nlate) {
      uint64_t l = o->late[s % o->nlate] * 1000ull, end = x + 1000000;
      if (l > 990000) l = 990000;
      uint64_t nv[10] = {1, 1, 1, 512, 1, 1, 0, 0, 1024, 0};
      gpu(DLH__GPU_RECORD_KIND__KERNEL, x + l, end - (x + l), 0, 21, 4, 10, nv);
      x = end + 50;
    }
    gpu_end = x;
    if (o->gpu_first) gpu_flush();
  }
  /* NVTX range covering the step; then its calls */
  uint64_t total = 0;
  for (int i = 0; i < ncl; i++) total += cl[i].span + 10;
  uint64_t step_end = gpu_end > c + total ? gpu_end + 100 : c + total + 100;
  uint64_t a_nv[] = {sid};
  call(tid, st, 6, step_end - st, 0, 0, 0, 1, a_nv);
  uint64_t prev = c;
  for (int i = 0; i < ncl; i++) {
    uint64_t cs = c;
    if (cl[i].fn == 8) cs = prev + 100; /* inside the cublas call */
    prev = cs;
    call_n(tid, cs, cl[i].fn, cl[i].dur, cl[i].corr, cl[i].stk, cl[i].depth, cl[i].n, cl[i].a,
           cl[i].ret, cl[i].count, cl[i].span);
    if (cl[i].fn != 8) c += cl[i].span + 10;
  }
  nevents += 7;
  g->now = step_end + 1000;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gentrace OUT [--rank R] [--world W] [--pid N] [--threads T] "
                    "[--steps S] [--events N] [--slow K] [--gpu-first]\n");
    return 2;
  }
  gen_opts o = {.rank = 0, .world = 1, .threads = 1, .pid = 4242, .steps = 4, .slow = 1};
  int rc = gen_options(&o, argc, argv);
  if (rc >= 0) return rc;
  if (o.threads < 1) o.threads = 1;
  /* 10 API calls + 7 GPU records per step and thread */
  if (o.events) o.steps = (o.events + 17ul * (unsigned long)o.threads - 1) / (17ul * (unsigned long)o.threads);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(argv[1]); return 1; }
  w = dlh_enc_create(fd, 1);
  if (!w) { perror("gentrace: writer"); return 1; }

  uint64_t t0 = 1000000000ull;
  write_defs(&o, t0);
  gen_state g = {.next_str = 100, .corr = 0, .ext = 1u << 30, .now = t0 + 1000};
  for (unsigned long s = 0; s < o.steps; s++) {
    for (int t = 0; t < o.threads; t++) write_step(&o, &g, s, t);
    if (s % 256 == 255) {
      gpu_flush();
      if (dlh_enc_flush(w) < 0) { perror("gentrace: flush"); return 1; }
    }
  }
  gpu_flush();
  Dlh__Trailer tr = DLH__TRAILER__INIT;
  tr.has_records = 1; tr.records = nevents; tr.has_dropped = 1; tr.dropped = 0;
  tr.has_end_ns = 1; tr.end_ns = g.now;
  if (o.poll) { /* format version 2: every call, folded ones included */
    tr.has_calls = tr.has_folded = 1;
    tr.calls = ncalls;
    tr.folded = nfolded;
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_TRAILER; p.trailer = &tr;
  pkt(&p);
  dlh_enc_free(w);
  if (close(fd) < 0) { perror("gentrace: close"); return 1; }
  return 0;
}
