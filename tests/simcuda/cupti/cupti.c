/* cupti.c — the CUPTI stand-in: one subscriber with callback domains (driver, runtime,
 * resource, synchronize), and the activity API (records in the exact layouts of the installed
 * cupti_activity.h, delivered into the tool's buffers on flush, periodically, and when a
 * buffer fills). The simulated driver reports API calls and finished GPU ops through the
 * simi_tool hooks registered here. Every other exported CUPTI function is a weak stub in
 * gen_stubs.c returning CUPTI_ERROR_NOT_SUPPORTED.
 */
#include <cuda.h>
#include <cupti.h>
#include "simint.h"
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- subscriber */
struct subscriber { CUpti_CallbackFunc fn; void *ud; };
static struct subscriber sub_storage;
static struct subscriber *sub;
#define MAXCBID 1024
static uint8_t enabled[CUPTI_CB_DOMAIN_SIZE][MAXCBID];

/* ---------------------------------------------------------------- activity state */
static uint8_t act_on[CUPTI_ACTIVITY_KIND_COUNT];
/* when each kind was last enabled (simulation clock): as on a GPU, where CUPTI instruments the
 * work at its launch, work launched before then gives no record even if it ends after */
static uint64_t act_since[CUPTI_ACTIVITY_KIND_COUNT];
/* an op's record is due: its kind is on and was already on when the op was launched */
static int op_on(int kind, const simi_op_info *o) { return act_on[kind] && o->queued >= act_since[kind]; }
static uint8_t api_off[2][MAXCBID]; /* [0] runtime, [1] driver: cbids left out of API records */
static CUpti_BuffersCallbackRequestFunc buf_req;
static CUpti_BuffersCallbackCompleteFunc buf_done;
static CUpti_TimestampCallbackFunc ts_cb;
static uint8_t *cur_buf;
static size_t cur_size, cur_used;
static size_t dropped;
static CUpti_ActivityThreadIdType tid_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
static int64_t grid_id;
static uint32_t flush_ms;   /* cuptiActivityFlushPeriod */
static int worker_on;
static void start_worker(void);

