/* api.c — runtime API functions the simulator implements (rt_<name>, called by the generated
 * entry points in gen_stubs.c with the real *_params struct): devices, streams, events,
 * memory, copies, graphs, driver entry points. Kernel launches and registration are in call.c.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <generated_cuda_runtime_api_meta.h>
#include <cupti_activity.h>
#include "simrt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPL(name, ver) __attribute__((visibility("hidden"))) int rt_##name(name##_##ver##_params *p)
#define IMPL0(name) __attribute__((visibility("hidden"))) int rt_##name(void *p)

size_t simrt_var_size(const void *host);
static void *S(void *s) { return (!s && simrt_ptds) ? (void *)cudaStreamPerThread : s; }
static int ndev(void) { return simcu_device_count(); }

/* ---------------------------------------------------------------- devices */
IMPL(cudaGetDeviceCount, v3020) { if (!p->count) return cudaErrorInvalidValue; *p->count = ndev(); return 0; }
IMPL(cudaGetDevice, v3020) { if (!p->device) return cudaErrorInvalidValue; *p->device = simi_get_device(); return 0; }
IMPL(cudaSetDevice, v3020) { return simi_set_device(p->device) ? cudaErrorInvalidDevice : 0; }
IMPL(cudaInitDevice, v12000) { return p->device >= 0 && p->device < ndev() ? 0 : cudaErrorInvalidDevice; }
IMPL0(cudaDeviceReset) { simi_device_sync(); return 0; }
IMPL0(cudaThreadExit) { simi_device_sync(); return 0; }
IMPL(cudaSetDeviceFlags, v3020) { return 0; }
IMPL(cudaGetDeviceFlags, v7000) { if (!p->flags) return cudaErrorInvalidValue; *p->flags = 0; return 0; }
IMPL(cudaDeviceGetStreamPriorityRange, v5050) {
  if (p->leastPriority) *p->leastPriority = 0;
  if (p->greatestPriority) *p->greatestPriority = -5;
  return 0;
}
IMPL(cudaDriverGetVersion, v3020) { if (!p->driverVersion) return cudaErrorInvalidValue; *p->driverVersion = CUDA_VERSION; return 0; }
IMPL(cudaRuntimeGetVersion, v3020) { if (!p->runtimeVersion) return cudaErrorInvalidValue; *p->runtimeVersion = CUDART_VERSION; return 0; }
IMPL(cudaDeviceCanAccessPeer, v4000) {
  if (!p->canAccessPeer) return cudaErrorInvalidValue;
  if (p->device < 0 || p->device >= ndev() || p->peerDevice < 0 || p->peerDevice >= ndev()) return cudaErrorInvalidDevice;
  *p->canAccessPeer = p->device != p->peerDevice;
  return 0;
}
IMPL(cudaDeviceEnablePeerAccess, v4000) { return p->peerDevice >= 0 && p->peerDevice < ndev() ? 0 : cudaErrorInvalidDevice; }
IMPL(cudaDeviceDisablePeerAccess, v4000) { return 0; }
IMPL(cudaDeviceSetLimit, v3020) { return 0; }
IMPL(cudaDeviceGetLimit, v3020) { if (!p->pValue) return cudaErrorInvalidValue; *p->pValue = p->limit == cudaLimitStackSize ? 1024 : 8u << 20; return 0; }
IMPL(cudaDeviceSetCacheConfig, v3020) { return 0; }
IMPL(cudaDeviceGetCacheConfig, v3020) { if (p->pCacheConfig) *p->pCacheConfig = cudaFuncCachePreferNone; return 0; }
IMPL(cudaChooseDevice, v3020) { if (!p->device) return cudaErrorInvalidValue; *p->device = 0; return 0; }
IMPL(cudaDeviceGetAttribute, v5000) {
  if (!p->value) return cudaErrorInvalidValue;
  return simi_dev_attr((int)p->attr, p->device, p->value) ? cudaErrorInvalidDevice : 0;
}
IMPL(cudaDeviceGetPCIBusId, v4010) {
  int bus;
  if (!p->pciBusId || p->len <= 0) return cudaErrorInvalidValue;
  if (simi_dev_attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, p->device, &bus)) return cudaErrorInvalidDevice;
  snprintf(p->pciBusId, (size_t)p->len, "00000000:%02X:00.0", bus);
  return 0;
}
IMPL(cudaMemGetInfo, v3020) { simi_mem_info(p->free, p->total); return 0; }

