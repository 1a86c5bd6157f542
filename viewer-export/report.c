/* report.c — `dlhook report -o report.html TRACE...`: one self-contained HTML page (inline CSS,
 * JS and SVG; nothing loaded from the network) to read or share: the headline numbers, the
 * GPU-time flame graph (flame.c's interactive SVG, inlined), a timeline overview (one SVG lane
 * per thread, per NVTX thread, per GPU stream, the live device memory of each process, capture
 * windows shaded), top kernels and top calls as HTML tables, and the terminal summaries of
 * `dlhook stats` (GEMM/convolution/collective tables included) and `dlhook stats --memory`. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export.h"
#include "vx.h"

int cmd_stats(int argc, char **argv);

#define TL_W 1100          /* timeline width in px (bins) */
#define LANE_H 14
#define MAX_LANES 256
#define MAX_RANGES 400     /* NVTX ranges drawn per lane */

enum { L_API = 0, L_NVTX = 1, L_GPU = 2 };

typedef struct lane {
  uint32_t pid, kind, a, b;  /* L_API/L_NVTX: a = tid; L_GPU: a = device, b = stream */
  double *busy;              /* TL_W bins: occupied fraction */
  uint64_t nranges;
  struct { uint64_t s, e; char *name; } ranges[MAX_RANGES];
} lane;

typedef struct ev { uint64_t s, e; uint32_t lane; } ev;

typedef struct agg { char *name; uint64_t count, total, max; int domain; } agg;
typedef struct aggs {
  agg *v;
  size_t n, cap;
  ex_u64map ix; /* keyed hash of (name, domain) -> index: a trace may hold any number of names */
} aggs;

typedef struct report {
  lane *lanes[MAX_LANES];
  size_t nlanes;
  ev *evs;
  size_t nevs, capevs;
  uint64_t t0, t1;
  aggs kernels, calls;
  uint64_t api_calls, kernels_n, kernel_ns, gpu_records, dropped;
  struct { uint64_t s, e; } win[256];
  size_t nwin;
  uint64_t open_at;          /* capture window open since (0 = none) */
  uint32_t pid;
  struct { uint32_t pid; vx_mem_sample *v; long n; } mem[64];
  size_t nmem;
  char **procs;              /* one line per process */
  size_t nprocs;
} report;

static uint32_t lane_of(report *r, uint32_t kind, uint32_t a, uint32_t b) {
  for (size_t i = 0; i < r->nlanes; i++) {
    lane *l = r->lanes[i];
    if (l->pid == r->pid && l->kind == kind && l->a == a && l->b == b) return (uint32_t)i;
  }
  if (r->nlanes == MAX_LANES) return MAX_LANES; /* too many: not drawn */
  lane *l = calloc(1, sizeof *l);
  if (!l) return MAX_LANES;
  l->pid = r->pid;
  l->kind = kind;
  l->a = a;
  l->b = b;
  r->lanes[r->nlanes] = l;
  return (uint32_t)r->nlanes++;
}

static void add_ev(report *r, uint32_t lane_i, uint64_t s, uint64_t e) {
  if (lane_i >= MAX_LANES) return;
  if (r->nevs == r->capevs) {
    r->capevs = r->capevs ? r->capevs * 2 : 4096;
    r->evs = vx_xrealloc(r->evs, r->capevs * sizeof *r->evs);
  }
  r->evs[r->nevs++] = (ev){s, e, lane_i};
  if (!r->t0 || s < r->t0) r->t0 = s;
  if (e > r->t1) r->t1 = e;
}

static void agg_add(aggs *a, const char *name, int domain, uint64_t dur) {
  uint64_t h = vx_hash_str(name) ^ vx_hash64((uint64_t)(unsigned)domain);
  uint32_t k;
  size_t i = a->n;
  if (ex_m_get(&a->ix, h, &k)) {
    i = k;
    if (a->v[i].domain != domain || strcmp(a->v[i].name, name)) /* a true collision */
      for (i = 0; i < a->n; i++)
        if (a->v[i].domain == domain && !strcmp(a->v[i].name, name)) break;
  }
  if (i < a->n) {
    a->v[i].count++;
    a->v[i].total += dur;
    if (dur > a->v[i].max) a->v[i].max = dur;
    return;
  }
  if (!ex_m_get(&a->ix, h, &k)) ex_m_put(&a->ix, h, (uint32_t)a->n);
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->v = vx_xrealloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n++] = (agg){vx_xstrdup(name), 1, dur, dur, domain};
}