#define MAXEXT 8
static __thread uint64_t ext_stack[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][MAXEXT];
static __thread int ext_depth[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

static uint64_t host_ts(void) { return ts_cb ? ts_cb() : simcu_now_ns(); }
/* a time on the simulation clock (CLOCK_MONOTONIC) in the tool's timebase */
static uint64_t gpu_ts(uint64_t t, int64_t off) { return (uint64_t)((int64_t)t + off); }
/* tool clock - simulation clock, measured once when the timestamp callback is registered, so
 * that GPU records keep their order and spacing */
static int64_t ts_offset;
static int64_t gpu_offset(void) { return ts_cb ? ts_offset : 0; }

static size_t rec_size(CUpti_ActivityKind k) {
  switch (k) {
  case CUPTI_ACTIVITY_KIND_KERNEL: case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
  case CUPTI_ACTIVITY_KIND_RUNTIME: case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
  case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
  case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
  default: return 0;
  }
}
static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Completes the current buffer (under mu); the caller delivers it with deliver() after unlock. */
struct done { uint8_t *buf; size_t size, used; };
static struct done take_buffer(void) {
  struct done d = { cur_buf, cur_size, cur_used };
  cur_buf = NULL; cur_size = cur_used = 0;
  return d;
}
/* full buffers being handed over outside mu; a flush waits for them */
static int inflight;
static pthread_cond_t inflight_cv = PTHREAD_COND_INITIALIZER;
static __thread int delivering;
static void deliver(struct done d) {
  if (d.buf && buf_done) { delivering++; buf_done(NULL, 0, d.buf, d.size, d.used); delivering--; }
}
/* deliver() of a buffer taken under mu with inflight++ */
static void deliver_inflight(struct done d) {
  deliver(d);
  pthread_mutex_lock(&mu);
  if (--inflight == 0) pthread_cond_broadcast(&inflight_cv);
  pthread_mutex_unlock(&mu);
}

/* Appends a record; delivers a full buffer. */
static void put(const void *rec) {
  CUpti_ActivityKind k = ((const CUpti_Activity *)rec)->kind;
  size_t n = align8(rec_size(k));
  struct done full = { 0 };
  pthread_mutex_lock(&mu);
  if (!worker_on) { pthread_mutex_unlock(&mu); start_worker(); pthread_mutex_lock(&mu); }
  if (cur_buf && cur_used + n > cur_size) { full = take_buffer(); inflight++; }
  if (!cur_buf && buf_req) {
    uint8_t *b = NULL; size_t sz = 0, maxrec = 0;
    pthread_mutex_unlock(&mu);
    if (full.buf) { deliver_inflight(full); full.buf = NULL; }
    buf_req(&b, &sz, &maxrec);
    pthread_mutex_lock(&mu);
    if (b && sz >= n && !cur_buf) { cur_buf = b; cur_size = sz; cur_used = 0; }
    else if (b && buf_done) { /* too small, or another thread installed one meanwhile */ pthread_mutex_unlock(&mu); buf_done(NULL, 0, b, sz, 0); pthread_mutex_lock(&mu); }
  }
  if (cur_buf && cur_used + n <= cur_size) {
    memset(cur_buf + cur_used, 0, n);
    memcpy(cur_buf + cur_used, rec, rec_size(k));
    cur_used += n;
  } else {
    dropped++;
  }
  pthread_mutex_unlock(&mu);
  if (full.buf) deliver_inflight(full);
}

static uint32_t thread_id(void) {
  if (tid_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) return (uint32_t)syscall(SYS_gettid);
  return (uint32_t)(uintptr_t)pthread_self();
}

/* ---------------------------------------------------------------- driver hooks */
static void on_api(simi_api *a, int exit_site) {
  int dom = a->domain;
  if (!exit_site) {
    a->start = host_ts();
    for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++)
      if (ext_depth[k] && act_on[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
        CUpti_ActivityExternalCorrelation r;
        memset(&r, 0, sizeof r);
        r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        r.externalKind = (CUpti_ExternalCorrelationKind)k;
        r.externalId = ext_stack[k][ext_depth[k] - 1];
        r.correlationId = a->corr;
        put(&r);
      }
  } else {
    a->end = host_ts();
  }
  struct subscriber *s = sub;
  if (s && a->cbid < MAXCBID && enabled[dom][a->cbid]) {
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = exit_site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    d.functionName = a->name;
    d.functionParams = a->params;
    d.functionReturnValue = exit_site ? a->retp : NULL;
    d.symbolName = a->symbol;
    d.context = a->ctx;
    d.contextUid = simi_ctx_id(a->ctx);
    d.correlationData = &a->corrdata;
    d.correlationId = a->corr;
    s->fn(s->ud, (CUpti_CallbackDomain)dom, a->cbid, &d);
  }
  if (exit_site) {
    int kind = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    if (act_on[kind] && !(a->cbid < MAXCBID && api_off[kind == CUPTI_ACTIVITY_KIND_DRIVER][a->cbid])) {
      CUpti_ActivityAPI r;
      memset(&r, 0, sizeof r);
      r.kind = (CUpti_ActivityKind)kind;
      r.cbid = a->cbid;
      r.start = a->start;
      r.end = a->end;
      r.processId = (uint32_t)getpid();
      r.threadId = thread_id();
      r.correlationId = a->corr;
      r.returnValue = a->retp ? *(uint32_t *)a->retp : 0;
      put(&r);
    }
  }
}

static void on_resource(int cbid, void *ctx, void *stream) {
  struct subscriber *s = sub;
  if (!s || !enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid]) return;
  CUpti_ResourceData d;
  memset(&d, 0, sizeof d);
  d.context = ctx;
  d.resourceHandle.stream = stream;
  s->fn(s->ud, CUPTI_CB_DOMAIN_RESOURCE, (CUpti_CallbackId)cbid, &d);
}

/* CUDA graph nodes: RESOURCE_GRAPHNODE_CREATED inside the call that made the node (stream
 * capture, cudaGraphAddKernelNode ...), RESOURCE_GRAPHNODE_CLONED at instantiation, with the
 * graph data a GPU's CUPTI gives (graph, node, originalNode, nodeType). */
