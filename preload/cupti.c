/* cupti.c — the CUPTI subscriber: runtime/driver API callbacks (the only way to see programs
 * that link cudart statically) and GPU activity records (kernels, copies, memsets, syncs),
 * linked to the calls that caused them by correlation id.
 *
 * libdlhook.so is also a CUDA injection library: the constructor points CUDA_INJECTION64_PATH
 * at itself when it is unset, and the driver calls InitializeInjection() during cuInit, before
 * the first context exists, whether cudart is linked dynamically or statically. When another
 * tool owns CUDA_INJECTION64_PATH, CUPTI is set up at the first intercepted call instead.
 * CUPTI is loaded with dlopen: absent, failing or owned by another subscriber (Nsight Systems,
 * the PyTorch profiler), it costs one warning and API tracing goes on through the wrappers.
 *
 * A call seen by both a wrapper and a callback is recorded once, by the wrapper; the callback
 * only hands it the correlation id. Activity buffers completed by CUPTI are queued (lock-free)
 * for the writer thread, which converts them; nothing is converted on CUPTI's threads. */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_format.h"
#include "dlh_internal.h"

#define BUF_SIZE (4u << 20)

static struct {
  CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*EnableDomain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
  CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                CUpti_CallbackId);
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*ActivityFlushAll)(uint32_t);
  CUptiResult (*ActivityFlushPeriod)(uint32_t);
  CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
  CUptiResult (*GetResultString)(CUptiResult, const char **);
  CUptiResult (*GetGraphNodeId)(CUgraphNode, uint64_t *);
  CUptiResult (*GetGraphId)(CUgraph, uint32_t *);
} cu;

static CUpti_SubscriberHandle subscriber;
static _Atomic int state;            /* 0 not tried, 1 initialising, 2 active, 3 unavailable */
static int lazy;                     /* another tool owns CUDA_INJECTION64_PATH */
static _Atomic uint64_t dropped;
static int noise;                    /* DLHOOK_CUPTI_NOISE=1: record cudaGetDevice & co. too */

/* ---------------------------------------------------------------- names of CUPTI-only calls */

/* Function ids for calls only CUPTI saw: the cudart wrapper's id when the name matches (same
 * descriptor, same arg names), else (domain, 0x8000 | cbid) with the name CUPTI gives. */
static _Atomic int32_t rt_to_wrapper[CUPTI_RUNTIME_TRACE_CBID_SIZE]; /* index+1, -1 = none */

/* Strips CUPTI's "_vNNNN" version suffix into buf. */
static const char *base_name(const char *name, char *buf, size_t cap) {
  size_t n = strlen(name);
  size_t i = n;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
  if (i >= 2 && n - i >= 4 && name[i - 1] == 'v' && name[i - 2] == '_' && i - 2 < cap) {
    memcpy(buf, name, i - 2);
    buf[i - 2] = 0;
    return buf;
  }
  return name;
}

static int wrapper_index(const char *name) {
  int dom;
  char buf[128];
  const char *names[2] = {name, base_name(name, buf, sizeof buf)};
  for (int k = 0; k < 2; k++)
    for (uint32_t i = 0; i < 0x8000; i++) {
      const dlh_fn_desc *d = dlh_fn_lookup(DLH_FN_ID(DLH_DOMAIN_CUDART, i), &dom);
      if (!d) break;
      if (!strcmp(d->name, names[k])) return (int)i;
    }
  return -1;
}

static uint32_t fn_id(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const char *name) {
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) {
    int32_t w = atomic_load(&rt_to_wrapper[cbid]);
    if (w == 0) { /* first sight of this cbid: match by name (slow, once) */
      int i = name ? wrapper_index(name) : -1;
      w = i >= 0 ? i + 1 : -1;
      atomic_store(&rt_to_wrapper[cbid], w);
    }
    if (w > 0) return DLH_FN_ID(DLH_DOMAIN_CUDART, w - 1);
    dlh_fn_set_name(DLH_FN_ID(DLH_DOMAIN_CUDART, 0x8000 | cbid), name);
    return DLH_FN_ID(DLH_DOMAIN_CUDART, 0x8000 | cbid);
  }
  uint32_t id = DLH_FN_ID(DLH_DOMAIN_DRIVER, 0x8000 | (cbid & 0x7fff));
  if (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) dlh_fn_set_name(id, name);
  return id;
}

