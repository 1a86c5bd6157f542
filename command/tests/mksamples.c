/* mksamples — writes a trace with host samples (SampleBatch) of known contents, for the tests of
 * what the dlhook command makes of them (tests/cli/t_cli_samples.sh, tests/export/).
 * usage: mksamples OUT [--damaged]
 *
 * Contents: process pid 4242 (start_ns 1 ms, sample_hz 1000), threads 4242 "main" and 4243
 * "loader"; functions 1 cudaStreamSynchronize, 2 cudaLaunchKernel, 3 nvtxRangePushA; one
 * NVTX range "step 1" over [1.5 ms, 11.5 ms); one cudaLaunchKernel (corr 1) and its kernel
 * "_Z3foov" of 1000 ns. Python frames 1 main (/work/app/train.py:10), 2 step (train.py:20),
 * 3 Condition.wait (/usr/lib/python3.11/threading.py:320), 4 load (train.py:30); native
 * symbols 0x1000 compute_kernel_host (native.c:5), 0x3000 at::_ops::addmm::call,
 * 0x4000 at::_ops::linear::call. Stacks (innermost first):
 *   1 [compute_kernel_host]   2 [addmm, linear, step, main]   3 [Condition.wait, load]
 *   4 [step, main]            5 [load]
 * Samples (times: main at 2 ms + i ms, loader at 2.5 ms + i ms, i counting per thread):
 *   main    10 on-CPU, stack 2, 1 ms each                        i = 0..9
 *            5 on-CPU, stack 1, 1 ms each                        i = 10..14
 *            4 wait, stack 4, futex, in cudaStreamSynchronize, 2 ms each   i = 15..18
 *   loader   6 wait, stack 3, futex, 3 ms each                   i = 0..5
 *            3 on-CPU, stack 5, 1 ms each                        i = 6..8
 *            1 wait, no stack, no state, 0.5 ms                  i = 9
 *            1 wait, stack 3, syscall 99999, 1 ms                i = 10
 * so 18 on-CPU samples (18 ms) and 12 wait samples (27.5 ms); counters: samples 30, lost 7.
 * --damaged: the loader's batch has a weight_ns column of 3 entries (its other columns have
 * 11): a reader delivers its first 3 samples and reports the batch. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"

static dlh_encoder *w;

static void pkt(Dlh__Packet *p) {
  if (dlh_enc_packet(w, p) < 0) { fprintf(stderr, "mksamples: packet failed\n"); exit(1); }
}

static void func(uint32_t id, const char *name, Dlh__Domain dom, const char *arg, uint32_t type) {
  Dlh__ArgDesc a = DLH__ARG_DESC__INIT, *ap = &a;
  a.name = (char *)arg;
  a.has_type = 1;
  a.type = type;
  Dlh__FunctionDesc f = DLH__FUNCTION_DESC__INIT;
  f.has_id = 1; f.id = id; f.name = (char *)name; f.has_domain = 1; f.domain = dom;
  f.n_args = arg ? 1 : 0; f.args = &ap;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_FUNCTION; p.function = &f;
  pkt(&p);
}

static void pyframe(uint32_t id, const char *fn, const char *file, uint32_t line) {
  Dlh__PyFrameDef d = DLH__PY_FRAME_DEF__INIT;
  d.has_id = 1; d.id = id; d.function = (char *)fn; d.file = (char *)file; d.has_line = 1; d.line = line;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_PY_FRAME; p.py_frame = &d;
  pkt(&p);
}

static void symbol(uint64_t pc, const char *fn, const char *file, uint32_t line) {
  Dlh__SymbolDef d = DLH__SYMBOL_DEF__INIT;
  d.has_pc = 1; d.pc = pc; d.function = (char *)fn; d.file = (char *)file;
  d.has_line = line != 0; d.line = line; d.has_module = 1; d.module = 1;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_SYMBOL; p.symbol = &d;
  pkt(&p);
}

#define PY(id) (DLH_PYFRAME_TAG | (uint64_t)(id))

static void stack(uint32_t id, size_t n, const uint64_t *pcs) {
  Dlh__StackDef d = DLH__STACK_DEF__INIT;
  d.has_id = 1; d.id = id; d.n_pc = n; d.pc = (uint64_t *)pcs;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_STACK; p.stack = &d;
  pkt(&p);
}

/* One thread's samples, n of them, taken every 1 ms from t0. */
enum { MAXS = 32 };
typedef struct batch {
  uint32_t tid;
  size_t n;
  uint32_t kind[MAXS], stack[MAXS], state[MAXS], api[MAXS];
  uint64_t weight[MAXS];
} batch;

