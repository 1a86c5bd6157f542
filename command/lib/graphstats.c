/* graphstats.c — dlhook stats' tables of work made for later (rd.h, "CUDA graphs and
 * torch.compile in dlhook stats"):
 *
 *   CUDA graphs   per graph: the nodes that ran, replays (graph launches), kernels, copies,
 *                 memsets and their GPU time; per node (the node a call made, whichever
 *                 executable copy ran): its work, runs and GPU time, and the call that made it
 *                 with that call's operator and source line.
 *   Inductor      per Triton kernel of torch.compile's code and the user's line that ran it: the
 *                 aten ops fused into it, launches, GPU time.
 *
 * The GPU side comes with the first pass (rd_gstats_gpu); the calls that made the nodes and
 * launched the kernels are named by a second pass over the API events (rd_gstats_sink), with
 * every stack definition known, for the traces rd_gstats_wanted says need it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_scan.h"

typedef struct gs_graph {
  uint32_t pid, graph;
  uint64_t nodes, replays, kernels, copies, memsets, gpu_ns;
} gs_graph;

typedef struct gs_node {
  uint32_t pid, graph;
  uint64_t node, runs, gpu_ns;
  char *work;          /* kernel name, "Memcpy DtoD", "Memset" */
  uint64_t maker;      /* correlation id of the call that made it (this trace), 0 = unknown */
  int32_t next_same;   /* the next node of this trace made by the same call, -1 = none */
  char *made_by;       /* that call's function */
  char *op;            /* its innermost operator, NULL = none */
  char *where;         /* the user's line, or the innermost native function of the program */
} gs_node;

typedef struct gs_ind {
  char *kernel, *aten, *nodes, *line;
  uint64_t count, gpu_ns;
} gs_ind;

typedef struct gs_pend {  /* Triton kernels of one launch, until its call is read (pass 2) */
  const rd_inductor_kernel *ik;
  uint64_t count, gpu_ns;
  int32_t next;           /* the next kernel of the same launch, -1 = none */
} gs_pend;

struct rd_gstats {
  gs_graph *g;
  size_t ng, capg;
  gs_node *n;
  size_t nn, capn;
  gs_ind *ind;
  size_t nind, capind;
  /* this trace */
  rd_u64map graph_ix, node_ix, replay_set, maker_ix, pend_ix, ind_ix;
  gs_pend *pend;
  size_t npend, cappend;
};

rd_gstats *rd_gstats_new(void) {
  rd_gstats *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  *cap = *cap ? *cap * 2 : 64;
  return rd_xrealloc(p, *cap * size);
}

static uint64_t mix2(uint64_t a, uint64_t b) { return rd_hash64(a * 0x9e3779b97f4a7c15ull ^ b); }

