/* export_kineto.c — `dlhook export --format kineto`: Chrome trace JSON in the layout of the
 * PyTorch profiler (Kineto), gzipped, one file per trace: OUT/<host>_<pid>.<ms>.pt.trace.json.gz.
 *
 * Layout (what Holistic Trace Analysis, Perfetto and TensorBoard's PyTorch plugin read):
 *   host calls:   ph X, pid = process, tid = thread; cat cuda_runtime (cudart), cuda_driver
 *                 (driver), cpu_op (cuBLAS, cuBLASLt, cuDNN, NCCL), user_annotation (NVTX);
 *                 args.correlation = CUPTI correlation id, args.cbid = function id
 *   GPU records:  ph X, pid = device, tid = stream; cat kernel, gpu_memcpy, gpu_memset,
 *                 cuda_sync; args device, context, stream, correlation, grid, block, ...
 *   flows:        ph s (at the call) / f (at the GPU record), cat ac2g, id = correlation id
 *   steps:        NVTX ranges named like steps ("step 3", "ProfilerStep#3", or --step-range
 *                 NAME) also become ProfilerStep#N (cat user_annotation)
 *   top level:    schemaVersion, distributedInfo {backend, rank, world_size},
 *                 deviceProperties [...], traceEvents [...], traceName.
 * Events are written while the trace streams past; only device properties and thread names
 * are kept until the end. */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

typedef struct kctx {
  const ex_opts *o;
  FILE *f;
  uint32_t pid;
  int rank, world;
  uint64_t start_ns, real_ns;
  int have_start, have_real;
  char host[128];
  Dlh__DeviceInfo **dev;     /* copies: id, name, total_mem, sm_count, cc */
  size_t ndev;
  vx_map dev_ix;             /* id -> index + 1 into dev */
  uint32_t *gpu_pids;        /* devices seen in GPU records (for process_name metadata) */
  size_t ngpu;
  uint64_t step;
  vx_map names;              /* key -> name escaped as a JSON string: fn id (API), 1<<31 |
                                string id (kernels and NVTX messages) */
} kctx;

/* Fast writers for the per-event hot path (no format parsing, no per-call locking). */
static void w_s(FILE *f, const char *s) { fputs_unlocked(s, f); }

static void w_u(FILE *f, uint64_t v) {
  char b[24], *p = b + sizeof b;
  do { *--p = (char)('0' + v % 10); v /= 10; } while (v);
  fwrite_unlocked(p, 1, (size_t)(b + sizeof b - p), f);
}

static void w_i(FILE *f, int64_t v) {
  if (v < 0) { putc_unlocked('-', f); w_u(f, (uint64_t)0 - (uint64_t)v); }
  else w_u(f, (uint64_t)v);
}

/* ns -> "us.fff" */
static void put_us(FILE *f, uint64_t ns) {
  unsigned r = (unsigned)(ns % 1000);
  w_u(f, ns / 1000);
  char b[4] = {'.', (char)('0' + r / 100), (char)('0' + r / 10 % 10), (char)('0' + r % 10)};
  fwrite_unlocked(b, 1, 4, f);
}

/* s as a JSON string (malloc'd). */
static char *json_escaped(const char *s) {
  char *e = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&e, &n);
  if (!m) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
  vx_json_str(m, s);
  if (fclose(m) != 0 || !e) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
  return e;
}

/* A name as a JSON string, escaped once and cached under key (0 = do not cache). */
static void w_name(kctx *k, uint32_t key, const char *s) {
  if (!key) { vx_json_str(k->f, s); return; }
  char *e = vx_map_get(&k->names, key);
  if (!e) vx_map_put(&k->names, key, e = json_escaped(s));
  w_s(k->f, e);
}

static const char *category(int domain) {
  switch (domain) {
    case DLH__DOMAIN__DOMAIN_CUDART: return "cuda_runtime";
    case DLH__DOMAIN__DOMAIN_DRIVER: return "cuda_driver";
    case DLH__DOMAIN__DOMAIN_NVTX: return "user_annotation";
    default: return "cpu_op";
  }
}

