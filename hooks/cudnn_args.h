/* cudnn_args.h — the convolution extractor of hooks/gen/cudnn_hooks.c: N, C, H, W, K, R, S,
 * padding, stride, dilation, groups and data type read from the tensor, filter and convolution
 * descriptors through the real cudnnGet*NdDescriptor functions (resolved with dlh_resolve: they
 * bypass the wrappers and are never recorded). Descriptor queries are host-only: the values are
 * there even when the convolution itself fails (no GPU). 2D and 3D (5-dim) descriptors; for 3D
 * the depth dimension is folded into `flops` only. */
#ifndef DLH_CUDNN_ARGS_H
#define DLH_CUDNN_ARGS_H

#include <stdint.h>
#include <string.h>
#include <cudnn.h>
#include "dlh_hook.h"

struct dlh_conv_info {
  int64_t N, C, H, W, K, R, S, pad, stride, dilation, groups;
  int dtype;
  double flops;
};

typedef cudnnStatus_t (*dlh_tnd_fn)(const cudnnTensorDescriptor_t, int, cudnnDataType_t *, int *,
                                    int[], int[]);
typedef cudnnStatus_t (*dlh_fnd_fn)(const cudnnFilterDescriptor_t, int, cudnnDataType_t *,
                                    cudnnTensorFormat_t *, int *, int[]);
typedef cudnnStatus_t (*dlh_cnd_fn)(const cudnnConvolutionDescriptor_t, int, int *, int[], int[],
                                    int[], cudnnConvolutionMode_t *, cudnnDataType_t *);
typedef cudnnStatus_t (*dlh_cgc_fn)(cudnnConvolutionDescriptor_t, int *);

static inline void *dlh_cudnn_real(void **cache, const char *name) {
  void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!p) {
    p = dlh_resolve(name, DLH_LIB_CUDNN);
    __atomic_store_n(cache, p, __ATOMIC_RELEASE);
  }
  return p;
}

/* Dimensions of a tensor descriptor (up to 8): returns the count, 0 when unreadable. */
static inline int dlh_cudnn_tensor(cudnnTensorDescriptor_t d, int *dims, int *dtype) {
  static void *fn;
  dlh_tnd_fn get = (dlh_tnd_fn)dlh_cudnn_real(&fn, "cudnnGetTensorNdDescriptor");
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int nb = 0, strides[8];
  if (!d || !get || get(d, 8, &dt, &nb, dims, strides) != CUDNN_STATUS_SUCCESS) return 0;
  if (dtype) *dtype = (int)dt;
  return nb < 0 ? 0 : nb > 8 ? 8 : nb;
}

static inline int dlh_cudnn_filter(cudnnFilterDescriptor_t d, int *dims, int *dtype) {
  static void *fn;
  dlh_fnd_fn get = (dlh_fnd_fn)dlh_cudnn_real(&fn, "cudnnGetFilterNdDescriptor");
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t fmt = CUDNN_TENSOR_NCHW;
  int nb = 0;
  if (!d || !get || get(d, 8, &dt, &fmt, &nb, dims) != CUDNN_STATUS_SUCCESS) return 0;
  if (dtype) *dtype = (int)dt;
  return nb < 0 ? 0 : nb > 8 ? 8 : nb;
}

/* x: the input (activation) tensor, w: the filter, y: the output tensor, whichever direction
 * the call computes (backward data: x = dxDesc, y = dyDesc). */