static int A(int attr, int dev) { int v = 0; simi_dev_attr(attr, dev, &v); return v; }
IMPL(cudaGetDeviceProperties, v12000) {
  struct cudaDeviceProp *d = p->prop;
  int dev = p->device;
  if (!d) return cudaErrorInvalidValue;
  if (dev < 0 || dev >= ndev()) return cudaErrorInvalidDevice;
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", simcu_device_name(dev));
  simi_dev_uuid(dev, (unsigned char *)d->uuid.bytes);
  d->totalGlobalMem = simi_dev_total_mem(dev);
  d->sharedMemPerBlock = (size_t)A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
  d->regsPerBlock = A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev);
  d->warpSize = 32;
  d->memPitch = (size_t)A(CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev);
  d->maxThreadsPerBlock = 1024;
  d->maxThreadsDim[0] = 1024; d->maxThreadsDim[1] = 1024; d->maxThreadsDim[2] = 64;
  d->maxGridSize[0] = 2147483647; d->maxGridSize[1] = 65535; d->maxGridSize[2] = 65535;
  d->totalConstMem = 65536;
  d->major = 9; d->minor = 0;
  d->textureAlignment = 512; d->texturePitchAlignment = 32;
  d->multiProcessorCount = A(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  d->canMapHostMemory = 1;
  d->maxTexture1D = 131072;
  d->maxTexture2D[0] = 131072; d->maxTexture2D[1] = 65536;
  d->maxTexture3D[0] = d->maxTexture3D[1] = d->maxTexture3D[2] = 16384;
  d->surfaceAlignment = 512;
  d->concurrentKernels = 1;
  d->ECCEnabled = 1;
  d->pciBusID = A(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
  d->asyncEngineCount = A(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, dev);
  d->unifiedAddressing = 1;
  d->memoryBusWidth = A(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
  d->l2CacheSize = A(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
  d->persistingL2CacheMaxSize = A(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev);
  d->maxThreadsPerMultiProcessor = 2048;
  d->streamPrioritiesSupported = 1;
  d->globalL1CacheSupported = 1; d->localL1CacheSupported = 1;
  d->sharedMemPerMultiprocessor = (size_t)A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
  d->regsPerMultiprocessor = 65536;
  d->managedMemory = 1;
  d->multiGpuBoardGroupID = dev;
  d->hostNativeAtomicSupported = 1;
  d->concurrentManagedAccess = 1;
  d->computePreemptionSupported = 1;
  d->canUseHostPointerForRegisteredMem = 1;
  d->cooperativeLaunch = 1;
  d->sharedMemPerBlockOptin = (size_t)A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
  d->maxBlocksPerMultiProcessor = 32;
  d->accessPolicyMaxWindowSize = A(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, dev);
  d->reservedSharedMemPerBlock = 1024;
  d->hostRegisterSupported = 1;
  d->memoryPoolsSupported = 1;
  d->memoryPoolSupportedHandleTypes = 1;
  d->ipcEventSupported = 1;
  d->clusterLaunch = 1;
  d->unifiedFunctionPointers = 1;
  d->deviceNumaId = -1; d->hostNumaId = -1;
  d->gpuPciDeviceID = 0x233010de;
  d->gpuPciSubsystemID = 0x16c110de;
  return 0;
}

/* ---------------------------------------------------------------- streams */
static void sync_record(int type, uint64_t t0, void *stream, void *event) {
  simi_emit_sync_record(type, t0, simcu_now_ns(), simi_current_corr(), simi_current_ctx(),
                        stream, simi_event_id(event));
}
IMPL0(cudaDeviceSynchronize) {
  uint64_t t0 = simcu_now_ns();
  int r = simi_device_sync();
  sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, t0, NULL, NULL);
  return r;
}
IMPL0(cudaThreadSynchronize) { return rt_cudaDeviceSynchronize(p); }
IMPL(cudaStreamCreate, v3020) { return simi_stream_create((void **)p->pStream, 0, 0); }
IMPL(cudaStreamCreateWithFlags, v5000) { return simi_stream_create((void **)p->pStream, p->flags, 0); }
IMPL(cudaStreamCreateWithPriority, v5050) { return simi_stream_create((void **)p->pStream, p->flags, p->priority); }
IMPL(cudaStreamDestroy, v5050) { return simi_stream_destroy(p->stream) ? cudaErrorInvalidResourceHandle : 0; }
IMPL(cudaStreamSynchronize, v3020) {
  uint64_t t0 = simcu_now_ns();
  void *s = simi_stream_resolve(S(p->stream), 0);
  int r = simi_stream_sync(s);
  sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, t0, s, NULL);
  return r;
}
IMPL(cudaStreamQuery, v3020) { return simi_stream_query(S(p->stream)); }
IMPL(cudaStreamWaitEvent, v3020) {
  uint64_t t0 = simcu_now_ns();
  void *s = simi_stream_resolve(S(p->stream), 0);
  int r = simi_stream_wait_event(s, p->event);
  sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, t0, s, p->event);
  return r;
}
IMPL(cudaStreamGetPriority, v5050) { return simi_stream_info(S(p->hStream), NULL, p->priority); }
IMPL(cudaStreamGetFlags, v5050) { return simi_stream_info(S(p->hStream), p->flags, NULL); }
IMPL(cudaStreamGetId, v12000) { if (!p->streamId) return cudaErrorInvalidValue; *p->streamId = simi_stream_id(S(p->hStream)); return 0; }
IMPL(cudaStreamGetDevice, v12080) { if (!p->device) return cudaErrorInvalidValue; *p->device = simi_ctx_device(simi_stream_ctx(S(p->hStream))); return 0; }
IMPL(cudaStreamAttachMemAsync, v6000) { return 0; }
IMPL(cudaLaunchHostFunc, v10000) { return simi_launch_host_func(S(p->stream), p->fn, p->userData); }
struct cbarg { cudaStreamCallback_t cb; cudaStream_t s; void *ud; };
static void run_cb(void *a) {
  struct cbarg *c = a;
  c->cb(c->s, cudaSuccess, c->ud);
  free(c);
}
IMPL(cudaStreamAddCallback, v5000) {
  if (!p->callback) return cudaErrorInvalidValue;
  struct cbarg *c = malloc(sizeof *c);
  *c = (struct cbarg){ p->callback, p->stream, p->userData };
  int r = simi_launch_host_func(S(p->stream), run_cb, c);
  if (r) free(c);
  return r;
}
IMPL(cudaStreamBeginCapture, v10000) { return simi_capture_begin(S(p->stream), p->mode); }
IMPL(cudaStreamEndCapture, v10000) { return simi_capture_end(S(p->stream), (void **)p->pGraph); }
IMPL(cudaStreamIsCapturing, v10000) {
  int st = 0;
  simi_capture_status(S(p->stream), &st, NULL);
  if (p->pCaptureStatus) *p->pCaptureStatus = (enum cudaStreamCaptureStatus)st;
  return 0;
}
IMPL(cudaStreamGetCaptureInfo, v12030) {
  int st = 0;
  unsigned long long id = 0;
  simi_capture_status(S(p->stream), &st, &id);
  if (p->captureStatus_out) *p->captureStatus_out = (enum cudaStreamCaptureStatus)st;
  if (p->id_out) *p->id_out = id;
  if (p->graph_out) *p->graph_out = NULL;
  if (p->dependencies_out) *p->dependencies_out = NULL;
  if (p->edgeData_out) *p->edgeData_out = NULL;
  if (p->numDependencies_out) *p->numDependencies_out = 0;
  return 0;
}
IMPL(cudaThreadExchangeStreamCaptureMode, v10010) { return 0; }