void rd_gstats_gpu(rd_gstats *x, const rd_trace *t, const rd_gpu *g) {
  if (!rd_gpu_busy(g->kind)) return;
  if (g->kind == RD_KERNEL && g->kname && rd_inductor_count(t)) {
    const rd_inductor_kernel *ik = rd_inductor_kernel_named(t, g->kname);
    if (ik && g->corr) {
      uint32_t i;
      uint64_t key = mix2(g->corr, (uint64_t)(uintptr_t)ik);
      if (!rd_m_get(&x->pend_ix, key, &i)) {
        x->pend = grow(x->pend, &x->cappend, x->npend, sizeof *x->pend);
        i = (uint32_t)x->npend++;
        uint32_t head;
        int have = rd_m_get(&x->pend_ix, mix2(g->corr, 0), &head);
        x->pend[i] = (gs_pend){ik, 0, 0, have ? (int32_t)head : -1};
        rd_m_put(&x->pend_ix, key, i);
        rd_m_put(&x->pend_ix, mix2(g->corr, 0), i); /* the launch -> its kernels (pass 2) */
      }
      x->pend[i].count++;
      x->pend[i].gpu_ns += g->dur;
    }
  }
  if (!g->graph_node && !g->graph) return;
  uint32_t gi;
  if (!rd_m_get(&x->graph_ix, g->graph, &gi)) {
    x->g = grow(x->g, &x->capg, x->ng, sizeof *x->g);
    gi = (uint32_t)x->ng++;
    memset(&x->g[gi], 0, sizeof x->g[gi]);
    x->g[gi].pid = t->pid;
    x->g[gi].graph = g->graph;
    rd_m_put(&x->graph_ix, g->graph, gi);
  }
  gs_graph *gr = &x->g[gi];
  gr->gpu_ns += g->dur;
  if (g->kind == RD_KERNEL) gr->kernels++;
  else if (g->kind == RD_MEMSET) gr->memsets++;
  else gr->copies++;
  uint64_t launch = g->launch_corr ? g->launch_corr : g->corr;
  uint32_t dummy;
  uint64_t rk = mix2(g->graph, launch);
  if (launch && !rd_m_get(&x->replay_set, rk, &dummy)) {
    rd_m_put(&x->replay_set, rk, 1);
    gr->replays++;
  }
  const rd_graph_node *made = rd_graph_node_made(t, g->graph_node);
  uint64_t nid = made ? made->node : g->graph_node;
  uint32_t ni;
  if (!rd_m_get(&x->node_ix, nid, &ni)) {
    x->n = grow(x->n, &x->capn, x->nn, sizeof *x->n);
    ni = (uint32_t)x->nn++;
    gs_node *n = &x->n[ni];
    memset(n, 0, sizeof *n);
    n->pid = t->pid;
    n->graph = made ? made->graph : g->graph;
    n->node = nid;
    n->next_same = -1;
    char buf[64];
    n->work = rd_xstrdup(rd_gpu_name(t, g, buf, sizeof buf));
    rd_m_put(&x->node_ix, nid, ni);
    gr->nodes++;
    if (made && made->corr) {
      n->maker = made->corr;
      uint32_t first;
      if (rd_m_get(&x->maker_ix, made->corr, &first)) { /* chain behind the first */
        n->next_same = x->n[first].next_same;
        x->n[first].next_same = (int32_t)ni;
      } else {
        rd_m_put(&x->maker_ix, made->corr, ni);
      }
    }
  }
  x->n[ni].runs++;
  x->n[ni].gpu_ns += g->dur;
}

int rd_gstats_wanted(const rd_gstats *x) { return x->maker_ix.n > 0 || x->npend > 0; }

/* "capture_scale (graphs.cu:27)": the innermost native frame of the program's own code (not a
 * nvcc stub, not a CUDA library or dlhook), for stacks without a user Python line. */
static char *native_where(rd_trace *t, uint32_t stack) {
  const uint64_t *raw;
  int trunc = 0;
  size_t n = rd_stack_raw(t, stack, &raw, &trunc);
  for (size_t i = 0; i < n; i++) {
    rd_frame fr;
    rd_frame_of(t, raw[i], &fr);
    if (fr.python || !fr.function) continue;
    if (!strncmp(fr.function, "__device_stub", 13) || !strncmp(fr.function, "cuda", 4) ||
        !strncmp(fr.function, "__cuda", 6))
      continue;
    if (fr.module && (strstr(fr.module, "libcuda") || strstr(fr.module, "libdlhook") ||
                      strstr(fr.module, "libcublas") || strstr(fr.module, "libcudnn") ||
                      strstr(fr.module, "libnccl") || strstr(fr.module, "libtorch") ||
                      strstr(fr.module, "libc10") || strstr(fr.module, "libc.so") ||
                      strstr(fr.module, "libpython")))
      continue;
    char buf[1024];
    const char *file = fr.file ? strrchr(fr.file, '/') : NULL;
    file = file ? file + 1 : fr.file;
    if (file && fr.line) snprintf(buf, sizeof buf, "%s (%s:%u)", fr.function, file, fr.line);
    else snprintf(buf, sizeof buf, "%s", fr.function);
    return rd_xstrdup(buf);
  }
  return NULL;
}

