/* api.c — the driver API functions the simulator implements (drv_<name>, called by the
 * generated entry points in driver_stubs.c with the real *_params struct), simcu_launch_kernel
 * for the library stand-ins, the function-handle registry and error strings.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <generated_cuda_meta.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include "simdrv.h"
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPL(name) __attribute__((visibility("hidden"))) int drv_##name(name##_params *p)
#define DPTR(x) ((void *)(uintptr_t)(x))

__thread int simdrv_ptds;
/* a NULL stream in a _ptsz/_ptds call means the per-thread default stream */
static CUstream S(CUstream h) { return (!h && simdrv_ptds) ? CU_STREAM_PER_THREAD : h; }

int simdrv_call(int cbid, const char *name, void *params, simi_impl_fn impl, int ptds) {
  simi_init();
  simi_api a;
  memset(&a, 0, sizeof a);
  a.domain = CUPTI_CB_DOMAIN_DRIVER_API;
  a.cbid = (uint32_t)cbid;
  a.name = name;
  a.params = params;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz)
    a.symbol = simi_func_name(((cuLaunchKernel_params *)params)->f);
  else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    a.symbol = simi_func_name(((cuLaunchKernelEx_params *)params)->f);
  simi_api_enter(&a);
  int saved = simdrv_ptds;
  simdrv_ptds = ptds;
  int r;
  if (simcu_device_count() == 0 && cbid != CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2)  /* no GPU */
    r = cbid == CUPTI_DRIVER_TRACE_CBID_cuInit ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_NOT_INITIALIZED;
  else
    r = impl ? impl(params) : CUDA_ERROR_NOT_SUPPORTED;
  simdrv_ptds = saved;
  simi_api_exit(&a, &r);
  return r;
}

/* ---------------------------------------------------------------- function handles */
#define FUNC_MAGIC 0x46554e43u
struct func { uint32_t magic; const char *name; const void *host; struct func *next; };
/* by name, chained (a PyTorch process registers tens of thousands of kernels, and every library
 * kernel launch looks its name up: a GPU's launch does not scan a list) */
#define FUNC_BUCKETS 65536u
static struct func *fbucket[FUNC_BUCKETS];
static pthread_mutex_t fmu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t name_hash(const char *s) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

SIMCU_API void *simi_func_get(const char *name, const void *host) {
  if (!name) return NULL;
  struct func **b = &fbucket[name_hash(name) & (FUNC_BUCKETS - 1)];
  pthread_mutex_lock(&fmu);
  struct func *f;
  for (f = *b; f; f = f->next)
    if (strcmp(f->name, name) == 0 && (!host || !f->host || f->host == host)) break;
  if (!f) {
    f = calloc(1, sizeof *f);
    f->magic = FUNC_MAGIC; f->name = strdup(name); f->host = host;
    f->next = *b; *b = f;
  } else if (host && !f->host) f->host = host;
  pthread_mutex_unlock(&fmu);
  return f;
}
/* h may be a kernel handle of ours or any other pointer (a host function): only an aligned
 * pointer is looked at for the magic. */
static const struct func *as_func(const void *h) {
  if (!h || ((uintptr_t)h & (_Alignof(struct func) - 1))) return NULL;
  const struct func *f = h;
  return f->magic == FUNC_MAGIC ? f : NULL;
}
SIMCU_API const char *simi_func_name(const void *h) {
  const struct func *f = as_func(h);
  return f ? f->name : NULL;
}
SIMCU_API const void *simi_func_host(const void *h) {
  const struct func *f = as_func(h);
  return f ? f->host : NULL;
}

