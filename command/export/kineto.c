/* kineto.c — `dlhook export --format kineto`: Chrome trace JSON in the layout of the
 * PyTorch profiler (Kineto), gzipped, one file per trace:
 * OUT/<host>_rank<R>_<pid>.<ms>.pt.trace.json.gz (<host>_<pid>.<ms>... without a rank).
 *
 * Written so that Holistic Trace Analysis, TensorBoard's PyTorch plugin and Perfetto read it as
 * they read torch.profiler's own trace (field names as Kineto writes them, our extra detail in
 * extra args):
 *   host calls:   ph X, pid = process, tid = thread; cat cuda_runtime (cudart), cuda_driver
 *                 (driver), cpu_op (cuBLAS, cuBLASLt, cuDNN, NCCL), user_annotation (NVTX);
 *                 args "External id" (every event), "cbid" (CUPTI's callback id), "correlation"
 *                 (runtime and driver calls). Launches are named as HTA and torch.profiler
 *                 know them: __cudaLaunchKernel (nvcc's <<<>>> in CUDA 13) and
 *                 cudaLaunchKernel_ptsz become cudaLaunchKernel, the recorded name in args
 *                 "function".
 *                 GEMMs and convolutions carry "Input Dims" / "Input type", NCCL calls the
 *                 collective args ("Collective name", "In msg nelems", "Group size", ...).
 *                 A folded event (count identical calls of a thread recorded once) is one
 *                 event from the first call's start to the last call's end; it keeps the
 *                 function's own name (HTA and TensorBoard group and match runtime calls by
 *                 name), the count goes in args "calls" (and "calls_dur_ns": the calls'
 *                 summed durations).
 *   library work: the kernels of a library call (cuBLAS, cuDNN, NCCL) are launched inside it;
 *                 a cuda_runtime "cudaLaunchKernel" (args "function": the library call,
 *                 "synthesized": 1) is written inside the call for each of them, just before the
 *                 kernel starts, with the kernel's correlation id, so that HTA's kernel launch
 *                 statistics, queue length and critical path see them.
 *   GPU records:  ph X, pid = device, tid = stream (named "stream S " as Kineto does); cat
 *                 kernel (with occupancy estimates: "blocks per SM", "warps per SM", "est.
 *                 achieved occupancy %"; NCCL kernels with the collective args), gpu_memcpy,
 *                 gpu_memset, cuda_sync (with "wait_on_stream" and
 *                 "wait_on_cuda_event_record_corr_id"); gpu_user_annotation: each NVTX range
 *                 (but steps) drawn on the streams its work ran on (without a "stream" arg:
 *                 HTA would count it as a kernel).
 *   flows:        ph s / f, cat ac2g, id = correlation id, only from calls that launched work.
 *   steps:        NVTX ranges named like steps ("step 3", "ProfilerStep#3", or --step-range
 *                 NAME) are written once, as ProfilerStep#N (the original name in "message").
 *   memory:       "[memory]" instant events (cpu_instant_event) per allocation and free, and a
 *                 live-bytes counter track.
 *   host samples: instant events (ph i, thread scope) on the sampled thread, cat cpu_sample or
 *                 wait_sample, at the sample's time, named by rd_sample_label ("step", "load
 *                 [wait: futex]"), args "weight_ns" (the CPU or wall time it stands for),
 *                 "source" (FILE:LINE of that frame) and, for wait samples, "waiting in". HTA
 *                 and TensorBoard pass over instant events of categories they do not know.
 *   top level:    schemaVersion, deviceProperties (Kineto's fields), distributedInfo (only for a
 *                 trace with a rank, or a lone trace: rank 0 of 1), baseTimeNanoseconds (ts + base
 *                 = Unix time), traceEvents, traceName (the file's name).
 *   times:        whole µs (see put_us).
 * Two passes over the trace (links.c's ex_input): the links, then calls and GPU records.
 * Memory: a few dozen bytes per GPU record and NVTX range (the links), nothing per call. */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "rd_ncclev.h"

/* The correlation id of the i-th (i > 0) GPU record of a library call and of the launch written
 * for it (the first keeps the call's own id); above CUPTI's ids, which count from 1. */
#define SYN_CORR(corr, i) ((1ull << 48) + (corr) * 4096ull + (i))

typedef struct span { uint64_t start, end; } span;

typedef struct nccl_info {   /* the collective(s) behind an NCCL launch */
  char coll[24];
  uint64_t in_n, out_n;
  int64_t dtype, nranks, rank;
  uint64_t comm_hash;
  /* NCCL's profiler plugin (rd_ncclev.h): the first collective the call enqueued */
  int prof;
  uint64_t seq;
  char algo[24], proto[16];
  uint32_t channels, nops;
  uint32_t calls;    /* a group's collective calls */
} nccl_info;

typedef struct kctx {
  const rd_opts *o;
  FILE *f;
  ex_links *L;
  uint32_t pid;
  int rank, world;           /* rank -1: not written */
  Dlh__DeviceInfo **dev;     /* copies: id, name, total_mem, sm_count, cc */
  size_t ndev;
  rd_map dev_ix;             /* id -> index + 1 into dev */
  uint32_t *gpu_pids;        /* devices seen in GPU records (for process_name metadata) */
  size_t ngpu;
  uint32_t next_ext;         /* External ids */
  uint32_t *range_ext;       /* External id of each NVTX range of L */
  rd_map names;              /* key -> name escaped as a JSON string: fn id (API), 1<<31 |
                                string id (kernels and NVTX messages) */
  rd_u64map ann_ix;          /* (range, device, stream) -> gpu_user_annotation span */
  struct { uint64_t key; uint32_t i; } annc[16]; /* the last lookups in ann_ix (i: index + 1) */
  span *ann;
  uint64_t *ann_key;
  size_t nann, capann;
  rd_u64map nccl_ix;         /* correlation id -> nccl_info */
  nccl_info *nccl;
  size_t nnccl, capnccl;
  struct { uint32_t tid; nccl_info g; int open; } *grp; /* per thread: collectives of a group */
  size_t ngrp;
  uint64_t flows_s, flows_f;
  rd_u64map streams;         /* (device, stream) already named */
  uint64_t ev_idx;           /* "Ev Idx": the index of a CPU event among them, as Kineto counts */
  rd_trace *t;               /* the trace being written (PyTorch's view of its stacks) */
  rd_spans *sp;              /* operators, autograd nodes and Python frames of each thread */
  rd_map kthr;               /* tid -> kthread: a thread's events while an operator is open */
  rd_u64map slot_ix;         /* span id of an open operator -> its slot (index + 1) */
  FILE *main_f;              /* the output file (f is a thread's buffer while it writes there) */
  uint64_t ops, pyframes;    /* cpu_op and python_function events derived from the stacks */
  uint64_t meta_ts;          /* ts of metadata events (the trace's start) */
  struct {                   /* w_head's text up to "ts" for the last category and thread */
    const char *cat;         /* a string literal: its address is the key */
    uint32_t pid, tid;
    size_t n;                /* 0: not cached */
    char s[112];
  } head;
  struct kargs *kargs;       /* KARGS: a kernel's args from "registers per thread" to the
                                occupancy, by its launch configuration (they repeat) */
  struct kfn *c;             /* the function of the calls being written (they come in runs) */
  uint32_t c_fn;
  uint64_t c_gen;            /* rd_trace.fn_gen when c was taken; UINT64_MAX: none */
  rd_map fns;                /* fn -> kfn: what a call's function writes, looked up once */
} kctx;

#define KARGS 64
typedef struct kargs {
  uint32_t device, n;        /* n: the text's length, 0: empty slot */
  uint64_t v[9];
  char s[480];
} kargs;

typedef struct kfn {
  uint64_t gen;              /* rd_trace.fn_gen + 1 when filled (0: not yet) */
  const rd_func *f;
  const char *name, *shown;
  long cbid;
  char unnamed[24];
  size_t elen;               /* ename: the name as a JSON string (w_name's), when < 64 bytes */
  char ename[64];
} kfn;

/* Fast writers for the per-event hot path (no format parsing, no per-call locking). */
static inline void w_s(FILE *f, const char *s) { rd_put(f, s, strlen(s)); }