static void g_api(void *ctx, const rd_trace *ct, uint32_t tid, const dlh_api_event *ev) {
  (void)tid;
  rd_gstats *x = ctx;
  rd_trace *t = (rd_trace *)ct;
  if (!ev->corr) return;
  uint32_t ni, pi;
  int maker = rd_m_get(&x->maker_ix, ev->corr, &ni);
  int pend = rd_m_get(&x->pend_ix, mix2(ev->corr, 0), &pi);
  if (!maker && !pend) return;
  const rd_func *fn = rd_trace_func(t, ev->fn);
  const rd_torch *tx = rd_torch_of(t, ev->stack);
  const char *op = rd_torch_op(tx);
  char *where = tx->user ? rd_xstrdup(tx->user) : ev->stack ? native_where(t, ev->stack) : NULL;
  for (int32_t i = maker ? (int32_t)ni : -1; i >= 0; i = x->n[i].next_same) {
    gs_node *n = &x->n[i];
    if (n->made_by) continue;
    n->made_by = rd_xstrdup(fn && fn->name ? fn->name : "?");
    n->op = op ? rd_xstrdup(op) : NULL;
    n->where = where ? rd_xstrdup(where) : NULL;
  }
  if (pend && !where) { /* no user line: Inductor benchmarking its kernels while it compiles
                         * (autotuning), or a stack cut at DLHOOK_STACK_DEPTH */
    const uint64_t *raw;
    int trunc = 0;
    size_t nf = rd_stack_raw(t, ev->stack, &raw, &trunc);
    int tune = 0;
    for (size_t i = 0; i < nf && !tune; i++) {
      rd_frame fr;
      rd_frame_of(t, raw[i], &fr);
      tune = fr.python && ((fr.function && strstr(fr.function, "bench")) ||
                           (fr.file && strstr(fr.file, "/benchmarking.py")));
    }
    if (tune) where = rd_xstrdup("(Inductor autotuning)");
    else if (trunc) where = rd_xstrdup("(stack cut at DLHOOK_STACK_DEPTH)");
  }
  if (pend) { /* every Triton kernel this call launched (graph replays included) */
    for (int32_t k = (int32_t)pi; k >= 0; k = x->pend[k].next) {
      gs_pend *p = &x->pend[k];
      if (!p->count) continue;
      const char *line = where ? where : "?";
      uint64_t key = mix2(rd_hash_str(p->ik->kernel), rd_hash_str(line));
      uint32_t r;
      if (!rd_m_get(&x->ind_ix, key, &r) || strcmp(x->ind[r].kernel, p->ik->kernel) ||
          strcmp(x->ind[r].line, line)) {
        x->ind = grow(x->ind, &x->capind, x->nind, sizeof *x->ind);
        r = (uint32_t)x->nind++;
        x->ind[r] = (gs_ind){rd_xstrdup(p->ik->kernel), rd_xstrdup(p->ik->aten_ops),
                             rd_xstrdup(p->ik->source_nodes), rd_xstrdup(line), 0, 0};
        rd_m_put(&x->ind_ix, key, r);
      }
      x->ind[r].count += p->count;
      x->ind[r].gpu_ns += p->gpu_ns;
      p->count = 0; /* taken */
    }
  }
  free(where);
}

rd_sink rd_gstats_sink(rd_gstats *x) { return (rd_sink){x, NULL, g_api, NULL, 0, NULL}; }

void rd_gstats_trace_end(rd_gstats *x) {
  rd_m_free(&x->graph_ix);
  rd_m_free(&x->node_ix);
  rd_m_free(&x->replay_set);
  rd_m_free(&x->maker_ix);
  rd_m_free(&x->pend_ix);
  free(x->pend);
  x->pend = NULL;
  x->npend = x->cappend = 0;
}

