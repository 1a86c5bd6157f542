/* libcalls.c — the library tables of `dlhook stats`: GEMMs (cuBLAS, cuBLASLt), convolutions
 * (cuDNN) and collectives (NCCL), from the arguments the wrappers record (hooks/<lib>_args.h).
 *
 * Only outermost calls (depth 0) count: a cublasSgemm_v2 that runs through cublasLtMatmul is one
 * GEMM. Time of a call: the GPU time of the kernels linked to it (same correlation id) when the
 * trace has any, else the call's own duration. Grouped NCCL operations (inside
 * ncclGroupStart/End) launch at the outermost ncclGroupEnd, whose kernels carry its correlation
 * id: that GPU time (or, without GPU records, the ncclGroupEnd call time) is shared among the
 * group's operations in proportion to their bytes. algbw = bytes / time; busbw = algbw × the
 * nccl-tests factor: all-reduce 2(n−1)/n, all-gather, reduce-scatter, all-to-all, gather,
 * scatter (n−1)/n, others 1.
 * A folded event (count identical calls recorded once; they have no correlation id, so no GPU
 * work of their own) is count calls: its FLOPs and bytes count count times, its time is the
 * calls' summed duration. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_fmt.h"
#include "rd.h"
#include "rd_scan.h"

enum { K_GEMM = 1, K_CONV, K_COLL, K_GROUP_END };

/* One recorded operation of the trace being read. */
typedef struct op {
  int kind;
  const char *fn;          /* function name (interned in the lib_stats name list) */
  int64_t v[16];           /* GEMM: m n k batch dtype transa transb; conv: N C H W K R S pad
                            * stride dilation groups dtype; coll: bytes dtype nranks */
  double flops;
  uint64_t bytes, corr, dur, tid;
  uint64_t count;          /* calls: > 1 for a folded event (flops and bytes are of them all) */
  int group;               /* collective: its recorded group depth */
  uint64_t group_corr;     /* grouped collective: the correlation id of its ncclGroupEnd */
  uint64_t group_dur;      /* grouped collective: the ncclGroupEnd call time */
  size_t group_id;         /* grouped collective: index of its group (1-based; 0 = none) */
} op;

typedef struct row {
  int kind;
  const char *fn;
  int64_t v[16];
  uint64_t calls, ns, bytes, gpu_calls;
  double flops;
} row;

typedef struct corr_ns { uint64_t corr, ns; } corr_ns;

struct rd_libstats {
  const rd_trace *c_t;  /* the last function looked up (rd_libstats_api) */
  uint32_t c_fn;
  uint64_t c_gen;
  const rd_func *c_f;
  op *ops;
  size_t nops, capops;
  corr_ns *k;
  size_t nk, capk;
  size_t maxk;      /* kernels kept per trace at most (rd_libstats_budget; 0: no bound) */
  int k_over;       /* more came: the later ones were not joined (their calls keep their own time) */
  row *rows;
  size_t nrows, caprows;
  char **names;
  size_t nnames;
  rd_map name_ix;   /* 32 bits of the keyed hash of a name -> index + 1 of its first holder */
  /* per-thread open group: ops of each tid waiting for their ncclGroupEnd */
  struct { uint64_t tid; size_t first; } *open;
  size_t nopen;
  size_t ngroups;
};

static const char *intern(rd_libstats *s, const char *name) {
  uint32_t h = (uint32_t)rd_hash_str(name);
  uintptr_t i = (uintptr_t)rd_map_get(&s->name_ix, h);
  if (i && !strcmp(s->names[i - 1], name)) return s->names[i - 1];
  if (i) /* two names, one hash: rare, and not aimed at (the hash is keyed) */
    for (size_t k = 0; k < s->nnames; k++)
      if (!strcmp(s->names[k], name)) return s->names[k];
  s->names = rd_xrealloc(s->names, (s->nnames + 1) * sizeof *s->names);
  s->names[s->nnames++] = rd_xstrdup(name);
  if (!i) rd_map_put(&s->name_ix, h, (void *)(uintptr_t)s->nnames);
  return s->names[s->nnames - 1];
}

rd_libstats *rd_libstats_new(void) {
  rd_libstats *s = rd_xmalloc(sizeof *s);
  memset(s, 0, sizeof *s);
  return s;
}