/* n bytes of s, which has cap readable bytes (cap a constant): with cap bytes free in the
 * stream's buffer, one fixed-size copy instead of a call (what lies past n is overwritten) */
static inline void w_fixed(FILE *f, const char *s, size_t n, size_t cap) {
#ifdef __GLIBC__
  if ((size_t)(f->_IO_write_end - f->_IO_write_ptr) >= cap) {
    memcpy(f->_IO_write_ptr, s, cap);
    f->_IO_write_ptr += n;
    return;
  }
#endif
  rd_put(f, s, n);
}

/* v's decimal digits at p, two at a time from the last; returns how many (at most 20) */
static inline size_t fmt_u(char *p, uint64_t v) {
  static const char d2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                           "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                           "8081828384858687888990919293949596979899";
  static const uint64_t p10[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                 10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                 100000000000ull, 1000000000000ull, 10000000000000ull,
                                 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                 100000000000000000ull, 1000000000000000000ull,
                                 10000000000000000000ull};
  size_t n = (size_t)((64 - __builtin_clzll(v | 1)) * 1233) >> 12; /* digits - 1 or digits */
  n += n < 20 && v >= p10[n];
  if (!n) n = 1;
  char *q = p + n;
  while (v >= 100) {
    uint64_t r = v % 100;
    v /= 100;
    q -= 2;
    memcpy(q, d2 + 2 * r, 2);
  }
  if (v >= 10) memcpy(q - 2, d2 + 2 * v, 2);
  else q[-1] = (char)('0' + v);
  return n;
}

static inline void w_u(FILE *f, uint64_t v) {
#ifdef __GLIBC__
  /* straight into the stream's buffer, no call */
  if (f->_IO_write_end - f->_IO_write_ptr >= 20) {
    f->_IO_write_ptr += fmt_u(f->_IO_write_ptr, v);
    return;
  }
#endif
  char b[20];
  rd_put(f, b, fmt_u(b, v));
}

static void w_i(FILE *f, int64_t v) {
  if (v < 0) { putc_unlocked('-', f); w_u(f, (uint64_t)0 - (uint64_t)v); }
  else w_u(f, (uint64_t)v);
}

/* Times are written in whole µs, both ends rounded to the nearest: rounding is monotonic, so
 * nesting and order survive, and no duration turns negative. (HTA rounds fractional times up at
 * the start and down at the end, which gives sub-µs calls a negative duration that its call
 * graph rejects.) */
static uint64_t us_of(uint64_t ns) { return (ns + 500) / 1000; }
static void put_us(FILE *f, uint64_t ns) { w_u(f, us_of(ns)); }
/* the duration of [start, start + dur) in those units */
static void put_dur(FILE *f, uint64_t start, uint64_t dur) {
  w_u(f, us_of(start + dur) - us_of(start));
}

/* s as a JSON string (malloc'd). */
static char *json_escaped(const char *s) {
  char *e = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&e, &n);
  if (!m) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  rd_json_str(m, s);
  if (fclose(m) != 0 || !e) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return e;
}

/* A name as a JSON string, escaped once and cached under key (0 = do not cache). */
static void w_name(kctx *k, uint32_t key, const char *s) {
  if (!key) { rd_json_str(k->f, s); return; }
  char *e = rd_map_get(&k->names, key);
  if (!e) rd_map_put(&k->names, key, e = json_escaped(s));
  w_s(k->f, e);
}

/* The name of the function of the calls being written (k_api's k->c) as w_name writes it. */
static void w_fname(kctx *k, const dlh_api_event *ev, const char *fname) {
  if (k->c->elen < sizeof k->c->ename) w_fixed(k->f, k->c->ename, k->c->elen, sizeof k->c->ename);
  else w_name(k, ev->fn & 0x7fffffff, fname);
}

static const char *category(int domain) {
  switch (domain) {
    case DLH__DOMAIN__DOMAIN_CUDART: return "cuda_runtime";
    case DLH__DOMAIN__DOMAIN_DRIVER: return "cuda_driver";
    case DLH__DOMAIN__DOMAIN_NVTX: return "user_annotation";
    default: return "cpu_op";
  }
}

static int is_library(int domain) {
  return domain == DLH__DOMAIN__DOMAIN_CUBLAS || domain == DLH__DOMAIN__DOMAIN_CUBLASLT ||
         domain == DLH__DOMAIN__DOMAIN_CUDNN || domain == DLH__DOMAIN__DOMAIN_NCCL;
}

/* The name HTA and TensorBoard know for a launch (NULL: keep the recorded name). */
static const char *known_launch_name(const char *n) {
  if (!strcmp(n, "__cudaLaunchKernel") || !strcmp(n, "__cudaLaunchKernel_ptsz") ||
      !strcmp(n, "cudaLaunchKernel_ptsz"))
    return "cudaLaunchKernel";
  if (!strcmp(n, "cudaLaunchKernelExC_ptsz")) return "cudaLaunchKernelExC";
  if (!strcmp(n, "cuLaunchKernel_ptsz")) return "cuLaunchKernel";
  if (!strcmp(n, "cudaMemcpyAsync_ptsz")) return "cudaMemcpyAsync";
  if (!strcmp(n, "cudaMemsetAsync_ptsz")) return "cudaMemsetAsync";
  return NULL;
}

static const Dlh__DeviceInfo *device_of(const kctx *k, uint32_t id) {
  for (size_t i = 0; i < k->ndev; i++)
    if (k->dev[i]->id == id) return k->dev[i];
  return NULL;
}

/* ---------------------------------------------------------------- types and shapes */

static const char *cuda_type_torch(int64_t t) {
  switch (t) {
    case 0: return "float"; case 1: return "double"; case 2: return "c10::Half";
    case 3: return "signed char"; case 4: return "c10::complex<float>";
    case 5: return "c10::complex<double>"; case 6: return "c10::complex<c10::Half>";
    case 8: return "unsigned char"; case 10: return "int"; case 14: return "c10::BFloat16";
    case 28: return "c10::Float8_e4m3fn"; case 29: return "c10::Float8_e5m2";
    default: return "";
  }
}
static const char *cudnn_type_torch(int64_t t) {
  switch (t) {
    case 0: return "float"; case 1: return "double"; case 2: return "c10::Half";
    case 3: return "signed char"; case 4: return "int"; case 6: return "unsigned char";
    case 9: return "c10::BFloat16"; case 10: return "long int"; case 12: return "c10::Float8_e4m3fn";
    case 13: return "c10::Float8_e5m2";
    default: return "";
  }
}
/* ncclDataType_t as torch writes ScalarType names in the collective args */
static const char *nccl_type_torch(int64_t t) {
  static const char *const n[] = {"Char", "Byte", "Int", "UInt32", "Long", "UInt64", "Half",
                                  "Float", "Double", "BFloat16", "Float8_e4m3fn", "Float8_e5m2"};
  return t >= 0 && t < 12 ? n[t] : "";
}

static int64_t argi(const rd_trace *t, const dlh_api_event *ev, const char *names, int64_t dflt) {
  uint64_t v;
  return rd_arg(t, ev, names, &v) ? (int64_t)v : dflt;
}

static void w_dims(FILE *f, const int64_t *d, int n) {
  putc_unlocked('[', f);
  for (int i = 0; i < n; i++) { if (i) putc_unlocked(',', f); w_i(f, d[i]); }
  putc_unlocked(']', f);
}