static int by_total(const void *x, const void *y) {
  const agg *a = x, *b = y;
  return a->total < b->total ? 1 : a->total > b->total ? -1 : strcmp(a->name, b->name);
}

/* ---------------------------------------------------------------- reading */

static void on_packet(void *ctx, const vx_trace *t, const Dlh__Packet *p) {
  report *r = ctx;
  (void)t;
  if (p->data_case == DLH__PACKET__DATA_ANCHOR && p->anchor->has_kind) {
    if (p->anchor->kind == 3) r->open_at = p->anchor->trace_ns;
    else if (p->anchor->kind == 4 && r->open_at && r->nwin < 256) {
      r->win[r->nwin].s = r->open_at;
      r->win[r->nwin++].e = p->anchor->trace_ns;
      r->open_at = 0;
    }
  } else if (p->data_case == DLH__PACKET__DATA_PROCESS) {
    const Dlh__ProcessInfo *pi = p->process;
    char *line;
    if (asprintf(&line, "pid %u%s%s, rank %d: %s", pi->pid, pi->host ? " on " : "",
                 pi->host ? pi->host : "", pi->rank, pi->exe ? pi->exe : "?") < 0)
      return;
    r->procs = vx_xrealloc(r->procs, (r->nprocs + 1) * sizeof *r->procs);
    r->procs[r->nprocs++] = line;
  }
}

static void on_api(void *ctx, const vx_trace *t, uint32_t tid, const dlh_api_event *e) {
  report *r = ctx;
  const vx_func *f = vx_trace_func(t, e->fn);
  int domain = f ? f->domain : 0;
  if (domain == DLH__DOMAIN__DOMAIN_NVTX) {
    if (e->depth != 0) return;
    uint32_t li = lane_of(r, L_NVTX, tid, 0);
    add_ev(r, li, e->start_ns, e->start_ns + e->dur_ns);
    if (li < MAX_LANES && r->lanes[li]->nranges < MAX_RANGES && e->nargs) {
      lane *l = r->lanes[li];
      const char *msg = vx_trace_string(t, (uint32_t)e->args[0]);
      l->ranges[l->nranges].s = e->start_ns;
      l->ranges[l->nranges].e = e->start_ns + e->dur_ns;
      l->ranges[l->nranges++].name = vx_xstrdup(msg ? msg : "");
    }
    return;
  }
  r->api_calls++;
  agg_add(&r->calls, vx_func_name(t, e->fn), domain, e->dur_ns);
  if (e->depth == 0) add_ev(r, lane_of(r, L_API, tid, 0), e->start_ns, e->start_ns + e->dur_ns);
}

static void on_gpu(void *ctx, const vx_trace *t, const ex_gpu *g) {
  report *r = ctx;
  if (g->kind < 1 || g->kind > 3) return;
  r->gpu_records++;
  add_ev(r, lane_of(r, L_GPU, g->device, g->stream), g->start, g->start + g->dur);
  if (g->kind == 1) {
    const char *n = vx_trace_string(t, g->name);
    char *dm = n ? vx_demangle(n) : NULL;
    agg_add(&r->kernels, dm ? dm : n ? n : "(unnamed)", 0, g->dur);
    free(dm);
    r->kernels_n++;
    r->kernel_ns += g->dur;
  }
}

/* ---------------------------------------------------------------- writing */

static void html_str(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      default: putc(*s, f);
    }
  }
}

static const char *fmt_ns(char *buf, size_t n, double ns) {
  if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else snprintf(buf, n, "%.2f s", ns / 1e9);
  return buf;
}