void rd_libstats_free(rd_libstats *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nnames; i++) free(s->names[i]);
  rd_map_free(&s->name_ix, NULL);
  free(s->names);
  free(s->ops);
  free(s->k);
  free(s->rows);
  free(s->open);
  free(s);
}

/* The value of the arg named `name` of an event (as int64; doubles converted), or dflt. */
static int arg_index(const rd_func *f, const char *name) { return rd_arg_index(f, name); }
static int64_t argi(const rd_func *f, const dlh_api_event *ev, const char *name, int64_t dflt) {
  int i = arg_index(f, name);
  if (i < 0 || (uint32_t)i >= ev->nargs) return dflt;
  if (f->argtype[i] == 3) {
    double d;
    memcpy(&d, &ev->args[i], sizeof d);
    return (int64_t)d;
  }
  return (int64_t)ev->args[i];
}
static double argd(const rd_func *f, const dlh_api_event *ev, const char *name) {
  int i = arg_index(f, name);
  if (i < 0 || (uint32_t)i >= ev->nargs) return 0;
  if (f->argtype[i] == 3) {
    double d;
    memcpy(&d, &ev->args[i], sizeof d);
    return d;
  }
  return (double)(int64_t)ev->args[i];
}

static int is_collective(const char *n) {
  static const char *const c[] = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce",
                                  "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll",
                                  "ncclGather", "ncclScatter", "ncclSend", "ncclRecv"};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    if (!strcmp(n, c[i])) return 1;
  return 0;
}

static op *new_op(rd_libstats *s) {
  if (s->nops == s->capops) {
    s->capops = s->capops ? s->capops * 2 : 256;
    s->ops = rd_xrealloc(s->ops, s->capops * sizeof *s->ops);
  }
  op *o = &s->ops[s->nops++];
  memset(o, 0, sizeof *o);
  return o;
}

void rd_libstats_api(rd_libstats *s, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  const rd_func *f;
  if (s->c_t == t && s->c_fn == ev->fn && s->c_gen == t->fn_gen) { /* calls come in runs */
    f = s->c_f;
  } else {
    f = rd_trace_func(t, ev->fn);
    s->c_t = t;
    s->c_fn = ev->fn;
    s->c_gen = t->fn_gen;
    s->c_f = f;
  }
  if (!f || !f->name) return;
  const char *n = f->name;
  int dom = f->domain;
  if (dom == 6 && !strcmp(n, "ncclGroupEnd")) {
    if (argi(f, ev, "group", 0) != 1) return;   /* an inner ncclGroupEnd launches nothing */
    /* close this thread's open group */
    for (size_t i = 0; i < s->nopen; i++) {
      if (s->open[i].tid != tid) continue;
      s->ngroups++;
      for (size_t j = s->open[i].first; j < s->nops; j++) {
        op *o = &s->ops[j];
        if (o->kind == K_COLL && o->tid == tid && o->group > 0 && !o->group_id) {
          o->group_id = s->ngroups;
          o->group_corr = ev->corr;
          o->group_dur = ev->dur_ns;
        }
      }
      s->open[i] = s->open[--s->nopen];
      break;
    }
    return;
  }
  if (ev->depth != 0) return;
  int kind = 0;
  if ((dom == 3 && strstr(n, "emm") && arg_index(f, "flops") >= 0) ||
      (dom == 4 && !strcmp(n, "cublasLtMatmul")))
    kind = K_GEMM;
  else if (dom == 5 && !strncmp(n, "cudnnConvolution", 16) && arg_index(f, "flops") >= 0)
    kind = K_CONV;
  else if (dom == 5 && !strcmp(n, "cudnnBackendExecute")) {
    int64_t op = argi(f, ev, "op", 0);  /* 1 fwd, 2 bwd data, 3 bwd filter (cudnn_args.h) */
    if (op >= 1 && op <= 3) kind = K_CONV;
  }
  else if (dom == 6 && is_collective(n))
    kind = K_COLL;
  if (!kind) return;
  op *o = new_op(s);
  o->kind = kind;
  o->fn = intern(s, n);
  o->corr = ev->corr;
  o->dur = ev->dur_ns;  /* a folded event: the sum of its calls' durations */
  o->tid = tid;
  o->count = dlh_api_calls(ev);
  if (kind == K_GEMM) {
    static const char *const k[] = {"m", "n", "k", "batch", "dtype", "transa", "transb"};
    for (int i = 0; i < 7; i++) o->v[i] = argi(f, ev, k[i], i == 3 ? 1 : 0);
    o->flops = argd(f, ev, "flops") * (double)o->count;
  } else if (kind == K_CONV) {
    static const char *const k[] = {"N", "C", "H", "W", "K", "R", "S", "pad", "stride",
                                    "dilation", "groups", "dtype"};
    for (int i = 0; i < 12; i++) o->v[i] = argi(f, ev, k[i], 0);
    o->flops = argd(f, ev, "flops") * (double)o->count;
    /* direction: 1 fwd, 2 bwd-data, 3 bwd-filter, 4 fwd+bias+act */
    o->v[12] = !strcmp(n, "cudnnBackendExecute") ? argi(f, ev, "op", 1)
               : !strcmp(n, "cudnnConvolutionBackwardData") ? 2
               : !strcmp(n, "cudnnConvolutionBackwardFilter") ? 3
               : !strcmp(n, "cudnnConvolutionBiasActivationForward") ? 4 : 1;
  } else {
    o->v[0] = argi(f, ev, "bytes", 0);  /* the shape: bytes of one call */
    o->bytes = (uint64_t)o->v[0] * o->count;
    o->v[1] = argi(f, ev, "datatype", -1);
    o->v[2] = argi(f, ev, "nranks", 0);
    o->group = (int)argi(f, ev, "group", 0);
    if (o->group > 0) {
      size_t i = 0;
      while (i < s->nopen && s->open[i].tid != tid) i++;
      if (i == s->nopen) {
        s->open = rd_xrealloc(s->open, (s->nopen + 1) * sizeof *s->open);
        s->open[s->nopen].tid = tid;
        s->open[s->nopen++].first = s->nops - 1;
      }
    }
  }
}