/* ---------------------------------------------------------------- events */
IMPL(cudaEventCreate, v3020) { return simi_event_create((void **)p->event, 0); }
IMPL(cudaEventCreateWithFlags, v3020) { return simi_event_create((void **)p->event, p->flags); }
IMPL(cudaEventRecord, v3020) { return simi_event_record(p->event, S(p->stream)) ? cudaErrorInvalidResourceHandle : 0; }
IMPL(cudaEventRecordWithFlags, v11010) { return simi_event_record(p->event, S(p->stream)) ? cudaErrorInvalidResourceHandle : 0; }
IMPL(cudaEventSynchronize, v3020) {
  uint64_t t0 = simcu_now_ns();
  int r = simi_event_sync(p->event);
  sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, t0, NULL, p->event);
  return r ? cudaErrorInvalidResourceHandle : 0;
}
IMPL(cudaEventQuery, v3020) { return simi_event_query(p->event); }
IMPL(cudaEventDestroy, v3020) { return simi_event_destroy(p->event) ? cudaErrorInvalidResourceHandle : 0; }
IMPL(cudaEventElapsedTime, v12080) {
  int r = simi_event_elapsed(p->ms, p->start, p->end);
  return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : r ? cudaErrorInvalidResourceHandle : 0;
}

/* ---------------------------------------------------------------- memory */
static int merr(int r) { return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : r; }
IMPL(cudaMalloc, v3020) { return merr(simi_mem_alloc(p->devPtr, p->size, SIMI_MEM_DEVICE)); }
IMPL(cudaFree, v3020) {
  simi_primary_ctx(simi_get_device());
  if (p->devPtr) simi_free_sync();
  return p->devPtr && simi_mem_free(p->devPtr, 0) ? cudaErrorInvalidValue : 0;
}
IMPL(cudaMallocHost, v3020) { return merr(simi_mem_alloc(p->ptr, p->size, SIMI_MEM_PINNED)); }
IMPL(cudaHostAlloc, v3020) { return merr(simi_mem_alloc(p->pHost, p->size, SIMI_MEM_PINNED)); }
IMPL(cudaFreeHost, v3020) {
  if (p->ptr) simi_free_sync();
  return p->ptr && simi_mem_free(p->ptr, 0) ? cudaErrorInvalidValue : 0;
}
IMPL(cudaMallocManaged, v6000) { return merr(simi_mem_alloc(p->devPtr, p->size, SIMI_MEM_MANAGED)); }
IMPL(cudaMallocPitch, v3020) {
  if (!p->pitch) return cudaErrorInvalidValue;
  *p->pitch = (p->width + 511) & ~(size_t)511;
  return merr(simi_mem_alloc(p->devPtr, *p->pitch * p->height, SIMI_MEM_DEVICE));
}
IMPL(cudaMallocAsync, v11020) { return merr(simi_mem_alloc(p->devPtr, p->size, SIMI_MEM_DEVICE)); }
IMPL(cudaMallocFromPoolAsync, v11020) { return merr(simi_mem_alloc(p->ptr, p->size, SIMI_MEM_DEVICE)); }
IMPL(cudaFreeAsync, v11020) { return p->devPtr && simi_mem_free(p->devPtr, 0) ? cudaErrorInvalidValue : 0; }
IMPL(cudaHostRegister, v4000) { return 0; }
IMPL(cudaHostUnregister, v4000) { return 0; }
IMPL(cudaHostGetFlags, v3020) { if (p->pFlags) *p->pFlags = 0; return 0; }
IMPL(cudaHostGetDevicePointer, v3020) { if (!p->pDevice) return cudaErrorInvalidValue; *p->pDevice = p->pHost; return 0; }
IMPL(cudaMemAdvise, v12020) { return 0; }
IMPL(cudaMemPrefetchAsync, v12020) { return 0; }
static int pools[16];
IMPL(cudaDeviceGetDefaultMemPool, v11020) {
  if (!p->memPool || p->device < 0 || p->device >= ndev()) return cudaErrorInvalidValue;
  *p->memPool = (cudaMemPool_t)&pools[p->device];
  return 0;
}
IMPL(cudaDeviceGetMemPool, v11020) {
  if (!p->memPool || p->device < 0 || p->device >= ndev()) return cudaErrorInvalidValue;
  *p->memPool = (cudaMemPool_t)&pools[p->device];
  return 0;
}
IMPL(cudaDeviceSetMemPool, v11020) { return 0; }
IMPL(cudaMemPoolSetAttribute, v11020) { return 0; }
IMPL(cudaMemPoolGetAttribute, v11020) {
  if (!p->value) return cudaErrorInvalidValue;
  if (p->attr == cudaMemPoolAttrReleaseThreshold || p->attr == cudaMemPoolAttrReservedMemCurrent ||
      p->attr == cudaMemPoolAttrReservedMemHigh || p->attr == cudaMemPoolAttrUsedMemCurrent ||
      p->attr == cudaMemPoolAttrUsedMemHigh)
    *(unsigned long long *)p->value = 0;
  else
    *(int *)p->value = 0;
  return 0;
}
IMPL(cudaMemPoolTrimTo, v11020) { return 0; }
IMPL(cudaPointerGetAttributes, v4000) {
  if (!p->attributes) return cudaErrorInvalidValue;
  int dev = 0;
  int k = simi_mem_kind(p->ptr, NULL, NULL, &dev);
  memset(p->attributes, 0, sizeof *p->attributes);
  p->attributes->device = dev;
  switch (k) {
  case SIMI_MEM_DEVICE: p->attributes->type = cudaMemoryTypeDevice; p->attributes->devicePointer = (void *)p->ptr; break;
  case SIMI_MEM_MANAGED: p->attributes->type = cudaMemoryTypeManaged;
    p->attributes->devicePointer = p->attributes->hostPointer = (void *)p->ptr; break;
  case SIMI_MEM_PINNED: p->attributes->type = cudaMemoryTypeHost;
    p->attributes->devicePointer = p->attributes->hostPointer = (void *)p->ptr; break;
  default: p->attributes->type = cudaMemoryTypeUnregistered; break;
  }
  return 0;
}

