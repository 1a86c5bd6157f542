/* mktrace — writes a trace with known contents for the dlhook command's tests (tests/cli/).
 * usage: mktrace OUT [--pid N] [--no-trailer] [--big N] [--folded] [--fuzz SEED]
 *
 * Contents (per trace), so that dump/stats output can be checked exactly:
 *   process pid N (default 1234), host "testhost", threads N ("main") and N+1 ("worker\t\"x\"")
 *   API calls (name domain: calls, errors, durations):
 *     ncclAllReduce    nccl    2  0  10000 each (thread N+1)        total 20000
 *     cublasSgemm_v2   cublas  5  0  3000 each                      total 15000
 *     cudaMemcpy       cudart 10  1  1000 each (one returns 1)      total 10000
 *     cuLaunchKernel   driver 100 0  50 each, corr 1..100           total 5000
 *     cudaMalloc       cudart  3  1  100, 200, 300 (one returns 2)  total 600
 *     nvtxRangePushA   nvtx    1  0  10, message "step \"1\"\n"      total 10
 *   GPU: 100 kernels "_Z6kernelPfi" of 500 ns (corr 1..100), 20 kernels "_Z4gemmv" of 1000 ns,
 *        10 memcpy of 300 ns
 *   counters (dropped 3, then 4) at flushes, trailer records 251 dropped 5 (unless
 *   --no-trailer: then dropped is 4 from the last counters)
 *   --big N: N more cuLaunchKernel calls of 50 ns (for large traces)
 *   --folded: also folded repeats (one event standing for COUNT identical calls; dur is the
 *     calls' summed duration, span first start to last end), after the cublasSgemm_v2 calls:
 *     cudaStreamQuery  cudart  1 event  ×1234, ret 600, dur 24680 (20 each), span 123400
 *                              then 1 plain call, ret 0, dur 30
 *     cublasGemmEx     cublas  1 event  ×4, m=n=k=64, flops 524288 each, dur 8000, span 9000
 *     ncclReduceScatter nccl   1 event  ×3, bytes 4096, nranks 4, dur 30000, span 31000
 *                                       (thread N+1)
 *     so 1363 calls in 125 API events (1238 folded); the trailer says calls 1363, folded 1238,
 *     records 255, and dlhook's memory: budget 64 MiB, peak 3 MiB, parts "rings" (peak 2 MiB,
 *     1 MiB at the end) and "writer" (peak 1 MiB, 512 KiB at the end); the last counters
 *     calls 1363
 *   --fuzz SEED: (implies --folded) then mutate the packet bytes inside each (still valid)
 *     zstd frame
 * Several frames. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"
#include "fuzzgen.h"

static dlh_encoder *w;
static uint64_t clk = 1000000;

static void pkt(Dlh__Packet *p) {
  if (dlh_enc_packet(w, p) < 0) { fprintf(stderr, "mktrace: packet failed\n"); exit(1); }
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

static void call(uint32_t tid, uint32_t fn, uint64_t dur, int64_t ret, uint64_t corr, uint32_t n,
                 const uint64_t *args) {
  dlh_api_event ev = {.start_ns = clk, .dur_ns = dur, .fn = fn, .ret = ret, .corr = corr,
                      .nargs = n, .args = args};
  clk += dur + 7;
  if (dlh_enc_api(w, tid, &ev) < 0) { fprintf(stderr, "mktrace: event failed\n"); exit(1); }
}

/* A folded event: count identical calls, dur their summed durations, span first start to last
 * end. */
static void folded(uint32_t tid, uint32_t fn, uint64_t count, uint64_t dur, uint64_t span,
                   int64_t ret, uint32_t n, const uint64_t *args) {
  dlh_api_event ev = {.start_ns = clk, .dur_ns = dur, .fn = fn, .ret = ret, .nargs = n,
                      .args = args, .count = count, .span_ns = span};
  clk += span + 7;
  if (dlh_enc_api(w, tid, &ev) < 0) { fprintf(stderr, "mktrace: event failed\n"); exit(1); }
}