void rd_libstats_budget(rd_libstats *s, size_t max) { s->maxk = max; }

int rd_libstats_over(const rd_libstats *s) { return s->k_over; }

void rd_libstats_gpu(rd_libstats *s, const dlh_gpu_event *ev) {
  if (ev->kind != RD_KERNEL || !ev->corr) return;
  if (s->maxk && s->nk >= s->maxk) {
    s->k_over = 1;
    return;
  }
  if (s->nk == s->capk) {
    s->capk = s->capk ? s->capk * 2 : 1024;
    s->k = rd_xrealloc(s->k, s->capk * sizeof *s->k);
  }
  s->k[s->nk++] = (corr_ns){ev->corr, ev->dur_ns};
}

/* GPU time of the kernels with correlation id corr; *found set when there is any. */
static uint64_t gpu_ns(const rd_libstats *s, uint64_t corr, int *found) {
  *found = 0;
  if (!corr || !s->nk) return 0;
  size_t lo = 0, hi = s->nk;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->k[mid].corr < corr) lo = mid + 1;
    else hi = mid;
  }
  uint64_t ns = 0;
  for (size_t i = lo; i < s->nk && s->k[i].corr == corr; i++) ns += s->k[i].ns, *found = 1;
  return ns;
}

static void add_row(rd_libstats *s, const op *o, uint64_t ns, int gpu) {
  int nv = o->kind == K_GEMM ? 7 : o->kind == K_CONV ? 13 : 3;
  row *r = NULL;
  for (size_t i = 0; i < s->nrows && !r; i++) {
    row *x = &s->rows[i];
    if (x->kind == o->kind && x->fn == o->fn && !memcmp(x->v, o->v, (size_t)nv * sizeof x->v[0]))
      r = x;
  }
  if (!r) {
    if (s->nrows == s->caprows) {
      s->caprows = s->caprows ? s->caprows * 2 : 64;
      s->rows = rd_xrealloc(s->rows, s->caprows * sizeof *s->rows);
    }
    r = &s->rows[s->nrows++];
    memset(r, 0, sizeof *r);
    r->kind = o->kind;
    r->fn = o->fn;
    memcpy(r->v, o->v, sizeof r->v);
  }
  r->calls += o->count;
  r->ns += ns;
  r->flops += o->flops;
  r->bytes += o->bytes;
  r->gpu_calls += gpu ? o->count : 0;
}