/* Arguments of the calls that matter, in the order of the wrapper's descriptor. */
/* Driver memory calls for the GPU memory ledger (the command's command/lib/memory.c): allocations as
 * (ptr, size, stream), frees as (ptr, stream); cuMemCreate/cuMemRelease with the handle as ptr;
 * cuMemMap/cuMemUnmap as (ptr, size). */
static uint32_t driver_args(CUpti_CallbackId cbid, const void *params, uint64_t *a) {
  switch (cbid) {
#define OUT(p) ((p) ? (uint64_t)*(p) : 0)
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const cuMemAlloc_v2_params *p = params;
      a[0] = OUT(p->dptr); a[1] = p->bytesize; a[2] = 0;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const cuMemAllocManaged_params *p = params;
      a[0] = OUT(p->dptr); a[1] = p->bytesize; a[2] = 0;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const cuMemAllocPitch_v2_params *p = params;
      a[0] = OUT(p->dptr); a[1] = OUT(p->pPitch) * p->Height; a[2] = 0;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const cuMemAllocAsync_params *p = params;
      a[0] = OUT(p->dptr); a[1] = p->bytesize; a[2] = (uint64_t)(uintptr_t)p->hStream;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const cuMemAllocFromPoolAsync_params *p = params;
      a[0] = OUT(p->dptr); a[1] = p->bytesize; a[2] = (uint64_t)(uintptr_t)p->hStream;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const cuMemCreate_params *p = params;
      a[0] = OUT(p->handle); a[1] = p->size; a[2] = 0;
      return 3;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      const cuMemFree_v2_params *p = params;
      a[0] = p->dptr; a[1] = 0;
      return 2;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const cuMemFreeAsync_params *p = params;
      a[0] = p->dptr; a[1] = (uint64_t)(uintptr_t)p->hStream;
      return 2;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      const cuMemRelease_params *p = params;
      a[0] = (uint64_t)p->handle; a[1] = 0;
      return 2;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const cuMemMap_params *p = params;
      a[0] = p->ptr; a[1] = p->size;
      return 2;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const cuMemUnmap_params *p = params;
      a[0] = p->ptr; a[1] = p->size;
      return 2;
    }
#undef OUT
    default:
      return 0;
  }
}

static uint32_t call_args(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *params,
                          uint64_t *a) {
  if (dom == CUPTI_CB_DOMAIN_DRIVER_API && params) return driver_args(cbid, params, a);
  if (dom != CUPTI_CB_DOMAIN_RUNTIME_API || !params) return 0;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      const cudaLaunchKernel_v7000_params *p = params;
      a[0] = (uint64_t)(uintptr_t)p->func;
      a[1] = p->gridDim.x; a[2] = p->gridDim.y; a[3] = p->gridDim.z;
      a[4] = p->blockDim.x; a[5] = p->blockDim.y; a[6] = p->blockDim.z;
      a[7] = (uint64_t)(uintptr_t)p->args;
      a[8] = p->sharedMem;
      a[9] = (uint64_t)(uintptr_t)p->stream;
      return 10;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: {
      const cudaMemcpy_v3020_params *p = params;
      a[0] = (uint64_t)(uintptr_t)p->dst; a[1] = (uint64_t)(uintptr_t)p->src;
      a[2] = p->count; a[3] = (uint64_t)p->kind;
      return 4;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
      const cudaMemcpyAsync_v3020_params *p = params;
      a[0] = (uint64_t)(uintptr_t)p->dst; a[1] = (uint64_t)(uintptr_t)p->src;
      a[2] = p->count; a[3] = (uint64_t)p->kind; a[4] = (uint64_t)(uintptr_t)p->stream;
      return 5;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const cudaMalloc_v3020_params *p = params;
      a[0] = p->devPtr ? (uint64_t)(uintptr_t)*p->devPtr : 0;
      a[1] = p->size;
      return 2;
    }
    default:
      return 0;
  }
}