static void k_packet(void *ctx, const vx_trace *t, const Dlh__Packet *p) {
  kctx *k = ctx;
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS: {
      const Dlh__ProcessInfo *pi = p->process;
      k->pid = pi->pid;
      if (pi->has_rank && pi->rank >= 0) k->rank = pi->rank;
      if (pi->has_world_size && pi->world_size > 0) k->world = pi->world_size;
      if (pi->has_start_ns && !k->have_start) { k->start_ns = pi->start_ns; k->have_start = 1; }
      fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,"
                    "\"args\":{\"name\":", pi->pid);
      vx_json_str(k->f, pi->exe ? pi->exe : pi->n_cmdline ? pi->cmdline[0] : "process");
      fprintf(k->f, "}},\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%u,\"tid\":0,"
                    "\"args\":{\"labels\":\"CPU\"}}", pi->pid);
      break;
    }
    case DLH__PACKET__DATA_FUNCTION: /* (re)definition: drop a cached name */
      if (vx_map_get(&k->names, p->function->id & 0x7fffffff))
        free(vx_map_put(&k->names, p->function->id & 0x7fffffff,
                        json_escaped(p->function->name ? p->function->name : "")));
      break;
    case DLH__PACKET__DATA_STRING:
      if (vx_map_get(&k->names, 1u << 31 | p->string->id))
        free(vx_map_put(&k->names, 1u << 31 | p->string->id,
                        json_escaped(p->string->value ? p->string->value : "")));
      break;
    case DLH__PACKET__DATA_THREAD:
      fprintf(k->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":", k->pid, p->thread->tid);
      vx_json_str(k->f, p->thread->name ? p->thread->name : "");
      fputs("}}", k->f);
      break;
    case DLH__PACKET__DATA_ANCHOR:
      if (!k->have_real && p->anchor->has_realtime_ns && p->anchor->realtime_ns) {
        k->real_ns = p->anchor->realtime_ns;
        k->have_real = 1;
      }
      break;
    case DLH__PACKET__DATA_DEVICE: {
      const Dlh__DeviceInfo *d = p->device;
      Dlh__DeviceInfo *c = vx_xmalloc(sizeof *c);
      *c = *d;
      c->name = vx_xstrdup(d->name ? d->name : "");
      uintptr_t i = (uintptr_t)vx_map_get(&k->dev_ix, d->id);
      if (i) { /* redefined */
        free(k->dev[i - 1]->name);
        free(k->dev[i - 1]);
        k->dev[i - 1] = c;
      } else {
        k->dev = vx_xrealloc(k->dev, (k->ndev + 1) * sizeof *k->dev);
        k->dev[k->ndev++] = c;
        vx_map_put(&k->dev_ix, d->id, (void *)(uintptr_t)k->ndev);
      }
      break;
    }
    default:
      break;
  }
  (void)t;
}

/* Step number of an NVTX range name, or -1 when it does not name a step. */
static long step_of(const kctx *k, const char *name) {
  if (k->o->step_range) return strcmp(name, k->o->step_range) ? -1 : (long)k->step;
  const char *p = name;
  if (!strncmp(p, "ProfilerStep#", 13)) p += 13;
  else if (!strncasecmp(p, "step", 4)) {
    p += 4;
    while (*p == ' ' || *p == '#' || *p == '_' || *p == '-' || *p == '=') p++;
  } else return -1;
  if (!isdigit((unsigned char)*p)) return -1;
  char *e;
  long n = strtol(p, &e, 10);
  return *e ? -1 : n;
}

static void k_api(void *ctx, const vx_trace *t, uint32_t tid, const dlh_api_event *ev) {
  kctx *k = ctx;
  FILE *f = k->f;
  const vx_func *fn = vx_trace_func(t, ev->fn);
  int dom = fn ? fn->domain : 0;
  uint64_t msg;
  const char *label = NULL;
  if (dom == DLH__DOMAIN__DOMAIN_NVTX && ex_arg(t, ev, "message|name", &msg))
    label = vx_trace_string(t, (uint32_t)msg);
  w_s(f, ",\n{\"ph\":\"X\",\"cat\":\"");
  w_s(f, category(dom));
  w_s(f, "\",\"name\":");
  if (label) w_name(k, 1u << 31 | (uint32_t)msg, label);
  else w_name(k, ev->fn & 0x7fffffff, vx_func_name(t, ev->fn));
  w_s(f, ",\"pid\":");
  w_u(f, k->pid);
  w_s(f, ",\"tid\":");
  w_u(f, tid);
  w_s(f, ",\"ts\":");
  put_us(f, ev->start_ns);
  w_s(f, ",\"dur\":");
  put_us(f, ev->dur_ns);
  w_s(f, ",\"args\":{\"cbid\":");
  w_u(f, ev->fn);
  if (ev->corr) { w_s(f, ",\"correlation\":"); w_u(f, ev->corr); }
  if (label) {
    w_s(f, ",\"function\":");
    w_name(k, ev->fn & 0x7fffffff, vx_func_name(t, ev->fn));
  }
  if (ev->ret) { w_s(f, ",\"result\":"); w_i(f, ev->ret); }
  if (ev->stack) { w_s(f, ",\"stack\":"); w_u(f, ev->stack); }
  w_s(f, "}}");
  if (ev->corr && (dom == DLH__DOMAIN__DOMAIN_CUDART || dom == DLH__DOMAIN__DOMAIN_DRIVER)) {
    w_s(f, ",\n{\"ph\":\"s\",\"id\":");
    w_u(f, ev->corr);
    w_s(f, ",\"pid\":");
    w_u(f, k->pid);
    w_s(f, ",\"tid\":");
    w_u(f, tid);
    w_s(f, ",\"ts\":");
    put_us(f, ev->start_ns);
    w_s(f, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
  }
  long step = label ? step_of(k, label) : -1;
  if (step >= 0) {
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%ld\","
               "\"pid\":%u,\"tid\":%u,\"ts\":", step, k->pid, tid);
    put_us(f, ev->start_ns);
    fputs(",\"dur\":", f);
    put_us(f, ev->dur_ns);
    fputs(",\"args\":{}}", f);
    k->step++;
  }
}