static void table(FILE *f, const char *id, const char *title, aggs *a, int calls, size_t top) {
  char b1[32], b2[32], b3[32];
  fprintf(f, "<h2>%s</h2>\n<table id=\"%s\"><tr><th>%s</th>%s<th>%s</th><th>Total</th>"
             "<th>Mean</th><th>Max</th></tr>\n",
          title, id, calls ? "Function" : "Kernel", calls ? "<th>Domain</th>" : "",
          calls ? "Calls" : "Count");
  if (a->n) qsort(a->v, a->n, sizeof *a->v, by_total);
  for (size_t i = 0; i < a->n && i < top; i++) {
    const agg *g = &a->v[i];
    fputs("<tr><td class=\"n\">", f);
    html_str(f, g->name);
    fputs("</td>", f);
    if (calls) fprintf(f, "<td>%s</td>", vx_domain_name(g->domain));
    fprintf(f, "<td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", g->count,
            fmt_ns(b1, sizeof b1, (double)g->total),
            fmt_ns(b2, sizeof b2, g->count ? (double)g->total / (double)g->count : 0),
            fmt_ns(b3, sizeof b3, (double)g->max));
  }
  if (!a->n) fprintf(f, "<tr><td colspan=\"6\">(none)</td></tr>\n");
  fputs("</table>\n", f);
}

static int by_lane(const void *x, const void *y) {
  const lane *a = *(lane *const *)x, *b = *(lane *const *)y;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : a->b > b->b;
}

static void timeline(FILE *f, report *r) {
  uint64_t span = r->t1 > r->t0 ? r->t1 - r->t0 : 1;
  for (size_t i = 0; i < r->nlanes; i++) r->lanes[i]->busy = calloc(TL_W, sizeof(double));
  for (size_t i = 0; i < r->nevs; i++) {
    const ev *e = &r->evs[i];
    double *busy = r->lanes[e->lane]->busy;
    if (!busy) continue;
    double x0 = (double)(e->s - r->t0) * TL_W / (double)span;
    double x1 = (double)(e->e - r->t0) * TL_W / (double)span;
    if (x1 <= x0) x1 = x0 + 0.05;
    for (int px = (int)x0; px < TL_W && px <= (int)x1; px++) {
      double a = x0 > px ? x0 : px, b = x1 < px + 1 ? x1 : px + 1;
      if (b > a) busy[px] += b - a;
    }
  }
  /* lane order: process, then threads, NVTX, GPU streams; the order of lanes[] is kept for
   * the event indexes above, so sort a copy */
  lane **order = vx_xmalloc((r->nlanes ? r->nlanes : 1) * sizeof *order);
  memcpy(order, r->lanes, r->nlanes * sizeof *order);
  qsort(order, r->nlanes, sizeof *order, by_lane);
  int label_w = 170, mem_h = 40;
  int h = (int)r->nlanes * (LANE_H + 4) + (int)r->nmem * (mem_h + 6) + 40;
  fprintf(f, "<svg id=\"timeline\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"monospace\" font-size=\"11\">\n",
          TL_W + label_w, h, TL_W + label_w, h);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", TL_W + label_w, h);
  for (size_t w = 0; w < r->nwin; w++) { /* capture windows */
    double x0 = (double)(r->win[w].s - r->t0) * TL_W / (double)span;
    double x1 = (double)(r->win[w].e - r->t0) * TL_W / (double)span;
    fprintf(f, "<rect class=\"win\" x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"#fff3c4\">"
               "<title>capture window</title></rect>\n",
            label_w + (x0 < 0 ? 0 : x0), x1 - x0 < 1 ? 1 : x1 - x0, h - 20);
  }
  int y = 4;
  static const char *const fill[3] = {"#3b6fb6", "#8a5cc2", "#2e9e4f"};
  for (size_t i = 0; i < r->nlanes; i++) {
    lane *l = order[i];
    char name[64];
    if (l->kind == L_API) snprintf(name, sizeof name, "%u thread %u", l->pid, l->a);
    else if (l->kind == L_NVTX) snprintf(name, sizeof name, "%u nvtx %u", l->pid, l->a);
    else snprintf(name, sizeof name, "%u gpu%u stream %u", l->pid, l->a, l->b);
    fprintf(f, "<text x=\"4\" y=\"%d\">%s</text>\n", y + LANE_H - 3, name);
    fprintf(f, "<g class=\"lane\" fill=\"%s\">", fill[l->kind]);
    for (int px = 0; px < TL_W; px++) {
      if (!l->busy || l->busy[px] <= 0) continue;
      int run = 1;
      double b = l->busy[px] > 1 ? 1 : l->busy[px];
      while (px + run < TL_W && l->busy[px + run] >= 1 && b >= 1) run++;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill-opacity=\"%.2f\"/>",
              label_w + px, y, run, LANE_H, 0.25 + 0.75 * b);
      px += run - 1;
    }
    fputs("</g>\n", f);
    if (l->kind == L_NVTX)
      for (uint64_t k = 0; k < l->nranges; k++) {
        double x0 = (double)(l->ranges[k].s - r->t0) * TL_W / (double)span;
        double x1 = (double)(l->ranges[k].e - r->t0) * TL_W / (double)span;
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
                   "stroke=\"#5a3d8a\" stroke-width=\"0.5\"><title>",
                label_w + x0, y, x1 - x0 < 0.5 ? 0.5 : x1 - x0, LANE_H);
        html_str(f, l->ranges[k].name);
        fputs("</title></rect>", f);
        if (x1 - x0 > 7.0 * (double)strlen(l->ranges[k].name)) {
          fprintf(f, "<text x=\"%.1f\" y=\"%d\" fill=\"#fff\">", label_w + x0 + 2, y + LANE_H - 3);
          html_str(f, l->ranges[k].name);
          fputs("</text>", f);
        }
        putc('\n', f);
      }
    y += LANE_H + 4;
  }
  for (size_t m = 0; m < r->nmem; m++) { /* live device memory per process */
    uint64_t peak = 1;
    for (long k = 0; k < r->mem[m].n; k++)
      if (r->mem[m].v[k].live_bytes > peak) peak = r->mem[m].v[k].live_bytes;
    fprintf(f, "<text x=\"4\" y=\"%d\">%u GPU memory</text>\n", y + 12, r->mem[m].pid);
    fprintf(f, "<text x=\"4\" y=\"%d\" fill=\"#888\">peak %.1f MiB</text>\n", y + 26,
            (double)peak / (1 << 20));
    fprintf(f, "<polyline class=\"memory\" fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.2\" points=\"%d,%d",
            label_w, y + mem_h);
    uint64_t prev = 0;
    for (long k = 0; k < r->mem[m].n; k++) {
      const vx_mem_sample *s = &r->mem[m].v[k];
      double x = label_w + (double)(s->ts_ns > r->t0 ? s->ts_ns - r->t0 : 0) * TL_W / (double)span;
      if (x > label_w + TL_W) x = label_w + TL_W;
      fprintf(f, " %.1f,%.1f %.1f,%.1f", x, y + mem_h - (double)prev * mem_h / (double)peak, x,
              y + mem_h - (double)s->live_bytes * mem_h / (double)peak);
      prev = s->live_bytes;
    }
    fprintf(f, " %d,%.1f\"/>\n", label_w + TL_W, y + mem_h - (double)prev * mem_h / (double)peak);
    y += mem_h + 6;
  }
  char b1[32];
  fprintf(f, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
          label_w, h - 6, label_w + TL_W, h - 6, fmt_ns(b1, sizeof b1, (double)span));
  fputs("</svg>\n", f);
  free(order);
}

