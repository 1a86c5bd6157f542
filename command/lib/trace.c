/* trace.c — opening traces for the dlhook subcommands: definition tables (functions, strings),
 * process info, trailer and counters, and the error reporting that goes with damaged files. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rd.h"
#include "rd_ncclev.h"
#include "rd_selfcost.h"

/* ---------------------------------------------------------------- traces */

static void mem_free(rd_mem *m) {
  if (!m) return;
  for (size_t i = 0; i < m->nparts; i++) free(m->parts[i].name);
  free(m->parts);
  free(m);
}

static void func_free(void *p) {
  rd_func *f = p;
  if (!f) return;
  for (size_t i = 0; i < f->nargs; i++) free(f->argname[i]);
  free(f->argname);
  free(f->argtype);
  free(f->name);
  free(f);
}

/* ---------------------------------------------------------------- reading ahead */

/* rd_read_ahead's plan: paths[next..opened) have readers of their own (r[], NULL where the open
 * failed: the command's open says why), started when the command opened paths[next - threads]. */
static struct {
  char **paths;
  uint64_t *skips;
  dlh_reader **r;
  size_t n, next, opened, threads;
} ahead;

/* What each trace read ahead may hold decoded and waiting: enough to keep the command fed,
 * little enough to stay in the caches (at most 64 threads: 128 MiB) */
#define AHEAD_BYTES ((size_t)2 << 20)

size_t rd_read_threads(size_t n) {
  const char *e = getenv("DLHOOK_READ_THREADS");
  long k = 0;
  if (e && *e) {
    char *end;
    k = strtol(e, &end, 10);
    if (*end || k < 1) {
      static int said;
      if (!said++) rd_error("DLHOOK_READ_THREADS=%s: not a number of threads (1 or more); the online CPUs are used", e);
      k = 0;
    }
  }
  if (k < 1) k = sysconf(_SC_NPROCESSORS_ONLN);
  if (k < 1) k = 1;
  if (k > 64) k = 64;
  return (size_t)k < n ? (size_t)k : n ? n : 1;
}

uint64_t rd_pass2_skip(const rd_trace *t) { return t->defs_clean ? RD_DEF_CASES : 0; }

/* Opens the plan's readers: `threads` of them from the one the command reads now. */
static void ahead_fill(void) {
  size_t upto = (ahead.next ? ahead.next - 1 : 0) + ahead.threads;
  while (ahead.opened < ahead.n && ahead.opened < upto) {
    size_t i = ahead.opened++;
    char *err = NULL;
    ahead.r[i] = dlh_reader_open_ahead(ahead.paths[i], ahead.skips[i], AHEAD_BYTES, &err);
    free(err);
  }
}

void rd_read_ahead(char *const *paths, const uint64_t *skips, size_t n) {
  for (size_t i = ahead.next; i < ahead.opened; i++) dlh_reader_close(ahead.r[i]);
  free(ahead.paths);
  free(ahead.skips);
  free(ahead.r);
  memset(&ahead, 0, sizeof ahead);
  size_t threads = rd_read_threads(n);
  if (n < 2 || threads < 2) return;
  ahead.paths = rd_xmalloc(n * sizeof *ahead.paths);
  ahead.skips = rd_xmalloc(n * sizeof *ahead.skips);
  ahead.r = rd_xmalloc(n * sizeof *ahead.r);
  for (size_t i = 0; i < n; i++) {
    ahead.paths[i] = paths[i];
    ahead.skips[i] = skips ? skips[i] : 0;
  }
  ahead.n = n;
  ahead.threads = threads;
  ahead_fill();
}

/* The reader the plan has for path when it is the next one (or one a few further: those before
 * it are given up), else NULL (also when its open failed: the command's own open says why). */