static void on_graph_node(int cbid, void *graph, uint64_t node, uint64_t orig, int type) {
  struct subscriber *s = sub;
  if (!s || !enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid]) return;
  CUpti_GraphData gd;
  memset(&gd, 0, sizeof gd);
  gd.graph = graph;
  gd.node = simi_graph_node_handle(node);
  if (orig) { gd.originalNode = simi_graph_node_handle(orig); gd.originalGraph = graph; }
  gd.nodeType = (CUgraphNodeType)type;
  CUpti_ResourceData d;
  memset(&d, 0, sizeof d);
  d.context = simi_current_ctx(); /* the graph's context, as a GPU's CUPTI gives it */
  d.resourceDescriptor = &gd;
  s->fn(s->ud, CUPTI_CB_DOMAIN_RESOURCE, (CUpti_CallbackId)cbid, &d);
}
EXPORT CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId) {
  if (!node || !nodeId) return CUPTI_ERROR_INVALID_PARAMETER;
  *nodeId = simi_graph_node_of(node);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t *pId) {
  if (!graph || !pId) return CUPTI_ERROR_INVALID_PARAMETER;
  *pId = simi_graph_id(graph);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec exec, uint32_t *pId) {
  if (!exec || !pId) return CUPTI_ERROR_INVALID_PARAMETER;
  *pId = simi_graph_exec_id(exec);
  return CUPTI_SUCCESS;
}

static void on_sync(int cbid, void *ctx, void *stream) {
  struct subscriber *s = sub;
  if (!s || !enabled[CUPTI_CB_DOMAIN_SYNCHRONIZE][cbid]) return;
  CUpti_SynchronizeData d = { ctx, stream };
  s->fn(s->ud, CUPTI_CB_DOMAIN_SYNCHRONIZE, (CUpti_CallbackId)cbid, &d);
}

static void on_op(const simi_op_info *o) {
  int64_t off = gpu_offset();
  if (o->kind == SIMI_OP_KERNEL) {
    int kind = op_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, o) ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
             : op_on(CUPTI_ACTIVITY_KIND_KERNEL, o) ? CUPTI_ACTIVITY_KIND_KERNEL : 0;
    if (!kind) return;
    CUpti_ActivityKernel10 r;
    memset(&r, 0, sizeof r);
    r.kind = (CUpti_ActivityKind)kind;
    r.cacheConfig.config.requested = r.cacheConfig.config.executed = CU_FUNC_CACHE_PREFER_NONE;
    r.sharedMemoryConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    r.registersPerThread = (uint16_t)o->regs;
    r.partitionedGlobalCacheRequested = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
    r.partitionedGlobalCacheExecuted = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
    r.start = gpu_ts(o->start, off);
    r.end = gpu_ts(o->end, off);
    r.completed = r.end;
    r.deviceId = o->dev;
    r.contextId = o->ctx_id;
    r.streamId = o->stream_id;
    r.gridX = (int32_t)o->grid[0]; r.gridY = (int32_t)o->grid[1]; r.gridZ = (int32_t)o->grid[2];
    r.blockX = (int32_t)o->block[0]; r.blockY = (int32_t)o->block[1]; r.blockZ = (int32_t)o->block[2];
    r.staticSharedMemory = (int32_t)o->static_smem;
    r.dynamicSharedMemory = (int32_t)o->dyn_smem;
    r.correlationId = o->corr;
    r.gridId = __atomic_add_fetch(&grid_id, 1, __ATOMIC_RELAXED);
    r.name = o->name;
    r.queued = gpu_ts(o->queued, off);
    r.submitted = gpu_ts(o->submitted, off);
    r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    r.sharedMemoryExecuted = o->static_smem + o->dyn_smem;
    r.graphNodeId = o->graph_node_id;
    r.graphId = o->graph_id;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    r.channelID = 1;
    put(&r);
  } else if (o->kind == SIMI_OP_MEMCPY) {
    if (!op_on(CUPTI_ACTIVITY_KIND_MEMCPY, o)) return;
    CUpti_ActivityMemcpy6 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = (uint8_t)o->copy_kind;
    r.srcKind = (uint8_t)o->src_kind;
    r.dstKind = (uint8_t)o->dst_kind;
    r.flags = o->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r.bytes = o->bytes;
    r.start = gpu_ts(o->start, off);
    r.end = gpu_ts(o->end, off);
    r.deviceId = o->dev;
    r.contextId = o->ctx_id;
    r.streamId = o->stream_id;
    r.correlationId = o->corr;
    r.runtimeCorrelationId = o->corr;
    r.graphNodeId = o->graph_node_id;
    r.graphId = o->graph_id;
    r.channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
    r.channelID = 2;
    r.copyCount = 1;
    put(&r);
  } else if (o->kind == SIMI_OP_EVENT) {
    if (!op_on(CUPTI_ACTIVITY_KIND_CUDA_EVENT, o)) return;
    CUpti_ActivityCudaEvent2 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    r.correlationId = o->corr;
    r.contextId = o->ctx_id;
    r.streamId = o->stream_id;
    r.eventId = o->event_id;
    r.deviceId = o->dev;
    r.deviceTimestamp = gpu_ts(o->end, off);
    put(&r);
  } else if (o->kind == SIMI_OP_MEMSET) {
    if (!op_on(CUPTI_ACTIVITY_KIND_MEMSET, o)) return;
    CUpti_ActivityMemset4 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = o->value;
    r.bytes = o->bytes;
    r.start = gpu_ts(o->start, off);
    r.end = gpu_ts(o->end, off);
    r.deviceId = o->dev;
    r.contextId = o->ctx_id;
    r.streamId = o->stream_id;
    r.correlationId = o->corr;
    r.flags = o->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    r.memoryKind = (uint16_t)o->dst_kind;
    r.graphNodeId = o->graph_node_id;
    r.graphId = o->graph_id;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    put(&r);
  }
}