void rd_libstats_trace_end(rd_libstats *s) {
  s->c_t = NULL; /* the next trace may sit at the same address */
  _Static_assert(sizeof(corr_ns) == sizeof(rd_pair), "corr_ns is an rd_pair keyed by corr");
  rd_sort_pairs((rd_pair *)s->k, s->nk);
  /* bytes of each group, for sharing its time */
  uint64_t *gbytes = NULL;
  uint64_t *gcount = NULL; /* calls of each group */
  if (s->ngroups) {
    gbytes = rd_xmalloc((s->ngroups + 1) * sizeof *gbytes);
    gcount = rd_xmalloc((s->ngroups + 1) * sizeof *gcount);
    memset(gbytes, 0, (s->ngroups + 1) * sizeof *gbytes);
    memset(gcount, 0, (s->ngroups + 1) * sizeof *gcount);
    for (size_t i = 0; i < s->nops; i++)
      if (s->ops[i].group_id) {
        gbytes[s->ops[i].group_id] += s->ops[i].bytes;
        gcount[s->ops[i].group_id] += s->ops[i].count;
      }
  }
  for (size_t i = 0; i < s->nops; i++) {
    const op *o = &s->ops[i];
    int found = 0;
    uint64_t ns;
    if (o->group_id) {
      uint64_t g = gpu_ns(s, o->group_corr, &found);
      if (!found) g = o->group_dur;
      uint64_t tb = gbytes[o->group_id];
      ns = tb ? (uint64_t)((double)g * (double)o->bytes / (double)tb)
              : (uint64_t)((double)g * (double)o->count /
                           (double)(gcount[o->group_id] ? gcount[o->group_id] : 1));
    } else {
      ns = gpu_ns(s, o->corr, &found);
      if (!found) ns = o->dur;
    }
    add_row(s, o, ns, found);
  }
  free(gbytes);
  free(gcount);
  s->nops = s->nk = s->nopen = s->ngroups = 0;
  s->k_over = 0;
}

/* ---------------------------------------------------------------- output */

static const char *cuda_type(int64_t t) {
  switch (t) {
  case 0: return "f32"; case 1: return "f64"; case 2: return "f16"; case 3: return "i8";
  case 4: return "c32"; case 5: return "c64"; case 6: return "c16"; case 8: return "u8";
  case 10: return "i32"; case 14: return "bf16"; case 28: return "e4m3"; case 29: return "e5m2";
  default: return "?";
  }
}
static const char *cudnn_type(int64_t t) {
  switch (t) {
  case 0: return "f32"; case 1: return "f64"; case 2: return "f16"; case 3: return "i8";
  case 4: return "i32"; case 6: return "u8"; case 9: return "bf16"; case 10: return "i64";
  case 12: return "e4m3"; case 13: return "e5m2";
  default: return "?";
  }
}
static const char *nccl_type(int64_t t) {
  static const char *const n[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64",
                                  "bf16", "e4m3", "e5m2"};
  return t >= 0 && t < 12 ? n[t] : "?";
}
static const char *dtype_name(const row *r) {
  return r->kind == K_GEMM ? cuda_type(r->v[4]) : r->kind == K_CONV ? cudnn_type(r->v[11])
                                                                     : nccl_type(r->v[1]);
}

static double busbw_factor(const char *fn, int64_t n) {
  if (n < 1) return 1;
  if (!strcmp(fn, "ncclAllReduce")) return 2.0 * (double)(n - 1) / (double)n;
  if (!strcmp(fn, "ncclAllGather") || !strcmp(fn, "ncclReduceScatter") ||
      !strcmp(fn, "ncclAlltoAll") || !strcmp(fn, "ncclGather") || !strcmp(fn, "ncclScatter"))
    return (double)(n - 1) / (double)n;
  return 1;
}

static double tflops(const row *r) { return r->ns ? r->flops / (double)r->ns / 1e3 : 0; }
static double algbw(const row *r) { return r->ns ? (double)r->bytes / (double)r->ns : 0; }

static int by_time(const void *x, const void *y) {
  const row *a = x, *b = y;
  if (a->kind != b->kind) return a->kind - b->kind;
  if (a->ns != b->ns) return a->ns < b->ns ? 1 : -1;
  return (a->calls < b->calls) - (a->calls > b->calls);
}

static void sort_rows(rd_libstats *s) {
  if (s->nrows) rd_qsort(s->rows, s->nrows, sizeof *s->rows, by_time);
}