static void counters(uint64_t records, uint64_t dropped, uint64_t calls) {
  Dlh__Counters c = DLH__COUNTERS__INIT;
  c.has_records = 1; c.records = records; c.has_dropped = 1; c.dropped = dropped;
  c.has_calls = calls != 0; c.calls = calls;
  c.has_threads = 1; c.threads = 2;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_COUNTERS; p.counters = &c;
  pkt(&p);
}

static void flush(void) {
  if (dlh_enc_flush(w) < 0) { perror("mktrace: flush"); exit(1); }
}

/* The definitions: the process, its two threads, the functions (those of --folded too when
 * fold) and the strings. */
static void write_defs(uint32_t pid, int fold) {
  char *cmdline[] = {"./app", "--flag=\"q\""};
  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = 1; pi.pid = pid; pi.has_ppid = 1; pi.ppid = 1; pi.host = "testhost";
  pi.n_cmdline = 2; pi.cmdline = cmdline; pi.exe = "/opt/app"; pi.has_rank = 1; pi.rank = 0;
  pi.dlhook_version = DLHOOK_VERSION; pi.has_format_version = 1;
  pi.format_version = DLH_FORMAT_VERSION; pi.has_start_ns = 1; pi.start_ns = clk;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_PROCESS; p.process = &pi;
  pkt(&p);
  Dlh__ThreadInfo t0 = DLH__THREAD_INFO__INIT, t1 = DLH__THREAD_INFO__INIT;
  t0.has_tid = 1; t0.tid = pid; t0.name = "main";
  t1.has_tid = 1; t1.tid = pid + 1; t1.name = "worker\t\"x\"";
  p.data_case = DLH__PACKET__DATA_THREAD; p.thread = &t0; pkt(&p);
  p.thread = &t1; pkt(&p);

  const char *n_malloc[] = {"devPtr", "size"};
  const uint32_t ty_malloc[] = {2, 1};
  const char *n_memcpy[] = {"dst", "src", "count", "kind"};
  const uint32_t ty_memcpy[] = {2, 2, 1, 0};
  const char *n_launch[] = {"f", "gridDimX", "sharedMemBytes"};
  const uint32_t ty_launch[] = {2, 1, 1};
  const char *n_gemm[] = {"alpha", "transa"};
  const uint32_t ty_gemm[] = {3, 5};
  const char *n_nccl[] = {"count", "comm"};
  const uint32_t ty_nccl[] = {1, 2};
  const char *n_nvtx[] = {"message"};
  const uint32_t ty_nvtx[] = {4};
  func(1, "cudaMalloc", DLH__DOMAIN__DOMAIN_CUDART, 2, n_malloc, ty_malloc);
  func(2, "cudaMemcpy", DLH__DOMAIN__DOMAIN_CUDART, 4, n_memcpy, ty_memcpy);
  func(3, "cuLaunchKernel", DLH__DOMAIN__DOMAIN_DRIVER, 3, n_launch, ty_launch);
  func(4, "cublasSgemm_v2", DLH__DOMAIN__DOMAIN_CUBLAS, 2, n_gemm, ty_gemm);
  func(5, "ncclAllReduce", DLH__DOMAIN__DOMAIN_NCCL, 2, n_nccl, ty_nccl);
  func(6, "nvtxRangePushA", DLH__DOMAIN__DOMAIN_NVTX, 1, n_nvtx, ty_nvtx);
  const char *n_query[] = {"stream"};
  const uint32_t ty_query[] = {2};
  const char *n_gemmex[] = {"m", "n", "k", "flops"};
  const uint32_t ty_gemmex[] = {0, 0, 0, 3};
  const char *n_rs[] = {"bytes", "datatype", "nranks"};
  const uint32_t ty_rs[] = {1, 0, 0};
  if (fold) {
    func(7, "cudaStreamQuery", DLH__DOMAIN__DOMAIN_CUDART, 1, n_query, ty_query);
    func(8, "cublasGemmEx", DLH__DOMAIN__DOMAIN_CUBLAS, 4, n_gemmex, ty_gemmex);
    func(9, "ncclReduceScatter", DLH__DOMAIN__DOMAIN_NCCL, 3, n_rs, ty_rs);
  }
  str(1, "_Z6kernelPfi");
  str(2, "step \"1\"\n");
  str(3, "_Z4gemmv");
}