/* ---------------------------------------------------------------- callbacks */

/* 1: cudaProfilerStart/cuProfilerStart, -1: ...Stop, 0: anything else. */
static int profiler_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid) {
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ? 1
           : cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 ? -1 : 0;
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ? 1
         : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop ? -1 : 0;
}

/* Calls that never cause GPU activity records (they poll): no correlation id is kept for them,
 * so that a thread polling a stream or event folds its repeats into one record (ring.h). */
static int polls(CUpti_CallbackDomain dom, CUpti_CallbackId cbid) {
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000;
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuEventQuery ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz;
}

/* ---------------------------------------------------------------- CUDA graph nodes */

/* A graph node made (stream capture, an explicit node call) or copied (instantiation, clone),
 * queued by the thread that made it for the writer (lock-free list, like the activity buffers).
 * Graphs are built once and replayed many times: nothing here runs per replay. */
typedef struct gnode {
  struct gnode *next;
  uint64_t node, origin, corr;
  uint32_t graph, type, tid;
  int linked;                        /* corr is a LINK of a wrapper's call: wait for its map */
  int age;                           /* drains it waited for that */
} gnode;
static _Atomic(gnode *) gnode_list;
static gnode *gnode_wait;            /* the writer's: nodes whose call's record is not in yet */

static void graph_node(CUpti_CallbackId cbid, const void *data) {
  const CUpti_ResourceData *rd = data;
  const CUpti_GraphData *gd = rd ? rd->resourceDescriptor : NULL;
  if (!gd || !gd->node || !cu.GetGraphNodeId) return;
  gnode *n = calloc(1, sizeof *n);
  if (!n) return;
  if (cu.GetGraphNodeId(gd->node, &n->node) != CUPTI_SUCCESS || !n->node) { free(n); return; }
  if (gd->graph && cu.GetGraphId) cu.GetGraphId(gd->graph, &n->graph);
  n->type = (uint32_t)gd->nodeType;
  struct dlh_thread *t = dlh_self;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    if (!gd->originalNode || cu.GetGraphNodeId(gd->originalNode, &n->origin) != CUPTI_SUCCESS) {
      free(n);
      return;
    }
  } else if (t && t->cupti.depth > 0) { /* inside the call that makes it */
    n->corr = t->cupti.corr;
    n->linked = t->cupti.linked;
  }
  if (t) n->tid = t->os.tid;
  n->next = atomic_load(&gnode_list);
  while (!atomic_compare_exchange_weak(&gnode_list, &n->next, n)) {}
}

/* Writer: one GraphNodeBatch of the nodes queued so far, before the GPU records of this drain.
 * A node made inside a call that a wrapper records names that call by its LINK (cupti.c's
 * corr_map, filled as the writer takes the call's record from the ring): it waits until the
 * map has it, a few drains at most, or until recording has ended. */
