/* Simulated libcudnn.so.9, backend (graph) API: descriptors store their attributes generically
 * (name, type, elements); a few derived attributes are synthesized (engine heuristics return one
 * engine config; workspace sizes are 0 unless set). cudnnBackendExecute walks
 * plan -> engine config -> engine -> operation graph -> ops and enqueues one kernel for the
 * fused graph: flops from convolution (2*prod(Y)*prod(W[1:])) and matmul (2*prod(C)*K) ops,
 * bytes from the non-virtual tensors of the others. A graph of one 2-D convolution (fprop,
 * dgrad or wgrad: what PyTorch builds) also gets its result computed for small sizes by the
 * legacy API's CPU reference (cudnn.c), with the variant pack's pointers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "../../simcore.h"
/* exported whatever -fvisibility the build uses; the .map file chooses */
#pragma GCC visibility push(default)
#include "cudnn_sim.h"

#define BD_MAGIC 0x42444553u
struct battr {
  int name, type;
  int64_t count;
  void *data;
};
struct bdesc {
  unsigned magic;
  int type;
  int finalized;
  int nattr, cap;
  struct battr *a;
  struct bdesc **owned; /* descriptors made by us (heuristic results) */
  int nowned;
};

static size_t elem_size(int t) {
  switch (t) {
  case CUDNN_TYPE_HANDLE: case CUDNN_TYPE_VOID_PTR: case CUDNN_TYPE_BACKEND_DESCRIPTOR:
    return sizeof(void *);
  case CUDNN_TYPE_BOOLEAN: case CUDNN_TYPE_CHAR: return 1;
  case CUDNN_TYPE_INT64: case CUDNN_TYPE_DOUBLE: return 8;
  case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
  default: return 4; /* enums, float, int32 */
  }
}
static struct bdesc *B(cudnnBackendDescriptor_t d) {
  struct bdesc *b = d;
  return b && b->magic == BD_MAGIC ? b : NULL;
}
static struct battr *find(struct bdesc *b, int name) {
  for (int i = 0; i < b->nattr; i++)
    if (b->a[i].name == name) return &b->a[i];
  return NULL;
}
static void set(struct bdesc *b, int name, int type, int64_t count, const void *data) {
  struct battr *a = find(b, name);
  if (!a) {
    if (b->nattr == b->cap) {
      b->cap = b->cap ? 2 * b->cap : 8;
      b->a = realloc(b->a, sizeof *b->a * (size_t)b->cap);
    }
    a = &b->a[b->nattr++];
    a->data = NULL;
  }
  free(a->data);
  size_t n = elem_size(type) * (size_t)count;
  a->name = name;
  a->type = type;
  a->count = count;
  a->data = malloc(n ? n : 1);
  if (n) memcpy(a->data, data, n);
}
static struct bdesc *get_desc(struct bdesc *b, int name) {
  struct battr *a = b ? find(b, name) : NULL;
  return a && a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR && a->count > 0 ? B(((void **)a->data)[0]) : NULL;
}
static int64_t get_i64(struct bdesc *b, int name, int64_t dflt) {
  struct battr *a = b ? find(b, name) : NULL;
  if (!a || a->count < 1) return dflt;
  if (a->type == CUDNN_TYPE_INT64) return ((int64_t *)a->data)[0];
  if (elem_size(a->type) == 4) return ((int32_t *)a->data)[0];
  return dflt;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *d) {
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  struct bdesc *b = calloc(1, sizeof *b);
  b->magic = BD_MAGIC;
  b->type = type;
  *d = b;
  return CUDNN_STATUS_SUCCESS;
}
static void free_desc(struct bdesc *b) {
  for (int i = 0; i < b->nattr; i++) free(b->a[i].data);
  for (int i = 0; i < b->nowned; i++) free_desc(b->owned[i]);
  free(b->owned);
  free(b->a);
  b->magic = 0;
  free(b);
}
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
  struct bdesc *b = B(d);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  free_desc(b);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t d) {
  return B(d) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elems) {
  struct bdesc *b = B(d);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  if (b->finalized) return CUDNN_STATUS_NOT_INITIALIZED;
  if (count < 0 || (count > 0 && !elems)) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  set(b, name, type, count, elems);
  return CUDNN_STATUS_SUCCESS;
}
static struct bdesc *clone_deep(struct bdesc *b, struct bdesc *owner, int depth);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
  struct bdesc *b = B(d);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  switch (b->type) {
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    /* the handle (deprecated in cuDNN 9) may come from the operation graph instead */
    if (!get_desc(b, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)) return CUDNN_STATUS_BAD_PARAM;

    break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    if (!find(b, CUDNN_ATTR_OPERATIONGRAPH_OPS) || !find(b, CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
      return CUDNN_STATUS_BAD_PARAM;
    break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    if (!get_desc(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)) return CUDNN_STATUS_BAD_PARAM;
    break;
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    if (!find(b, CUDNN_ATTR_TENSOR_DIMENSIONS) || !find(b, CUDNN_ATTR_TENSOR_DATA_TYPE))
      return CUDNN_STATUS_BAD_PARAM;
    break;
  }
  /* A finalized descriptor is self-contained, as the real one: cudnn-frontend destroys the
   * operation graph, its operations and tensors, the heuristics and the engine config while it
   * keeps using what was built from them. Referenced descriptors are cloned, owned by b. */
  for (int i = 0; i < b->nattr; i++) {
    if (b->a[i].type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
    void **refs = (void **)b->a[i].data;
    for (int64_t e = 0; e < b->a[i].count; e++) {
      struct bdesc *sub = B(refs[e]);
      if (sub) refs[e] = clone_deep(sub, b, 0);
    }
  }
  b->finalized = 1;
  return CUDNN_STATUS_SUCCESS;
}

static void own(struct bdesc *b, struct bdesc *d) {
  b->owned = realloc(b->owned, sizeof *b->owned * (size_t)(b->nowned + 1));
  b->owned[b->nowned++] = d;
}
/* Clones b and the descriptors reachable from it into descriptors owned by `owner`. */
static struct bdesc *clone_deep(struct bdesc *b, struct bdesc *owner, int depth) {
  struct bdesc *c = calloc(1, sizeof *c);
  c->magic = BD_MAGIC;
  c->type = b->type;
  c->finalized = b->finalized;
  own(owner, c);
  for (int i = 0; i < b->nattr; i++) {
    struct battr *a = &b->a[i];
    set(c, a->name, a->type, a->count, a->data);
    if (a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || depth > 8) continue;
    void **dst = (void **)find(c, a->name)->data;
    for (int64_t e = 0; e < a->count; e++) {
      struct bdesc *sub = B(dst[e]);
      if (sub) dst[e] = clone_deep(sub, owner, depth + 1);
    }
  }
  return c;
}

static void copy_into(struct bdesc *dst, struct bdesc *src) {
  for (int i = 0; i < src->nattr; i++)
    set(dst, src->a[i].name, src->a[i].type, src->a[i].count, src->a[i].data);
  dst->finalized = src->finalized;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t req,
                                       int64_t *count, void *elems) {
  struct bdesc *b = B(d);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  if (req < 0) return CUDNN_STATUS_BAD_PARAM;
  if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    if (count) *count = 1;
    if (req >= 1 && elems) {
      struct bdesc *cfg = B(((void **)elems)[0]);
      if (!cfg) return CUDNN_STATUS_BAD_PARAM;
      /* the engine belongs to the config it is written into: the caller may destroy the
       * heuristics descriptor and keep using the config (cudnn-frontend does) */
      void *eng;
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng);
      own(cfg, eng);
      struct bdesc *g = get_desc(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      void *graph = g ? clone_deep(g, eng, 0) : NULL;
      int64_t idx = 0;
      set(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
      set(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &idx);
      ((struct bdesc *)eng)->finalized = 1;
      set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
      cfg->finalized = 1;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  struct battr *a = find(b, name);
  if (!a) {
    /* derived scalars: no workspace, no dynamic shared memory, one engine (index 0) */
    int64_t v = -1;
    switch ((int)name) {
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED: case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
      v = 0;
      break;
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT: v = 1; break;
    }
    if (v >= 0 && (type == CUDNN_TYPE_INT64 || type == CUDNN_TYPE_INT32)) {
      if (count) *count = 1;
      if (req >= 1 && elems) {
        if (type == CUDNN_TYPE_INT64) *(int64_t *)elems = v;
        else *(int32_t *)elems = (int32_t)v;
      }
      return CUDNN_STATUS_SUCCESS;
    }
    if (count) *count = 0;
    return CUDNN_STATUS_SUCCESS;
  }
  if (count) *count = a->count;
  int64_t n = req < a->count ? req : a->count;
  if (n <= 0 || !elems) return CUDNN_STATUS_SUCCESS;
  if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR && type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    /* the caller passes descriptors it created; fill them in */
    for (int64_t i = 0; i < n; i++) {
      struct bdesc *dst = B(((void **)elems)[i]), *src = B(((void **)a->data)[i]);
      if (!dst || !src) return CUDNN_STATUS_BAD_PARAM;
      copy_into(dst, src);
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (elem_size(type) != elem_size(a->type)) return CUDNN_STATUS_BAD_PARAM;
  memcpy(elems, a->data, elem_size(a->type) * (size_t)n);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- execution ---- */
static double tensor_elems(struct bdesc *t) {
  struct battr *a = t ? find(t, CUDNN_ATTR_TENSOR_DIMENSIONS) : NULL;
  if (!a || a->type != CUDNN_TYPE_INT64) return 0;
  double n = 1;
  for (int64_t i = 0; i < a->count; i++) n *= (double)((int64_t *)a->data)[i];
  return n;
}
static double tensor_inner(struct bdesc *t, int from) { /* product of dims[from:] */
  struct battr *a = t ? find(t, CUDNN_ATTR_TENSOR_DIMENSIONS) : NULL;
  if (!a || a->type != CUDNN_TYPE_INT64) return 0;
  double n = 1;
  for (int64_t i = from; i < a->count; i++) n *= (double)((int64_t *)a->data)[i];
  return n;
}
static int tensor_dt(struct bdesc *t) {
  return t ? (int)get_i64(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT) : CUDNN_DATA_FLOAT;
}
static double tensor_bytes(struct bdesc *t) {
  if (!t || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) return 0;
  struct battr *v = find(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  if (v && v->count > 0 && *(char *)v->data) return 0;
  return tensor_elems(t) * (double)cudnnsim_dtype_size(tensor_dt(t));
}

/* ---- a single-convolution graph computed on the CPU reference (cudnn.c) ---- */
static int i64s(struct bdesc *b, int name, int64_t *out, int n) {
  struct battr *a = b ? find(b, name) : NULL;
  if (!a || a->type != CUDNN_TYPE_INT64 || a->count != n) return -1;
  memcpy(out, a->data, sizeof *out * (size_t)n);
  return 0;
}
static double scalar_attr(struct bdesc *op, int name, double dflt) {
  struct battr *a = find(op, name);
  if (!a || a->count < 1) return dflt;
  if (a->type == CUDNN_TYPE_FLOAT) return *(float *)a->data;
  if (a->type == CUDNN_TYPE_DOUBLE) return *(double *)a->data;
  return dflt;
}
static void *vp_ptr(struct bdesc *vp, struct bdesc *t) {
  int64_t uid = get_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, -1);
  struct battr *u = find(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), *d = find(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (!u || !d || u->type != CUDNN_TYPE_INT64) return NULL;
  for (int64_t i = 0; i < u->count && i < d->count; i++)
    if (((int64_t *)u->data)[i] == uid) return ((void **)d->data)[i];
  return NULL;
}
/* fills c for conv op `op` (dir 0/1/2, tensors x, w, y as the op names them); -1 if not 2-D */
static int conv_args(struct cudnnsim_conv *c, int dir, struct bdesc *op, struct bdesc *vp,
                     struct bdesc *x, struct bdesc *w, struct bdesc *y) {
  static const int cd_attr[3] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC};
  static const int al_attr[3] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA};
  static const int be_attr[3] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  struct bdesc *cd = get_desc(op, cd_attr[dir]);
  memset(c, 0, sizeof *c);
  c->dir = dir;
  if (!cd || i64s(x, CUDNN_ATTR_TENSOR_DIMENSIONS, c->xd, 4) || i64s(x, CUDNN_ATTR_TENSOR_STRIDES, c->xs, 4) ||
      i64s(w, CUDNN_ATTR_TENSOR_DIMENSIONS, c->wd, 4) || i64s(w, CUDNN_ATTR_TENSOR_STRIDES, c->ws, 4) ||
      i64s(y, CUDNN_ATTR_TENSOR_DIMENSIONS, c->yd, 4) || i64s(y, CUDNN_ATTR_TENSOR_STRIDES, c->ys, 4) ||
      i64s(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, c->pad, 2) ||
      i64s(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, c->stride, 2) ||
      i64s(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, c->dil, 2))
    return -1;
  c->xdt = tensor_dt(x); c->wdt = tensor_dt(w); c->ydt = tensor_dt(y);
  c->mode = (int)get_i64(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_CROSS_CORRELATION);
  void *px = vp_ptr(vp, x), *pw = vp_ptr(vp, w), *py = vp_ptr(vp, y);
  c->x = px; c->w = pw; c->y = py;
  c->out = dir == 0 ? py : dir == 1 ? px : pw;
  if (dir == 1) c->x = NULL;
  c->alpha = scalar_attr(op, al_attr[dir], 1);
  c->beta = scalar_attr(op, be_attr[dir], 0);
  return 0;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t varpack) {
  if (!cudnnsim_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  struct bdesc *p = B(plan), *vp = B(varpack);
  if (!p || !vp || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      vp->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM;
  if (!p->finalized || !vp->finalized) return CUDNN_STATUS_NOT_INITIALIZED;
  struct bdesc *cfg = get_desc(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  struct bdesc *eng = get_desc(cfg, CUDNN_ATTR_ENGINECFG_ENGINE);
  struct bdesc *graph = get_desc(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
  struct battr *ops = graph ? find(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS) : NULL;
  double flops = 0, bytes = 0;
  int dt = CUDNN_DATA_FLOAT, have_main = 0, nconv = 0, computable = 0;
  struct cudnnsim_conv conv;
  char name[320];
  snprintf(name, sizeof name, "cudnn_generated_fort_native_pointwise_kernel0_0");
  for (int64_t i = 0; ops && i < ops->count; i++) {
    struct bdesc *op = B(((void **)ops->data)[i]);
    if (!op) continue;
    struct bdesc *y = NULL, *w = NULL, *x = NULL;
    const char *pass = NULL;
    switch (op->type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      x = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X);
      w = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
      y = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
      pass = "fprop";
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      x = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX);
      w = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W);
      y = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY);
      pass = "dgrad";
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      x = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X);
      w = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW);
      y = get_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
      pass = "wgrad";
      break;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      struct bdesc *a = get_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
      struct bdesc *bm = get_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
      struct bdesc *c = get_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
      struct battr *ad = a ? find(a, CUDNN_ATTR_TENSOR_DIMENSIONS) : NULL;
      double k = ad && ad->count > 0 && ad->type == CUDNN_TYPE_INT64 ? (double)((int64_t *)ad->data)[ad->count - 1] : 0;
      flops += 2 * tensor_elems(c) * k;
      bytes += tensor_bytes(a) + tensor_bytes(bm) + tensor_bytes(c);
      if (!have_main) {
        dt = tensor_dt(a);
        snprintf(name, sizeof name, "sm90_xmma_gemm_%s_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
                 "execute_segment_k_off_kernel__5x_cudnn", cudnnsim_xmma_types(dt));
        have_main = 1;
      }
      continue;
    }
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
      if (!have_main) {
        snprintf(name, sizeof name, "cudnn_generated_fort_native_sdpa_sm90_flash_%s_wgmma_f16_knob_3_"
                 "64x64x64_4x1x1_kernel0_0", op->type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR ? "fprop" : "bprop");
        have_main = 1;
      }
      /* bytes of its tensors, as below */
      __attribute__((fallthrough));
    default:
      for (int k = 0; k < op->nattr; k++)
        if (op->a[k].type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
          for (int64_t e = 0; e < op->a[k].count; e++) bytes += tensor_bytes(B(((void **)op->a[k].data)[e]));
      continue;
    }
    if (nconv++ == 0 && ops->count == 1)
      computable = !conv_args(&conv, pass[0] == 'f' ? 0 : pass[0] == 'd' ? 1 : 2, op, vp, x, w, y);
    flops += 2 * tensor_elems(y) * tensor_inner(w, 1);
    bytes += tensor_bytes(x) + tensor_bytes(w) + tensor_bytes(y);
    if (!have_main) {
      dt = tensor_dt(x);
      int nhwc = 0;
      struct battr *st = x ? find(x, CUDNN_ATTR_TENSOR_STRIDES) : NULL;
      if (st && st->count >= 3 && st->type == CUDNN_TYPE_INT64) nhwc = ((int64_t *)st->data)[1] == 1;
      snprintf(name, sizeof name, "sm90_xmma_%s_implicit_gemm_%s_%s_tilesize128x128x64_"
               "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn", pass,
               cudnnsim_xmma_types(dt), nhwc ? "nhwckrsc_nhwc" : "nchwkcrs_nchw");
      have_main = 1;
    }
  }
  if (computable) { /* a lone convolution: its result, for small sizes, as the legacy API's */
    if (cudnnsim_conv_launch(cudnnsim_stream(handle), name, &conv, flops, bytes, cudnnsim_class(dt)))
      return CUDNN_STATUS_EXECUTION_FAILED;
    return CUDNN_STATUS_SUCCESS;
  }
  if (cudnnsim_launch(cudnnsim_stream(handle), name, 132, 384, flops, bytes, cudnnsim_class(dt),
                      NULL, NULL))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}