/* Runs `dlhook stats ARGS... FILES...` in a child and copies its output into f (escaped). */
static void stats_pre(FILE *f, const char *id, const char *opt, char **files, size_t n) {
  int fd[2];
  fflush(NULL);
  if (pipe(fd) != 0) return;
  pid_t pid = fork();
  if (pid < 0) { close(fd[0]); close(fd[1]); return; }
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    close(fd[1]);
    char **av = vx_xmalloc((n + 3) * sizeof *av);
    int ac = 0;
    av[ac++] = "stats";
    if (opt) av[ac++] = (char *)opt;
    for (size_t i = 0; i < n; i++) av[ac++] = files[i];
    av[ac] = NULL;
    int rc = cmd_stats(ac, av);
    fflush(stdout);
    _exit(rc);
  }
  close(fd[1]);
  fprintf(f, "<pre id=\"%s\">", id);
  FILE *in = fdopen(fd[0], "r");
  char buf[4096];
  size_t k;
  while (in && (k = fread(buf, 1, sizeof buf - 1, in)) > 0) {
    buf[k] = 0;
    html_str(f, buf);
  }
  if (in) fclose(in);
  else close(fd[0]);
  fputs("</pre>\n", f);
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
}

static const char css[] =
    "body{font-family:system-ui,sans-serif;margin:20px;color:#222;background:#fff}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}"
    ".kpi{display:inline-block;margin:8px 22px 8px 0}.kpi b{display:block;font-size:20px}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;border-bottom:1px solid #eee;"
    "text-align:right}th{background:#f1f3f7}td.n{text-align:left;max-width:640px;overflow:hidden;"
    "text-overflow:ellipsis;white-space:nowrap;font-family:monospace}"
    "pre{font-size:12px;background:#f7f7f7;padding:10px;overflow-x:auto}"
    ".scroll{overflow-x:auto}.muted{color:#777;font-size:13px}";