/* "Input Dims" / "Input type" of a GEMM or convolution (from the recorded library args). */
static int w_shapes(FILE *f, const rd_trace *t, const dlh_api_event *ev, int dom) {
  if (dom == DLH__DOMAIN__DOMAIN_CUBLAS || dom == DLH__DOMAIN__DOMAIN_CUBLASLT) {
    int64_t m = argi(t, ev, "m", -1), n = argi(t, ev, "n", -1), kk = argi(t, ev, "k", -1);
    if (m < 0 || n < 0 || kk < 0) return 0;
    int64_t b = argi(t, ev, "batch", 1);
    const char *ty = cuda_type_torch(argi(t, ev, "dtype", 0));
    int64_t a[3] = {b, m, kk}, bb[3] = {b, kk, n}, c[3] = {b, m, n};
    int off = b > 1 ? 0 : 1;
    w_s(f, ",\"Input Dims\":[");
    w_dims(f, a + off, 3 - off); putc_unlocked(',', f);
    w_dims(f, bb + off, 3 - off); putc_unlocked(',', f);
    w_dims(f, c + off, 3 - off);
    fprintf(f, "],\"Input type\":[\"%s\",\"%s\",\"%s\"]", ty, ty, ty);
    return 1;
  } else if (dom == DLH__DOMAIN__DOMAIN_CUDNN) {
    int64_t N = argi(t, ev, "N", -1), C = argi(t, ev, "C", -1), H = argi(t, ev, "H", -1),
            W = argi(t, ev, "W", -1), K = argi(t, ev, "K", -1), R = argi(t, ev, "R", -1),
            S = argi(t, ev, "S", -1), g = argi(t, ev, "groups", 1);
    if (N < 0 || C < 0 || K < 0 || R < 0) return 0;
    const char *ty = cudnn_type_torch(argi(t, ev, "dtype", 0));
    int64_t in[4] = {N, C, H, W}, w[4] = {K, g > 0 ? C / g : C, R, S};
    w_s(f, ",\"Input Dims\":[");
    w_dims(f, in, 4); putc_unlocked(',', f);
    w_dims(f, w, 4);
    fprintf(f, "],\"Input type\":[\"%s\",\"%s\"]", ty, ty);
    return 1;
  }
  return 0;
}

/* Collective name as torch writes it (record_param_comms). */
static const char *coll_name(const char *fn) {
  static const char *const m[][2] = {
    {"ncclAllReduce", "allreduce"}, {"ncclAllGather", "allgather"},
    {"ncclReduceScatter", "reduce_scatter"}, {"ncclBroadcast", "broadcast"},
    {"ncclBcast", "broadcast"}, {"ncclReduce", "reduce"}, {"ncclSend", "send"},
    {"ncclRecv", "recv"}, {"ncclAlltoAll", "all_to_all"}, {"ncclGather", "gather"},
    {"ncclScatter", "scatter"}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (!strcmp(fn, m[i][0])) return m[i][1];
  return NULL;
}

/* The collective of an NCCL call, or 0 when it is not one. */
static int nccl_of(const rd_trace *t, const dlh_api_event *ev, const char *fname, nccl_info *c) {
  const char *cn = coll_name(fname);
  if (!cn) return 0;
  memset(c, 0, sizeof *c);
  snprintf(c->coll, sizeof c->coll, "%s", cn);
  int64_t n = argi(t, ev, "count|sendcount|recvcount", 0);
  c->nranks = argi(t, ev, "nranks", -1);
  c->rank = argi(t, ev, "rank", -1);
  c->dtype = argi(t, ev, "datatype", -1);
  c->comm_hash = (uint64_t)argi(t, ev, "comm_hash", 0);
  int64_t nr = c->nranks > 0 ? c->nranks : 1;
  c->in_n = c->out_n = (uint64_t)n;
  if (!strcmp(fname, "ncclAllGather")) c->out_n = (uint64_t)(n * nr);
  else if (!strcmp(fname, "ncclReduceScatter")) c->in_n = (uint64_t)(n * nr);
  return 1;
}

/* What NCCL said of the ncalls collectives the call of thread tid enqueued (its profiler
 * plugin), the thread's calls taken in order. */
static void nccl_prof(const rd_trace *t, uint32_t tid, size_t ncalls, nccl_info *c) {
  size_t n;
  const rd_nccl_op *o = rd_nccl_take(t, tid, ncalls, &n);
  if (!o) return;
  c->prof = 1;
  c->seq = o->seq;
  snprintf(c->algo, sizeof c->algo, "%s", o->algo);
  snprintf(c->proto, sizeof c->proto, "%s", o->proto);
  c->channels = o->channels;
  c->nops = (uint32_t)n;
}

static void w_nccl(kctx *k, const nccl_info *c) {
  FILE *f = k->f;
  w_s(f, ",\"Collective name\":\"");
  w_s(f, c->coll);
  w_s(f, "\",\"In msg nelems\":");
  w_u(f, c->in_n);
  w_s(f, ",\"Out msg nelems\":");
  w_u(f, c->out_n);
  w_s(f, ",\"Group size\":");
  w_i(f, c->nranks);
  w_s(f, ",\"dtype\":\"");
  w_s(f, nccl_type_torch(c->dtype));
  w_s(f, "\",\"In split size\":\"[]\",\"Out split size\":\"[]\",\"Process Group Name\":\"");
  w_u(f, c->comm_hash);
  w_s(f, "\",\"Process Group Description\":\"nccl communicator\"");
  /* the member list is known only for a communicator of every rank of the job */
  if (c->nranks > 0 && c->nranks == k->world && k->rank >= 0) {
    w_s(f, ",\"Process Group Ranks\":\"[");
    for (int64_t i = 0; i < c->nranks; i++) { if (i) w_s(f, ", "); w_i(f, i); }
    w_s(f, "]\"");
  }
  if (c->rank >= 0) { w_s(f, ",\"Rank\":"); w_i(f, c->rank); }
  if (c->prof) { /* as NCCL ran it: seq is NCCL's, the same on every rank of the communicator */
    w_s(f, ",\"seq\":");
    w_u(f, c->seq);
    w_s(f, ",\"NCCL algorithm\":\"");
    w_s(f, c->algo);
    w_s(f, "\",\"NCCL protocol\":\"");
    w_s(f, c->proto);
    w_s(f, "\",\"NCCL channels\":");
    w_u(f, c->channels);
    w_s(f, ",\"NCCL collectives\":");
    w_u(f, c->nops);
  }
}

static void put_nccl(kctx *k, uint64_t corr, const nccl_info *c) {
  uint32_t i;
  if (!rd_m_get(&k->nccl_ix, corr, &i)) {
    if (k->nnccl == k->capnccl) {
      k->capnccl = k->capnccl ? k->capnccl * 2 : 64;
      k->nccl = rd_xrealloc(k->nccl, k->capnccl * sizeof *k->nccl);
    }
    i = (uint32_t)k->nnccl++;
    rd_m_put(&k->nccl_ix, corr, i);
  }
  k->nccl[i] = *c;
}

/* ---------------------------------------------------------------- packets */

static void k_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  kctx *k = ctx;
  if (k->main_f) k->f = k->main_f;
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS: {
      const Dlh__ProcessInfo *pi = p->process;
      k->pid = pi->pid;
      fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"ts\":%" PRIu64 ","
                    "\"args\":{\"name\":", pi->pid, k->meta_ts);
      char nm[64];
      if (k->L->rank >= 0) snprintf(nm, sizeof nm, "rank %d", k->L->rank);
      else {
        const char *e = pi->exe ? pi->exe : pi->n_cmdline ? pi->cmdline[0] : "process";
        const char *b = strrchr(e, '/');
        snprintf(nm, sizeof nm, "%s", b ? b + 1 : e);
      }
      rd_json_str(k->f, nm);
      fprintf(k->f, "}},\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%u,\"tid\":0,"
                    "\"ts\":%" PRIu64 ",\"args\":{\"labels\":\"CPU\"}}", pi->pid, k->meta_ts);
      break;
    }
    case DLH__PACKET__DATA_FUNCTION: /* (re)definition: drop a cached name */
      if (rd_map_get(&k->names, p->function->id & 0x7fffffff))
        free(rd_map_put(&k->names, p->function->id & 0x7fffffff,
                        json_escaped(p->function->name ? p->function->name : "")));
      break;
    case DLH__PACKET__DATA_STRING:
      if (rd_map_get(&k->names, 1u << 31 | p->string->id))
        free(rd_map_put(&k->names, 1u << 31 | p->string->id,
                        json_escaped(p->string->value ? p->string->value : "")));
      break;
    case DLH__PACKET__DATA_THREAD:
      fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
                    "\"ts\":%" PRIu64 ",\"args\":{\"name\":", k->pid, p->thread->tid, k->meta_ts);
      rd_json_str(k->f, p->thread->name ? p->thread->name : "");
      fputs("}}", k->f);
      break;
    case DLH__PACKET__DATA_DEVICE: {
      const Dlh__DeviceInfo *d = p->device;
      if (k->kargs) memset(k->kargs, 0, KARGS * sizeof *k->kargs); /* occupancy changes */
      Dlh__DeviceInfo *c = rd_xmalloc(sizeof *c);
      *c = *d;
      c->name = rd_xstrdup(d->name ? d->name : "");
      uintptr_t i = (uintptr_t)rd_map_get(&k->dev_ix, d->id);
      if (i) { /* redefined */
        free(k->dev[i - 1]->name);
        free(k->dev[i - 1]);
        k->dev[i - 1] = c;
      } else {
        k->dev = rd_xrealloc(k->dev, (k->ndev + 1) * sizeof *k->dev);
        k->dev[k->ndev++] = c;
        rd_map_put(&k->dev_ix, d->id, (void *)(uintptr_t)k->ndev);
      }
      break;
    }
    default:
      break;
  }
  (void)t;
}