static dlh_reader *ahead_take(const char *path) {
  for (size_t i = ahead.next; i < ahead.opened; i++) {
    if (strcmp(ahead.paths[i], path)) continue;
    dlh_reader *r = ahead.r[i];
    for (size_t k = ahead.next; k < i; k++) dlh_reader_close(ahead.r[k]);
    ahead.next = i + 1;
    ahead_fill();
    return r;
  }
  return NULL;
}

/* Opens t->path for reading (the first or the second time). */
static int open_reader(rd_trace *t) {
  char *err = NULL;
  t->r = ahead_take(t->path);
  if (!t->r) t->r = dlh_reader_open(t->path, &err);
  if (!t->r) {
    rd_error("%s: %s", t->path, err ? err : "cannot open");
    free(err);
    return -1;
  }
  t->opens++;
  dlh_reader_skip(t->r, t->skip_cases);
  return 0;
}

void rd_trace_skip(rd_trace *t, uint64_t cases) {
  t->skip_cases |= cases;
  if (t->r) dlh_reader_skip(t->r, t->skip_cases);
}

/* Whether the pass of t->r read everything without damage or a limit (called at its end). */
static int read_clean(const rd_trace *t) {
  return t->r && !dlh_reader_error(t->r) && !dlh_reader_skipped(t->r);
}

void rd_trace_end_first(rd_trace *t) {
  t->defs_clean = read_clean(t);
  dlh_reader_close(t->r);
  t->r = NULL;
  t->skip_cases = 0;
}

int rd_trace_begin(rd_trace *t, const char *path, int events) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->pass = 1;
  /* without events, the first pass is the definitions alone: the event batches (nearly all of
   * a trace's bytes) are decompressed but not decoded */
  if (!events) t->skip_cases = RD_EVENT_CASES;
  return open_reader(t);
}

void rd_trace_rewind(rd_trace *t) {
  rd_trace_end_first(t);
  t->pass = 2;
  t->defs_read = 1;
}

int rd_trace_open(rd_trace *t, const char *path) {
  if (rd_trace_begin(t, path, 0) < 0) return -1;
  const Dlh__Packet *p;
  while (rd_trace_next(t, &p) == 1) {}
  rd_trace_rewind(t);
  return 0;
}

/* Function id -> f in t->fdirect, for ids below RD_FDIRECT_DOMAINS << 16 (rd_trace_func). */
static void func_direct(rd_trace *t, uint32_t id, rd_func *f) {
  uint32_t dom = id >> 16, k = id & 0xffff;
  if (dom >= RD_FDIRECT_DOMAINS) return;
  if (k >= t->nfdirect[dom]) {
    uint32_t n = t->nfdirect[dom] ? t->nfdirect[dom] : 64;
    while (n <= k) n *= 2;
    t->fdirect[dom] = rd_xrealloc(t->fdirect[dom], n * sizeof **t->fdirect);
    memset(t->fdirect[dom] + t->nfdirect[dom], 0, (n - t->nfdirect[dom]) * sizeof **t->fdirect);
    t->nfdirect[dom] = n;
  }
  t->fdirect[dom][k] = f;
}

/* A FunctionDesc: the function by id (a redefinition replaces the earlier one). */
static void define_func(rd_trace *t, const Dlh__FunctionDesc *d) {
  rd_func *f = rd_xcalloc(1, sizeof *f);
  f->id = d->id;
  f->name = rd_xstrdup(d->name ? d->name : "");
  f->domain = d->has_domain ? (int)d->domain : 0;
  f->nargs = d->n_args;
  f->argname = rd_xmalloc(d->n_args * sizeof *f->argname);
  f->argtype = rd_xmalloc(d->n_args * sizeof *f->argtype);
  for (size_t i = 0; i < d->n_args; i++) {
    const Dlh__ArgDesc *a = d->args[i];
    char tmp[32];
    snprintf(tmp, sizeof tmp, "arg%zu", i);
    f->argname[i] = rd_xstrdup(a && a->name && *a->name ? a->name : tmp);
    f->argtype[i] = a && a->has_type ? a->type : 1;
  }
  func_free(rd_map_put(&t->funcs, d->id, f));
  func_direct(t, d->id, f);
  t->fn_gen++;
}