/* ---------------------------------------------------------------- copies */
static int cerr(int r) { return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : r; }
static int kind_ok(int k) { return k >= 0 && k <= 4; }
IMPL(cudaMemcpy, v3020) {
  if (!kind_ok(p->kind)) return cudaErrorInvalidMemcpyDirection;
  return cerr(simi_memcpy(p->dst, p->src, p->count, p->kind, S(NULL), 0));
}
IMPL(cudaMemcpyAsync, v3020) {
  if (!kind_ok(p->kind)) return cudaErrorInvalidMemcpyDirection;
  return cerr(simi_memcpy(p->dst, p->src, p->count, p->kind, S(p->stream), 1));
}
IMPL(cudaMemcpy2D, v3020) {
  if (!kind_ok(p->kind)) return cudaErrorInvalidMemcpyDirection;
  return cerr(simi_memcpy2d(p->dst, p->dpitch, p->src, p->spitch, p->width, p->height, p->kind, S(NULL), 0));
}
IMPL(cudaMemcpy2DAsync, v3020) {
  if (!kind_ok(p->kind)) return cudaErrorInvalidMemcpyDirection;
  return cerr(simi_memcpy2d(p->dst, p->dpitch, p->src, p->spitch, p->width, p->height, p->kind, S(p->stream), 1));
}
IMPL(cudaMemcpyPeer, v4000) { return cerr(simi_memcpy(p->dst, p->src, p->count, cudaMemcpyDeviceToDevice, S(NULL), 0)); }
IMPL(cudaMemcpyPeerAsync, v4000) { return cerr(simi_memcpy(p->dst, p->src, p->count, cudaMemcpyDeviceToDevice, S(p->stream), 1)); }
IMPL(cudaMemset, v3020) { return cerr(simi_memset(p->devPtr, p->value, 1, p->count, S(NULL), 0)); }
IMPL(cudaMemsetAsync, v3020) { return cerr(simi_memset(p->devPtr, p->value, 1, p->count, S(p->stream), 1)); }
IMPL(cudaMemset2D, v3020) { return cerr(simi_memset2d(p->devPtr, p->pitch, p->value, p->width, p->height, S(NULL), 0)); }
IMPL(cudaMemset2DAsync, v3020) { return cerr(simi_memset2d(p->devPtr, p->pitch, p->value, p->width, p->height, S(p->stream), 1)); }
static int symcheck(const void *sym, size_t off, size_t count) {
  size_t sz = simrt_var_size(sym);
  if (!sz) return cudaErrorInvalidSymbol;
  return off + count > sz ? cudaErrorInvalidValue : 0;
}
IMPL(cudaMemcpyToSymbol, v3020) {
  int r = symcheck(p->symbol, p->offset, p->count);
  return r ? r : cerr(simi_memcpy((char *)p->symbol + p->offset, p->src, p->count, cudaMemcpyHostToDevice, S(NULL), 0));
}
IMPL(cudaMemcpyFromSymbol, v3020) {
  int r = symcheck(p->symbol, p->offset, p->count);
  return r ? r : cerr(simi_memcpy(p->dst, (const char *)p->symbol + p->offset, p->count, cudaMemcpyDeviceToHost, S(NULL), 0));
}
IMPL(cudaMemcpyToSymbolAsync, v3020) {
  int r = symcheck(p->symbol, p->offset, p->count);
  return r ? r : cerr(simi_memcpy((char *)p->symbol + p->offset, p->src, p->count, cudaMemcpyHostToDevice, S(p->stream), 1));
}
IMPL(cudaMemcpyFromSymbolAsync, v3020) {
  int r = symcheck(p->symbol, p->offset, p->count);
  return r ? r : cerr(simi_memcpy(p->dst, (const char *)p->symbol + p->offset, p->count, cudaMemcpyDeviceToHost, S(p->stream), 1));
}
IMPL(cudaGetSymbolAddress, v3020) {
  if (!p->devPtr) return cudaErrorInvalidValue;
  if (!simrt_var_size(p->symbol)) return cudaErrorInvalidSymbol;
  *p->devPtr = (void *)p->symbol;
  return 0;
}
IMPL(cudaGetSymbolSize, v3020) {
  if (!p->size) return cudaErrorInvalidValue;
  *p->size = simrt_var_size(p->symbol);
  return *p->size ? 0 : cudaErrorInvalidSymbol;
}