/* ---------------------------------------------------------------- calls */

static void w_head(kctx *k, const char *cat, uint32_t tid, uint64_t ts, uint64_t dur) {
  FILE *f = k->f;
  /* the text up to "ts" is the same for a thread's run of calls: made once per run */
  if (k->head.cat != cat || k->head.tid != tid || k->head.pid != k->pid) {
    /* ",\n{"ph":"X","cat":"CAT","pid":PID,"tid":TID,"ts":" without snprintf (threads
     * alternate on GPU traces): at most 19 + 40 + 9 + 10 + 8 + 10 + 6 bytes */
    size_t cl = strlen(cat), n = 0;
    char *h = k->head.s;
    if (cl <= 40) {
      memcpy(h, ",\n{\"ph\":\"X\",\"cat\":\"", 19), n = 19;
      memcpy(h + n, cat, cl), n += cl;
      memcpy(h + n, "\",\"pid\":", 8), n += 8;
      n += fmt_u(h + n, k->pid);
      memcpy(h + n, ",\"tid\":", 7), n += 7;
      n += fmt_u(h + n, tid);
      memcpy(h + n, ",\"ts\":", 6), n += 6;
    }
    k->head.n = n;
    k->head.cat = cat, k->head.tid = tid, k->head.pid = k->pid;
  }
  if (k->head.n) {
    w_fixed(f, k->head.s, k->head.n, sizeof k->head.s);
  } else { /* a category too long for the cache (none is) */
    w_s(f, ",\n{\"ph\":\"X\",\"cat\":\"");
    w_s(f, cat);
    w_s(f, "\",\"pid\":");
    w_u(f, k->pid);
    w_s(f, ",\"tid\":");
    w_u(f, tid);
    w_s(f, ",\"ts\":");
  }
  put_us(f, ts);
  w_s(f, ",\"dur\":");
  put_dur(f, ts, dur);
  w_s(f, ",\"name\":");
}

static void w_flow(kctx *k, char ph, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts) {
  FILE *f = k->f;
  w_s(f, ph == 's' ? ",\n{\"ph\":\"s\",\"id\":" : ",\n{\"ph\":\"f\",\"id\":");
  w_u(f, id);
  w_s(f, ",\"pid\":");
  w_u(f, pid);
  w_s(f, ",\"tid\":");
  w_u(f, tid);
  w_s(f, ",\"ts\":");
  put_us(f, ts);
  w_s(f, ph == 's' ? ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}"
                   : ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
  if (ph == 's') k->flows_s++;
  else k->flows_f++;
}

/* The NVTX range of L that is this event (same thread, start and end), or -1. */
static long range_of(const kctx *k, uint32_t tid, const dlh_api_event *ev) {
  long i = ex_links_range_at(k->L, tid, ev->start_ns);
  while (i >= 0 && !(k->L->range[i].start == ev->start_ns &&
                     k->L->range[i].end == ev->start_ns + dlh_api_span(ev)))
    i = k->L->range[i].parent;
  return i;
}

/* A cuda_runtime launch written inside a library call for each GPU record it caused: placed
 * just before the first record starts (and inside the call), 1 µs or less each. */
static void synth_launches(kctx *k, const rd_trace *t, uint32_t tid, const dlh_api_event *ev,
                           const ex_link *l, uint32_t ext) {
  FILE *f = k->f;
  uint64_t n = l->ngpu ? l->ngpu : 1, dur = ev->dur_ns;
  uint64_t d = dur / (n + 1);
  if (d > 1000) d = 1000;
  uint64_t end = ev->start_ns + dur, s0 = l->first_gpu > n * d ? l->first_gpu - n * d : 0;
  if (s0 + n * d > end) s0 = end - n * d;
  if (s0 < ev->start_ns) s0 = ev->start_ns;
  const char *real = rd_func_name(t, ev->fn);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t corr = i == 0 ? ev->corr : SYN_CORR(ev->corr, i < 4095 ? i : 4095);
    w_head(k, "cuda_runtime", tid, s0 + i * d, d);
    w_s(f, "\"cudaLaunchKernel\",\"args\":{\"External id\":");
    w_u(f, ext);
    w_s(f, ",\"cbid\":211,\"correlation\":");
    w_u(f, corr);
    w_s(f, ",\"function\":");
    w_name(k, ev->fn & 0x7fffffff, real);
    w_s(f, ",\"synthesized\":1}}");
    w_flow(k, 's', corr, k->pid, tid, s0 + i * d);
    if (i >= 4095) break;
  }
}

/* The args of a folded event: "calls" (how many) and "calls_dur_ns" (their summed durations;
 * the event's dur is their span). */
static void w_calls(kctx *k, const dlh_api_event *ev) {
  if (dlh_api_calls(ev) <= 1) return;
  w_s(k->f, ",\"calls\":");
  w_u(k->f, dlh_api_calls(ev));
  w_s(k->f, ",\"calls_dur_ns\":");
  w_u(k->f, ev->dur_ns);
}

/* While an operator (or autograd node) of a thread is open, that thread's events go to a
 * buffer, and each operator to a slot reserved where it opened: once the outermost one closes,
 * the buffer is written with every operator before the calls and operators inside it. Readers
 * that nest events by time (HTA's call graph, Perfetto) take the earlier of two events with the
 * same start and duration (in whole µs) as the parent. */
typedef struct kslot { size_t pos; char *text; size_t len; } kslot;
typedef struct kthread {
  FILE *ms;
  char *buf;
  size_t len;
  kslot *slot;
  size_t nslot, capslot;
  uint32_t open_ops;
} kthread;

static kthread *kthread_of(kctx *k, uint32_t tid) { return rd_map_get_new(&k->kthr, tid, sizeof(kthread)); }

/* Writes a thread's buffer and slots to the output, in order, and empties it. */
static void kthread_flush(kctx *k, kthread *th) {
  if (!th->ms) return;
  fflush(th->ms);
  size_t prev = 0;
  for (size_t i = 0; i < th->nslot; i++) {
    kslot *sl = &th->slot[i];
    if (sl->pos > prev) rd_put(k->main_f, th->buf + prev, sl->pos - prev);
    if (sl->text) rd_put(k->main_f, sl->text, sl->len);
    free(sl->text);
    prev = sl->pos;
  }
  if (th->len > prev) rd_put(k->main_f, th->buf + prev, th->len - prev);
  fclose(th->ms);
  free(th->buf);
  th->ms = NULL;
  th->buf = NULL;
  th->len = 0;
  th->nslot = 0;
}

static void kthread_free(void *p) {
  kthread *th = p;
  free(th->slot);
  free(th);
}

/* k->f for an event of thread tid: its buffer while an operator is open there */
static void route(kctx *k, uint32_t tid) {
  kthread *th = rd_map_get(&k->kthr, tid);
  k->f = th && th->open_ops ? th->ms : k->main_f;
}

static void k_open(void *ctx, const rd_span *sp) {
  kctx *k = ctx;
  if (sp->layer->kind == RD_LAYER_PY) return;
  kthread *th = kthread_of(k, sp->tid);
  if (!th->ms) {
    th->ms = open_memstream(&th->buf, &th->len);
    if (!th->ms) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  }
  fflush(th->ms);
  if (th->nslot == th->capslot) {
    th->capslot = th->capslot ? th->capslot * 2 : 16;
    th->slot = rd_xrealloc(th->slot, th->capslot * sizeof *th->slot);
  }
  th->slot[th->nslot++] = (kslot){th->len, NULL, 0};
  rd_m_put(&k->slot_ix, (uint64_t)sp->id, (uint32_t)th->nslot);
  th->open_ops++;
}

