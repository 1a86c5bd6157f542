/* stats.c — `dlhook stats`: per-function API call statistics and kernel totals over traces. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vx.h"

typedef struct agg {
  char *name;
  int domain;
  uint64_t calls, errors, total, max;
} agg;

typedef struct aggs {
  agg *v;
  size_t n, cap;
} aggs;

/* Finds or adds (name, domain); returns its index. Linear, but called once per function id
 * per trace: per-event lookups go through a per-trace id -> index map. */
static size_t agg_find(aggs *a, const char *name, int domain) {
  for (size_t i = 0; i < a->n; i++)
    if (a->v[i].domain == domain && !strcmp(a->v[i].name, name)) return i;
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->v = vx_xrealloc(a->v, a->cap * sizeof *a->v);
  }
  agg *g = &a->v[a->n];
  memset(g, 0, sizeof *g);
  g->name = vx_xstrdup(name);
  g->domain = domain;
  return a->n++;
}

static int by_total(const void *x, const void *y) {
  const agg *a = x, *b = y;
  if (a->total != b->total) return a->total < b->total ? 1 : -1;
  if (a->calls != b->calls) return a->calls < b->calls ? 1 : -1;
  return strcmp(a->name, b->name);
}

typedef struct pid_tid {
  uint32_t pid, tid;
} pid_tid;

typedef struct stats {
  aggs api, kernels;
  uint64_t traces, processes, dropped, records, api_calls, api_errors, api_ns;
  pid_tid *threads;
  size_t nthreads, capthreads;
} stats;

static void add_thread(stats *s, uint32_t pid, uint32_t tid) {
  for (size_t i = s->nthreads; i > 0; i--)
    if (s->threads[i - 1].pid == pid && s->threads[i - 1].tid == tid) return;
  if (s->nthreads == s->capthreads) {
    s->capthreads = s->capthreads ? s->capthreads * 2 : 64;
    s->threads = vx_xrealloc(s->threads, s->capthreads * sizeof *s->threads);
  }
  s->threads[s->nthreads++] = (pid_tid){pid, tid};
}

/* the per-trace maps store index+1 */
static size_t api_index(stats *s, vx_map *m, const vx_trace *t, uint32_t fn) {
  uintptr_t v = (uintptr_t)vx_map_get(m, fn);
  if (v) return v - 1;
  const vx_func *f = vx_trace_func(t, fn);
  size_t i = agg_find(&s->api, vx_func_name(t, fn), f ? f->domain : 0);
  vx_map_put(m, fn, (void *)(uintptr_t)(i + 1));
  return i;
}

static size_t kernel_index(stats *s, vx_map *m, const vx_trace *t, uint32_t name) {
  uintptr_t v = (uintptr_t)vx_map_get(m, name);
  if (v) return v - 1;
  const char *str = vx_trace_string(t, name);
  char tmp[32];
  if (!str) {
    snprintf(tmp, sizeof tmp, name ? "#%u" : "(unnamed)", name);
    str = tmp;
  }
  size_t i = agg_find(&s->kernels, str, 0);
  vx_map_put(m, name, (void *)(uintptr_t)(i + 1));
  return i;
}

static void account(agg *g, uint64_t dur, int err) {
  g->calls++;
  g->errors += err;
  g->total += dur;
  if (dur > g->max) g->max = dur;
}