/* ---------------------------------------------------------------- errors */
SIMCU_API const char *simi_error_string(int c) {
  switch (c) {
  case 0: return "no error";
  case 1: return "invalid argument";
  case 2: return "out of memory";
  case 3: return "initialization error";
  case 4: return "driver shutting down";
  case 5: return "profiler disabled while using external profiling tool";
  case 9: return "invalid configuration argument";
  case 12: return "invalid pitch argument";
  case 13: return "invalid device symbol";
  case 17: return "invalid device pointer";
  case 21: return "invalid copy direction for memcpy";
  case 34: return "CUDA driver is a stub library";
  case 35: return "CUDA driver version is insufficient for CUDA runtime version";
  case 98: return "invalid device function";
  case 100: return "no CUDA-capable device is detected";
  case 101: return "invalid device ordinal";
  case 200: return "device kernel image is invalid";
  case 201: return "invalid device context";
  case 209: return "no kernel image is available for execution on the device";
  case 300: return "invalid source";
  case 301: return "file not found";
  case 400: return "invalid resource handle";
  case 401: return "resource not valid in this context";
  case 500: return "named symbol not found";
  case 600: return "device not ready";
  case 700: return "an illegal memory access was encountered";
  case 701: return "too many resources requested for launch";
  case 702: return "the launch timed out and was terminated";
  case 704: return "peer access is already enabled";
  case 705: return "peer access has not been enabled";
  case 709: return "context is destroyed";
  case 710: return "device-side assert triggered";
  case 719: return "unspecified launch failure";
  case 800: return "operation not permitted";
  case 801: return "operation not supported";
  case 900: return "operation not permitted when stream is capturing";
  case 901: return "operation failed due to a previous error during capture";
  case 902: return "operation would result in a merge of separate capture sequences";
  case 903: return "capture was not ended in the same stream as it began";
  case 904: return "capturing stream has unjoined work";
  case 999: return "unknown error";
  default: return NULL;
  }
}

__attribute__((visibility("default"))) CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const char *s = simi_error_name(error, 0) ? simi_error_string(error) : NULL;
  if (!s && simi_error_name(error, 0)) s = simi_error_name(error, 0);
  *pStr = s;
  return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