/* An instance of a layer derived from the stacks (torch.c): aten operators and autograd nodes
 * as cpu_op events (a node as torch.profiler writes it: "autograd::engine::evaluate_function:
 * X" around "X"), Python frames as python_function events, named "FILE(LINE): FUNCTION" as
 * torch.profiler's stack tracer names them (LINE: where the frame was at its first call). */
static void k_span(void *ctx, const rd_span *sp) {
  kctx *k = ctx;
  FILE *f = k->f;
  const rd_layer *l = sp->layer;
  uint64_t dur = sp->end - sp->start;
  if (l->kind == RD_LAYER_PY) {
    char nm[64];
    FILE *saved = k->f;
    route(k, sp->tid);
    f = k->f;
    w_head(k, "python_function", sp->tid, sp->start, dur);
    char *lbl = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&lbl, &n);
    if (!m) return;
    fprintf(m, "%s(%u): %s", l->file ? l->file : "?", l->line, l->name);
    fclose(m);
    w_name(k, 0, lbl);
    free(lbl);
    w_s(f, ",\"args\":{\"Python id\":");
    w_u(f, sp->id);
    w_s(f, ",\"Python parent id\":");
    w_u(f, sp->parent);
    snprintf(nm, sizeof nm, ",\"Python thread\":%u}}", sp->tid);
    w_s(f, nm);
    k->pyframes++;
    k->f = saved;
    return;
  }
  kthread *th = rd_map_get(&k->kthr, sp->tid);
  uint32_t si = 0;
  if (!th || !rd_m_get(&k->slot_ix, sp->id, &si) || !si) return; /* opened before: cannot be */
  rd_m_del(&k->slot_ix, sp->id);
  char *text = NULL;
  size_t tlen = 0;
  FILE *saved = k->f;
  k->f = open_memstream(&text, &tlen);
  if (!k->f) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  f = k->f;
  for (int pass = l->kind == RD_LAYER_NODE ? 0 : 1; pass < 2; pass++) {
    w_head(k, "cpu_op", sp->tid, sp->start, dur);
    if (pass == 0) {
      w_s(f, "\"autograd::engine::evaluate_function: ");
      w_s(f, l->name); /* a C++ identifier (torch.c): nothing to escape */
      w_s(f, "\"");
    } else {
      w_name(k, 0, l->name);
    }
    w_s(f, ",\"args\":{\"External id\":");
    w_u(f, pass == 1 ? sp->id : ++k->next_ext);
    w_s(f, ",\"Record function id\":0,\"Sequence number\":0,\"Fwd thread id\":0,"
           "\"Input Dims\":[],\"Input type\":[],\"Ev Idx\":");
    w_u(f, k->ev_idx++);
    w_s(f, ",\"derived\":\"stack\"}}");
    k->ops++;
  }
  fclose(k->f);
  k->f = saved;
  th->slot[si - 1].text = text;
  th->slot[si - 1].len = tlen;
  if (--th->open_ops == 0) kthread_flush(k, th);
}

static void k_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  kctx *k = ctx;
  FILE *f = k->main_f ? k->main_f : k->f; /* instants: no nesting, the order does not matter */
  char label[512], buf[256], src[1024];
  w_s(f, s->kind == RD_SAMPLE_WAIT ? ",\n{\"ph\":\"i\",\"cat\":\"wait_sample\",\"s\":\"t\",\"name\":"
                                   : ",\n{\"ph\":\"i\",\"cat\":\"cpu_sample\",\"s\":\"t\",\"name\":");
  rd_json_str(f, rd_sample_label(t, s, label, sizeof label));
  w_s(f, ",\"pid\":");
  w_u(f, k->pid);
  w_s(f, ",\"tid\":");
  w_u(f, s->tid);
  w_s(f, ",\"ts\":");
  put_us(f, s->time);
  w_s(f, ",\"args\":{\"weight_ns\":");
  w_u(f, s->weight);
  const char *fn, *file;
  uint32_t line;
  rd_sample_where(t, s->stack, &fn, &file, &line, buf, sizeof buf);
  if (file) {
    if (line) snprintf(src, sizeof src, "%s:%u", file, line);
    else snprintf(src, sizeof src, "%s", file);
    w_s(f, ",\"source\":");
    rd_json_str(f, src);
  }
  if (s->kind == RD_SAMPLE_WAIT) {
    w_s(f, ",\"waiting in\":");
    rd_json_str(f, rd_wait_label(t, s, buf, sizeof buf));
  }
  w_s(f, "}}");
}