static uint64_t outer_corr(uint64_t corr);
static int corr_mapped(uint64_t corr);
static void graph_nodes_drain(dlh_encoder *w) {
  gnode *d = atomic_exchange(&gnode_list, NULL);
  gnode *rev = gnode_wait, **tailp = &rev; /* waiting ones first, then the new, oldest first */
  while (*tailp) tailp = &(*tailp)->next;
  gnode *fresh = NULL;
  while (d) {
    gnode *next = d->next;
    d->next = fresh;
    fresh = d;
    d = next;
  }
  *tailp = fresh;
  gnode_wait = NULL;
  if (!rev) return;
  size_t cap = 0;
  for (gnode *n = rev; n; n = n->next) cap++;
  uint64_t *node = malloc(cap * sizeof *node), *corr = malloc(cap * sizeof *corr),
           *origin = malloc(cap * sizeof *origin);
  uint32_t *graph = malloc(cap * sizeof *graph), *type = malloc(cap * sizeof *type),
           *tid = malloc(cap * sizeof *tid);
  int final = !__atomic_load_n(&dlh_recording, __ATOMIC_RELAXED);
  size_t k = 0;
  gnode **waitp = &gnode_wait;
  for (gnode *n = rev; n;) {
    gnode *next = n->next;
    if (n->linked && n->corr && !corr_mapped(n->corr) && n->age++ < 8 && !final) {
      n->next = NULL;
      *waitp = n;
      waitp = &n->next;
      n = next;
      continue;
    }
    if (node && corr && origin && graph && type && tid) {
      node[k] = n->node;
      corr[k] = n->corr ? outer_corr(n->corr) : 0;
      origin[k] = n->origin;
      graph[k] = n->graph;
      type[k] = n->type;
      tid[k] = n->tid;
      k++;
    }
    free(n);
    n = next;
  }
  if (k) {
    Dlh__GraphNodeBatch b = DLH__GRAPH_NODE_BATCH__INIT;
    b.n_node = b.n_corr = b.n_origin = b.n_graph = b.n_type = b.n_tid = k;
    b.node = node; b.corr = corr; b.origin = origin;
    b.graph = graph; b.type = type; b.tid = tid;
    Dlh__Packet p = DLH__PACKET__INIT;
    p.data_case = DLH__PACKET__DATA_GRAPH_NODES;
    p.graph_nodes = &b;
    dlh_enc_packet(w, &p);
  }
  free(node); free(corr); free(origin); free(graph); free(type); free(tid);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)ud;
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    /* Deliver what the context's buffers hold before it goes away. */
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && cu.ActivityFlushAll)
      cu.ActivityFlushAll(0);
    if ((cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
         cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) && dlh_recording)
      graph_node(cbid, data);
    return;
  }
  if (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (!dlh_recording) return;
  const CUpti_CallbackData *cb = data;
  struct dlh_thread *t = dlh_self;
  if (!t) t = dlh_thread_attach();
  if (!t || t->hot.blocked) return;
  /* cudaProfilerApi capture range, for callers the wrappers do not see (static cudart, the
   * driver API): Start opens the window before the call is recorded, Stop closes it after. */
  int profiler = DLH_UNLIKELY(dlh_capture_mode == DLH_CAPTURE_PROFILER) ? profiler_call(dom, cbid) : 0;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (profiler > 0 && t->cupti.depth == 0) dlh_capture_profiler(1);
    if (t->cupti.depth++ > 0) return; /* a driver call inside a runtime call: the outer counts */
    t->cupti.corr = cb->correlationId;
    t->cupti.linked = t->hot.depth > 0;
    if (t->hot.depth > 0) {   /* a wrapper records this call: its GPU work links to the outermost */
      t->cupti.rec = 0;
      if (polls(dom, cbid)) return;
      if (DLH_UNLIKELY(dlh_capture_filtering)) dlh_capture_keep_corr(cb->correlationId);
      dlh_record_link(t, cb->correlationId);
      return;
    }
    t->cupti.rec = dlh_call_begin(&t->cupti.call);
    if (DLH_UNLIKELY(dlh_capture_filtering) && t->cupti.rec)
      dlh_capture_keep_corr(cb->correlationId);
    return;
  }
  if (t->cupti.depth == 0 || --t->cupti.depth > 0) return;
  if (t->cupti.rec) {
    t->cupti.rec = 0;
    uint64_t a[DLH_MAX_ARGS];
    uint32_t na = call_args(dom, cbid, cb->functionParams, a);
    int64_t ret = cb->functionReturnValue ? (int64_t) * (const int *)cb->functionReturnValue : 0;
    t->prod.pending_corr = polls(dom, cbid) ? 0 : cb->correlationId;
    dlh_call_end(&t->cupti.call, fn_id(dom, cbid, cb->functionName), ret, na, a);
  }
  if (profiler < 0) dlh_capture_profiler(0);
}

/* ---------------------------------------------------------------- activity buffers */

typedef struct done_buf {
  struct done_buf *next;
  uint8_t *buf;
  size_t valid;
} done_buf;
static _Atomic(done_buf *) done_list;