static void on_sync_rec(const simi_sync_rec *s) {
  if (!act_on[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]) return;
  int64_t off = gpu_offset();
  CUpti_ActivitySynchronization2 r;
  memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  r.type = (CUpti_ActivitySynchronizationType)s->type;
  r.start = gpu_ts(s->start, off);
  r.end = gpu_ts(s->end, off);
  r.correlationId = s->corr;
  r.contextId = s->ctx_id;
  r.streamId = s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ||
               s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ? (uint32_t)CUPTI_SYNCHRONIZATION_INVALID_VALUE : s->stream_id;
  r.cudaEventId = s->event_id ? s->event_id : (uint32_t)CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  put(&r);
}

static const simi_tool tool = { on_api, on_resource, on_sync, on_op, host_ts, on_graph_node };
static int attached;
static void attach(void) {
  if (__atomic_exchange_n(&attached, 1, __ATOMIC_ACQ_REL)) return;
  simi_set_sync_sink(on_sync_rec);
  simi_set_tool(&tool);
}

/* ---------------------------------------------------------------- callback API */
EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (simcu_device_count() == 0) return CUPTI_ERROR_UNKNOWN; /* no GPU, as the real one */
  pthread_mutex_lock(&mu);
  if (sub) { pthread_mutex_unlock(&mu); return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }
  sub_storage.fn = callback;
  sub_storage.ud = userdata;
  memset(enabled, 0, sizeof enabled);
  sub = &sub_storage;
  pthread_mutex_unlock(&mu);
  *subscriber = (CUpti_SubscriberHandle)sub;
  attach();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                              void *userdata, CUpti_SubscriberParams *pParams) {
  CUptiResult r = cuptiSubscribe(subscriber, callback, userdata);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && pParams && pParams->oldSubscriberName && pParams->oldSubscriberSize)
    pParams->oldSubscriberName[0] = 0;
  return r;
}
EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  pthread_mutex_lock(&mu);
  if (!sub || (struct subscriber *)subscriber != sub) { pthread_mutex_unlock(&mu); return CUPTI_ERROR_INVALID_PARAMETER; }
  sub = NULL;
  memset(enabled, 0, sizeof enabled);
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}
static int domain_size(CUpti_CallbackDomain d) {
  switch (d) {
  case CUPTI_CB_DOMAIN_DRIVER_API: return CUPTI_DRIVER_TRACE_CBID_SIZE < MAXCBID ? CUPTI_DRIVER_TRACE_CBID_SIZE : MAXCBID;
  case CUPTI_CB_DOMAIN_RUNTIME_API: return CUPTI_RUNTIME_TRACE_CBID_SIZE < MAXCBID ? CUPTI_RUNTIME_TRACE_CBID_SIZE : MAXCBID;
  case CUPTI_CB_DOMAIN_RESOURCE: return CUPTI_CBID_RESOURCE_SIZE;
  case CUPTI_CB_DOMAIN_SYNCHRONIZE: return CUPTI_CBID_SYNCHRONIZE_SIZE;
  case CUPTI_CB_DOMAIN_NVTX: return CUPTI_CBID_NVTX_SIZE < MAXCBID ? CUPTI_CBID_NVTX_SIZE : MAXCBID;
  case CUPTI_CB_DOMAIN_STATE: return CUPTI_CBID_STATE_SIZE;
  default: return 0;
  }
}
EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (!sub || (struct subscriber *)subscriber != sub) return CUPTI_ERROR_INVALID_PARAMETER;
  if ((int)cbid >= domain_size(domain)) return CUPTI_ERROR_INVALID_PARAMETER;
  enabled[domain][cbid] = enable ? 1 : 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
                                                  CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (!enable || !sub || (struct subscriber *)subscriber != sub || (int)cbid >= domain_size(domain))
    return CUPTI_ERROR_INVALID_PARAMETER;
  *enable = enabled[domain][cbid];
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain) {
  if (!sub || (struct subscriber *)subscriber != sub) return CUPTI_ERROR_INVALID_PARAMETER;
  int n = domain_size(domain);
  if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
  memset(enabled[domain], enable ? 1 : 0, (size_t)n);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  if (!sub || (struct subscriber *)subscriber != sub) return CUPTI_ERROR_INVALID_PARAMETER;
  for (int d = 1; d < CUPTI_CB_DOMAIN_SIZE; d++) memset(enabled[d], enable ? 1 : 0, (size_t)domain_size((CUpti_CallbackDomain)d));
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiSupportedDomains(size_t *domainCount, CUpti_DomainTable *domainTable) {
  static const CUpti_CallbackDomain doms[] = { CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
                                               CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                                               CUPTI_CB_DOMAIN_NVTX, CUPTI_CB_DOMAIN_STATE };
  if (!domainCount || !domainTable) return CUPTI_ERROR_INVALID_PARAMETER;
  *domainCount = sizeof doms / sizeof doms[0];
  *domainTable = (CUpti_DomainTable)doms;
  return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------- activity API */
static int kind_ok(CUpti_ActivityKind k) { return k > CUPTI_ACTIVITY_KIND_INVALID && k < CUPTI_ACTIVITY_KIND_COUNT; }
/* DEVICE records: one per simulated device when the kind is enabled */
static void device_records(void) {
  for (int dev = 0; dev < simcu_device_count(); dev++) {
    CUpti_ActivityDevice5 r;
    int v;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_DEVICE;
#define ATTR(a) (simi_dev_attr(CU_DEVICE_ATTRIBUTE_##a, dev, &v) ? 0u : (uint32_t)v)
    r.globalMemoryBandwidth = 3352320000ull; /* KB/s */
    r.globalMemorySize = simi_dev_total_mem(dev);
    r.constantMemorySize = ATTR(TOTAL_CONSTANT_MEMORY);
    r.l2CacheSize = ATTR(L2_CACHE_SIZE);
    r.numThreadsPerWarp = ATTR(WARP_SIZE);
    r.coreClockRate = ATTR(CLOCK_RATE);
    r.numMemcpyEngines = ATTR(ASYNC_ENGINE_COUNT);
    r.numMultiprocessors = ATTR(MULTIPROCESSOR_COUNT);
    r.maxIPC = 4;
    r.maxWarpsPerMultiprocessor = ATTR(MAX_THREADS_PER_MULTIPROCESSOR) / 32;
    r.maxBlocksPerMultiprocessor = ATTR(MAX_BLOCKS_PER_MULTIPROCESSOR);
    r.maxSharedMemoryPerMultiprocessor = ATTR(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    r.maxRegistersPerMultiprocessor = ATTR(MAX_REGISTERS_PER_MULTIPROCESSOR);
    r.maxRegistersPerBlock = ATTR(MAX_REGISTERS_PER_BLOCK);
    r.maxSharedMemoryPerBlock = ATTR(MAX_SHARED_MEMORY_PER_BLOCK);
    r.maxThreadsPerBlock = ATTR(MAX_THREADS_PER_BLOCK);
    r.maxBlockDimX = ATTR(MAX_BLOCK_DIM_X);
    r.maxBlockDimY = ATTR(MAX_BLOCK_DIM_Y);
    r.maxBlockDimZ = ATTR(MAX_BLOCK_DIM_Z);
    r.maxGridDimX = ATTR(MAX_GRID_DIM_X);
    r.maxGridDimY = ATTR(MAX_GRID_DIM_Y);
    r.maxGridDimZ = ATTR(MAX_GRID_DIM_Z);
    r.computeCapabilityMajor = ATTR(COMPUTE_CAPABILITY_MAJOR);
    r.computeCapabilityMinor = ATTR(COMPUTE_CAPABILITY_MINOR);
    r.id = (uint32_t)dev;
    r.eccEnabled = ATTR(ECC_ENABLED);
#undef ATTR
    simi_dev_uuid(dev, (unsigned char *)r.uuid.bytes);
    r.name = simcu_device_name(dev);
    r.isCudaVisible = 1;
    r.numaId = (uint32_t)-1;
    put(&r);
  }
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (!kind_ok(kind)) return CUPTI_ERROR_INVALID_KIND;
  int was = act_on[kind];
  if (!was) act_since[kind] = simcu_now_ns();
  act_on[kind] = 1;
  attach();
  start_worker();
  if (kind == CUPTI_ACTIVITY_KIND_DEVICE && !was) device_records();
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) memset(api_off[0], 0, sizeof api_off[0]);
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) memset(api_off[1], 0, sizeof api_off[1]);
  return CUPTI_SUCCESS;
}
/* fine-grained API records: after enabling RUNTIME / DRIVER, single cbids can be left out */
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid >= MAXCBID || cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable && !act_on[CUPTI_ACTIVITY_KIND_RUNTIME]) {
    /* enabling one cbid while the kind is off: only the enabled ones */
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    memset(api_off[0], 1, sizeof api_off[0]);
  }
  api_off[0][cbid] = !enable;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid >= MAXCBID || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable && !act_on[CUPTI_ACTIVITY_KIND_DRIVER]) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    memset(api_off[1], 1, sizeof api_off[1]);
  }
  api_off[1][cbid] = !enable;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind) { return cuptiActivityEnable(kind); }
EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (!kind_ok(kind)) return CUPTI_ERROR_INVALID_KIND;
  act_on[kind] = 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) { return cuptiActivityEnable(kind); }
EXPORT CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context, CUpti_ActivityKind kind) { return cuptiActivityDisable(kind); }
EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                           CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  if (!funcBufferRequested || !funcBufferCompleted) return CUPTI_ERROR_INVALID_PARAMETER;
  buf_req = funcBufferRequested;
  buf_done = funcBufferCompleted;
  attach();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  if (funcTimestamp) {
    uint64_t a = simcu_now_ns(), t = funcTimestamp(), b = simcu_now_ns();
    ts_offset = (int64_t)(t - (a + (b - a) / 2));
  }
  ts_cb = funcTimestamp;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, CUpti_Activity **record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t pos;
  if (!*record) pos = 0;
  else {
    uint8_t *r = (uint8_t *)*record;
    if (r < buffer || r >= buffer + validBufferSizeBytes) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t n = rec_size((*record)->kind);
    if (!n) return CUPTI_ERROR_INVALID_KIND;
    pos = (size_t)(r - buffer) + align8(n);
  }
  if (pos + sizeof(CUpti_Activity) > validBufferSizeBytes) { *record = NULL; return CUPTI_ERROR_MAX_LIMIT_REACHED; }
  CUpti_Activity *a = (CUpti_Activity *)(buffer + pos);
  if (!rec_size(a->kind) || pos + rec_size(a->kind) > validBufferSizeBytes) { *record = NULL; return CUPTI_ERROR_MAX_LIMIT_REACHED; }
  *record = a;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  simi_poll((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  pthread_mutex_lock(&mu);
  while (inflight && !delivering) pthread_cond_wait(&inflight_cv, &mu);
  struct done d = cur_used ? take_buffer() : (struct done){ 0 };
  pthread_mutex_unlock(&mu);
  deliver(d);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag) {
  return cuptiActivityFlushAll(flag);
}

/* CUPTI's worker thread: moves finished GPU ops into the buffers every 10 ms (a full buffer is
 * handed to the tool from here), and flushes every cuptiActivityFlushPeriod() ms if set. */
static void *worker(void *arg) {
  uint64_t last_flush = simcu_now_ns();
  for (;;) {
    struct timespec ts = { 0, 10 * 1000000L };
    nanosleep(&ts, NULL);
    uint32_t ms = __atomic_load_n(&flush_ms, __ATOMIC_RELAXED);
    uint64_t now = simcu_now_ns();
    if (ms && now - last_flush >= (uint64_t)ms * 1000000ull) {
      last_flush = now;
      cuptiActivityFlushAll(0);
    } else {
      simi_poll(0);
    }
  }
  return NULL;
}
/* fork: fresh lock; the worker thread does not exist in the child (restarted on demand) */
static void atfork_child(void) {
  pthread_mutex_init(&mu, NULL);
  inflight = 0;
  worker_on = 0;
}
__attribute__((constructor)) static void cupti_ctor(void) { pthread_atfork(NULL, NULL, atfork_child); }
static void start_worker(void) {
  if (__atomic_exchange_n(&worker_on, 1, __ATOMIC_ACQ_REL)) return;
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_create(&t, &at, worker, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&at);
}
EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time) {
  __atomic_store_n(&flush_ms, time, __ATOMIC_RELAXED);
  if (time) start_worker();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *n) {
  if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&mu);
  *n = dropped;
  dropped = 0;
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (ext_depth[kind] == MAXEXT) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  ext_stack[kind][ext_depth[kind]++] = id;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (!ext_depth[kind]) return CUPTI_ERROR_QUEUE_EMPTY;
  uint64_t id = ext_stack[kind][--ext_depth[kind]];
  if (lastId) *lastId = id;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
    return CUPTI_ERROR_INVALID_PARAMETER;
  tid_type = type;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type) {
  if (!type) return CUPTI_ERROR_INVALID_PARAMETER;
  *type = tid_type;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value) {
  if (!valueSize || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  if (*valueSize >= sizeof(size_t)) { *(size_t *)value = 0; *valueSize = sizeof(size_t); }
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value) {
  if (!valueSize || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable) { return CUPTI_SUCCESS; }
EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  memset(act_on, 0, sizeof act_on);
  return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------- misc */
EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = simcu_now_ns();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId) {
  if (!context || !contextId) return CUPTI_ERROR_INVALID_PARAMETER;
  *contextId = simi_ctx_id(context);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId) {
  if (!deviceId) return CUPTI_ERROR_INVALID_PARAMETER;
  *deviceId = (uint32_t)simi_ctx_device(context ? context : simi_current_ctx());
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t perThreadStream, uint32_t *streamId) {
  if (!streamId) return CUPTI_ERROR_INVALID_PARAMETER;
  void *s = (!stream && perThreadStream) ? (void *)CU_STREAM_PER_THREAD : (void *)stream;
  *streamId = simi_stream_id(s);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t *streamId) {
  return cuptiGetStreamIdEx(context, stream, 0, streamId);
}
EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
  case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
  case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
  case CUPTI_ERROR_INVALID_DEVICE: *str = "CUPTI_ERROR_INVALID_DEVICE"; break;
  case CUPTI_ERROR_INVALID_CONTEXT: *str = "CUPTI_ERROR_INVALID_CONTEXT"; break;
  case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
  case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
  case CUPTI_ERROR_QUEUE_EMPTY: *str = "CUPTI_ERROR_QUEUE_EMPTY"; break;
  case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
  case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
  case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
  default: *str = NULL; return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}