static void k_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  kctx *k = ctx;
  FILE *f = k->f;
  if (k->c_fn != ev->fn || k->c_gen != t->fn_gen) {
    k->c_fn = ev->fn;
    k->c_gen = t->fn_gen;
    kfn *c = k->c = rd_map_get_new(&k->fns, ev->fn, sizeof *c);
    if (c->gen != t->fn_gen + 1) {
      c->gen = t->fn_gen + 1;
      c->f = rd_trace_func(t, ev->fn);
      if (c->f && c->f->name[0]) c->name = c->f->name;
      else snprintf(c->unnamed, sizeof c->unnamed, "fn#%u", ev->fn), c->name = c->unnamed;
      int d = c->f ? c->f->domain : 0;
      int rt = d == DLH__DOMAIN__DOMAIN_CUDART || d == DLH__DOMAIN__DOMAIN_DRIVER;
      c->shown = rt ? known_launch_name(c->name) : NULL;
      c->cbid = rt ? ex_cupti_cbid(t, ev->fn) : -1;
      uint32_t key = ev->fn & 0x7fffffff;
      char *e = key ? rd_map_get(&k->names, key) : NULL; /* what w_name writes */
      if (key && !e) rd_map_put(&k->names, key, e = json_escaped(c->name));
      c->elen = e ? strlen(e) : sizeof c->ename;
      memset(c->ename, 0, sizeof c->ename);
      if (c->elen < sizeof c->ename) memcpy(c->ename, e, c->elen);
    }
  }
  const rd_func *fn = k->c->f;
  int dom = fn ? fn->domain : 0;
  const char *fname = k->c->name;
  /* the operator around the call (torch.c): its External id goes on the runtime call and on
   * the GPU work, as torch.profiler links op -> launch -> kernel */
  uint32_t op_ext = 0;
  if (ev->stack && k->sp) {
    const rd_torch *c = rd_torch_of(k->t, ev->stack);
    rd_span_at at;
    if (c->n) {
      rd_spans_add(k->sp, tid, ev->start_ns, ev->start_ns + dlh_api_span(ev), c, &at);
      op_ext = at.op_id;
    }
  }
  if (k->kthr.n) route(k, tid);
  f = k->f;
  uint32_t ext = ++k->next_ext;
  if (dom == DLH__DOMAIN__DOMAIN_NVTX) {
    uint64_t msg;
    const char *label =
        rd_arg(t, ev, "message|name", &msg) ? rd_trace_string(t, (uint32_t)msg) : NULL;
    long r = range_of(k, tid, ev);
    if (r >= 0) k->range_ext[r] = ext;
    long step = r >= 0 ? k->L->range[r].step : -1;
    w_head(k, "user_annotation", tid, ev->start_ns, dlh_api_span(ev));
    if (step >= 0) {
      char nm[48];
      snprintf(nm, sizeof nm, "\"ProfilerStep#%ld\"", step);
      w_s(f, nm);
    } else if (label) {
      w_name(k, 1u << 31 | (uint32_t)msg, label);
    } else {
      w_fname(k, ev, fname);
    }
    w_s(f, ",\"args\":{\"External id\":");
    w_u(f, ext);
    if (label && step >= 0 && strncmp(label, "ProfilerStep#", 13)) {
      w_s(f, ",\"message\":");
      w_name(k, 1u << 31 | (uint32_t)msg, label);
    }
    w_s(f, ",\"function\":");
    w_fname(k, ev, fname);
    w_s(f, ",\"Record function id\":0,\"Ev Idx\":");
    w_u(f, k->ev_idx++);
    w_calls(k, ev);
    w_s(f, "}}");
    return;
  }
  ex_link *l = ex_links_get(k->L, ev->corr);
  if (l && !l->fn) { /* the call that launched this GPU work */
    l->fn = ev->fn;
    l->tid = tid;
    l->launch = ev->start_ns ? ev->start_ns : 1;
    l->ext = op_ext ? op_ext : ext;
  } else if (l && l->fn != ev->fn) {
    l = NULL; /* a second call with the same id (nested): the outer one owns the work */
  }
  int runtime = dom == DLH__DOMAIN__DOMAIN_CUDART || dom == DLH__DOMAIN__DOMAIN_DRIVER;
  const char *shown = runtime ? k->c->shown : NULL;
  w_head(k, category(dom), tid, ev->start_ns, dlh_api_span(ev));
  if (shown) { putc_unlocked('"', f); w_s(f, shown); putc_unlocked('"', f); }
  else w_fname(k, ev, fname);
  w_s(f, ",\"args\":{\"External id\":");
  w_u(f, runtime && op_ext ? op_ext : ext);
  if (runtime) {
    long cb = k->c->cbid;
    if (cb >= 0) { w_s(f, ",\"cbid\":"); w_u(f, (uint64_t)cb); }
    if (ev->corr) { w_s(f, ",\"correlation\":"); w_u(f, ev->corr); }
  }
  if (shown) {
    w_s(f, ",\"function\":");
    w_fname(k, ev, fname);
  }
  if (ev->ret) { w_s(f, ",\"result\":"); w_i(f, ev->ret); }
  if (!runtime) { /* as torch writes every cpu_op: its tensors' shapes and types (none here) */
    if (!w_shapes(f, t, ev, dom)) w_s(f, ",\"Input Dims\":[],\"Input type\":[]");
    w_s(f, ",\"Record function id\":0,\"Ev Idx\":");
    w_u(f, k->ev_idx++);
  }
  if (dom == DLH__DOMAIN__DOMAIN_NCCL) {
    nccl_info c;
    size_t g;
    for (g = 0; g < k->ngrp && k->grp[g].tid != tid; g++) {}
    if (g == k->ngrp) {
      k->grp = rd_xrealloc(k->grp, (k->ngrp + 1) * sizeof *k->grp);
      memset(&k->grp[g], 0, sizeof k->grp[g]);
      k->grp[g].tid = tid;
      k->ngrp++;
    }
    if (nccl_of(t, ev, fname, &c)) {
      w_nccl(k, &c);
      if (argi(t, ev, "group", 0) > 0) { /* launched by the group's ncclGroupEnd */
        nccl_info *G = &k->grp[g].g;
        if (!k->grp[g].open) { *G = c; k->grp[g].open = 1; }
        int first = !G->calls;
        if (!ev->ret) G->calls += (uint32_t)dlh_api_calls(ev); /* a failed call enqueued nothing */
        if (!first) {
          if (strcmp(G->coll, c.coll)) snprintf(G->coll, sizeof G->coll, "coalesced");
          G->in_n += c.in_n;
          G->out_n += c.out_n;
        }
      } else {
        if (!ev->ret) nccl_prof(t, tid, dlh_api_calls(ev), &c);
        if (l) put_nccl(k, ev->corr, &c);
      }
    } else if (!strcmp(fname, "ncclGroupEnd") && k->grp[g].open) {
      nccl_prof(t, tid, k->grp[g].g.calls, &k->grp[g].g);
      if (l) put_nccl(k, ev->corr, &k->grp[g].g);
      k->grp[g].open = 0;
    }
  }
  w_calls(k, ev);
  w_s(f, "}}");
  if (!l) return;
  if (is_library(dom)) synth_launches(k, t, tid, ev, l, op_ext ? op_ext : ext);
  else w_flow(k, 's', ev->corr, k->pid, tid, ev->start_ns);
}

/* ---------------------------------------------------------------- GPU records */

static void note_device(kctx *k, uint32_t dev) {
  size_t i;
  for (i = 0; i < k->ngpu && k->gpu_pids[i] != dev; i++) {}
  if (i < k->ngpu) return;
  k->gpu_pids = rd_xrealloc(k->gpu_pids, (k->ngpu + 1) * sizeof *k->gpu_pids);
  k->gpu_pids[k->ngpu++] = dev;
  char nm[48];
  if (k->L->rank >= 0) snprintf(nm, sizeof nm, "rank %d", k->L->rank);
  else snprintf(nm, sizeof nm, "GPU %u", dev);
  fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,"
                "\"ts\":%" PRIu64 ",\"args\":{\"name\":\"%s\"}}", dev, k->meta_ts, nm);
  fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%u,\"tid\":0,"
                "\"ts\":%" PRIu64 ",\"args\":{\"labels\":\"GPU %u\"}}", dev, k->meta_ts, dev);
}

/* Extends the gpu_user_annotation of every NVTX range around the launch to this record. */
static void note_annotation(kctx *k, const ex_link *l, const rd_gpu *g) {
  if (!l->launch) return;
  for (long r = ex_links_range_at(k->L, l->tid, l->launch); r >= 0; r = k->L->range[r].parent) {
    /* steps stay on the CPU: HTA takes the last "ProfilerStep" start of any event as the end of
     * the traced iterations */
    if (k->L->range[r].step >= 0) continue;
    uint64_t key = (uint64_t)r << 32 ^ (uint64_t)g->device << 24 ^ g->stream;
    uint32_t i;
    size_t c = (size_t)(key * 0x9e3779b97f4a7c15ull >> 60); /* streams' records interleave */
    if (k->annc[c].i && k->annc[c].key == key) {
      i = k->annc[c].i - 1;
      if (g->start < k->ann[i].start) k->ann[i].start = g->start;
      if (g->start + g->dur > k->ann[i].end) k->ann[i].end = g->start + g->dur;
      continue;
    }
    if (!rd_m_get(&k->ann_ix, key, &i)) {
      if (k->nann == k->capann) {
        k->capann = k->capann ? k->capann * 2 : 256;
        k->ann = rd_xrealloc(k->ann, k->capann * sizeof *k->ann);
        k->ann_key = rd_xrealloc(k->ann_key, k->capann * sizeof *k->ann_key);
      }
      i = (uint32_t)k->nann++;
      k->ann[i] = (span){g->start, g->start + g->dur};
      k->ann_key[i] = (uint64_t)r << 40 | (uint64_t)(g->device & 0xff) << 32 | g->stream;
      rd_m_put(&k->ann_ix, key, i);
    } else {
      if (g->start < k->ann[i].start) k->ann[i].start = g->start;
      if (g->start + g->dur > k->ann[i].end) k->ann[i].end = g->start + g->dur;
    }
    k->annc[c].key = key, k->annc[c].i = i + 1;
  }
}

/* A kernel's args from "registers per thread" to the occupancy estimates, as text: made once
 * per launch configuration (grid, block, registers, shared memory) and device. */
static const kargs *kernel_args(kctx *k, uint32_t device, const uint64_t *v, uint32_t nvals) {
  if (!k->kargs) k->kargs = rd_xcalloc(KARGS, sizeof *k->kargs);
  uint64_t h = device;
  for (int i = 0; i < 9; i++) h = (h ^ v[i]) * 0x9e3779b97f4a7c15ull;
  kargs *a = &k->kargs[h >> 58]; /* KARGS = 64 slots */
  if (a->n && a->device == device && !memcmp(a->v, v, sizeof a->v)) return a;
  a->device = device;
  memcpy(a->v, v, sizeof a->v);
  int n = snprintf(a->s, sizeof a->s,
                   ",\"registers per thread\":%" PRIu64 ",\"shared memory\":%" PRIu64 ",\"grid\":[%" PRIu64
                   ",%" PRIu64 ",%" PRIu64 "],\"block\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
                   v[6], v[7] + v[8], v[0], v[1], v[2], v[3], v[4], v[5]);
  double bps, wps, occ;
  if (rd_occupancy(device_of(k, device), v, nvals, &bps, &wps, &occ)) {
    char b[32], w[32]; /* as rd_json_double writes them */
    if (bps != bps || bps > 1.7976931348623157e308 || bps < -1.7976931348623157e308) snprintf(b, sizeof b, "null");
    else snprintf(b, sizeof b, "%.17g", bps);
    if (wps != wps || wps > 1.7976931348623157e308 || wps < -1.7976931348623157e308) snprintf(w, sizeof w, "null");
    else snprintf(w, sizeof w, "%.17g", wps);
    n += snprintf(a->s + n, sizeof a->s - (size_t)n,
                  ",\"blocks per SM\":%s,\"warps per SM\":%s,\"est. achieved occupancy %%\":%" PRIu64,
                  b, w, (uint64_t)(occ + 0.5));
  }
  a->n = (uint32_t)n;
  return a;
}

