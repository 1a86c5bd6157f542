/* cuptitool_inj.c — a CUPTI tool loaded through CUDA_INJECTION64_PATH (libcuptitool_inj.so)
 * that checks what the CUPTI stand-in delivers for sim_workload: callback data (enter/exit
 * pairs, correlation ids and data, function and symbol names, params structs, return values),
 * activity records (kernel, memcpy, memset, synchronization, runtime API) and how they agree:
 * correlation ids, names, stream order, event waits, synchronising calls that wait.
 * At exit it prints "cuptitool: OK" or the failed checks, and the InitializeInjection count.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 20000
struct cb { uint32_t cbid, corr; const char *sym; unsigned gx, bx; size_t bytes; int kind; };
static struct cb cbs[MAXR];
static int ncbs;
static CUpti_ActivityKernel10 kern[MAXR];
static CUpti_ActivityMemcpy6 mcp[MAXR];
static CUpti_ActivityMemset4 mst[MAXR];
static CUpti_ActivitySynchronization2 syn[MAXR];
static CUpti_ActivityAPI api[MAXR];
static int nkern, nmcp, nmst, nsyn, napi;
static int fails, inits, enters, exits;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread uint32_t stack_cbid[64], stack_corr[64];
static __thread int depth;

#define CHECK(c, ...) do { if (!(c)) { fails++; if (fails < 20) { printf("cuptitool: FAIL %s: ", #c); printf(__VA_ARGS__); printf("\n"); } } } while (0)

static int ctx_created, ctx_destroyed;
static void CUPTIAPI on_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *r = data;
    CHECK(r->context != NULL, "resource context");
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) ctx_created++;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) ctx_destroyed++;
    return;
  }
  if (dom != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const CUpti_CallbackData *d = data;
  CHECK(d->functionName && d->functionName[0], "cbid %u", cbid);
  if (d->callbackSite == CUPTI_API_ENTER) {
    enters++;
    *d->correlationData = 0x5eed0000ull + d->correlationId;
    if (depth < 64) { stack_cbid[depth] = cbid; stack_corr[depth] = d->correlationId; }
    depth++;
    return;
  }
  exits++;
  depth--;
  CHECK(depth >= 0 && stack_cbid[depth] == cbid && stack_corr[depth] == d->correlationId,
        "exit of %s matches its enter", d->functionName);
  CHECK(*d->correlationData == 0x5eed0000ull + d->correlationId, "correlationData kept for %s", d->functionName);
  CHECK(d->functionReturnValue != NULL, "return value of %s", d->functionName);
  cudaError_t ret = d->functionReturnValue ? *(cudaError_t *)d->functionReturnValue : cudaErrorUnknown;
  struct cb c = { cbid, d->correlationId, NULL, 0, 0, 0, -1 };
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000: {
    /* params: (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t smem, cudaStream_t) */
    const cudaLaunchKernel_v7000_params *p = d->functionParams;
    CHECK(d->symbolName && strncmp(d->symbolName, "_Z", 2) == 0, "launch symbol %s", d->symbolName ? d->symbolName : "(null)");
    CHECK(strcmp(d->functionName, "__cudaLaunchKernel") == 0, "name %s", d->functionName);
    CHECK(d->context != NULL && d->contextUid != 0, "launch context");
    c.sym = d->symbolName; c.gx = p->gridDim.x; c.bx = p->blockDim.x;
    CHECK(ret == cudaSuccess, "launch returned %d", ret);
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
    const cudaMalloc_v3020_params *p = d->functionParams;
    CHECK(strcmp(d->functionName, "cudaMalloc") == 0, "name %s", d->functionName);
    CHECK(p && p->devPtr && *p->devPtr && p->size == (1 << 18) * 4, "cudaMalloc params");
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: {
    const cudaMemcpy_v3020_params *p = d->functionParams;
    CHECK(p && p->count == (1 << 18) * 4 && p->kind == cudaMemcpyDeviceToHost, "cudaMemcpy params");
    c.bytes = p->count; c.kind = p->kind;
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
    const cudaMemcpyAsync_v3020_params *p = d->functionParams;
    CHECK(p && p->stream != NULL, "cudaMemcpyAsync params");
    c.bytes = p->count; c.kind = p->kind;
    break;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: {
    const cudaMemsetAsync_v3020_params *p = d->functionParams;
    c.bytes = p->count;
    break;
  }
  }
  pthread_mutex_lock(&mu);
  if (ncbs < MAXR) cbs[ncbs++] = c;
  pthread_mutex_unlock(&mu);
}

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *maxrec) {
  *size = 4096; /* small: buffers fill and are delivered on the way */
  *buf = aligned_alloc(8, *size);
  *maxrec = 0;
}
static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t sid, uint8_t *buf, size_t size, size_t valid) {
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&mu);
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: if (nkern < MAXR) kern[nkern++] = *(CUpti_ActivityKernel10 *)r; break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: if (nmcp < MAXR) mcp[nmcp++] = *(CUpti_ActivityMemcpy6 *)r; break;
    case CUPTI_ACTIVITY_KIND_MEMSET: if (nmst < MAXR) mst[nmst++] = *(CUpti_ActivityMemset4 *)r; break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: if (nsyn < MAXR) syn[nsyn++] = *(CUpti_ActivitySynchronization2 *)r; break;
    case CUPTI_ACTIVITY_KIND_RUNTIME: if (napi < MAXR) api[napi++] = *(CUpti_ActivityAPI *)r; break;
    default: CHECK(0, "unexpected record kind %d", r->kind);
    }
  }
  pthread_mutex_unlock(&mu);
  free(buf);
}