static void free_buf(uint8_t *b) {
  free(b);
  dlh_mem_add(DLH_MEM_CUPTI, -(int64_t)BUF_SIZE);
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  if (*buffer) dlh_mem_add(DLH_MEM_CUPTI, BUF_SIZE);
  *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid) {
  (void)size;
  size_t n = 0;
  if (cu.ActivityGetNumDroppedRecords && cu.ActivityGetNumDroppedRecords(ctx, stream, &n) == CUPTI_SUCCESS && n)
    atomic_fetch_add(&dropped, n);
  if (!buffer) return;
  if (valid == 0) { free_buf(buffer); return; }
  done_buf *d = malloc(sizeof *d);
  if (!d) { free_buf(buffer); return; }
  d->buf = buffer;
  d->valid = valid;
  d->next = atomic_load(&done_list);
  while (!atomic_compare_exchange_weak(&done_list, &d->next, d)) {}
  dlh_writer_wake();
}

uint64_t dlh_cupti_dropped(void) { return atomic_load(&dropped); }

/* ---------------------------------------------------------------- conversion (writer thread) */

/* corr -> correlation id of the outermost call that caused it, for the last 2^20 ids
 * (direct-mapped: CUPTI hands out increasing ids). */
#define CORR_MAP_SIZE (1u << 20)
static struct { uint64_t corr, outer; } *corr_map;

/* Calls whose own id is their first link's (a library call: corr == outer, nothing to map),
 * remembered a while so that a graph node made inside one knows its record was taken. */
#define TAKEN_SIZE 4096u
static uint64_t taken[TAKEN_SIZE];

void dlh_corr_map(uint64_t corr, uint64_t outer) {
  if (corr == outer) {
    taken[corr & (TAKEN_SIZE - 1)] = corr;
    return;
  }
  if (!corr_map && !(corr_map = calloc(CORR_MAP_SIZE, sizeof *corr_map))) return;
  corr_map[corr & (CORR_MAP_SIZE - 1)].corr = corr;
  corr_map[corr & (CORR_MAP_SIZE - 1)].outer = outer;
}

static uint64_t outer_corr(uint64_t corr) {
  if (corr_map && corr_map[corr & (CORR_MAP_SIZE - 1)].corr == corr)
    return corr_map[corr & (CORR_MAP_SIZE - 1)].outer;
  return corr;
}

static int corr_mapped(uint64_t corr) {
  return taken[corr & (TAKEN_SIZE - 1)] == corr ||
         (corr_map && corr_map[corr & (CORR_MAP_SIZE - 1)].corr == corr);
}


static void device_info(dlh_encoder *w, const CUpti_ActivityDevice5 *d) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__DeviceInfo di = DLH__DEVICE_INFO__INIT;
  di.has_id = di.has_total_mem = di.has_sm_count = di.has_cc_major = di.has_cc_minor = 1;
  di.id = d->id;
  di.name = (char *)(d->name ? d->name : "");
  di.total_mem = d->globalMemorySize;
  di.sm_count = d->numMultiprocessors;
  di.cc_major = d->computeCapabilityMajor;
  di.cc_minor = d->computeCapabilityMinor;
  p.data_case = DLH__PACKET__DATA_DEVICE;
  p.device = &di;
  dlh_enc_packet(w, &p);
}

/* start and duration of a record (a record whose end precedes its start lasts 0) */
static void span(dlh_gpu_event *e, uint64_t start, uint64_t end) {
  e->start_ns = start;
  e->dur_ns = end > start ? end - start : 0;
}