static int stats_one(stats *s, const char *path) {
  vx_trace t;
  if (vx_trace_open(&t, path) < 0) return VX_BAD_INPUT;
  s->traces++;
  vx_map fnmap = {0}, kmap = {0};
  const Dlh__Packet *p;
  int rc, bad = 0;
  while ((rc = vx_trace_next(&t, &p)) == 1) {
    switch (p->data_case) {
      case DLH__PACKET__DATA_PROCESS:
        s->processes++;
        break;
      case DLH__PACKET__DATA_FUNCTION: {
        /* a redefinition of an id may change its name: resolve it again */
        uint32_t id = p->function->id;
        if (!vx_map_get(&fnmap, id)) break;
        const vx_func *f = vx_trace_func(&t, id);
        size_t i = agg_find(&s->api, vx_func_name(&t, id), f ? f->domain : 0);
        vx_map_put(&fnmap, id, (void *)(uintptr_t)(i + 1));
        break;
      }
      case DLH__PACKET__DATA_THREAD:
        add_thread(s, t.pid, p->thread->tid);
        break;
      case DLH__PACKET__DATA_API: {
        dlh_api_iter it;
        dlh_api_event ev;
        add_thread(s, t.pid, p->api->tid);
        dlh_api_iter_init(&it, p->api);
        while (dlh_api_iter_next(&it, &ev)) {
          size_t gi = api_index(s, &fnmap, &t, ev.fn); /* may move s->api.v */
          account(&s->api.v[gi], ev.dur_ns, ev.ret != 0);
          s->api_calls++;
          s->api_errors += ev.ret != 0;
          s->api_ns += ev.dur_ns;
        }
        if (it.bad) bad = 1;
        break;
      }
      case DLH__PACKET__DATA_GPU: {
        const Dlh__GpuBatch *b = p->gpu;
        if ((b->n_dur && b->n_dur != b->n_kind) || (b->n_name && b->n_name != b->n_kind)) {
          bad = 1;
          break;
        }
        for (size_t i = 0; i < b->n_kind; i++) {
          if (b->kind[i] != 1) continue;
          size_t gi = kernel_index(s, &kmap, &t, b->n_name ? b->name[i] : 0);
          account(&s->kernels.v[gi], b->n_dur ? b->dur[i] : 0, 0);
        }
        break;
      }
      default:
        break;
    }
  }
  s->dropped += vx_trace_dropped(&t);
  s->records += vx_trace_records(&t);
  if (bad) vx_error("%s: inconsistent event batch (skipped its remaining events)", path);
  vx_map_free(&fnmap, NULL);
  vx_map_free(&kmap, NULL);
  vx_trace_close(&t);
  return rc < 0 || bad ? VX_BAD_INPUT : VX_OK;
}

static void json_aggs(FILE *f, const aggs *a, int with_domain) {
  putc('[', f);
  for (size_t i = 0; i < a->n; i++) {
    const agg *g = &a->v[i];
    fputs(i ? ",\n  {\"name\":" : "\n  {\"name\":", f);
    vx_json_str(f, g->name);
    if (with_domain) fprintf(f, ",\"domain\":\"%s\"", vx_domain_name(g->domain));
    if (with_domain) fprintf(f, ",\"calls\":%" PRIu64 ",\"errors\":%" PRIu64, g->calls, g->errors);
    else fprintf(f, ",\"count\":%" PRIu64, g->calls);
    fprintf(f, ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
            g->total, g->calls ? g->total / g->calls : 0, g->max);
  }
  fputs(a->n ? "\n]" : "]", f);
}

static void print_json(FILE *f, const stats *s) {
  fputs("{\"api\":", f);
  json_aggs(f, &s->api, 1);
  fputs(",\n\"kernels\":", f);
  json_aggs(f, &s->kernels, 0);
  fprintf(f, ",\n\"calls\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"total_ns\":%" PRIu64
             ",\"dropped\":%" PRIu64 ",\"records\":%" PRIu64 ",\"traces\":%" PRIu64
             ",\"processes\":%" PRIu64 ",\"threads\":%zu}\n",
          s->api_calls, s->api_errors, s->api_ns, s->dropped, s->records, s->traces,
          s->processes, s->nthreads);
}

/* Durations for the table: ns, us, ms or s with 3 significant-ish digits. */
static const char *fmt_ns(char *buf, size_t n, double ns) {
  if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f s", ns / 1e9);
  return buf;
}

static void fit(char *dst, size_t width, const char *src) {
  size_t len = strlen(src);
  if (len <= width) {
    memcpy(dst, src, len + 1);
    return;
  }
  memcpy(dst, src, width - 3);
  memcpy(dst + width - 3, "...", 4);
}