static struct cb *cb_of(uint32_t corr) {
  for (int i = 0; i < ncbs; i++) if (cbs[i].corr == corr) return &cbs[i];
  return NULL;
}
static CUpti_ActivityAPI *api_of(uint32_t cbid, int nth) {
  for (int i = 0; i < napi; i++) if (api[i].cbid == cbid && nth-- == 0) return &api[i];
  return NULL;
}

struct span { uint64_t start, end; uint32_t stream; };
static int by_start(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 1;
  cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
  CHECK(dropped == 0, "dropped %zu", dropped);
  CHECK(enters == exits, "enters %d exits %d", enters, exits);
  /* kernels: 12 launches + 2 graph replays of 2 kernels */
  CHECK(nkern == 12 + 4, "kernel records %d", nkern);
  int from_graph = 0;
  for (int i = 0; i < nkern; i++) {
    CUpti_ActivityKernel10 *k = &kern[i];
    struct cb *c = cb_of(k->correlationId);
    CHECK(c != NULL, "kernel %s corr %u has an API call", k->name, k->correlationId);
    if (!c) continue;
    if (c->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) {
      from_graph++;
      CHECK(k->graphId != 0 && k->graphNodeId != 0, "graph ids");
    } else {
      CHECK(c->cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "kernel from cbid %u", c->cbid);
      CHECK(c->sym && strcmp(c->sym, k->name) == 0, "record name %s = callback symbol %s", k->name, c->sym);
      CHECK((unsigned)k->gridX == c->gx && (unsigned)k->blockX == c->bx, "grid %d/%u block %d/%u", k->gridX, c->gx, k->blockX, c->bx);
    }
    CHECK(k->start < k->end && k->queued <= k->start && k->submitted >= k->queued, "kernel times");
    CHECK(k->contextId != 0 && k->streamId != 0, "kernel ids");
    CHECK(k->gridY == 1 && k->blockZ == 1 && k->registersPerThread > 0, "kernel dims");
    CHECK(strcmp(k->name, "_Z4fillPffi") == 0 || strcmp(k->name, "_Z4stepPfi") == 0, "kernel name %s", k->name);
  }
  CHECK(from_graph == 4, "graph kernels %d", from_graph);
  /* copies */
  CHECK(nmcp == 2, "memcpy records %d", nmcp);
  CHECK(nmst == 1, "memset records %d", nmst);
  CUpti_ActivityMemcpy6 *h2d = NULL;
  for (int i = 0; i < nmcp; i++) {
    struct cb *c = cb_of(mcp[i].correlationId);
    CHECK(c && c->bytes == mcp[i].bytes, "memcpy bytes / corr");
    if (!c) continue;
    if (c->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020) {
      CHECK(mcp[i].copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH && !(mcp[i].flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC), "sync D2H");
      CHECK(mcp[i].srcKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && mcp[i].dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "D2H kinds");
    } else {
      h2d = &mcp[i];
      CHECK(mcp[i].copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD && (mcp[i].flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC), "async H2D");
    }
    CHECK(mcp[i].start < mcp[i].end, "memcpy times");
  }
  for (int i = 0; i < nmst; i++) {
    struct cb *c = cb_of(mst[i].correlationId);
    CHECK(c && c->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 && mst[i].bytes == 4096, "memset record");
  }
  /* stream order: on each stream, an op starts after the previous one ended */
  struct span sp[MAXR];
  int n = 0;
  for (int i = 0; i < nkern; i++) sp[n++] = (struct span){ kern[i].start, kern[i].end, kern[i].streamId };
  for (int i = 0; i < nmcp; i++) sp[n++] = (struct span){ mcp[i].start, mcp[i].end, mcp[i].streamId };
  for (int i = 0; i < nmst; i++) sp[n++] = (struct span){ mst[i].start, mst[i].end, mst[i].streamId };
  qsort(sp, (size_t)n, sizeof sp[0], by_start);
  for (int i = 1; i < n; i++)
    if (sp[i].stream == sp[i - 1].stream) CHECK(sp[i].start >= sp[i - 1].end, "stream %u order", sp[i].stream);
  /* event wait: the grid-2 kernel on s[1] starts after the H2D copy on s[0] */
  for (int i = 0; i < nkern; i++)
    if (kern[i].gridX == 2 && h2d) CHECK(kern[i].start >= h2d->end, "cudaStreamWaitEvent dependency");
  /* synchronising calls returned after the work they waited for */
  CUpti_ActivityAPI *ss = api_of(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 0);
  CHECK(ss && h2d && ss->end >= h2d->end, "cudaStreamSynchronize waited");
  CUpti_ActivityAPI *ds = api_of(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 0);
  uint64_t last = 0;
  for (int i = 0; i < nkern; i++) if (kern[i].end > last) last = kern[i].end;
  CHECK(ds && ds->end >= last, "cudaDeviceSynchronize waited");
  /* every callback has its runtime API record */
  int missing = 0;
  for (int i = 0; i < ncbs; i++) {
    int found = 0;
    for (int j = 0; j < napi && !found; j++) found = api[j].correlationId == cbs[i].corr && api[j].cbid == cbs[i].cbid;
    missing += !found;
  }
  CHECK(missing == 0, "%d callbacks without API record", missing);
  for (int i = 0; i < napi; i++) CHECK(api[i].start <= api[i].end && api[i].processId != 0, "API record times");
  int types = 0;
  for (int i = 0; i < nsyn; i++) {
    types |= 1 << syn[i].type;
    CHECK(syn[i].start <= syn[i].end && cb_of(syn[i].correlationId), "sync record");
  }
  CHECK(types == ((1 << CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) | (1 << CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) |
                  (1 << CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) | (1 << CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE)),
        "sync record types %x", types);
  CHECK(ctx_created == 1 && ctx_destroyed == 1, "context created %d destroyed %d", ctx_created, ctx_destroyed);
  printf("cuptitool: callbacks %d kernels %d memcpy %d memset %d sync %d api %d\n", ncbs, nkern, nmcp, nmst, nsyn, napi);
  printf("cuptitool: InitializeInjection calls %d\n", inits);
  printf(fails ? "cuptitool: FAILED %d checks\n" : "cuptitool: OK\n", fails);
  fflush(stdout);
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (inits++) return 1;
  CUpti_SubscriberHandle sub;
  CUptiResult r = cuptiSubscribe(&sub, on_cb, NULL);
  CHECK(r == CUPTI_SUCCESS, "subscribe %d", r);
  CUpti_SubscriberHandle sub2;
  r = cuptiSubscribe(&sub2, on_cb, NULL);
  CHECK(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "second subscriber %d", r);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
  cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  atexit(at_exit);
  return 1;
}