static int node_cmp(const void *a, const void *b) {
  const gs_node *x = a, *y = b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns < y->gpu_ns ? 1 : -1;
  return x->node < y->node ? -1 : x->node > y->node;
}
static int graph_cmp(const void *a, const void *b) {
  const gs_graph *x = a, *y = b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns < y->gpu_ns ? 1 : -1;
  return x->graph < y->graph ? -1 : x->graph > y->graph;
}
static int ind_cmp(const void *a, const void *b) {
  const gs_ind *x = a, *y = b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns < y->gpu_ns ? 1 : -1;
  return strcmp(x->kernel, y->kernel);
}

static void sort_all(rd_gstats *x) {
  if (x->ng) rd_qsort(x->g, x->ng, sizeof *x->g, graph_cmp);
  if (x->nn) rd_qsort(x->n, x->nn, sizeof *x->n, node_cmp);
  if (x->nind) rd_qsort(x->ind, x->nind, sizeof *x->ind, ind_cmp);
  for (size_t i = 0; i < x->nn; i++) x->n[i].next_same = -1; /* indices are gone */
}

/* "cudaLaunchKernel ← aten::addmm at model.py:42" into buf */
static const char *made_label(const gs_node *n, char *buf, size_t cap) {
  if (!n->made_by) {
    snprintf(buf, cap, "%s", n->maker ? "(call not recorded)" : "(node not recorded)");
    return buf;
  }
  int w = snprintf(buf, cap, "%s", n->made_by);
  if (n->op && w >= 0 && (size_t)w < cap) w += snprintf(buf + w, cap - (size_t)w, " \u2190 %s", n->op);
  if (n->where && w >= 0 && (size_t)w < cap) snprintf(buf + w, cap - (size_t)w, " at %s", n->where);
  return buf;
}

static const char *fmt_ns(char *buf, size_t n, double ns) {
  if (ns >= 1e9) snprintf(buf, n, "%.2f s", ns / 1e9);
  else if (ns >= 1e6) snprintf(buf, n, "%.2f ms", ns / 1e6);
  else if (ns >= 1e3) snprintf(buf, n, "%.2f us", ns / 1e3);
  else snprintf(buf, n, "%.0f ns", ns);
  return buf;
}

#define TOP_NODES 15

void rd_gstats_table(FILE *f, rd_gstats *x) {
  sort_all(x);
  char b1[32], b2[32], lab[1024];
  if (x->ng) {
    fprintf(f, "\n%-12s %7s %7s %8s %9s %8s %8s %11s %11s\n", "CUDA graph", "pid", "nodes",
            "replays", "kernels", "copies", "memsets", "GPU time", "per replay");
    for (size_t i = 0; i < x->ng; i++) {
      const gs_graph *g = &x->g[i];
      char nm[24];
      snprintf(nm, sizeof nm, "graph %u", g->graph);
      fprintf(f, "%-12s %7u %7" PRIu64 " %8" PRIu64 " %9" PRIu64 " %8" PRIu64 " %8" PRIu64
                 " %11s %11s\n", nm, g->pid, g->nodes, g->replays, g->kernels, g->copies,
              g->memsets, fmt_ns(b1, sizeof b1, (double)g->gpu_ns),
              fmt_ns(b2, sizeof b2, g->replays ? (double)g->gpu_ns / (double)g->replays : 0));
    }
    fprintf(f, "\n%-10s %-40s %7s %11s  %s\n", "Graph node", "Work", "Runs", "GPU time",
            "Made by (capture-time call)");
    for (size_t i = 0; i < x->nn && i < TOP_NODES; i++) {
      const gs_node *n = &x->n[i];
      char nm[32], work[4 * 40 + 4];
      snprintf(nm, sizeof nm, "%u:%" PRIu64, n->graph, n->node & 0xffffffffu);
      rd_term_fit(work, sizeof work, 40, n->work);
      fprintf(f, "%-10s %s %7" PRIu64 " %11s  %s\n", nm, work, n->runs,
              fmt_ns(b1, sizeof b1, (double)n->gpu_ns), made_label(n, lab, sizeof lab));
    }
    if (x->nn > TOP_NODES) fprintf(f, "(%zu more nodes: --json lists all)\n", x->nn - TOP_NODES);
  }
  if (x->nind) {
    fprintf(f, "\n%9s %11s  %s\n", "Launches", "GPU time",
            "torch.compile kernel \u2190 aten ops fused into it, at the line that ran it");
    for (size_t i = 0; i < x->nind && i < 30; i++) {
      const gs_ind *k = &x->ind[i];
      fprintf(f, "%9" PRIu64 " %11s  %s%s%s at %s\n", k->count, fmt_ns(b1, sizeof b1, (double)k->gpu_ns),
              k->kernel, *k->aten ? " \u2190 " : "", k->aten, k->line);
    }
  }
}