static void print_table(FILE *f, const stats *s) {
  char name[64], b1[32], b2[32], b3[32];
  /* 40 + 9 + 10 + 7 + 11 + 11 + 11 = 99 columns */
  fprintf(f, "%-40s %-8s %9s %6s %10s %10s %10s\n", "Function", "Domain", "Calls", "Errors",
          "Total", "Mean", "Max");
  for (size_t i = 0; i < s->api.n; i++) {
    const agg *g = &s->api.v[i];
    fit(name, 40, g->name);
    fprintf(f, "%-40s %-8s %9" PRIu64 " %6" PRIu64 " %10s %10s %10s\n", name,
            vx_domain_name(g->domain), g->calls, g->errors, fmt_ns(b1, sizeof b1, (double)g->total),
            fmt_ns(b2, sizeof b2, g->calls ? (double)g->total / (double)g->calls : 0),
            fmt_ns(b3, sizeof b3, (double)g->max));
  }
  if (s->api.n == 0) fprintf(f, "(no API calls)\n");
  fprintf(f, "%-40s %-8s %9" PRIu64 " %6" PRIu64 " %10s\n", "total", "", s->api_calls,
          s->api_errors, fmt_ns(b1, sizeof b1, (double)s->api_ns));
  if (s->kernels.n) {
    fprintf(f, "\n%-57s %9s %10s %10s %10s\n", "Kernel", "Count", "Total", "Mean", "Max");
    for (size_t i = 0; i < s->kernels.n; i++) {
      const agg *g = &s->kernels.v[i];
      fit(name, 57, g->name);
      fprintf(f, "%-57s %9" PRIu64 " %10s %10s %10s\n", name, g->calls,
              fmt_ns(b1, sizeof b1, (double)g->total),
              fmt_ns(b2, sizeof b2, g->calls ? (double)g->total / (double)g->calls : 0),
              fmt_ns(b3, sizeof b3, (double)g->max));
    }
  }
  fprintf(f, "\n%" PRIu64 " trace%s, %" PRIu64 " process%s, %zu thread%s, %" PRIu64
             " records, %" PRIu64 " dropped\n",
          s->traces, s->traces == 1 ? "" : "s", s->processes, s->processes == 1 ? "" : "es",
          s->nthreads, s->nthreads == 1 ? "" : "s", s->records, s->dropped);
}

static void help(void) {
  printf("usage: dlhook stats [--json] TRACE...\n"
         "\n"
         "Summarises the traces: per API function (name, domain) the calls, errors (result not\n"
         "0), total, mean and max duration, sorted by total time; kernels by name; records and\n"
         "dropped records; number of traces, processes and threads.\n"
         "\n"
         "options:\n"
         "  --json     print one JSON object: {\"api\":[{name,domain,calls,errors,total_ns,\n"
         "             mean_ns,max_ns}...],\"kernels\":[{name,count,total_ns,mean_ns,max_ns}...],\n"
         "             \"dropped\",\"records\",\"traces\",\"processes\",\"threads\",...}\n"
         "\n"
         "A damaged trace counts everything readable, then reports an error (exit 1).\n");
}

int cmd_stats(int argc, char **argv) {
  int json = 0, opts_done = 0;
  char **files = vx_xmalloc((size_t)argc * sizeof *files);
  size_t nfiles = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (opts_done || a[0] != '-') files[nfiles++] = argv[i];
    else if (!strcmp(a, "--")) opts_done = 1;
    else if (vx_is_help(a)) { help(); free(files); return VX_OK; }
    else if (!strcmp(a, "--json")) json = 1;
    else { free(files); return vx_usage_error("stats", "unknown option '%s'", a); }
  }
  if (nfiles == 0) {
    free(files);
    return vx_usage_error("stats", "no trace file given");
  }
  stats s = {0};
  int rc = VX_OK;
  for (size_t i = 0; i < nfiles; i++)
    if (stats_one(&s, files[i]) != VX_OK) rc = VX_BAD_INPUT;
  if (s.api.n) qsort(s.api.v, s.api.n, sizeof *s.api.v, by_total);
  if (s.kernels.n) qsort(s.kernels.v, s.kernels.n, sizeof *s.kernels.v, by_total);
  /* functions only ever defined, never called, are not shown */
  size_t keep = 0;
  for (size_t i = 0; i < s.api.n; i++) {
    if (s.api.v[i].calls) s.api.v[keep++] = s.api.v[i];
    else free(s.api.v[i].name);
  }
  s.api.n = keep;
  if (s.traces == 0) { /* nothing could be opened: the errors said why */
  } else if (json) {
    print_json(stdout, &s);
  } else {
    print_table(stdout, &s);
  }
  if (fflush(stdout) != 0) {
    vx_error("stats: write error on standard output");
    rc = VX_BAD_INPUT;
  }
  for (size_t i = 0; i < s.api.n; i++) free(s.api.v[i].name);
  for (size_t i = 0; i < s.kernels.n; i++) free(s.kernels.v[i].name);
  free(s.api.v);
  free(s.kernels.v);
  free(s.threads);
  free(files);
  return rc;
}

