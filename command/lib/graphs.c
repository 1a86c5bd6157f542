/* graphs.c — what a trace says about code that makes GPU work for later (rd.h, "CUDA graphs and
 * torch.compile"):
 *
 *   CUDA graphs  GraphNodeBatch packets: every node of a graph with the call that made it
 *                (stream capture, an explicit node call) or the node it is a copy of
 *                (instantiation). rd_graph_node_made follows the copies back to the node a
 *                call made, so that scan.c can hand every consumer a replayed kernel, copy or
 *                memset as the work of its capture-time call (rd_gpu.corr), with the replay's
 *                own call kept aside (rd_gpu.launch_corr).
 *   Inductor     InductorKernel packets: for each Triton kernel of torch.compile's generated
 *                code, the aten ops and FX source nodes fused into it and the lines of the file
 *                that launch it.
 *
 * Both are definitions: read by the first pass of a trace (trace.c), kept until it is closed. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"

struct rd_graphs {
  rd_graph_node *node;
  size_t nnode, capnode;
  rd_u64map node_ix; /* node id -> index in node */
  rd_inductor_kernel *ik;
  size_t nik, capik;
  rd_u64map at_ix;   /* hash(file, line) -> index in ik (launch lines and definitions) */
  rd_u64map name_ix; /* hash(kernel name) -> index in ik (the first definition) */
};

static struct rd_graphs *state(rd_trace *t) {
  if (!t->graphs) {
    t->graphs = rd_xmalloc(sizeof *t->graphs);
    memset(t->graphs, 0, sizeof *t->graphs);
  }
  return t->graphs;
}

static uint64_t at_key(const char *file, uint32_t line) {
  return rd_hash64(rd_hash_str(file) ^ ((uint64_t)line * 0x9e3779b97f4a7c15ull));
}

static char *dup_or_empty(const char *s) { return rd_xstrdup(s ? s : ""); }

void rd_graphs_define(rd_trace *t, const Dlh__Packet *p) {
  if (p->data_case == DLH__PACKET__DATA_GRAPH_NODES) {
    const Dlh__GraphNodeBatch *b = p->graph_nodes;
    struct rd_graphs *g = state(t);
    for (size_t i = 0; i < b->n_node; i++) {
      if (!b->node[i]) continue;
      uint32_t ix;
      if (!rd_m_get(&g->node_ix, b->node[i], &ix)) {
        if (g->nnode == g->capnode) {
          g->capnode = g->capnode ? g->capnode * 2 : 256;
          g->node = rd_xrealloc(g->node, g->capnode * sizeof *g->node);
        }
        ix = (uint32_t)g->nnode++;
        rd_m_put(&g->node_ix, b->node[i], ix);
      }
      rd_graph_node *n = &g->node[ix];
      n->node = b->node[i];
      n->graph = i < b->n_graph ? b->graph[i] : 0;
      n->type = i < b->n_type ? b->type[i] : 0;
      n->corr = i < b->n_corr ? b->corr[i] : 0;
      n->tid = i < b->n_tid ? b->tid[i] : 0;
      n->origin = i < b->n_origin ? b->origin[i] : 0;
    }
  } else if (p->data_case == DLH__PACKET__DATA_INDUCTOR) {
    const Dlh__InductorKernel *k = p->inductor;
    if (!k->file || !k->kernel || !*k->kernel) return;
    struct rd_graphs *g = state(t);
    uint32_t ix;
    if (rd_m_get(&g->at_ix, at_key(k->file, k->has_def_line ? k->def_line : 0), &ix) &&
        !strcmp(g->ik[ix].kernel, k->kernel) && !strcmp(g->ik[ix].file, k->file))
      return; /* the same kernel again (a second pass, a re-imported file) */
    if (g->nik == g->capik) {
      g->capik = g->capik ? g->capik * 2 : 64;
      g->ik = rd_xrealloc(g->ik, g->capik * sizeof *g->ik);
    }
    ix = (uint32_t)g->nik++;
    rd_inductor_kernel *x = &g->ik[ix];
    x->file = dup_or_empty(k->file);
    x->kernel = dup_or_empty(k->kernel);
    x->source_nodes = dup_or_empty(k->source_nodes);
    x->aten_ops = dup_or_empty(k->aten_ops);
    x->def_line = k->has_def_line ? k->def_line : 0;
    rd_m_put(&g->at_ix, at_key(x->file, x->def_line), ix);
    for (size_t i = 0; i < k->n_launch_line; i++)
      rd_m_put(&g->at_ix, at_key(x->file, k->launch_line[i]), ix);
    uint32_t old;
    if (!rd_m_get(&g->name_ix, rd_hash_str(x->kernel), &old))
      rd_m_put(&g->name_ix, rd_hash_str(x->kernel), ix);
  }
}

void rd_graphs_free(rd_trace *t) {
  struct rd_graphs *g = t->graphs;
  if (!g) return;
  free(g->node);
  rd_m_free(&g->node_ix);
  for (size_t i = 0; i < g->nik; i++) {
    free((char *)g->ik[i].file);
    free((char *)g->ik[i].kernel);
    free((char *)g->ik[i].source_nodes);
    free((char *)g->ik[i].aten_ops);
  }
  free(g->ik);
  rd_m_free(&g->at_ix);
  rd_m_free(&g->name_ix);
  free(g);
  t->graphs = NULL;
}

const rd_graph_node *rd_graph_node_get(const rd_trace *t, uint64_t node) {
  uint32_t ix;
  if (!t->graphs || !node || !rd_m_get(&t->graphs->node_ix, node, &ix)) return NULL;
  return &t->graphs->node[ix];
}

const rd_graph_node *rd_graph_node_made(const rd_trace *t, uint64_t node) {
  const rd_graph_node *n = rd_graph_node_get(t, node);
  for (int hops = 0; n && n->origin && hops < 16; hops++) /* a copy of a copy ... */
    n = rd_graph_node_get(t, n->origin);
  return n && !n->origin && n->corr ? n : NULL;
}

size_t rd_graph_node_count(const rd_trace *t) { return t->graphs ? t->graphs->nnode : 0; }

const rd_inductor_kernel *rd_inductor_at(const rd_trace *t, const char *file, uint32_t line) {
  uint32_t ix;
  if (!t->graphs || !t->graphs->nik || !file) return NULL;
  if (!rd_m_get(&t->graphs->at_ix, at_key(file, line), &ix)) return NULL;
  const rd_inductor_kernel *x = &t->graphs->ik[ix];
  return strcmp(x->file, file) ? NULL : x;
}

const rd_inductor_kernel *rd_inductor_kernel_named(const rd_trace *t, const char *name) {
  uint32_t ix;
  if (!t->graphs || !t->graphs->nik || !name) return NULL;
  if (!rd_m_get(&t->graphs->name_ix, rd_hash_str(name), &ix)) return NULL;
  const rd_inductor_kernel *x = &t->graphs->ik[ix];
  return strcmp(x->kernel, name) ? NULL : x;
}

size_t rd_inductor_count(const rd_trace *t) { return t->graphs ? t->graphs->nik : 0; }

int rd_inductor_file(const char *file) { return file && strstr(file, "/torchinductor_") != NULL; }