static int convert(dlh_encoder *w, const CUpti_Activity *r) {
  dlh_gpu_event e;
  uint64_t v[10];
  memset(&e, 0, sizeof e);
  e.vals = v;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__KERNEL;
      span(&e, k->start, k->end);
      e.corr = k->correlationId;
      e.device = k->deviceId;
      e.context = k->contextId;
      e.stream = k->streamId;
      e.name = dlh_intern(w, k->name);
      v[0] = (uint32_t)k->gridX; v[1] = (uint32_t)k->gridY; v[2] = (uint32_t)k->gridZ;
      v[3] = (uint32_t)k->blockX; v[4] = (uint32_t)k->blockY; v[5] = (uint32_t)k->blockZ;
      v[6] = k->registersPerThread;
      v[7] = (uint32_t)k->staticSharedMemory;
      v[8] = (uint32_t)k->dynamicSharedMemory;
      v[9] = k->graphId;
      e.nvals = 10;
      e.graph = k->graphId;
      e.graph_node = k->graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6 *m = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__MEMCPY;
      span(&e, m->start, m->end);
      e.corr = m->correlationId;
      e.device = m->deviceId;
      e.context = m->contextId;
      e.stream = m->streamId;
      v[0] = m->bytes; v[1] = m->copyKind; v[2] = m->srcKind; v[3] = m->dstKind;
      v[4] = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
      v[5] = m->graphId;
      e.nvals = 6;
      e.graph = m->graphId;
      e.graph_node = m->graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4 *m = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__MEMSET;
      span(&e, m->start, m->end);
      e.corr = m->correlationId;
      e.device = m->deviceId;
      e.context = m->contextId;
      e.stream = m->streamId;
      v[0] = m->bytes; v[1] = m->value; v[2] = m->memoryKind;
      v[3] = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0;
      v[4] = m->graphId;
      e.nvals = 5;
      e.graph = m->graphId;
      e.graph_node = m->graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const CUpti_ActivitySynchronization2 *s = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__SYNC;
      span(&e, s->start, s->end);
      e.corr = s->correlationId;
      e.context = s->contextId;
      e.stream = s->streamId == (uint32_t)-1 ? 0 : s->streamId;
      v[0] = s->type; v[1] = s->cudaEventId;
      e.nvals = 2;
      break;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
      const CUpti_ActivityCudaEvent2 *c = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__EVENT;
      e.start_ns = c->deviceTimestamp;
      e.corr = c->correlationId;
      e.device = c->deviceId;
      e.context = c->contextId;
      e.stream = c->streamId;
      v[0] = c->eventId;
      e.nvals = 1;
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const CUpti_ActivityOverhead3 *o = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__OVERHEAD;
      span(&e, o->start, o->end);
      v[0] = o->overheadKind; v[1] = o->objectKind;
      e.nvals = 2;
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const CUpti_ActivityExternalCorrelation *x = (const void *)r;
      e.kind = DLH__GPU_RECORD_KIND__EXTERNAL_CORRELATION;
      e.corr = x->correlationId;
      v[0] = x->externalKind; v[1] = x->externalId;
      e.nvals = 2;
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
      device_info(w, (const void *)r);
      return 0;
    default:
      return 0;
  }
  if (e.kind != DLH__GPU_RECORD_KIND__EXTERNAL_CORRELATION) e.corr = outer_corr(e.corr);
  /* capture ranges: only the GPU work of recorded calls */
  if (dlh_capture_filtering && !dlh_capture_corr_kept(e.corr) &&
      !dlh_capture_corr_kept(outer_corr(e.corr)))
    return 0;
  dlh_enc_gpu(w, &e);
  return 1;
}

int dlh_cupti_drain(struct dlh_encoder *enc) {
  if (atomic_load(&gnode_list) || gnode_wait) graph_nodes_drain(enc); /* before their work */
  /* a node still waits for its call: the GPU records (its replays among them, perhaps) wait
   * too, so that readers always meet a node before the work it ran */
  if (gnode_wait && __atomic_load_n(&dlh_recording, __ATOMIC_RELAXED)) return 0;
  done_buf *d = atomic_exchange(&done_list, NULL);
  if (!d) return 0;
  done_buf *rev = NULL; /* oldest first */
  while (d) {
    done_buf *next = d->next;
    d->next = rev;
    rev = d;
    d = next;
  }
  int n = 0;
  for (d = rev; d;) {
    CUpti_Activity *r = NULL;
    while (cu.ActivityGetNextRecord(d->buf, d->valid, &r) == CUPTI_SUCCESS) n += convert(enc, r);
    done_buf *next = d->next;
    free_buf(d->buf);
    free(d);
    d = next;
  }
  return n;
}