static void help(void) {
  printf("usage: dlhook report -o FILE.html TRACE...\n"
         "\n"
         "Writes one self-contained HTML page (inline CSS, JavaScript and SVG; it loads nothing\n"
         "from the network) about the traces: calls, kernels, GPU time and dropped records; the\n"
         "GPU-time flame graph by launching stack (API time when there is no GPU activity);\n"
         "a timeline overview with one lane per thread, per thread's NVTX ranges, per GPU\n"
         "stream, the live device memory of each process and the capture windows; top kernels\n"
         "and top calls; the tables of dlhook stats (GEMM, convolution, collectives included)\n"
         "and dlhook stats --memory.\n");
}

int cmd_report(int argc, char **argv) {
  const char *out = NULL;
  char **files = vx_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (vx_is_help(a)) { help(); free(files); return VX_OK; }
    if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (i + 1 >= argc) { free(files); return vx_usage_error("report", "%s needs a value", a); }
      out = argv[++i];
    } else if (!strncmp(a, "--output=", 9)) {
      out = a + 9;
    } else if (a[0] == '-' && a[1]) {
      free(files);
      return vx_usage_error("report", "unknown option '%s'", a);
    } else {
      files[n++] = argv[i];
    }
  }
  if (!out) { free(files); return vx_usage_error("report", "no output file given (-o FILE.html)"); }
  if (!n) { free(files); return vx_usage_error("report", "no trace file given"); }

  report *r = calloc(1, sizeof *r);
  if (!r) { free(files); return VX_BAD_INPUT; }
  int rc = VX_OK;
  ex_opts o;
  memset(&o, 0, sizeof o);
  o.quiet = 1;
  for (size_t i = 0; i < n; i++) {
    ex_sink s = {r, on_packet, on_api, on_gpu};
    vx_trace t;
    if (vx_trace_open(&t, files[i]) < 0) { rc = VX_BAD_INPUT; continue; }
    /* the pid first, for the lanes */
    const Dlh__Packet *p;
    r->pid = 0;
    if (vx_trace_next(&t, &p) == 1 && p->data_case == DLH__PACKET__DATA_PROCESS) r->pid = p->process->pid;
    vx_trace_close(&t);
    r->open_at = 0;
    if (ex_scan(files[i], &o, "report", &s) != VX_OK) rc = VX_BAD_INPUT;
    if (r->open_at && r->nwin < 256) { r->win[r->nwin].s = r->open_at; r->win[r->nwin++].e = UINT64_MAX; }
    if (vx_trace_open(&t, files[i]) == 0) {
      while (vx_trace_next(&t, &p) == 1) {}
      r->dropped += vx_trace_dropped(&t);
      vx_trace_close(&t);
    }
    if (r->nmem < 64) {
      uint32_t pid = 0;
      vx_mem_sample *v = NULL;
      long k = vx_memory_counter(files[i], &v, &pid);
      if (k > 0) {
        r->mem[r->nmem].pid = pid;
        r->mem[r->nmem].v = v;
        r->mem[r->nmem++].n = k;
      } else {
        free(v);
      }
    }
  }
  for (size_t w = 0; w < r->nwin; w++)
    if (r->win[w].e == UINT64_MAX) r->win[w].e = r->t1;

  /* the flame graph, by flame.c, into a temporary file that is then inlined */
  const char *tmp = getenv("TMPDIR");
  char svgpath[4096];
  snprintf(svgpath, sizeof svgpath, "%s/dlhook-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int sfd = mkstemp(svgpath);
  char *svg = NULL;
  size_t svglen = 0;
  if (sfd >= 0) {
    close(sfd);
    ex_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.format = "svg";
    fo.out = svgpath;
    fo.weight = r->kernels_n ? EX_W_GPU : EX_W_CPU;
    fo.quiet = 1;
    if (ex_flame(&fo, files, n) == VX_OK) {
      FILE *sf = fopen(svgpath, "r");
      if (sf) {
        fseek(sf, 0, SEEK_END);
        long len = ftell(sf);
        fseek(sf, 0, SEEK_SET);
        if (len > 0) {
          svg = vx_xmalloc((size_t)len + 1);
          svglen = fread(svg, 1, (size_t)len, sf);
          svg[svglen] = 0;
        }
        fclose(sf);
      }
    }
    unlink(svgpath);
  }

  FILE *f = ex_create(out, 0);
  if (!f) { rc = VX_BAD_INPUT; goto done; }
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<title>dlhook report</title>\n<style>%s</style></head>\n<body>\n", css);
  fputs("<h1>dlhook report</h1>\n<div class=\"muted\">", f);
  for (size_t i = 0; i < r->nprocs; i++) {
    html_str(f, r->procs[i]);
    fputs("<br>", f);
  }
  fputs("</div>\n", f);
  char b1[32], b2[32];
  fprintf(f, "<div id=\"kpis\"><span class=\"kpi\"><b>%zu</b>trace%s</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>API calls</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>kernels</span>"
             "<span class=\"kpi\"><b>%s</b>kernel time</span>"
             "<span class=\"kpi\"><b>%s</b>traced span</span>"
             "<span class=\"kpi\"><b>%" PRIu64 "</b>dropped records</span></div>\n",
          n, n == 1 ? "" : "s", r->api_calls, r->kernels_n, fmt_ns(b1, sizeof b1, (double)r->kernel_ns),
          fmt_ns(b2, sizeof b2, (double)(r->t1 > r->t0 ? r->t1 - r->t0 : 0)), r->dropped);

  fprintf(f, "<h2>Flame graph: %s</h2>\n<div id=\"flamegraph\" class=\"scroll\">\n",
          r->kernels_n ? "GPU time by launching stack" : "API time by stack (no GPU activity)");
  if (svg) {
    /* flame.c's script takes the document element as its <svg>: inside a page it is the
     * flame graph's own element */
    char *body = strstr(svg, "<svg");
    if (!body) body = svg;
    const char *doc = "svg=document.documentElement";
    char *at = strstr(body, doc);
    if (at) {
      fwrite(body, 1, (size_t)(at - body), f);
      fputs("svg=document.querySelector('#flamegraph svg')", f);
      fputs(at + strlen(doc), f);
    } else {
      fputs(body, f);
    }
  } else {
    fputs("<p>(no flame graph could be drawn)</p>\n", f);
  }
  fputs("</div>\n", f);

  fputs("<h2>Timeline</h2>\n<div class=\"muted\">blue: API calls per thread, purple: NVTX ranges, "
        "green: GPU work per stream, red: live device memory, yellow: capture windows</div>\n"
        "<div class=\"scroll\">\n", f);
  timeline(f, r);
  fputs("</div>\n", f);

  table(f, "top-kernels", "Top kernels", &r->kernels, 0, 25);
  table(f, "top-calls", "Top calls", &r->calls, 1, 25);
  fputs("<h2>Summary (dlhook stats)</h2>\n", f);
  fflush(f);
  stats_pre(f, "stats", NULL, files, n);
  fputs("<h2>GPU memory (dlhook stats --memory)</h2>\n", f);
  fflush(f);
  stats_pre(f, "memory", "--memory", files, n);
  fputs("<div class=\"muted\">written by dlhook " DLHOOK_VERSION "</div>\n</body></html>\n", f);
  if (ex_close(f, out) < 0) rc = VX_BAD_INPUT;
done:
  free(svg);
  for (size_t i = 0; i < r->nlanes; i++) {
    for (uint64_t k = 0; k < r->lanes[i]->nranges; k++) free(r->lanes[i]->ranges[k].name);
    free(r->lanes[i]->busy);
    free(r->lanes[i]);
  }
  for (size_t i = 0; i < r->nmem; i++) free(r->mem[i].v);
  for (size_t i = 0; i < r->kernels.n; i++) free(r->kernels.v[i].name);
  for (size_t i = 0; i < r->calls.n; i++) free(r->calls.v[i].name);
  for (size_t i = 0; i < r->nprocs; i++) free(r->procs[i]);
  free(r->procs);
  free(r->kernels.v);
  ex_m_free(&r->kernels.ix);
  ex_m_free(&r->calls.ix);
  free(r->calls.v);
  free(r->evs);
  free(r);
  free(files);
  return rc;
}