static void k_gpu(void *ctx, const vx_trace *t, const ex_gpu *g) {
  kctx *k = ctx;
  FILE *f = k->f;
  const char *cat;
  switch (g->kind) {
    case 1: cat = "kernel"; break;
    case 2: cat = "gpu_memcpy"; break;
    case 3: cat = "gpu_memset"; break;
    case 4: cat = "cuda_sync"; break;
    default: return;
  }
  size_t i;
  for (i = 0; i < k->ngpu && k->gpu_pids[i] != g->device; i++) {}
  if (i == k->ngpu) {
    k->gpu_pids = vx_xrealloc(k->gpu_pids, (k->ngpu + 1) * sizeof *k->gpu_pids);
    k->gpu_pids[k->ngpu++] = g->device;
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,"
               "\"args\":{\"name\":\"GPU %u\"}}", g->device, g->device);
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%u,\"tid\":0,"
               "\"args\":{\"labels\":\"GPU %u\"}}", g->device, g->device);
  }
  char buf[64];
  const char *name = ex_gpu_name(t, g, buf, sizeof buf);
  if (g->kind == 4) {
    uint64_t st = g->nvals ? g->vals[0] : 0;
    name = st == 1 ? "Event Sync" : st == 2 ? "Stream Wait Event" : st == 3 ? "Stream Sync" :
           st == 4 ? "Context Sync" : "Sync";
  }
  w_s(f, ",\n{\"ph\":\"X\",\"cat\":\"");
  w_s(f, cat);
  w_s(f, "\",\"name\":");
  w_name(k, g->kind == 1 && g->name ? 1u << 31 | g->name : 0, name);
  w_s(f, ",\"pid\":");
  w_u(f, g->device);
  w_s(f, ",\"tid\":");
  w_u(f, g->stream);
  w_s(f, ",\"ts\":");
  put_us(f, g->start);
  w_s(f, ",\"dur\":");
  put_us(f, g->dur);
  w_s(f, ",\"args\":{\"queued\":0,\"device\":");
  w_u(f, g->device);
  w_s(f, ",\"context\":");
  w_u(f, g->context);
  w_s(f, ",\"stream\":");
  w_u(f, g->stream);
  w_s(f, ",\"correlation\":");
  w_u(f, g->corr);
  const uint64_t *v = g->vals;
  if (g->kind == 1 && g->nvals >= 9) {
    w_s(f, ",\"registers per thread\":");
    w_u(f, v[6]);
    w_s(f, ",\"shared memory\":");
    w_u(f, v[7] + v[8]);
    w_s(f, ",\"grid\":[");
    w_u(f, v[0]); putc_unlocked(',', f); w_u(f, v[1]); putc_unlocked(',', f); w_u(f, v[2]);
    w_s(f, "],\"block\":[");
    w_u(f, v[3]); putc_unlocked(',', f); w_u(f, v[4]); putc_unlocked(',', f); w_u(f, v[5]);
    putc_unlocked(']', f);
  } else if ((g->kind == 2 || g->kind == 3) && g->nvals >= 1) {
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"memory bandwidth (GB/s)\":", v[0]);
    vx_json_double(f, g->dur ? (double)v[0] / (double)g->dur : 0);
    if (g->kind == 2 && g->nvals >= 2) fprintf(f, ",\"kind\":\"%s\"", ex_memcpy_kind(v[1]));
  }
  w_s(f, "}}");
  if (g->corr && g->kind != 4) {
    w_s(f, ",\n{\"ph\":\"f\",\"id\":");
    w_u(f, g->corr);
    w_s(f, ",\"pid\":");
    w_u(f, g->device);
    w_s(f, ",\"tid\":");
    w_u(f, g->stream);
    w_s(f, ",\"ts\":");
    put_us(f, g->start);
    fputs(",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}", f);
  }
}