void rd_gstats_json(FILE *f, rd_gstats *x) {
  sort_all(x);
  fputs(",\"graphs\":[", f);
  for (size_t i = 0; i < x->ng; i++) {
    const gs_graph *g = &x->g[i];
    fprintf(f, "%s{\"pid\":%u,\"graph\":%u,\"nodes\":%" PRIu64 ",\"replays\":%" PRIu64
               ",\"kernels\":%" PRIu64 ",\"copies\":%" PRIu64 ",\"memsets\":%" PRIu64
               ",\"gpu_ns\":%" PRIu64 "}", i ? "," : "", g->pid, g->graph, g->nodes, g->replays,
            g->kernels, g->copies, g->memsets, g->gpu_ns);
  }
  fputs("],\"graph_nodes\":[", f);
  for (size_t i = 0; i < x->nn; i++) {
    const gs_node *n = &x->n[i];
    fprintf(f, "%s{\"pid\":%u,\"graph\":%u,\"node\":%" PRIu64 ",\"work\":", i ? "," : "", n->pid,
            n->graph, n->node);
    rd_json_str(f, n->work);
    fprintf(f, ",\"runs\":%" PRIu64 ",\"gpu_ns\":%" PRIu64 ",\"made_by\":", n->runs, n->gpu_ns);
    rd_json_str(f, n->made_by);
    fputs(",\"op\":", f);
    rd_json_str(f, n->op);
    fputs(",\"where\":", f);
    rd_json_str(f, n->where);
    putc('}', f);
  }
  fputs("],\"inductor_kernels\":[", f);
  for (size_t i = 0; i < x->nind; i++) {
    const gs_ind *k = &x->ind[i];
    fputs(i ? ",{\"kernel\":" : "{\"kernel\":", f);
    rd_json_str(f, k->kernel);
    fputs(",\"aten_ops\":", f);
    rd_json_str(f, k->aten);
    fputs(",\"source_nodes\":", f);
    rd_json_str(f, k->nodes);
    fputs(",\"line\":", f);
    rd_json_str(f, k->line);
    fprintf(f, ",\"launches\":%" PRIu64 ",\"gpu_ns\":%" PRIu64 "}", k->count, k->gpu_ns);
  }
  putc(']', f);
}

void rd_gstats_free(rd_gstats *x) {
  if (!x) return;
  rd_gstats_trace_end(x);
  for (size_t i = 0; i < x->nn; i++) {
    free(x->n[i].work);
    free(x->n[i].made_by);
    free(x->n[i].op);
    free(x->n[i].where);
  }
  for (size_t i = 0; i < x->nind; i++) {
    free(x->ind[i].kernel);
    free(x->ind[i].aten);
    free(x->ind[i].nodes);
    free(x->ind[i].line);
  }
  rd_m_free(&x->ind_ix);
  free(x->g);
  free(x->n);
  free(x->ind);
  free(x);
}