static const char *conv_dir(int64_t dir) {
  static const char *const d[] = {"fwd", "fwd", "bwd-data", "bwd-filter", "fwd+bias+act"};
  return dir >= 0 && dir <= 4 ? d[dir] : "?";
}

static const char *op_name(const char *fn) { return !strncmp(fn, "nccl", 4) ? fn + 4 : fn; }

void rd_libstats_json(rd_libstats *s, FILE *f) {
  sort_rows(s);
  static const char *const list[] = {NULL, "gemms", "convs", "collectives"};
  for (int kind = K_GEMM; kind <= K_COLL; kind++) {
    fprintf(f, ",\n\"%s\":[", list[kind]);
    int first = 1;
    for (size_t i = 0; i < s->nrows; i++) {
      const row *r = &s->rows[i];
      if (r->kind != kind) continue;
      fputs(first ? "\n  {\"function\":" : ",\n  {\"function\":", f);
      first = 0;
      rd_json_str(f, r->fn);
      if (kind == K_GEMM)
        fprintf(f, ",\"m\":%" PRId64 ",\"n\":%" PRId64 ",\"k\":%" PRId64 ",\"batch\":%" PRId64
                   ",\"transa\":%" PRId64 ",\"transb\":%" PRId64,
                r->v[0], r->v[1], r->v[2], r->v[3], r->v[5], r->v[6]);
      else if (kind == K_CONV)
        fprintf(f, ",\"direction\":\"%s\",\"N\":%" PRId64 ",\"C\":%" PRId64 ",\"H\":%" PRId64
                   ",\"W\":%" PRId64 ",\"K\":%" PRId64 ",\"R\":%" PRId64 ",\"S\":%" PRId64
                   ",\"pad\":%" PRId64 ",\"stride\":%" PRId64 ",\"dilation\":%" PRId64
                   ",\"groups\":%" PRId64,
                conv_dir(r->v[12]), r->v[0], r->v[1], r->v[2], r->v[3], r->v[4], r->v[5], r->v[6],
                r->v[7], r->v[8], r->v[9], r->v[10]);
      else
        fprintf(f, ",\"op\":\"%s\",\"bytes\":%" PRId64 ",\"nranks\":%" PRId64, op_name(r->fn),
                r->v[0], r->v[2]);
      fprintf(f, ",\"dtype\":\"%s\",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64
                 ",\"mean_ns\":%" PRIu64 ",\"time\":\"%s\"",
              dtype_name(r), r->calls, r->ns, r->calls ? r->ns / r->calls : 0,
              r->gpu_calls == r->calls ? "gpu" : r->gpu_calls ? "mixed" : "call");
      if (kind != K_COLL) {
        fputs(",\"flops\":", f);
        rd_json_double(f, r->flops);
        fputs(",\"tflops_per_s\":", f);
        rd_json_double(f, tflops(r));
      } else {
        double a = algbw(r);
        fputs(",\"algbw_gb_per_s\":", f);
        rd_json_double(f, a);
        fputs(",\"busbw_gb_per_s\":", f);
        rd_json_double(f, a * busbw_factor(r->fn, r->v[2]));
      }
      putc('}', f);
    }
    fputs(first ? "]" : "\n]", f);
  }
}

static const char *fmt_t(char *buf, size_t n, double ns) {
  if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f s", ns / 1e9);
  return buf;
}

static const char *fmt_bytes(char *buf, size_t n, double b) {
  return dlh_fmt_bytes(buf, n, b > 0 ? (uint64_t)b : 0);
}

/* dst (4 * width + 4 bytes): src fitted to width columns, safe for a terminal. */
static void fitn(char *dst, size_t width, const char *src) { rd_term_fit(dst, 4 * width + 4, width, src); }