const char *simcupti_runtime_name(unsigned cbid);
const char *simcupti_driver_name(unsigned cbid);
static const char *resource_names[] = { "INVALID", "CONTEXT_CREATED", "CONTEXT_DESTROY_STARTING", "STREAM_CREATED",
                                        "STREAM_DESTROY_STARTING", "CU_INIT_FINISHED", "MODULE_LOADED",
                                        "MODULE_UNLOAD_STARTING", "MODULE_PROFILED", "GRAPH_CREATED",
                                        "GRAPH_DESTROY_STARTING", "GRAPH_CLONED", "GRAPHNODE_CREATE_STARTING",
                                        "GRAPHNODE_CREATED", "GRAPHNODE_DESTROY_STARTING",
                                        "GRAPHNODE_DEPENDENCY_CREATED", "GRAPHNODE_DEPENDENCY_DESTROY_STARTING",
                                        "GRAPHEXEC_CREATE_STARTING", "GRAPHEXEC_CREATED",
                                        "GRAPHEXEC_DESTROY_STARTING", "GRAPHNODE_CLONED" };
EXPORT CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name) {
  if (!name) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = NULL;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) *name = simcupti_runtime_name(cbid);
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) *name = simcupti_driver_name(cbid);
  else if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid < sizeof resource_names / sizeof resource_names[0]) *name = resource_names[cbid];
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
EXPORT CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str) { return cuptiGetResultString(result, str); }