__attribute__((visibility("default"))) CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = simi_error_name(error, 0);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------------------- init, devices */
IMPL(cuInit) { return p->Flags ? CUDA_ERROR_INVALID_VALUE : 0; }
IMPL(cuDriverGetVersion) { if (!p->driverVersion) return CUDA_ERROR_INVALID_VALUE; *p->driverVersion = CUDA_VERSION; return 0; }
IMPL(cuDeviceGetCount) { if (!p->count) return CUDA_ERROR_INVALID_VALUE; *p->count = simcu_device_count(); return 0; }
IMPL(cuDeviceGet) {
  if (!p->device) return CUDA_ERROR_INVALID_VALUE;
  if (p->ordinal < 0 || p->ordinal >= simcu_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *p->device = p->ordinal;
  return 0;
}
IMPL(cuDeviceGetName) {
  if (!p->name || p->len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (p->dev < 0 || p->dev >= simcu_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(p->name, (size_t)p->len, "%s", simcu_device_name(p->dev));
  return 0;
}
IMPL(cuDeviceGetUuid_v2) {
  if (!p->uuid) return CUDA_ERROR_INVALID_VALUE;
  if (p->dev < 0 || p->dev >= simcu_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  simi_dev_uuid(p->dev, (unsigned char *)p->uuid->bytes);
  return 0;
}
IMPL(cuDeviceGetUuid) { return drv_cuDeviceGetUuid_v2((cuDeviceGetUuid_v2_params *)p); }
IMPL(cuDeviceTotalMem_v2) {
  if (!p->bytes) return CUDA_ERROR_INVALID_VALUE;
  if (p->dev < 0 || p->dev >= simcu_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *p->bytes = simi_dev_total_mem(p->dev);
  return 0;
}
IMPL(cuDeviceGetAttribute) { if (!p->pi) return CUDA_ERROR_INVALID_VALUE; return simi_dev_attr(p->attrib, p->dev, p->pi); }
IMPL(cuDeviceComputeCapability) {
  if (!p->major || !p->minor) return CUDA_ERROR_INVALID_VALUE;
  *p->major = 9; *p->minor = 0;
  return 0;
}
IMPL(cuDeviceGetPCIBusId) {
  if (!p->pciBusId || p->len <= 0) return CUDA_ERROR_INVALID_VALUE;
  int bus = 0;
  if (simi_dev_attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, p->dev, &bus)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(p->pciBusId, (size_t)p->len, "00000000:%02X:00.0", bus);
  return 0;
}

/* ---------------------------------------------------------------- contexts */
static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;

IMPL(cuDevicePrimaryCtxRetain) {
  if (!p->pctx) return CUDA_ERROR_INVALID_VALUE;
  void *c = simi_primary_ctx(p->dev);
  if (!c) return CUDA_ERROR_INVALID_DEVICE;
  *p->pctx = c;
  return 0;
}
IMPL(cuDevicePrimaryCtxRelease_v2) { return p->dev >= 0 && p->dev < simcu_device_count() ? 0 : CUDA_ERROR_INVALID_DEVICE; }
IMPL(cuDevicePrimaryCtxReset_v2) { return p->dev >= 0 && p->dev < simcu_device_count() ? 0 : CUDA_ERROR_INVALID_DEVICE; }
IMPL(cuDevicePrimaryCtxSetFlags_v2) { return p->dev >= 0 && p->dev < simcu_device_count() ? 0 : CUDA_ERROR_INVALID_DEVICE; }
IMPL(cuDevicePrimaryCtxGetState) {
  if (p->flags) *p->flags = 0;
  if (p->active) *p->active = 1;
  return p->dev >= 0 && p->dev < simcu_device_count() ? 0 : CUDA_ERROR_INVALID_DEVICE;
}
IMPL(cuCtxGetCurrent) { if (!p->pctx) return CUDA_ERROR_INVALID_VALUE; *p->pctx = simi_current_ctx(); return 0; }
IMPL(cuCtxSetCurrent) { simi_set_current_ctx(p->ctx); return 0; }
IMPL(cuCtxPushCurrent_v2) {
  if (ctx_depth == 16) return CUDA_ERROR_INVALID_VALUE;
  ctx_stack[ctx_depth++] = simi_current_ctx();
  simi_set_current_ctx(p->ctx);
  return 0;
}
IMPL(cuCtxPopCurrent_v2) {
  if (p->pctx) *p->pctx = simi_current_ctx();
  simi_set_current_ctx(ctx_depth ? ctx_stack[--ctx_depth] : NULL);
  return 0;
}
IMPL(cuCtxGetDevice) { if (!p->device) return CUDA_ERROR_INVALID_VALUE; *p->device = simi_get_device(); return 0; }
__attribute__((visibility("hidden"))) int drv_cuCtxSynchronize(void *p) { return simi_device_sync(); }
IMPL(cuCtxSynchronize_v2) { return simi_device_sync(); }
IMPL(cuCtxGetId) {
  if (!p->ctxId) return CUDA_ERROR_INVALID_VALUE;
  *p->ctxId = simi_ctx_id(p->ctx ? p->ctx : simi_current_ctx());
  return 0;
}
IMPL(cuCtxGetApiVersion) { if (p->version) *p->version = 3020; return 0; }
IMPL(cuCtxCreate_v4) {
  if (!p->pctx) return CUDA_ERROR_INVALID_VALUE;
  void *c = simi_primary_ctx(p->dev);
  if (!c) return CUDA_ERROR_INVALID_DEVICE;
  *p->pctx = c;
  simi_set_current_ctx(c);
  return 0;
}
IMPL(cuCtxDestroy_v2) { return p->ctx ? 0 : CUDA_ERROR_INVALID_VALUE; }
IMPL(cuCtxSetLimit) { return 0; }
IMPL(cuCtxGetLimit) { if (p->pvalue) *p->pvalue = 1024; return 0; }
IMPL(cuCtxGetStreamPriorityRange) {
  if (p->leastPriority) *p->leastPriority = 0;
  if (p->greatestPriority) *p->greatestPriority = -5;
  return 0;
}

/* ---------------------------------------------------------------- streams, events */
IMPL(cuStreamCreate) { return simi_stream_create((void **)p->phStream, p->Flags, 0); }
IMPL(cuStreamCreateWithPriority) { return simi_stream_create((void **)p->phStream, p->flags, p->priority); }
IMPL(cuStreamDestroy_v2) { return simi_stream_destroy(p->hStream); }
IMPL(cuStreamSynchronize) { return simi_stream_sync(S(p->hStream)); }
IMPL(cuStreamQuery) { return simi_stream_query(S(p->hStream)); }
IMPL(cuStreamWaitEvent) { return simi_stream_wait_event(S(p->hStream), p->hEvent); }
IMPL(cuStreamGetPriority) { return simi_stream_info(S(p->hStream), NULL, p->priority); }
IMPL(cuStreamGetFlags) { return simi_stream_info(S(p->hStream), p->flags, NULL); }
IMPL(cuStreamGetId) { if (!p->streamId) return CUDA_ERROR_INVALID_VALUE; *p->streamId = simi_stream_id(S(p->hStream)); return 0; }
IMPL(cuStreamGetCtx) { if (!p->pctx) return CUDA_ERROR_INVALID_VALUE; *p->pctx = simi_stream_ctx(S(p->hStream)); return 0; }
IMPL(cuStreamBeginCapture_v2) { return simi_capture_begin(S(p->hStream), p->mode); }
IMPL(cuStreamEndCapture) { return simi_capture_end(S(p->hStream), (void **)p->phGraph); }
IMPL(cuStreamIsCapturing) {
  int st = 0;
  simi_capture_status(S(p->hStream), &st, NULL);
  if (p->captureStatus) *p->captureStatus = (CUstreamCaptureStatus)st;
  return 0;
}
IMPL(cuLaunchHostFunc) { return simi_launch_host_func(S(p->hStream), p->fn, p->userData); }
IMPL(cuEventCreate) { return simi_event_create((void **)p->phEvent, p->Flags); }
IMPL(cuEventRecord) { return simi_event_record(p->hEvent, S(p->hStream)); }
IMPL(cuEventRecordWithFlags) { return simi_event_record(p->hEvent, S(p->hStream)); }
IMPL(cuEventSynchronize) { return simi_event_sync(p->hEvent); }
IMPL(cuEventQuery) { return simi_event_query(p->hEvent); }
IMPL(cuEventDestroy_v2) { return simi_event_destroy(p->hEvent); }
IMPL(cuEventElapsedTime_v2) { return simi_event_elapsed(p->pMilliseconds, p->hStart, p->hEnd); }
IMPL(cuEventElapsedTime) { return simi_event_elapsed(p->pMilliseconds, p->hStart, p->hEnd); }

/* ---------------------------------------------------------------- memory */
IMPL(cuMemAlloc_v2) { return simi_mem_alloc((void **)p->dptr, p->bytesize, SIMI_MEM_DEVICE); }
IMPL(cuMemFree_v2) { if (p->dptr) simi_free_sync(); return simi_mem_free(DPTR(p->dptr), 0); }
IMPL(cuMemAllocHost_v2) { return simi_mem_alloc(p->pp, p->bytesize, SIMI_MEM_PINNED); }
IMPL(cuMemHostAlloc) { return simi_mem_alloc(p->pp, p->bytesize, SIMI_MEM_PINNED); }
IMPL(cuMemFreeHost) { if (p->p) simi_free_sync(); return simi_mem_free(p->p, 0); }
IMPL(cuMemAllocManaged) { return simi_mem_alloc((void **)p->dptr, p->bytesize, SIMI_MEM_MANAGED); }
IMPL(cuMemAllocAsync) { return simi_mem_alloc((void **)p->dptr, p->bytesize, SIMI_MEM_DEVICE); }
IMPL(cuMemFreeAsync) { return simi_mem_free(DPTR(p->dptr), 0); }
IMPL(cuMemGetInfo_v2) { simi_mem_info(p->free, p->total); return 0; }
IMPL(cuMemHostGetDevicePointer_v2) { if (!p->pdptr) return CUDA_ERROR_INVALID_VALUE; *p->pdptr = (CUdeviceptr)(uintptr_t)p->p; return 0; }
IMPL(cuMemGetAddressRange_v2) {
  void *base = NULL; size_t size = 0;
  if (simi_mem_kind(DPTR(p->dptr), &base, &size, NULL) == SIMI_MEM_PAGEABLE) return CUDA_ERROR_NOT_FOUND;
  if (p->pbase) *p->pbase = (CUdeviceptr)(uintptr_t)base;
  if (p->psize) *p->psize = size;
  return 0;
}
IMPL(cuPointerGetAttribute) {
  int dev = 0;
  int k = simi_mem_kind(DPTR(p->ptr), NULL, NULL, &dev);
  if (!p->data) return CUDA_ERROR_INVALID_VALUE;
  switch (p->attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    if (k == SIMI_MEM_PAGEABLE) return CUDA_ERROR_INVALID_VALUE;
    *(unsigned *)p->data = k == SIMI_MEM_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE; return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)p->data = dev; return 0;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)p->data = k == SIMI_MEM_MANAGED; return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)p->data = DPTR(p->ptr); return 0;
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(void **)p->data = simi_primary_ctx(dev); return 0;
  default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}
IMPL(cuMemcpyHtoD_v2) { return simi_memcpy(DPTR(p->dstDevice), p->srcHost, p->ByteCount, 1, S(NULL), 0); }
IMPL(cuMemcpyDtoH_v2) { return simi_memcpy(p->dstHost, DPTR(p->srcDevice), p->ByteCount, 2, S(NULL), 0); }
IMPL(cuMemcpyDtoD_v2) { return simi_memcpy(DPTR(p->dstDevice), DPTR(p->srcDevice), p->ByteCount, 3, S(NULL), 0); }
IMPL(cuMemcpy) { return simi_memcpy(DPTR(p->dst), DPTR(p->src), p->ByteCount, 4, S(NULL), 0); }
IMPL(cuMemcpyHtoDAsync_v2) { return simi_memcpy(DPTR(p->dstDevice), p->srcHost, p->ByteCount, 1, S(p->hStream), 1); }
IMPL(cuMemcpyDtoHAsync_v2) { return simi_memcpy(p->dstHost, DPTR(p->srcDevice), p->ByteCount, 2, S(p->hStream), 1); }
IMPL(cuMemcpyDtoDAsync_v2) { return simi_memcpy(DPTR(p->dstDevice), DPTR(p->srcDevice), p->ByteCount, 3, S(p->hStream), 1); }
IMPL(cuMemcpyAsync) { return simi_memcpy(DPTR(p->dst), DPTR(p->src), p->ByteCount, 4, S(p->hStream), 1); }
IMPL(cuMemsetD8_v2) { return simi_memset(DPTR(p->dstDevice), p->uc, 1, p->N, S(NULL), 0); }
IMPL(cuMemsetD16_v2) { return simi_memset(DPTR(p->dstDevice), p->us, 2, p->N, S(NULL), 0); }
IMPL(cuMemsetD32_v2) { return simi_memset(DPTR(p->dstDevice), (int)p->ui, 4, p->N, S(NULL), 0); }
IMPL(cuMemsetD8Async) { return simi_memset(DPTR(p->dstDevice), p->uc, 1, p->N, S(p->hStream), 1); }
IMPL(cuMemsetD16Async) { return simi_memset(DPTR(p->dstDevice), p->us, 2, p->N, S(p->hStream), 1); }
IMPL(cuMemsetD32Async) { return simi_memset(DPTR(p->dstDevice), (int)p->ui, 4, p->N, S(p->hStream), 1); }

/* ---------------------------------------------------------------- modules, kernels */
static int module_dummy;
IMPL(cuModuleLoadData) { if (!p->module) return CUDA_ERROR_INVALID_VALUE; *p->module = (CUmodule)&module_dummy; return 0; }
IMPL(cuModuleLoad) { if (!p->module) return CUDA_ERROR_INVALID_VALUE; *p->module = (CUmodule)&module_dummy; return 0; }
IMPL(cuModuleUnload) { return 0; }
IMPL(cuModuleGetFunction) {
  if (!p->hfunc || !p->name) return CUDA_ERROR_INVALID_VALUE;
  *p->hfunc = simi_func_get(p->name, NULL);
  return 0;
}
IMPL(cuLibraryGetKernel) {
  if (!p->pKernel || !p->name) return CUDA_ERROR_INVALID_VALUE;
  *p->pKernel = simi_func_get(p->name, NULL);
  return 0;
}
IMPL(cuKernelGetFunction) { if (!p->pFunc) return CUDA_ERROR_INVALID_VALUE; *p->pFunc = (CUfunction)p->kernel; return 0; }
IMPL(cuFuncGetName) {
  if (!p->name) return CUDA_ERROR_INVALID_VALUE;
  *p->name = simi_func_name(p->hfunc);
  return *p->name ? 0 : CUDA_ERROR_INVALID_HANDLE;
}
IMPL(cuKernelGetName) {
  if (!p->name) return CUDA_ERROR_INVALID_VALUE;
  *p->name = simi_func_name(p->hfunc);
  return *p->name ? 0 : CUDA_ERROR_INVALID_HANDLE;
}
IMPL(cuFuncGetAttribute) {
  if (!p->pi) return CUDA_ERROR_INVALID_VALUE;
  switch (p->attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *p->pi = 1024; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *p->pi = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *p->pi = 90; break;
  default: *p->pi = 0;
  }
  return 0;
}
IMPL(cuFuncSetAttribute) { return 0; }
IMPL(cuFuncSetCacheConfig) { return 0; }

static int launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned smem, CUstream st) {
  const char *name = simi_func_name(f);
  if (!name) return CUDA_ERROR_INVALID_HANDLE;
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.grid[0] = gx; k.grid[1] = gy; k.grid[2] = gz;
  k.block[0] = bx; k.block[1] = by; k.block[2] = bz;
  k.dyn_smem = smem;
  return simi_launch(S(st), &k);
}
IMPL(cuLaunchKernel) {
  return launch(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                p->blockDimZ, p->sharedMemBytes, p->hStream);
}
IMPL(cuLaunchCooperativeKernel) {
  return launch(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                p->blockDimZ, p->sharedMemBytes, p->hStream);
}
IMPL(cuLaunchKernelEx) {
  const CUlaunchConfig *c = p->config;
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return launch(p->f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                c->blockDimZ, c->sharedMemBytes, c->hStream);
}

/* simcore.h: a library (cuBLAS, NCCL...) launches a kernel as a driver call cuLaunchKernel */
SIMCU_API int simcu_launch_kernel(void *stream, const simcu_kernel *k) {
  return simcu_launch_kernel_ref(stream, k, NULL);
}
SIMCU_API int simcu_launch_kernel_ref(void *stream, const simcu_kernel *k, void **ref) {
  if (ref) *ref = NULL;
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  simi_init();
  cuLaunchKernel_params p;
  memset(&p, 0, sizeof p);
  p.f = simi_func_get(k->name ? k->name : "kernel", NULL);
  p.gridDimX = k->grid[0]; p.gridDimY = k->grid[1]; p.gridDimZ = k->grid[2];
  p.blockDimX = k->block[0]; p.blockDimY = k->block[1]; p.blockDimZ = k->block[2];
  p.sharedMemBytes = (unsigned)k->dyn_smem;
  p.hStream = stream;
  simi_api a;
  memset(&a, 0, sizeof a);
  a.domain = CUPTI_CB_DOMAIN_DRIVER_API;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  a.name = "cuLaunchKernel";
  a.params = &p;
  a.symbol = simi_func_name(p.f);
  simi_api_enter(&a);
  int r = simcu_device_count() ? simi_launch_ref(stream, k, ref) : CUDA_ERROR_NOT_INITIALIZED;
  simi_api_exit(&a, &r);
  return r;
}

/* ---------------------------------------------------------------- graphs */
IMPL(cuGraphCreate) { return simi_graph_create((void **)p->phGraph); }
IMPL(cuGraphDestroy) { return simi_graph_destroy(p->hGraph); }
IMPL(cuGraphInstantiateWithFlags) { return simi_graph_instantiate((void **)p->phGraphExec, p->hGraph); }
IMPL(cuGraphExecDestroy) { return simi_graph_exec_destroy(p->hGraphExec); }
IMPL(cuGraphLaunch) { return simi_graph_launch(p->hGraph, S(p->hStream)); }
IMPL(cuGraphUpload) { return 0; }
static int add_kernel_node(CUgraphNode *node, CUgraph graph, CUfunction f, unsigned gx, unsigned gy,
                           unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem) {
  const char *name = simi_func_name(f);
  if (!name) return CUDA_ERROR_INVALID_HANDLE;
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.grid[0] = gx; k.grid[1] = gy; k.grid[2] = gz;
  k.block[0] = bx; k.block[1] = by; k.block[2] = bz;
  k.dyn_smem = smem;
  return simi_graph_add_kernel(graph, &k, (void **)node);
}
IMPL(cuGraphAddKernelNode) {
  const CUDA_KERNEL_NODE_PARAMS_v1 *n = p->nodeParams;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  return add_kernel_node(p->phGraphNode, p->hGraph, n->func, n->gridDimX, n->gridDimY, n->gridDimZ,
                         n->blockDimX, n->blockDimY, n->blockDimZ, n->sharedMemBytes);
}
IMPL(cuGraphAddKernelNode_v2) {
  const CUDA_KERNEL_NODE_PARAMS *n = p->nodeParams;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  return add_kernel_node(p->phGraphNode, p->hGraph, n->func ? n->func : (CUfunction)n->kern,
                         n->gridDimX, n->gridDimY, n->gridDimZ, n->blockDimX, n->blockDimY,
                         n->blockDimZ, n->sharedMemBytes);
}
IMPL(cuGraphAddMemsetNode) {
  const CUDA_MEMSET_NODE_PARAMS *n = p->memsetParams;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  return simi_graph_add_memset(p->hGraph, (void *)(uintptr_t)n->dst, (int)n->value, n->elementSize,
                               n->width, n->height, n->pitch, (void **)p->phGraphNode);
}

/* ---------------------------------------------------------------- profiler, entry points */
__attribute__((visibility("hidden"))) int drv_cuProfilerStart(void *p) { return 0; }
__attribute__((visibility("hidden"))) int drv_cuProfilerStop(void *p) { return 0; }

SIMCU_API void *simi_driver_proc(const char *name, int version, int ptds) {
  (void)version;
  if (!name) return NULL;
  char buf[256];
  static const char *suffix[] = { "_v4", "_v3", "_v2", "" };
  for (int pt = ptds ? 0 : 1; pt < 2; pt++)
    for (int i = 0; i < 4; i++) {
      snprintf(buf, sizeof buf, "%s%s%s", name, suffix[i], pt == 0 ? "_ptsz" : "");
      for (const simi_sym *s = simdrv_symtab; s->name; s++)
        if (strcmp(s->name, buf) == 0) return s->fn;
      if (pt == 0) {
        snprintf(buf, sizeof buf, "%s%s_ptds", name, suffix[i]);
        for (const simi_sym *s = simdrv_symtab; s->name; s++)
          if (strcmp(s->name, buf) == 0) return s->fn;
      }
    }
  if (strcmp(name, "cuGetErrorString") == 0) return (void *)cuGetErrorString;
  if (strcmp(name, "cuGetErrorName") == 0) return (void *)cuGetErrorName;
  return NULL;
}
IMPL(cuGetProcAddress_v2) {
  if (!p->symbol || !p->pfn) return CUDA_ERROR_INVALID_VALUE;
  *p->pfn = simi_driver_proc(p->symbol, p->cudaVersion, (p->flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
  if (p->symbolStatus) *p->symbolStatus = *p->pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *p->pfn ? 0 : CUDA_ERROR_NOT_FOUND;
}
/* ---------------------------------------------------------------- private interfaces
 * cuGetExportTable hands out the real driver's private interfaces (tables of functions), which
 * the simulator does not have: it answers CUDA_ERROR_NOT_SUPPORTED. A real runtime or CUPTI
 * loaded next to the simulated driver (a program's own copy that the stand-ins did not replace,
 * e.g. under SIMCUDA_REDIRECT=0) asks for them; the real CUPTI answers that refusal by
 * formatting the error with cuptiGetResultString, which asks again, until the stack overflows.
 * So while such a foreign library is loaded, cuGetExportTable succeeds with a table that declares
 * itself too small for any interface (its size word says one entry) and whose entries all return
 * CUDA_ERROR_UNKNOWN: the foreign library gives up with an error code (cudart:
 * cudaGetDeviceCount fails; CUPTI: cuptiSubscribe fails) and never recurses. (A table declaring
 * the entries the caller wants makes CUPTI call one, fail, and recurse again.) One line on
 * stderr says so. */
#define FOREIGN_ENTRIES 256
static int refuse_entry(void) { return CUDA_ERROR_UNKNOWN; }
static size_t refusing_table[1 + FOREIGN_ENTRIES];
static char own_dir[4096];

static int find_foreign(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *path = info->dlpi_name, *base = path ? strrchr(path, '/') : NULL;
  base = base ? base + 1 : path;
  if (!base || (strncmp(base, "libcupti.so", 11) && strncmp(base, "libcudart.so", 12))) return 0;
  size_t n = strlen(own_dir);
  if (n && !strncmp(path, own_dir, n) && path[n] == '/' && !strchr(path + n + 1, '/')) return 0;
  snprintf((char *)data, 4096, "%s", path);
  return 1;
}
__attribute__((visibility("hidden"))) int drv_cuGetExportTable(void *pp) {
  cuGetExportTable_params *p = pp;
  if (!p->ppExportTable || !p->pExportTableId) return CUDA_ERROR_INVALID_VALUE;
  *p->ppExportTable = NULL;
  static char foreign[4096];
  static int warned;
  if (!own_dir[0]) {
    Dl_info di;
    if (dladdr((void *)drv_cuGetExportTable, &di) && di.dli_fname) {
      snprintf(own_dir, sizeof own_dir, "%s", di.dli_fname);
      char *sl = strrchr(own_dir, '/');
      if (sl) *sl = 0; else own_dir[0] = 0;
    }
  }
  if (!dl_iterate_phdr(find_foreign, foreign)) return CUDA_ERROR_NOT_SUPPORTED;
  if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "simcuda: %s is not the simulator's: its private driver interfaces are "
            "refused (CUDA_ERROR_UNKNOWN)\n", foreign);
  if (!refusing_table[0]) {
    for (int i = 1; i <= FOREIGN_ENTRIES; i++) refusing_table[i] = (size_t)refuse_entry;
    __atomic_store_n(&refusing_table[0], 2 * sizeof(size_t), __ATOMIC_RELEASE);
  }
  *p->ppExportTable = refusing_table;
  return CUDA_SUCCESS;
}