/* Reads the ProcessInfo at the head of a trace (rank, host, pid) for the header and name. */
static void peek_process(const char *path, kctx *k) {
  vx_trace t;
  if (vx_trace_open(&t, path) < 0) return;
  const Dlh__Packet *p;
  for (int i = 0; i < 16 && vx_trace_next(&t, &p) == 1; i++) {
    if (p->data_case != DLH__PACKET__DATA_PROCESS) continue;
    const Dlh__ProcessInfo *pi = p->process;
    k->pid = pi->pid;
    if (pi->has_rank && pi->rank >= 0) k->rank = pi->rank;
    if (pi->has_world_size && pi->world_size > 0) k->world = pi->world_size;
    ex_safe_name(k->host, sizeof k->host, pi->host, "host");
    break;
  }
  vx_trace_close(&t);
}

static int kineto_one(const ex_opts *o, const char *path, size_t index, size_t n) {
  kctx k = {0};
  k.o = o;
  k.rank = -1;
  snprintf(k.host, sizeof k.host, "host");
  peek_process(path, &k);
  if (k.rank < 0) k.rank = (int)index; /* HTA needs a distinct rank per file */
  if (k.world <= 0) k.world = (int)n;
  size_t plen = strlen(o->out) + 64;
  char *tmp = vx_xmalloc(plen), *final = NULL;
  snprintf(tmp, plen, "%s/trace.json.gz", o->out); /* names the directory for ex_create */
  k.f = ex_create(tmp, 1);
  if (!k.f) { free(tmp); return VX_BAD_INPUT; }
  fprintf(k.f, "{\n\"schemaVersion\": 1,\n\"distributedInfo\": {\"backend\": \"nccl\", "
               "\"rank\": %d, \"world_size\": %d},\n\"traceName\": ", k.rank, k.world);
  vx_json_str(k.f, path);
  fprintf(k.f, ",\n\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [\n"
          "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,\"tid\":0,"
          "\"args\":{\"sort_index\":0}}", k.pid);
  ex_sink s = {&k, k_packet, k_api, k_gpu};
  int rc = ex_scan(path, o, "exporting", &s);
  /* the live device memory of the process as a counter track (memory.c replays the ledger) */
  vx_mem_sample *mem = NULL;
  uint32_t mpid = 0;
  long nmem = vx_memory_counter(path, &mem, &mpid);
  for (long i = 0; i < nmem; i++) {
    if (o->have_window && k.have_start &&
        (mem[i].ts_ns < k.start_ns + o->win_start ||
         (o->win_end != UINT64_MAX && mem[i].ts_ns > k.start_ns + o->win_end)))
      continue;
    fprintf(k.f, ",\n{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU memory\",\"pid\":%u,"
                 "\"tid\":0,\"ts\":", k.pid);
    put_us(k.f, mem[i].ts_ns);
    fprintf(k.f, ",\"args\":{\"live_bytes\":%" PRIu64 "}}", mem[i].live_bytes);
  }
  free(mem);
  fputs("\n],\n\"deviceProperties\": [", k.f);
  for (size_t i = 0; i < k.ndev; i++) {
    const Dlh__DeviceInfo *d = k.dev[i];
    fprintf(k.f, "%s\n{\"id\":%u,\"name\":", i ? "," : "", d->id);
    vx_json_str(k.f, d->name);
    fprintf(k.f, ",\"totalGlobalMem\":%" PRIu64 ",\"computeMajor\":%u,\"computeMinor\":%u,"
                 "\"numSms\":%u}", d->total_mem, d->cc_major, d->cc_minor, d->sm_count);
    free(d->name);
    free(k.dev[i]);
  }
  free(k.dev);
  vx_map_free(&k.dev_ix, NULL);
  free(k.gpu_pids);
  vx_map_free(&k.names, free);
  fprintf(k.f, "],\n\"baseTimeNanoseconds\": 0\n}\n");
  uint64_t ms = k.have_real ? k.real_ns / 1000000 : k.start_ns / 1000000;
  char stem[sizeof k.host + 64];
  snprintf(stem, sizeof stem, "%s_%u.%" PRIu64, k.host, k.pid, ms);
  /* never replaces a file: two traces with one name (same host, pid and millisecond) or an
   * earlier export get stem-2, stem-3, ... */
  final = ex_close_new(k.f, o->out, stem, ".pt.trace.json.gz");
  if (!final) rc = VX_BAD_INPUT;
  else if (!o->quiet) fprintf(stderr, "dlhook: wrote %s\n", final);
  free(tmp);
  free(final);
  return rc;
}

int ex_kineto(const ex_opts *o, char **files, size_t n) {
  if (ex_mkdirs(o->out) < 0 || ex_dir_safe(o->out) < 0) return VX_BAD_INPUT;
  int rc = VX_OK;
  for (size_t i = 0; i < n; i++)
    if (kineto_one(o, files[i], i, n) != VX_OK) rc = VX_BAD_INPUT;
  return rc;
}