static inline void dlh_conv_read(struct dlh_conv_info *o, cudnnTensorDescriptor_t x,
                                 cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                 cudnnTensorDescriptor_t y) {
  static void *cnd, *cgc;
  memset(o, 0, sizeof *o);
  o->groups = 1;
  int xd[8] = {0}, wd[8] = {0}, yd[8] = {0}, dt = 0;
  int nx = dlh_cudnn_tensor(x, xd, &dt);
  int nw = dlh_cudnn_filter(w, wd, nx ? NULL : &dt);
  int ny = dlh_cudnn_tensor(y, yd, NULL);
  o->dtype = dt;
  if (nx >= 3) { o->N = xd[0]; o->C = xd[1]; o->H = xd[nx - 2]; o->W = xd[nx - 1]; }
  if (nw >= 3) { o->K = wd[0]; o->R = wd[nw - 2]; o->S = wd[nw - 1]; }
  dlh_cnd_fn gcnd = (dlh_cnd_fn)dlh_cudnn_real(&cnd, "cudnnGetConvolutionNdDescriptor");
  int len = 0, pad[6] = {0}, stride[6] = {0}, dil[6] = {0};
  cudnnConvolutionMode_t mode;
  cudnnDataType_t ct;
  if (conv && gcnd && gcnd(conv, 6, &len, pad, stride, dil, &mode, &ct) == CUDNN_STATUS_SUCCESS &&
      len > 0) {
    o->pad = pad[0]; o->stride = stride[0]; o->dilation = dil[0];
  }
  dlh_cgc_fn ggc = (dlh_cgc_fn)dlh_cudnn_real(&cgc, "cudnnGetConvolutionGroupCount");
  int g = 1;
  if (conv && ggc && ggc(conv, &g) == CUDNN_STATUS_SUCCESS && g > 0) o->groups = g;
  /* flops = 2 N K (output spatial) (C / groups) (filter spatial) */
  if (nx >= 3 && nw >= 3 && ny == nx && o->groups > 0) {
    double f = 2.0 * (double)o->N * (double)o->K * ((double)o->C / (double)o->groups);
    for (int i = 2; i < ny; i++) f *= (double)yd[i];
    for (int i = 2; i < nw; i++) f *= (double)wd[i];
    o->flops = f < 0 ? 0 : f;
  }
}

/* Workspace size of a backend execution plan (CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE), 0 when
 * it cannot be read. */
static inline uint64_t dlh_cudnn_plan_workspace(cudnnBackendDescriptor_t plan) {
  static void *fn;
  typedef cudnnStatus_t (*get_fn)(const cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                                  cudnnBackendAttributeType_t, int64_t, int64_t *, void *);
  get_fn get = (get_fn)dlh_cudnn_real(&fn, "cudnnBackendGetAttribute");
  int64_t n = 0, ws = 0;
  if (!plan || !get ||
      get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) !=
          CUDNN_STATUS_SUCCESS || n < 1 || ws < 0)
    return 0;
  return (uint64_t)ws;
}

/* ---- backend graph API: what cudnnBackendExecute runs ---------------------------------------
 * Descriptors are opaque and the library cannot be asked for everything (an operation graph's ops
 * come back only into descriptors of the right type), so the wrappers of
 * cudnnBackendCreateDescriptor / SetAttribute / GetAttribute(ENGINEHEUR_RESULTS) /
 * DestroyDescriptor note what the program builds: tensors (dims, type), convolutions (padding,
 * stride, dilation), convolution and matmul operations, the graph's ops, and the chain
 * plan -> engine config -> engine -> graph. cudnnBackendExecute then finds the graph's first
 * convolution (or matmul) and records its shape and flops. A fixed hash table (4096 slots, open
 * addressing on the address): slots are claimed with a compare-and-swap and never move;
 * descriptors beyond it are not described (best effort). */
#define DLH_BK_SLOTS 4096
/* What an execution plan runs: op 1 convolution forward, 2 backward data, 3 backward filter,
 * 4 matmul, 0 unknown; conv fields as dlh_conv_read; matmul flops 2·prod(C dims)·k. */
struct dlh_bk_info { int op; struct dlh_conv_info c; };
struct dlh_bk {
  void *_Atomic desc;        /* NULL free, (void *)1 being claimed, (void *)2 destroyed */
  int type;                  /* cudnnBackendDescriptorType_t */
  int ndims, dtype;
  int64_t dims[8];           /* tensor: dimensions; convolution: pad[0..2] stride[3..5] dil[6..7] */
  void *ref[4];              /* operation: x, w, y, conv; graph: first 4 ops; chain: the next */
  struct dlh_bk_info info;   /* graph, engine config, engine, plan: what the graph runs,
                                described while its operations and tensors existed (cudnn-
                                frontend destroys them once the graph is built, and the graph
                                before it builds the plan) */
};
static struct dlh_bk dlh_bks[DLH_BK_SLOTS];

/* Open addressing on the descriptor's address; destroyed slots stay as tombstones ((void *)2)
 * so that later probes go on past them, and are reused by new descriptors. */
static inline unsigned dlh_bk_hash(const void *d) {
  uint64_t x = (uint64_t)(uintptr_t)d;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (unsigned)x & (DLH_BK_SLOTS - 1);
}