static void add(batch *b, int count, uint32_t kind, uint32_t stk, uint32_t state, uint32_t api,
                uint64_t weight) {
  for (int i = 0; i < count; i++) {
    size_t k = b->n++;
    b->kind[k] = kind; b->stack[k] = stk; b->state[k] = state; b->api[k] = api; b->weight[k] = weight;
  }
}

static void emit(const batch *b, uint64_t t0, size_t nweight) {
  int64_t delta[MAXS];
  for (size_t i = 0; i < b->n; i++) delta[i] = i ? 1000000 : 0;
  Dlh__SampleBatch s = DLH__SAMPLE_BATCH__INIT;
  s.has_tid = 1; s.tid = b->tid; s.has_base_ns = 1; s.base_ns = t0;
  s.n_time_delta = b->n; s.time_delta = delta;
  s.n_kind = b->n; s.kind = (uint32_t *)b->kind;
  s.n_weight_ns = nweight; s.weight_ns = (uint64_t *)b->weight;
  s.n_stack = b->n; s.stack = (uint32_t *)b->stack;
  s.n_state = b->n; s.state = (uint32_t *)b->state;
  s.n_api_fn = b->n; s.api_fn = (uint32_t *)b->api;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_SAMPLES; p.samples = &s;
  pkt(&p);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mksamples OUT [--damaged]\n");
    return 2;
  }
  int damaged = argc > 2 && !strcmp(argv[2], "--damaged");
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(argv[1]); return 1; }
  w = dlh_enc_create(fd, 0);
  if (!w) { perror("mksamples: writer"); return 1; }
  const uint32_t pid = 4242;
  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = 1; pi.pid = pid; pi.host = "samplehost"; pi.exe = "/usr/bin/python3";
  pi.dlhook_version = DLHOOK_VERSION; pi.has_format_version = 1; pi.format_version = DLH_FORMAT_VERSION;
  pi.has_start_ns = 1; pi.start_ns = 1000000; pi.has_sample_hz = 1; pi.sample_hz = 1000;
  pi.stacks_mode = "mixed";
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_PROCESS; p.process = &pi;
  pkt(&p);
  Dlh__ThreadInfo t0 = DLH__THREAD_INFO__INIT, t1 = DLH__THREAD_INFO__INIT;
  t0.has_tid = 1; t0.tid = pid; t0.name = "main";
  t1.has_tid = 1; t1.tid = pid + 1; t1.name = "loader";
  p.data_case = DLH__PACKET__DATA_THREAD; p.thread = &t0; pkt(&p);
  p.thread = &t1; pkt(&p);

  func(1, "cudaStreamSynchronize", DLH__DOMAIN__DOMAIN_CUDART, "stream", 2);
  func(2, "cudaLaunchKernel", DLH__DOMAIN__DOMAIN_CUDART, "func", 2);
  func(3, "nvtxRangePushA", DLH__DOMAIN__DOMAIN_NVTX, "message", 4);
  Dlh__StringDef sd = DLH__STRING_DEF__INIT;
  sd.has_id = 1; sd.id = 1; sd.value = "step 1";
  p.data_case = DLH__PACKET__DATA_STRING; p.string = &sd; pkt(&p);
  Dlh__StringDef kd = DLH__STRING_DEF__INIT;
  kd.has_id = 1; kd.id = 2; kd.value = "_Z3foov";
  p.string = &kd; pkt(&p);

  Dlh__ModuleDef md = DLH__MODULE_DEF__INIT;
  md.path = "/work/app/libnative.so"; md.has_start = 1; md.start = 0x1000; md.has_end = 1;
  md.end = 0x10000; md.has_id = 1; md.id = 1;
  p.data_case = DLH__PACKET__DATA_MODULE; p.module = &md; pkt(&p);
  symbol(0x1000, "compute_kernel_host", "native.c", 5);
  symbol(0x3000, "at::_ops::addmm::call(at::Tensor const&)", NULL, 0);
  symbol(0x4000, "at::_ops::linear::call(at::Tensor const&)", NULL, 0);
  pyframe(1, "main", "/work/app/train.py", 10);
  pyframe(2, "step", "/work/app/train.py", 20);
  pyframe(3, "Condition.wait", "/usr/lib/python3.11/threading.py", 320);
  pyframe(4, "load", "/work/app/train.py", 30);
  const uint64_t s1[] = {0x1000}, s2[] = {0x3000, 0x4000, PY(2), PY(1)}, s3[] = {PY(3), PY(4)},
                 s4[] = {PY(2), PY(1)}, s5[] = {PY(4)};
  stack(1, 1, s1);
  stack(2, 4, s2);
  stack(3, 2, s3);
  stack(4, 2, s4);
  stack(5, 1, s5);

  uint64_t step_arg[] = {1}, launch_arg[] = {0x5555};
  dlh_api_event ev = {.start_ns = 1500000, .dur_ns = 10000000, .fn = 3, .nargs = 1, .args = step_arg};
  if (dlh_enc_api(w, pid, &ev) < 0) return 1;
  dlh_api_event lk = {.start_ns = 2100000, .dur_ns = 5000, .fn = 2, .corr = 1, .stack = 4, .nargs = 1,
                      .args = launch_arg};
  if (dlh_enc_api(w, pid, &lk) < 0) return 1;
  dlh_gpu_event ge = {.kind = DLH__GPU_RECORD_KIND__KERNEL, .start_ns = 3000000, .dur_ns = 1000,
                      .corr = 1, .stream = 7, .name = 2};
  if (dlh_enc_gpu(w, &ge) < 0) return 1;

  const uint32_t CPU = DLH__SAMPLE_KIND__SAMPLE_CPU, WAIT = DLH__SAMPLE_KIND__SAMPLE_WAIT;
  const uint32_t futex = 202 + 1;
  batch m = {.tid = pid}, l = {.tid = pid + 1};
  add(&m, 10, CPU, 2, 0, 0, 1000000);
  add(&m, 5, CPU, 1, 0, 0, 1000000);
  add(&m, 4, WAIT, 4, futex, 1, 2000000);
  add(&l, 6, WAIT, 3, futex, 0, 3000000);
  add(&l, 3, CPU, 5, 0, 0, 1000000);
  add(&l, 1, WAIT, 0, 0, 0, 500000);
  add(&l, 1, WAIT, 3, 99999 + 1, 0, 1000000);
  emit(&m, 2000000, m.n);
  if (dlh_enc_flush(w) < 0) return 1;
  emit(&l, 2500000, damaged ? 3 : l.n);

  Dlh__Counters c = DLH__COUNTERS__INIT;
  c.has_records = 1; c.records = 3; c.has_dropped = 1; c.dropped = 0;
  c.has_samples = 1; c.samples = 30; c.has_samples_lost = 1; c.samples_lost = 7;
  p.data_case = DLH__PACKET__DATA_COUNTERS; p.counters = &c; pkt(&p);
  Dlh__Trailer tr = DLH__TRAILER__INIT;
  tr.has_records = 1; tr.records = 3; tr.has_dropped = 1; tr.dropped = 0;
  tr.has_end_ns = 1; tr.end_ns = 30000000;
  p.data_case = DLH__PACKET__DATA_TRAILER; p.trailer = &tr; pkt(&p);
  dlh_enc_free(w);
  if (close(fd) < 0) { perror("mksamples: close"); return 1; }
  return 0;
}