/* The API calls of the table above, with the counters and frame ends between them; big more
 * cuLaunchKernel calls at the end. */
static void write_calls(uint32_t pid, int fold, unsigned long big) {
  uint64_t a_nvtx[] = {2};
  call(pid, 6, 10, 0, 0, 1, a_nvtx);
  uint64_t a_malloc[] = {0x7f0000001000ull, 4096};
  call(pid, 1, 100, 0, 0, 2, a_malloc);
  call(pid, 1, 200, 2, 0, 2, a_malloc);
  call(pid, 1, 300, 0, 0, 2, a_malloc);
  uint64_t a_memcpy[] = {0x7f0000001000ull, 0x5555aaaa0000ull, 4096, 1};
  for (int i = 0; i < 10; i++) call(pid, 2, 1000, i == 4, 0, 4, a_memcpy);
  counters(14, 3, 0);
  flush();

  uint64_t a_launch[] = {0x5555deadbeefull, 128, 0};
  for (int i = 0; i < 100; i++) {
    call(pid, 3, 50, 0, (uint64_t)i + 1, 3, a_launch);
    if (i == 49) flush(); /* a batch split across frames */
  }
  double alpha = 1.5;
  uint64_t a_gemm[2];
  memcpy(&a_gemm[0], &alpha, sizeof alpha);
  a_gemm[1] = 1;
  for (int i = 0; i < 5; i++) call(pid, 4, 3000, 0, 0, 2, a_gemm);
  uint64_t a_nccl[] = {1048576, 0x6000ull};
  for (int i = 0; i < 2; i++) call(pid + 1, 5, 10000, 0, 0, 2, a_nccl);
  if (fold) {
    uint64_t a_query[] = {0x7};
    folded(pid, 7, 1234, 1234 * 20, 1234 * 100, 600, 1, a_query); /* cudaErrorNotReady */
    call(pid, 7, 30, 0, 0, 1, a_query);
    double fl = 2.0 * 64 * 64 * 64;
    uint64_t a_gemmex[4] = {64, 64, 64, 0};
    memcpy(&a_gemmex[3], &fl, sizeof fl);
    folded(pid, 8, 4, 8000, 9000, 0, 4, a_gemmex);
    uint64_t a_rs[] = {4096, 7, 4};
    folded(pid + 1, 9, 3, 30000, 31000, 0, 3, a_rs);
  }
  for (unsigned long i = 0; i < big; i++) call(pid, 3, 50, 0, 0, 3, a_launch);
}

/* The GPU records: one batch. */
static void write_gpu(void) {
  /* GPU activity: 100 + 20 kernels, 10 copies */
  enum { NG = 130 };
  uint32_t kind[NG], stream[NG], name[NG], nvals[NG];
  int64_t sdelta[NG];
  uint64_t dur[NG], corr[NG], vals[NG];
  size_t nv = 0;
  for (int i = 0; i < NG; i++) {
    kind[i] = i < 120 ? DLH__GPU_RECORD_KIND__KERNEL : DLH__GPU_RECORD_KIND__MEMCPY;
    sdelta[i] = i ? 600 : 0;
    dur[i] = i < 100 ? 500 : i < 120 ? 1000 : 300;
    corr[i] = i < 100 ? (uint64_t)i + 1 : 0;
    stream[i] = 7;
    name[i] = i < 100 ? 1 : i < 120 ? 3 : 0;
    nvals[i] = i >= 120;
    if (i >= 120) vals[nv++] = 4096;
  }
  Dlh__GpuBatch g = DLH__GPU_BATCH__INIT;
  g.has_device = 1; g.device = 0; g.has_base_start_ns = 1; g.base_start_ns = 2000000;
  g.n_kind = NG; g.kind = kind; g.n_start_delta = NG; g.start_delta = sdelta;
  g.n_dur = NG; g.dur = dur; g.n_corr = NG; g.corr = corr; g.n_stream = NG; g.stream = stream;
  g.n_name = NG; g.name = name; g.n_nvals = NG; g.nvals = nvals; g.n_vals = nv; g.vals = vals;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_GPU; p.gpu = &g;
  pkt(&p);
}