static inline struct dlh_bk *dlh_bk_find(const void *d) {
  if (!d) return NULL;
  for (unsigned n = 0, i = dlh_bk_hash(d); n < DLH_BK_SLOTS; n++, i = (i + 1) & (DLH_BK_SLOTS - 1)) {
    void *c = __atomic_load_n(&dlh_bks[i].desc, __ATOMIC_ACQUIRE);
    if (c == d) return &dlh_bks[i];
    if (!c) break;
  }
  return NULL;
}

static inline void dlh_bk_create(cudnnStatus_t r, int type, cudnnBackendDescriptor_t *d) {
  if (r != CUDNN_STATUS_SUCCESS || !d || !*d) return;
  struct dlh_bk *b = dlh_bk_find(*d);   /* an address seen before whose destroy was missed */
  if (b) {
    memset((char *)b + sizeof(void *), 0, sizeof *b - sizeof(void *));
    b->type = type;
    return;
  }
  for (unsigned n = 0, i = dlh_bk_hash(*d); n < DLH_BK_SLOTS; n++, i = (i + 1) & (DLH_BK_SLOTS - 1)) {
    void *c = __atomic_load_n(&dlh_bks[i].desc, __ATOMIC_ACQUIRE);
    if (c && c != (void *)2) continue;
    if (!__atomic_compare_exchange_n(&dlh_bks[i].desc, &c, (void *)1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      continue;
    memset((char *)&dlh_bks[i] + sizeof(void *), 0, sizeof dlh_bks[i] - sizeof(void *));
    dlh_bks[i].type = type;
    __atomic_store_n(&dlh_bks[i].desc, (void *)*d, __ATOMIC_RELEASE);
    return;
  }
}

static inline void dlh_bk_destroy(cudnnBackendDescriptor_t d) {
  struct dlh_bk *b = dlh_bk_find(d);
  if (b) __atomic_store_n(&b->desc, (void *)2, __ATOMIC_RELEASE);
}

static inline void dlh_bk_ints(int64_t *dst, int n, const void *src, int64_t count) {
  for (int i = 0; i < n && i < count; i++) dst[i] = ((const int64_t *)src)[i];
}

static inline void dlh_bk_graph(struct dlh_bk_info *o, struct dlh_bk *g);
static inline void dlh_bk_set(cudnnStatus_t r, cudnnBackendDescriptor_t d, int name, int type,
                              int64_t count, const void *elems) {
  struct dlh_bk *b;
  if (r != CUDNN_STATUS_SUCCESS || !elems || count < 1 || !(b = dlh_bk_find(d))) return;
  const void *const *descs = (const void *const *)elems;
  int isdesc = type == CUDNN_TYPE_BACKEND_DESCRIPTOR, isint = type == CUDNN_TYPE_INT64;
  switch (name) {
  case CUDNN_ATTR_TENSOR_DIMENSIONS:
    if (isint) { b->ndims = count > 8 ? 8 : (int)count; dlh_bk_ints(b->dims, 8, elems, count); }
    break;
  case CUDNN_ATTR_TENSOR_DATA_TYPE:
    if (type == CUDNN_TYPE_DATA_TYPE) b->dtype = *(const int *)elems;
    break;
  case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: if (isint) dlh_bk_ints(b->dims + 0, 3, elems, count); break;
  case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: if (isint) dlh_bk_ints(b->dims + 3, 3, elems, count); break;
  case CUDNN_ATTR_CONVOLUTION_DILATIONS: if (isint) dlh_bk_ints(b->dims + 6, 2, elems, count); break;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X: case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X: case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
    if (isdesc) b->ref[0] = (void *)descs[0];
    break;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W: case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW: case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
    if (isdesc) b->ref[1] = (void *)descs[0];
    break;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y: case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY: case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
    if (isdesc) b->ref[2] = (void *)descs[0];
    break;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC:
    if (isdesc) b->ref[3] = (void *)descs[0];
    break;
  case CUDNN_ATTR_OPERATIONGRAPH_OPS:
    if (isdesc) {
      for (int i = 0; i < 4; i++) b->ref[i] = i < count ? (void *)descs[i] : NULL;
      /* described now: cudnn-frontend destroys the tensors once the graph is built */
      memset(&b->info, 0, sizeof b->info);
      dlh_bk_graph(&b->info, b);
    }
    break;
  case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
  case CUDNN_ATTR_ENGINECFG_ENGINE: case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
    if (isdesc) {
      b->ref[0] = (void *)descs[0];
      struct dlh_bk *n = dlh_bk_find(descs[0]);
      if (name == CUDNN_ATTR_ENGINE_OPERATION_GRAPH) dlh_bk_graph(&b->info, n);
      else if (name != CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH && n) b->info = n->info;
    }
    break;
  default:
    break;
  }
}

/* GetAttribute(ENGINEHEUR_RESULTS) filled engine configs: they run the heuristic's graph. */
static inline void dlh_bk_get(cudnnStatus_t r, cudnnBackendDescriptor_t d, int name, int type,
                              int64_t req, const int64_t *count, void *elems) {
  struct dlh_bk *h;
  if (r != CUDNN_STATUS_SUCCESS || name != CUDNN_ATTR_ENGINEHEUR_RESULTS ||
      type != CUDNN_TYPE_BACKEND_DESCRIPTOR || !elems || !(h = dlh_bk_find(d)))
    return;
  int64_t n = count && *count < req ? *count : req;
  for (int64_t i = 0; i < n; i++) {
    struct dlh_bk *c = dlh_bk_find(((void **)elems)[i]);
    if (c && !c->ref[0]) {           /* cfg: ref[1] = graph, when no engine set */
      c->ref[1] = h->ref[0];
      dlh_bk_graph(&c->info, dlh_bk_find(h->ref[0]));
    }
  }
}

/* Describes what graph g runs (its first convolution or matmul). */
static inline void dlh_bk_graph(struct dlh_bk_info *o, struct dlh_bk *g) {
  if (g && g->info.op) {     /* described when its operations were set */
    if (o != &g->info) *o = g->info;
    return;
  }
  memset(o, 0, sizeof *o);
  for (int i = 0; g && i < 4 && !o->op; i++) {
    struct dlh_bk *op = dlh_bk_find(g->ref[i]);
    if (!op) continue;
    struct dlh_bk *x = dlh_bk_find(op->ref[0]), *w = dlh_bk_find(op->ref[1]),
                  *y = dlh_bk_find(op->ref[2]), *cv = dlh_bk_find(op->ref[3]);
    switch (op->type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: o->op = 1; break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: o->op = 2; break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: o->op = 3; break;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: o->op = 4; break;
    default: continue;
    }
    struct dlh_conv_info *c = &o->c;
    c->groups = 1;
    if (o->op == 4) {          /* C = A x B: k is A's last dimension */
      if (x && y && x->ndims > 0) {
        double f = 2.0 * (double)x->dims[x->ndims - 1];
        for (int k = 0; k < y->ndims; k++) f *= (double)y->dims[k];
        c->flops = f;
        c->dtype = x->dtype;
      }
      break;
    }
    if (x && x->ndims >= 3) {
      c->N = x->dims[0]; c->C = x->dims[1]; c->H = x->dims[x->ndims - 2]; c->W = x->dims[x->ndims - 1];
      c->dtype = x->dtype;
    }
    if (w && w->ndims >= 3) {
      c->K = w->dims[0]; c->R = w->dims[w->ndims - 2]; c->S = w->dims[w->ndims - 1];
      if (w->dims[1] > 0 && c->C >= w->dims[1]) c->groups = c->C / w->dims[1];
    }
    if (cv) { c->pad = cv->dims[0]; c->stride = cv->dims[3]; c->dilation = cv->dims[6]; }
    if (x && w && y && y->ndims == x->ndims && w->ndims == x->ndims && x->ndims >= 3) {
      double f = 2.0 * (double)c->N * (double)c->K * (double)w->dims[1];
      for (int k = 2; k < y->ndims; k++) f *= (double)y->dims[k] * (double)w->dims[k];
      c->flops = f;
    }
  }
}

static inline void dlh_bk_plan(struct dlh_bk_info *o, cudnnBackendDescriptor_t plan) {
  memset(o, 0, sizeof *o);
  struct dlh_bk *p = dlh_bk_find(plan), *cfg = p ? dlh_bk_find(p->ref[0]) : NULL, *g = NULL;
  if (p && p->info.op) { *o = p->info; return; }
  if (cfg) {
    struct dlh_bk *eng = dlh_bk_find(cfg->ref[0]);
    if (eng && eng->info.op) { *o = eng->info; return; }
    if (!eng && cfg->info.op) { *o = cfg->info; return; }
    g = dlh_bk_find(eng ? eng->ref[0] : cfg->ref[1]);
  }
  dlh_bk_graph(o, g);
}

#endif