static void k_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  kctx *k = ctx;
  if (k->main_f) k->f = k->main_f;
  FILE *f = k->f;
  const char *cat;
  switch (g->kind) {
    case RD_KERNEL: cat = "kernel"; break;
    case RD_MEMCPY: cat = "gpu_memcpy"; break;
    case RD_MEMSET: cat = "gpu_memset"; break;
    case RD_SYNC: cat = "cuda_sync"; break;
    default: return;
  }
  note_device(k, g->device);
  uint32_t seen;
  if (!rd_m_get(&k->streams, (uint64_t)g->device << 32 | g->stream, &seen)) {
    rd_m_put(&k->streams, (uint64_t)g->device << 32 | g->stream, 1);
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"ts\":%" PRIu64
               ",\"args\":{\"name\":\"stream %u \"}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\","
               "\"pid\":%u,\"tid\":%u,\"ts\":%" PRIu64 ",\"args\":{\"sort_index\":%u}}",
            g->device, g->stream, k->meta_ts, g->stream, g->device, g->stream, k->meta_ts, g->stream);
  }
  uint64_t corr = ex_links_corr(k->L, g->corr), call_corr = corr;
  ex_link *l = g->kind != RD_SYNC ? ex_links_get(k->L, corr) : NULL;
  int lib = 0;
  if (l) {
    const rd_func *fn = l->fn ? rd_trace_func(t, l->fn) : NULL;
    lib = fn && is_library(fn->domain);
    /* a library call's records each have a launch of their own; its replayed (graph) records
     * link to its first */
    uint32_t i = g->launch_corr ? 0 : l->seen++;
    if (lib && i > 0) corr = SYN_CORR(corr, i < 4095 ? i : 4095);
    note_annotation(k, l, g);
  }
  char buf[64];
  /* copies and memsets without a name of their own: rd_gpu_name's, written without snprintf */
  int plain = (g->kind == RD_MEMCPY || g->kind == RD_MEMSET) && !(g->kname && *g->kname);
  const char *name = plain ? NULL : rd_gpu_name(t, g, buf, sizeof buf);
  const ex_evrec *wait = NULL;
  if (g->kind == RD_SYNC) {
    uint64_t st = g->nvals ? g->vals[0] : 0;
    name = st == 1 ? "Event Sync" : st == 2 ? "Stream Wait Event" : st == 3 ? "Stream Sync" :
           st == 4 ? "Context Sync" : "Sync";
    if ((st == 1 || st == 2) && g->nvals >= 2) wait = ex_links_evrec(k->L, g->vals[1], g->start);
  }
  w_s(f, ",\n{\"ph\":\"X\",\"cat\":\"");
  w_s(f, cat);
  w_s(f, "\",\"name\":");
  if (plain) {
    w_s(f, g->kind == RD_MEMSET ? "\"Memset" : "\"Memcpy ");
    if (g->kind == RD_MEMCPY) w_s(f, rd_memcpy_kind(g->nvals > 1 ? g->vals[1] : 0));
    putc_unlocked('"', f);
  } else if (g->kind == RD_SYNC) { /* one of the names above: nothing to escape */
    putc_unlocked('"', f);
    w_s(f, name);
    putc_unlocked('"', f);
  } else {
    w_name(k, g->kind == RD_KERNEL && g->name ? 1u << 31 | g->name : 0, name);
  }
  w_s(f, ",\"pid\":");
  w_u(f, g->device);
  w_s(f, ",\"tid\":");
  w_u(f, g->stream);
  w_s(f, ",\"ts\":");
  put_us(f, g->start);
  w_s(f, ",\"dur\":");
  put_dur(f, g->start, g->dur);
  w_s(f, ",\"args\":{\"External id\":");
  w_u(f, l ? l->ext : 0);
  w_s(f, ",\"queued\":0,\"device\":");
  w_u(f, g->device);
  w_s(f, ",\"context\":");
  w_u(f, g->context);
  w_s(f, ",\"stream\":");
  w_u(f, g->stream);
  w_s(f, ",\"correlation\":");
  w_u(f, corr);
  const uint64_t *v = g->vals;
  if (g->kind == RD_KERNEL && g->nvals >= 9) {
    const kargs *a = kernel_args(k, g->device, v, g->nvals);
    rd_put(f, a->s, a->n);
    uint32_t ni;
    if (k->nnccl && rd_m_get(&k->nccl_ix, call_corr, &ni)) w_nccl(k, &k->nccl[ni]);
    /* torch.compile: what Inductor fused into this Triton kernel */
    const rd_inductor_kernel *ik = g->kname ? rd_inductor_kernel_named(t, g->kname) : NULL;
    if (ik) {
      w_s(f, ",\"inductor aten ops\":");
      rd_json_str(f, ik->aten_ops);
      w_s(f, ",\"inductor source nodes\":");
      rd_json_str(f, ik->source_nodes);
    }
  } else if ((g->kind == RD_MEMCPY || g->kind == RD_MEMSET) && g->nvals >= 1) {
    w_s(f, ",\"bytes\":");
    w_u(f, v[0]);
    w_s(f, ",\"memory bandwidth (GB/s)\":");
    rd_json_double(f, g->dur ? (double)v[0] / (double)g->dur : 0);
    if (g->kind == RD_MEMCPY && g->nvals >= 2) {
      w_s(f, ",\"kind\":\"");
      w_s(f, rd_memcpy_kind(v[1]));
      putc_unlocked('"', f);
    }
  } else if (g->kind == RD_SYNC) {
    w_s(f, ",\"wait_on_stream\":");
    if (wait) w_u(f, wait->stream); else w_s(f, "-1");
    w_s(f, ",\"wait_on_cuda_event_record_corr_id\":");
    if (wait) w_u(f, wait->corr); else w_s(f, "-1");
  }
  if (g->graph_node) { /* a CUDA graph's replay: its node, and the launch (correlation: the
                        * call that made the node, whose op's External id it carries) */
    w_s(f, ",\"graph id\":");
    w_u(f, g->graph);
    w_s(f, ",\"graph node id\":");
    w_u(f, g->graph_node);
    if (g->launch_corr) {
      w_s(f, ",\"graph launch correlation\":");
      w_u(f, g->launch_corr);
    }
  }
  w_s(f, "}}");
  if (l && l->fn && g->kind != RD_SYNC) w_flow(k, 'f', corr, g->device, g->stream, g->start);
}

/* ---------------------------------------------------------------- files */

static void w_device_properties(kctx *k) {
  FILE *f = k->f;
  fputs("\n],\n\"deviceProperties\": [", f);
  for (size_t i = 0; i < k->ndev; i++) {
    const Dlh__DeviceInfo *d = k->dev[i];
    rd_arch a = rd_arch_of(d->cc_major, d->cc_minor);
    fprintf(f, "%s\n{\"id\":%u,\"name\":", i ? "," : "", d->id);
    rd_json_str(f, d->name);
    fprintf(f, ",\"totalGlobalMem\":%" PRIu64 ",\"computeMajor\":%u,\"computeMinor\":%u,"
               "\"maxThreadsPerBlock\":1024,\"maxThreadsPerMultiprocessor\":%u,"
               "\"regsPerBlock\":65536,\"regsPerMultiprocessor\":65536,\"warpSize\":32,"
               "\"sharedMemPerBlock\":49152,\"sharedMemPerMultiprocessor\":%u,\"numSms\":%u,"
               "\"sharedMemPerBlockOptin\":%u}",
            d->total_mem, d->cc_major, d->cc_minor, a.threads_per_sm, a.smem_per_sm, d->sm_count,
            a.smem_optin);
  }
  fputs("]", f);
}