static void define(rd_trace *t, const Dlh__Packet *p) {
  switch (p->data_case) {
    case DLH__PACKET__DATA_FUNCTION:
      define_func(t, p->function);
      break;
    case DLH__PACKET__DATA_STRING:
      free(rd_map_put(&t->strings, p->string->id,
                      rd_xstrdup(p->string->value ? p->string->value : "")));
      break;
    case DLH__PACKET__DATA_PROCESS: {
      const Dlh__ProcessInfo *pi = p->process;
      if (t->have_process) break; /* the first one is the process's */
      t->have_process = 1;
      t->pid = pi->pid;
      t->rank = pi->has_rank && pi->rank >= 0 ? pi->rank : -1;
      t->local_rank = pi->has_local_rank && pi->local_rank >= 0 ? pi->local_rank : -1;
      t->world = pi->has_world_size && pi->world_size > 0 ? pi->world_size : -1;
      t->have_start = pi->has_start_ns;
      t->start_ns = pi->start_ns;
      t->sample_hz = pi->has_sample_hz ? pi->sample_hz : 0;
      snprintf(t->host, sizeof t->host, "%s", pi->host && *pi->host ? pi->host : "host");
      const char *e = pi->exe && *pi->exe ? pi->exe : pi->n_cmdline && pi->cmdline[0] ? pi->cmdline[0] : "";
      const char *b = strrchr(e, '/');
      snprintf(t->exe, sizeof t->exe, "%s", b ? b + 1 : e);
      break;
    }
    case DLH__PACKET__DATA_ANCHOR:
      if (!t->have_anchor && p->anchor->has_realtime_ns && p->anchor->realtime_ns) {
        t->have_anchor = 1;
        t->anchor_real_ns = p->anchor->realtime_ns;
        t->anchor_trace_ns = p->anchor->trace_ns;
      }
      break;
    case DLH__PACKET__DATA_DEVICE:
      t->devices++;
      break;
    case DLH__PACKET__DATA_TRAILER: {
      const Dlh__Trailer *tr = p->trailer;
      t->have_trailer = 1;
      t->trailer_records = tr->records;
      t->trailer_dropped = tr->dropped;
      t->pcs_unsymbolized = tr->pcs_unsymbolized;
      t->have_trailer_calls = tr->has_calls;
      t->trailer_calls = tr->calls;
      t->have_trailer_folded = tr->has_folded;
      t->trailer_folded = tr->folded;
      mem_free(t->mem);
      t->mem = NULL;
      if (tr->has_mem_budget_bytes || tr->has_mem_peak_bytes || tr->n_mem_parts) {
        rd_mem *m = rd_xmalloc(sizeof *m);
        memset(m, 0, sizeof *m);
        m->has_budget = tr->has_mem_budget_bytes;
        m->budget_bytes = tr->mem_budget_bytes;
        m->has_peak = tr->has_mem_peak_bytes;
        m->peak_bytes = tr->mem_peak_bytes;
        /* the recorder writes a dozen parts; a trace with more keeps the first RD_MAX_MEM_PARTS
         * (their readers compare names pairwise) */
        size_t np = tr->n_mem_parts < RD_MAX_MEM_PARTS ? tr->n_mem_parts : RD_MAX_MEM_PARTS;
        m->parts = rd_xmalloc((np ? np : 1) * sizeof *m->parts);
        for (size_t i = 0; i < np; i++) {
          const Dlh__MemPart *mp = tr->mem_parts[i];
          if (!mp) continue;
          rd_mem_part *x = &m->parts[m->nparts++];
          x->name = rd_xstrdup(mp->name ? mp->name : "");
          x->peak_bytes = mp->peak_bytes;
          x->bytes = mp->bytes;
          x->has_bytes = mp->has_bytes;
        }
        t->mem = m;
      }
      break;
    }
    case DLH__PACKET__DATA_COUNTERS:
      t->have_counters = 1;
      t->counters_records = p->counters->records;
      t->counters_dropped = p->counters->dropped;
      t->have_counters_calls = p->counters->has_calls;
      t->counters_calls = p->counters->calls;
      if (p->counters->has_samples || p->counters->has_samples_lost) {
        t->have_counters_samples = 1;
        t->counters_samples = p->counters->samples;
        t->counters_samples_lost = p->counters->samples_lost;
        t->counters_sample_cost_ns = p->counters->sample_cost_ns;
      }
      if (p->counters->has_process_cpu_ns) {
        t->have_counters_cpu = 1;
        t->counters_cpu[0] = p->counters->writer_cpu_ns;
        t->counters_cpu[1] = p->counters->sampler_cpu_ns;
        t->counters_cpu[2] = p->counters->symbols_cpu_ns;
        t->counters_cpu[3] = p->counters->process_cpu_ns;
      }
      if (!t->defs_read) rd_waits_counters(t, p->counters);
      break;
    case DLH__PACKET__DATA_RING_WAITS: /* read by the first pass (the only one, or rd_open's) */
      if (!t->defs_read) rd_waits_define(t, p->ring_waits);
      break;
    case DLH__PACKET__DATA_SAMPLES:
      /* counted once: by the pass that delivers the samples (rd_read_again's is a second) */
      if (!t->only && (t->pass != 2 || t->quiet_damage)) break;
      t->sample_events += p->samples->n_time_delta;
      break;
    case DLH__PACKET__DATA_API: {
      const Dlh__ApiBatch *b = p->api;
      if (t->pass == 1) break; /* counted by the pass that delivers the events */
      t->api_events += b->n_start_delta;
      /* a folded event stands for count calls; no count column: one call each */
      uint64_t calls = b->n_start_delta;
      if (b->n_count == b->n_start_delta)
        for (size_t i = 0; i < b->n_count; i++) calls += b->count[i] > 1 ? b->count[i] - 1 : 0;
      t->api_calls += calls;
      break;
    }
    case DLH__PACKET__DATA_STACK:
    case DLH__PACKET__DATA_MODULE:
    case DLH__PACKET__DATA_SYMBOL:
    case DLH__PACKET__DATA_PY_FRAME:
      if (!t->defs_read) rd_stacks_define(t, p);
      break;
    case DLH__PACKET__DATA_GRAPH_NODES:
    case DLH__PACKET__DATA_INDUCTOR:
      if (!t->defs_read) rd_graphs_define(t, p);
      break;
    case DLH__PACKET__DATA_NCCL_EVENTS: /* read by the first pass (rd_ncclev.h) */
      if (!t->defs_read) rd_ncclev_define(t, p->nccl_events);
      break;
    case DLH__PACKET__DATA_GPU:
      if (t->pass == 1) break;
      t->gpu_events += p->gpu->n_kind;
      break;
    default:
      break;
  }
}