/* The trailer (the table above says what it holds). */
static void write_trailer(unsigned long big, int fold) {
  Dlh__Trailer tr = DLH__TRAILER__INIT;
  tr.has_records = 1; tr.records = 251 + big; tr.has_dropped = 1; tr.dropped = 5;
  tr.has_end_ns = 1; tr.end_ns = clk;
  Dlh__MemPart mp[2] = {DLH__MEM_PART__INIT, DLH__MEM_PART__INIT}, *mpp[2] = {&mp[0], &mp[1]};
  if (fold) {
    tr.records += 4;
    tr.has_calls = tr.has_folded = 1;
    tr.calls = 1363 + big;
    tr.folded = 1238;
    tr.has_mem_budget_bytes = tr.has_mem_peak_bytes = 1;
    tr.mem_budget_bytes = 64u << 20;
    tr.mem_peak_bytes = 3u << 20;
    mp[0].name = "rings"; mp[0].has_peak_bytes = mp[0].has_bytes = 1;
    mp[0].peak_bytes = 2u << 20; mp[0].bytes = 1u << 20;
    mp[1].name = "writer"; mp[1].has_peak_bytes = mp[1].has_bytes = 1;
    mp[1].peak_bytes = 1u << 20; mp[1].bytes = 512u << 10;
    tr.n_mem_parts = 2;
    tr.mem_parts = mpp;
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_TRAILER; p.trailer = &tr;
  pkt(&p);
}

/* --fuzz: the trace at path rewritten with the packet bytes inside each frame mutated by seed.
 * Returns 0, or -1 after a message. */
static int fuzz_file(const char *path, unsigned long seed) {
  FILE *f = fopen(path, "rb");
  static unsigned char buf[1 << 20];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  size_t ml;
  unsigned char *m = fz_mutate(buf, n, seed, &ml);
  f = fopen(path, "wb");
  if (!m || !f || fwrite(m, 1, ml, f) != ml || fclose(f) != 0) {
    fprintf(stderr, "mktrace: fuzz failed\n");
    return -1;
  }
  free(m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mktrace OUT [--pid N] [--no-trailer] [--big N]\n");
    return 2;
  }
  uint32_t pid = 1234;
  int trailer = 1;
  unsigned long big = 0, fuzz = 0;
  int fold = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--pid") && i + 1 < argc) pid = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-trailer")) trailer = 0;
    else if (!strcmp(argv[i], "--big") && i + 1 < argc) big = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--fuzz") && i + 1 < argc) fuzz = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--folded")) fold = 1;
    else { fprintf(stderr, "mktrace: bad argument %s\n", argv[i]); return 2; }
  }
  if (fuzz) fold = 1; /* the fuzzed traces have every column */
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(argv[1]); return 1; }
  w = dlh_enc_create(fd, 0);
  if (!w) { perror("mktrace: writer"); return 1; }

  write_defs(pid, fold);
  write_calls(pid, fold, big);
  write_gpu();
  counters(251 + big + (fold ? 4 : 0), 4, fold ? 1363 + big : 0);
  flush();
  if (trailer) write_trailer(big, fold);
  dlh_enc_free(w);
  if (close(fd) < 0) { perror("mktrace: close"); return 1; }
  if (fuzz && fuzz_file(argv[1], fuzz) < 0) return 1;
  return 0;
}