/* ---------------------------------------------------------------- set-up */

static uint64_t CUPTIAPI timestamp(void) { return dlh_mono_ns(); }

static const char *result_string(CUptiResult r) {
  const char *s = NULL;
  if (cu.GetResultString) cu.GetResultString(r, &s);
  return s ? s : "unknown error";
}

static void *load_cupti(char *why, size_t cap) {
  static const char *const sonames[] = {"libcupti.so.13", "libcupti.so", NULL};
  for (int i = 0; sonames[i]; i++) {
    void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  const char *home = getenv("CUDA_HOME");
  char path[4096];
  const char *dirs[] = {home, "/usr/local/cuda", NULL};
  for (int i = 0; i < 2; i++) {
    if (!dirs[i]) continue;
    const char *sub[] = {"lib64", "extras/CUPTI/lib64"};
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s/%s/libcupti.so.13", dirs[i], sub[k]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h) return h;
    }
  }
  const char *e = dlerror();
  snprintf(why, cap, "%s", e ? e : "libcupti.so.13 not found");
  return NULL;
}

static void cupti_init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&state, &expected, 1)) return;
  if (!dlh_cfg.cupti) { atomic_store(&state, 3); return; }
  noise = dlh_cfg.cupti_noise;
  struct dlh_thread *t = dlh_self;
  if (t) t->hot.blocked++;
  char why[512] = "";
  void *h = load_cupti(why, sizeof why);
  if (!h) {
    dlh_warn("CUPTI is not available (%s): API calls are recorded through the wrappers, GPU "
             "activity is not", why);
    goto unavailable;
  }
#define SYM(field, name) cu.field = (__typeof__(cu.field))dlsym(h, name)
  SYM(Subscribe, "cuptiSubscribe");
  SYM(Unsubscribe, "cuptiUnsubscribe");
  SYM(EnableDomain, "cuptiEnableDomain");
  SYM(EnableCallback, "cuptiEnableCallback");
  SYM(ActivityEnable, "cuptiActivityEnable");
  SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord");
  SYM(ActivityFlushAll, "cuptiActivityFlushAll");
  SYM(ActivityFlushPeriod, "cuptiActivityFlushPeriod");
  SYM(ActivityRegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
  SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  SYM(GetResultString, "cuptiGetResultString");
  SYM(GetGraphNodeId, "cuptiGetGraphNodeId");
  SYM(GetGraphId, "cuptiGetGraphId");
#undef SYM
  if (!cu.Subscribe || !cu.EnableDomain || !cu.ActivityEnable || !cu.ActivityRegisterCallbacks ||
      !cu.ActivityGetNextRecord || !cu.ActivityFlushAll) {
    dlh_warn("CUPTI library lacks required functions: API calls are recorded through the "
             "wrappers, GPU activity is not");
    goto unavailable;
  }
  CUptiResult r = cu.Subscribe(&subscriber, on_callback, NULL);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    dlh_warn("CUPTI is already in use by another tool (Nsight Systems, the PyTorch profiler, "
             "...): API calls are recorded through the wrappers, GPU activity is not");
    goto unavailable;
  }
  if (r != CUPTI_SUCCESS) {
    dlh_warn("CUPTI could not be set up (%s): API calls are recorded through the wrappers, GPU "
             "activity is not", result_string(r));
    goto unavailable;
  }
  cu.EnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cu.EnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  cu.EnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
  if (!noise && cu.EnableCallback) {
    static const CUpti_CallbackId rt_noise[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000};
    static const CUpti_CallbackId drv_noise[] = {
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent,
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
        CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing};
    for (size_t i = 0; i < sizeof rt_noise / sizeof *rt_noise; i++)
      cu.EnableCallback(0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, rt_noise[i]);
    for (size_t i = 0; i < sizeof drv_noise / sizeof *drv_noise; i++)
      cu.EnableCallback(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, drv_noise[i]);
  }
  if (cu.ActivityRegisterTimestampCallback) cu.ActivityRegisterTimestampCallback(timestamp);
  cu.ActivityRegisterCallbacks(buf_requested, buf_completed);
  static const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_CUDA_EVENT,
      CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
      CUPTI_ACTIVITY_KIND_DEVICE};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) cu.ActivityEnable(kinds[i]);
  if (cu.ActivityFlushPeriod) cu.ActivityFlushPeriod(dlh_cfg.flush_ms);
  atomic_store(&state, 2);
  if (t) t->hot.blocked--;
  return;