int rd_trace_next(rd_trace *t, const Dlh__Packet **p) {
  if (!t->r && (t->pass != 2 || t->done || open_reader(t) < 0)) { /* the second pass opens again */
    t->done = 1;
    return -1;
  }
  int rc = dlh_reader_next(t->r, p);
  if (rc == 1) {
    if (t->pass == 2) t->packets++;
    define(t, *p);
  } else if (rc < 0 && (t->pass == 2 || t->only) && !t->quiet_damage) { /* damage is said once, by the last pass */
    const char *m = dlh_reader_error(t->r);
    if (dlh_reader_skipped(t->r))
      rd_error("%s: damaged trace: %s", t->path, m ? m : "read error");
    else
      rd_error("%s: damaged trace: %s (%llu complete frames read before it)", t->path,
               m ? m : "read error", (unsigned long long)dlh_reader_frames(t->r));
  }
  return rc;
}

void rd_trace_close(rd_trace *t) {
  dlh_reader_close(t->r);
  rd_map_free(&t->funcs, func_free);
  for (int d = 0; d < RD_FDIRECT_DOMAINS; d++) {
    free(t->fdirect[d]);
    t->fdirect[d] = NULL;
    t->nfdirect[d] = 0;
  }
  rd_map_free(&t->strings, free);
  rd_map_free(&t->knames, free);
  rd_map_free(&t->kflags, NULL);
  rd_map_free(&t->places, free);
  rd_torch_free(t);
  rd_graphs_free(t);
  rd_ncclev_free(t);
  rd_stacks_free(t);
  mem_free(t->mem);
  t->mem = NULL;
  rd_waits_free(t);
  t->r = NULL;
}