void rd_libstats_table(rd_libstats *s, FILE *f) {
  sort_rows(s);
  char fn[4 * 40 + 4], shape[64], b1[32], b2[32];
  int have[4] = {0};
  for (size_t i = 0; i < s->nrows; i++) have[s->rows[i].kind] = 1;
  static const char tr[] = "NTC";
  if (have[K_GEMM]) {
    /* 24 + 22 + 5 + 3 + 7 + 10 + 10 + 9 + 8 separators + '*' = 99 columns */
    fprintf(f, "\n%-24s %-22s %-5s %-3s %7s %10s %10s %9s\n", "GEMM", "m x n x k", "dtype", "op",
            "Calls", "Time", "Mean", "TFLOP/s");
    for (size_t i = 0; i < s->nrows; i++) {
      const row *r = &s->rows[i];
      if (r->kind != K_GEMM) continue;
      fitn(fn, 24, r->fn);
      if (r->v[3] > 1)
        snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64 "x%" PRId64 " b%" PRId64, r->v[0],
                 r->v[1], r->v[2], r->v[3]);
      else
        snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64 "x%" PRId64, r->v[0], r->v[1], r->v[2]);
      char ops[3] = {r->v[5] >= 0 && r->v[5] < 3 ? tr[r->v[5]] : '?',
                     r->v[6] >= 0 && r->v[6] < 3 ? tr[r->v[6]] : '?', 0};
      fprintf(f, "%-24s %-22.22s %-5s %-3s %7" PRIu64 " %10s %10s %9.3f%s\n", fn, shape,
              dtype_name(r), ops, r->calls, fmt_t(b1, sizeof b1, (double)r->ns),
              fmt_t(b2, sizeof b2, r->calls ? (double)r->ns / (double)r->calls : 0), tflops(r),
              r->gpu_calls == r->calls ? "" : "*");
    }
  }
  if (have[K_CONV]) {
    fprintf(f, "\n%-12s %-38s %-5s %7s %10s %10s %9s\n", "Convolution", "N C HxW -> K RxS /s p d g",
            "dtype", "Calls", "Time", "Mean", "TFLOP/s");
    for (size_t i = 0; i < s->nrows; i++) {
      const row *r = &s->rows[i];
      if (r->kind != K_CONV) continue;
      snprintf(shape, sizeof shape,
               "%" PRId64 " %" PRId64 " %" PRId64 "x%" PRId64 " -> %" PRId64 " %" PRId64 "x%" PRId64
               " /%" PRId64 " p%" PRId64 " d%" PRId64 " g%" PRId64,
               r->v[0], r->v[1], r->v[2], r->v[3], r->v[4], r->v[5], r->v[6], r->v[8], r->v[7],
               r->v[9], r->v[10]);
      snprintf(fn, sizeof fn, "%s%s", conv_dir(r->v[12]),
               strcmp(r->fn, "cudnnBackendExecute") ? "" : " (be)");
      fprintf(f, "%-12s %-38.38s %-5s %7" PRIu64 " %10s %10s %9.3f%s\n", fn, shape,
              dtype_name(r), r->calls, fmt_t(b1, sizeof b1, (double)r->ns),
              fmt_t(b2, sizeof b2, r->calls ? (double)r->ns / (double)r->calls : 0), tflops(r),
              r->gpu_calls == r->calls ? "" : "*");
    }
  }
  if (have[K_COLL]) {
    fprintf(f, "\n%-16s %11s %-5s %6s %7s %10s %10s %11s %11s\n", "Collective", "Size", "dtype",
            "Ranks", "Calls", "Time", "Mean", "algbw GB/s", "busbw GB/s");
    for (size_t i = 0; i < s->nrows; i++) {
      const row *r = &s->rows[i];
      if (r->kind != K_COLL) continue;
      fitn(fn, 16, op_name(r->fn));
      double a = algbw(r);
      fprintf(f, "%-16s %11s %-5s %6" PRId64 " %7" PRIu64 " %10s %10s %11.3f %11.3f%s\n", fn,
              fmt_bytes(shape, sizeof shape, (double)r->v[0]), dtype_name(r), r->v[2], r->calls,
              fmt_t(b1, sizeof b1, (double)r->ns),
              fmt_t(b2, sizeof b2, r->calls ? (double)r->ns / (double)r->calls : 0), a,
              a * busbw_factor(r->fn, r->v[2]), r->gpu_calls == r->calls ? "" : "*");
    }
  }
  if (have[K_GEMM] || have[K_CONV] || have[K_COLL]) {
    int cpu = 0;
    for (size_t i = 0; i < s->nrows; i++) cpu |= s->rows[i].gpu_calls != s->rows[i].calls;
    if (cpu) fprintf(f, "* time includes call durations: no GPU records linked to some calls\n");
  }
}