unavailable:
  memset(&cu, 0, sizeof cu);
  atomic_store(&state, 3);
  if (t) t->hot.blocked--;
}

/* The CUDA driver's InitializeInjection (runtime.c), once the writer runs. */
void dlh_cupti_start(void) { cupti_init(); }

void dlh_cupti_lazy_init(void) {
  if (lazy && atomic_load(&state) == 0) cupti_init();
}

void dlh_cupti_setup_injection(void) {
  Dl_info info;
  const char *cur = getenv("CUDA_INJECTION64_PATH");
  if (!dlh_cfg.cupti) return;
  if (!dladdr((void *)dlh_cupti_setup_injection, &info) || !info.dli_fname) return;
  if (!cur || !*cur) {
    setenv("CUDA_INJECTION64_PATH", info.dli_fname, 1);
    return;
  }
  /* Ours already (e.g. inherited from a parent under dlhook)? */
  void *self = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  void *other = dlopen(cur, RTLD_NOLOAD | RTLD_LAZY);
  if (self && other && self == other) { dlclose(self); dlclose(other); return; }
  if (self) dlclose(self);
  if (other) dlclose(other);
  lazy = 1; /* another tool injects: set CUPTI up at our first intercepted call */
}

void dlh_cupti_flush(int forced) {
  if (atomic_load(&state) != 2 || !cu.ActivityFlushAll) return;
  struct dlh_thread *t = dlh_self;
  if (t) t->hot.blocked++;
  cu.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (t) t->hot.blocked--;
}

/* ---------------------------------------------------------------- dlhook attach */

/* attach.c: CUPTI set up now, in a running process (callbacks for the calls made from now on,
 * activity from now on). Returns 0 when active. */
int dlh_cupti_attach(void) {
  if (atomic_load(&state) == 0) cupti_init();
  return atomic_load(&state) == 2 ? 0 : -1;
}

/* attach.c, at detach (recording already off): the activity buffers delivered (the writer's
 * final drain converts them), activity kinds off, the subscription given back so that another
 * tool (or a later attach) can subscribe; the trace's string table forgotten. */
void dlh_cupti_detach(void) {
  if (atomic_load(&state) == 2) {
    dlh_cupti_flush(1);
    CUptiResult (*disable)(CUpti_ActivityKind) = NULL;
    Dl_info di;
    if (cu.Subscribe && dladdr((void *)cu.Subscribe, &di) && di.dli_fname) {
      void *h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
      if (h) {
        disable = (CUptiResult (*)(CUpti_ActivityKind))dlsym(h, "cuptiActivityDisable");
        dlclose(h);
      }
    }
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_CUDA_EVENT,
        CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_DEVICE};
    if (disable)
      for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) disable(kinds[i]);
    if (cu.Unsubscribe) cu.Unsubscribe(subscriber);
  }
  atomic_store(&state, 0);
}

/* writer.c, between two traces of one process (attach, detach, attach): drops counted anew. */
void dlh_cupti_new_trace(void) { atomic_store(&dropped, 0); }

void dlh_cupti_after_fork_child(void) {
  /* CUPTI state does not survive fork; the child traces API calls through the wrappers. */
  atomic_store(&done_list, NULL);
  atomic_store(&gnode_list, NULL);
  gnode_wait = NULL;
  if (atomic_load(&state) == 2) atomic_store(&state, 3);
}