const rd_func *rd_trace_func(const rd_trace *t, uint32_t id) {
  uint32_t dom = id >> 16, k = id & 0xffff;
  if (dom >= RD_FDIRECT_DOMAINS) return rd_map_get(&t->funcs, id);
  return k < t->nfdirect[dom] ? t->fdirect[dom][k] : NULL; /* every such id is there */
}

const char *rd_trace_string(const rd_trace *t, uint32_t id) { return rd_map_get(&t->strings, id); }

const char *rd_domain_name(int d) {
  static const char *const names[] = {"unknown", "cudart", "driver", "cublas", "cublasLt",
                                      "cudnn",   "nccl",   "nvtx",   "dlhook"};
  return d >= 0 && d < (int)(sizeof names / sizeof *names) ? names[d] : "unknown";
}

const char *rd_func_name(const rd_trace *t, uint32_t id) {
  static char buf[32];
  const rd_func *f = rd_trace_func(t, id);
  if (f && f->name[0]) return f->name;
  snprintf(buf, sizeof buf, "fn#%u", id);
  return buf;
}

uint64_t rd_trace_records(const rd_trace *t) {
  if (t->have_trailer) return t->trailer_records;
  if (t->have_counters) return t->counters_records;
  return t->api_events + t->gpu_events;
}

uint64_t rd_trace_calls(const rd_trace *t) {
  if (t->have_trailer && t->have_trailer_calls) return t->trailer_calls;
  if (!t->have_trailer && t->have_counters && t->have_counters_calls) return t->counters_calls;
  return rd_trace_records(t);
}

uint64_t rd_trace_samples(const rd_trace *t) {
  return t->have_counters_samples ? t->counters_samples : t->sample_events;
}

uint64_t rd_trace_sample_cost_ns(const rd_trace *t) {
  return t->have_counters_samples ? t->counters_sample_cost_ns : 0;
}

int rd_trace_own_cpu(const rd_trace *t, uint64_t ns[4]) {
  for (int i = 0; i < 4; i++) ns[i] = t->have_counters_cpu ? t->counters_cpu[i] : 0;
  return t->have_counters_cpu;
}

uint64_t rd_trace_samples_lost(const rd_trace *t) {
  return t->have_counters_samples ? t->counters_samples_lost : 0;
}

uint64_t rd_trace_folded(const rd_trace *t) {
  if (t->have_trailer && t->have_trailer_folded) return t->trailer_folded;
  return t->api_calls - t->api_events;
}

uint64_t rd_trace_dropped(const rd_trace *t) {
  if (t->have_trailer) return t->trailer_dropped;
  if (t->have_counters) return t->counters_dropped;
  return 0;
}

const char *rd_gpu_kind_name(uint32_t kind) {
  static const char *const names[] = {[RD_KERNEL] = "kernel", [RD_MEMCPY] = "memcpy",
                                      [RD_MEMSET] = "memset", [RD_SYNC] = "sync",
                                      [RD_EVENT] = "event",   [RD_OVERHEAD] = "overhead"};
  if (kind < sizeof names / sizeof *names && names[kind]) return names[kind];
  return "gpu";
}