/* ---------------------------------------------------------------- graphs */
IMPL(cudaGraphCreate, v10000) { return simi_graph_create((void **)p->pGraph); }
IMPL(cudaGraphDestroy, v10000) { return simi_graph_destroy(p->graph) ? cudaErrorInvalidValue : 0; }
IMPL(cudaGraphInstantiate, v12000) { return simi_graph_instantiate((void **)p->pGraphExec, p->graph) ? cudaErrorInvalidValue : 0; }
IMPL(cudaGraphInstantiateWithFlags, v11040) { return simi_graph_instantiate((void **)p->pGraphExec, p->graph) ? cudaErrorInvalidValue : 0; }
IMPL(cudaGraphExecDestroy, v10000) { return simi_graph_exec_destroy(p->graphExec) ? cudaErrorInvalidValue : 0; }
IMPL(cudaGraphLaunch, v10000) { return simi_graph_launch(p->graphExec, S(p->stream)) ? cudaErrorInvalidValue : 0; }
IMPL(cudaGraphUpload, v10000) { return 0; }
IMPL(cudaGraphGetNodes, v10000) {
  if (!p->numNodes) return cudaErrorInvalidValue;
  return simi_graph_nodes(p->graph, (void **)p->nodes, p->numNodes) ? cudaErrorInvalidValue : 0;
}
IMPL(cudaGraphAddKernelNode, v10000) {
  const struct cudaKernelNodeParams *n = p->pNodeParams;
  if (!n || !p->pGraphNode) return cudaErrorInvalidValue;
  const char *name = simrt_kernel_name(n->func);
  if (!name) return cudaErrorInvalidDeviceFunction;
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.grid[0] = n->gridDim.x; k.grid[1] = n->gridDim.y; k.grid[2] = n->gridDim.z;
  k.block[0] = n->blockDim.x; k.block[1] = n->blockDim.y; k.block[2] = n->blockDim.z;
  k.dyn_smem = n->sharedMemBytes;
  return simi_graph_add_kernel(p->graph, &k, (void **)p->pGraphNode) ? cudaErrorInvalidValue : 0;
}
IMPL(cudaGraphAddMemsetNode, v10000) {
  const struct cudaMemsetParams *n = p->pMemsetParams;
  if (!n || !p->pGraphNode) return cudaErrorInvalidValue;
  return simi_graph_add_memset(p->graph, n->dst, (int)n->value, n->elementSize, n->width, n->height,
                               n->pitch, (void **)p->pGraphNode) ? cudaErrorInvalidValue : 0;
}

/* ---------------------------------------------------------------- profiler, driver entry points */
IMPL0(cudaProfilerStart) { return 0; }
IMPL0(cudaProfilerStop) { return 0; }
IMPL(cudaGetDriverEntryPoint, v11030) {
  if (!p->symbol || !p->funcPtr) return cudaErrorInvalidValue;
  *p->funcPtr = simi_driver_proc(p->symbol, CUDA_VERSION, (p->flags & cudaEnablePerThreadDefaultStream) != 0);
  if (p->driverStatus) *p->driverStatus = *p->funcPtr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return 0;
}
IMPL(cudaGetDriverEntryPointByVersion, v12050) {
  if (!p->symbol || !p->funcPtr) return cudaErrorInvalidValue;
  *p->funcPtr = simi_driver_proc(p->symbol, (int)p->cudaVersion, (p->flags & cudaEnablePerThreadDefaultStream) != 0);
  if (p->driverStatus) *p->driverStatus = *p->funcPtr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return 0;
}