static void w_annotations(kctx *k) {
  FILE *f = k->f;
  for (size_t i = 0; i < k->nann; i++) {
    long r = (long)(k->ann_key[i] >> 40);
    uint32_t dev = (uint32_t)(k->ann_key[i] >> 32 & 0xff), st = (uint32_t)k->ann_key[i];
    const ex_range *R = &k->L->range[r];
    w_s(f, ",\n{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":");
    if (R->step >= 0) fprintf(f, "\"ProfilerStep#%ld\"", R->step);
    else rd_json_str(f, R->label);
    w_s(f, ",\"pid\":");
    w_u(f, dev);
    w_s(f, ",\"tid\":");
    w_u(f, st);
    w_s(f, ",\"ts\":");
    put_us(f, k->ann[i].start);
    w_s(f, ",\"dur\":");
    put_dur(f, k->ann[i].start, k->ann[i].end - k->ann[i].start);
    /* no "stream" arg: HTA takes every event with a stream for a kernel */
    w_s(f, ",\"args\":{\"External id\":");
    w_u(f, k->range_ext[r]);
    w_s(f, "}}");
  }
}

static void w_memory(kctx *k, const char *path, const rd_mem_sample *mem, long nmem) {
  const rd_opts *o = k->o;
  uint64_t lo = k->L->start_ns + o->win_start,
           hi = o->win_end == UINT64_MAX ? UINT64_MAX : k->L->start_ns + o->win_end;
  int64_t off = rd_offset_of(path);
  for (long i = 0; i < nmem; i++) {
    uint64_t ts = mem[i].ts_ns + (uint64_t)off;
    if (o->have_window && (ts < lo || ts > hi)) continue;
    fprintf(k->f, ",\n{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU memory\",\"pid\":%u,"
                  "\"tid\":0,\"ts\":", k->pid);
    put_us(k->f, ts);
    fprintf(k->f, ",\"args\":{\"live_bytes\":%" PRIu64 "}}", mem[i].live_bytes);
    fprintf(k->f, ",\n{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\","
                  "\"pid\":%u,\"tid\":%u,\"ts\":", k->pid, mem[i].tid ? mem[i].tid : k->pid);
    put_us(k->f, ts);
    fprintf(k->f, ",\"args\":{\"Total Reserved\":%" PRIu64 ",\"Total Allocated\":%" PRIu64
                  ",\"Bytes\":%" PRId64 ",\"Device Id\":%u,\"Device Type\":1,\"Addr\":%" PRIu64
                  ",\"Ev Idx\":%" PRIu64 "}}",
            mem[i].device_live_bytes, mem[i].device_live_bytes, mem[i].bytes, mem[i].device,
            mem[i].ptr, k->ev_idx++);
  }
}

static int kineto_one(void *ctx, ex_input *in, size_t index, size_t n) {
  const rd_opts *o = ctx;
  const char *path = in->path;
  kctx k = {0};
  k.c_gen = UINT64_MAX;
  ex_links L = in->L;
  k.o = o;
  k.L = &in->L;
  int rc = RD_OK;
  (void)index;
  k.pid = L.pid;
  k.meta_ts = us_of(L.start_ns + (uint64_t)rd_offset_of(path));
  /* ranks: the trace's own; a lone trace without one is rank 0 of 1; never an invented one */
  k.rank = L.rank >= 0 ? L.rank : n == 1 ? 0 : -1;
  k.world = L.rank >= 0 ? (L.world > 0 ? L.world : (int)n) : 1;
  k.range_ext = calloc(L.nrange ? L.nrange : 1, sizeof *k.range_ext);
  if (!k.range_ext) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  char host[128]; /* the one rule for names derived from traces (lib/output.c) */
  rd_safe_name(host, sizeof host, L.host, "host");
  size_t plen = strlen(o->out) + 64;
  char *tmp = rd_xmalloc(plen), *final = NULL;
  uint64_t ms = L.real_ns ? L.real_ns / 1000000 : L.start_ns / 1000000;
  char stem[sizeof host + 96], base[sizeof stem + 16];
  if (L.rank >= 0) snprintf(stem, sizeof stem, "%s_rank%d_%u.%" PRIu64, host, L.rank, L.pid, ms);
  else snprintf(stem, sizeof stem, "%s_%u.%" PRIu64, host, L.pid, ms);
  snprintf(base, sizeof base, "%s.pt.trace.json", stem);
  snprintf(tmp, plen, "%s/trace.json.gz", o->out); /* names the directory for rd_create */
  k.f = rd_create(tmp, !o->no_gzip);
  /* a buffer of ours: setvbuf(f, NULL, ...) keeps glibc's (4 KiB writes) */
  char *iobuf = k.f && o->no_gzip ? rd_xmalloc(1 << 20) : NULL;
  if (iobuf) setvbuf(k.f, iobuf, _IOFBF, 1 << 20);
  if (!k.f) { free(tmp); free(k.range_ext); return RD_BAD_INPUT; }
  fputs("{\n\"schemaVersion\": 1,\n", k.f);
  if (k.rank >= 0)
    fprintf(k.f, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n",
            k.rank, k.world);
  fprintf(k.f, "\"trace_id\": \"%016" PRIX64 "%08X\",\n", L.real_ns ? L.real_ns : L.start_ns, L.pid);
  fprintf(k.f, "\"record_shapes\": 1,\n\"profile_memory\": 1,\n\"host_name\": ");
  rd_json_str(k.f, L.host);
  fprintf(k.f, ",\n\"traceName\": ");
  rd_json_str(k.f, base);
  fprintf(k.f, ",\n\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [\n"
          "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,\"tid\":0,\"ts\":%" PRIu64 ","
          "\"args\":{\"sort_index\":%d}}", k.pid, k.meta_ts, k.rank >= 0 ? k.rank : 0);
  rd_sink all = {&k, k_packet, k_api, k_gpu, 0, k_sample};
  k.t = &in->t;
  k.main_f = k.f;
  k.sp = rd_spans_new(k_span, &k, &k.next_ext);
  rd_spans_on_open(k.sp, k_open);
  if (ex_input_pass(in, o, &all) != RD_OK) rc = RD_BAD_INPUT;
  rd_spans_free(k.sp); /* what is still open */
  k.sp = NULL;
  k.f = k.main_f;
  rd_map_free(&k.kthr, kthread_free);
  rd_m_free(&k.slot_ix);
  w_annotations(&k);
  w_memory(&k, path, in->samples, in->nmem);
  w_device_properties(&k);
  /* ts + baseTimeNanoseconds = Unix time (ns), as in Kineto's traces */
  int64_t bt = L.real_ns ? (int64_t)(L.real_ns - L.anchor_trace_ns) - rd_offset_of(path) : 0;
  fprintf(k.f, ",\n\"baseTimeNanoseconds\": %" PRId64 "\n}\n", bt);
  for (size_t i = 0; i < k.ndev; i++) { free(k.dev[i]->name); free(k.dev[i]); }
  free(k.dev);
  rd_map_free(&k.dev_ix, NULL);
  free(k.gpu_pids);
  free(k.range_ext);
  free(k.ann);
  free(k.ann_key);
  free(k.nccl);
  free(k.grp);
  rd_m_free(&k.ann_ix);
  rd_m_free(&k.nccl_ix);
  rd_m_free(&k.streams);
  rd_map_free(&k.names, free);
  rd_map_free(&k.fns, free);
  free(k.kargs);
  /* never replaces a file: two traces with one name (same host, pid and millisecond) or an
   * earlier export get stem-2, stem-3, ... */
  final = rd_close_new(k.f, o->out, stem, o->no_gzip ? ".pt.trace.json" : ".pt.trace.json.gz");
  if (!final) rc = RD_BAD_INPUT;
  else if (!o->quiet) fprintf(stderr, "dlhook: wrote %s\n", final);
  free(iobuf); /* the stream is closed */
  free(tmp);
  free(final);
  return rc;
}

int ex_kineto(const rd_opts *o, char **files, size_t n) {
  if (rd_mkdirs(o->out) < 0 || rd_dir_safe(o->out) < 0) return RD_BAD_INPUT;
  return ex_each(o, files, n, kineto_one, (void *)o);
}
