/* call.c — the runtime's call wrapper (CUPTI runtime-domain callbacks, last error), the
 * functions nvcc-generated code calls (__cudaRegister*, __cudaPush/PopCallConfiguration,
 * __cudaGetKernel, __cudaLaunchKernel), kernel launches and error strings.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda_runtime_api.h>
#include <generated_cuda_runtime_api_meta.h>
#include <cupti_callbacks.h>
#include <cupti_runtime_cbid.h>
#include "simrt.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define IMPL(name, ver) __attribute__((visibility("hidden"))) int rt_##name(name##_##ver##_params *p)

__thread int simrt_ptds;
static __thread cudaError_t last_error;

/* ---------------------------------------------------------------- registered kernels */
/* host stub -> function handle, open addressing (a launch finds its kernel in O(1), as on a GPU;
 * a stub registered again maps to its latest handle) */
struct hostfn { const void *host; void *func; };
static struct hostfn *hostfns;
static size_t nhostfns, caphostfns; /* caphostfns: a power of 2 */
static pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;

static size_t host_slot(const struct hostfn *t, size_t cap, const void *host) {
  uint64_t h = (uint64_t)(uintptr_t)host * 0x9E3779B97F4A7C15ull;
  size_t i = (size_t)(h >> 20) & (cap - 1);
  while (t[i].host && t[i].host != host) i = (i + 1) & (cap - 1);
  return i;
}
/* under hmu */
static void hostfn_put(const void *host, void *func) {
  if (!host) return;
  if (2 * (nhostfns + 1) > caphostfns) {
    size_t cap = caphostfns ? 2 * caphostfns : 1024;
    struct hostfn *t = calloc(cap, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < caphostfns; i++)
      if (hostfns[i].host) t[host_slot(t, cap, hostfns[i].host)] = hostfns[i];
    free(hostfns);
    hostfns = t;
    caphostfns = cap;
  }
  size_t i = host_slot(hostfns, caphostfns, host);
  if (!hostfns[i].host) nhostfns++;
  hostfns[i] = (struct hostfn){host, func};
}

static void *func_of_host(const void *host) {
  void *f = NULL;
  pthread_mutex_lock(&hmu);
  if (caphostfns && host) {
    size_t i = host_slot(hostfns, caphostfns, host);
    if (hostfns[i].host) f = hostfns[i].func;
  }
  pthread_mutex_unlock(&hmu);
  return f;
}
/* the handle for a host stub, a cudaKernel_t or a cudaFunction_t */
static void *func_of(const void *p) {
  if (!p) return NULL;
  if (simi_func_name(p)) return (void *)p;
  return func_of_host(p);
}
const char *simrt_kernel_name(const void *func) { return simi_func_name(func_of(func)); }

/* ---------------------------------------------------------------- call wrapper */
/* Calls that work without a GPU. */
static int needs_device(int cbid) {
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020:
  case CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000:
    return 0;
  default:
    return 1;
  }
}
/* Calls that do not create the primary context (as the real runtime's lazy init). */
static int needs_context(int cbid) {
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
  case CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020:
  case CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000:
    return 0;
  default:
    return 1;
  }
}

static int call(int cbid, const char *name, void *params, simi_impl_fn impl, int ptds, int init) {
  if (init) simi_init();
  simi_api a;
  memset(&a, 0, sizeof a);
  a.domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  a.cbid = (uint32_t)cbid;
  a.name = name;
  a.params = params;
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    a.symbol = simrt_kernel_name(*(const void *const *)params);
    break;
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    a.symbol = simrt_kernel_name(((cudaLaunchKernelExC_v11060_params *)params)->func);
    break;
  }
  simi_api_enter(&a);
  int saved = simrt_ptds;
  simrt_ptds = ptds;
  int r;
  if (init && simcu_device_count() == 0 && needs_device(cbid)) {
    r = cudaErrorNoDevice; /* SIMCUDA_DEVICES=0: no GPU */
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020 && params && ((cudaGetDeviceCount_v3020_params *)params)->count)
      *((cudaGetDeviceCount_v3020_params *)params)->count = 0;
  } else {
    if (init && needs_context(cbid)) simi_primary_ctx(simi_get_device());
    r = impl ? impl(params) : cudaErrorNotSupported;
  }
  simrt_ptds = saved;
  if (r != cudaSuccess && cbid != CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 &&
      cbid != CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020)
    last_error = (cudaError_t)r;
  simi_api_exit(&a, &r);
  return r;
}
int simrt_call(int cbid, const char *name, void *params, simi_impl_fn impl, int ptds) {
  return call(cbid, name, params, impl, ptds, 1);
}

__attribute__((visibility("hidden"))) int rt_cudaGetLastError(void *p) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
__attribute__((visibility("hidden"))) int rt_cudaPeekAtLastError(void *p) { return last_error; }

/* ---------------------------------------------------------------- errors */
static int impl_nothing(void *p) { return 0; }
EXPORT const char *CUDARTAPI cudaGetErrorName(cudaError_t error) {
  cudaGetErrorName_v6050_params p = { error };
  call(CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050, "cudaGetErrorName", &p, (simi_impl_fn)impl_nothing, 0, 0);
  const char *s = simi_error_name(error, 1);
  return s ? s : "unrecognized error code";
}
EXPORT const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
  cudaGetErrorString_v3020_params p = { error };
  call(CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020, "cudaGetErrorString", &p, (simi_impl_fn)impl_nothing, 0, 0);
  const char *s = simi_error_string(error);
  if (!s) s = simi_error_name(error, 1);
  return s ? s : "unrecognized error code";
}
EXPORT struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w,
                                                                   enum cudaChannelFormatKind f) {
  struct cudaChannelFormatDesc d = { x, y, z, w, f };
  return d;
}
EXPORT cudaError_t CUDARTAPI cudaGetExportTable(const void **ppExportTable, const cudaUUID_t *pExportTableId) {
  if (ppExportTable) *ppExportTable = NULL;
  return cudaErrorNotSupported;
}

/* ---------------------------------------------------------------- nvcc-generated calls */
/* params structs for the calls generated_cuda_runtime_api_meta.h does not describe */
typedef struct { void *fatCubin; } regfat_params;
typedef struct { void **fatCubinHandle; } fathandle_params;
typedef struct {
  void **fatCubinHandle; const char *hostFun; char *deviceFun; const char *deviceName;
  int thread_limit; uint3 *tid; uint3 *bid; dim3 *bDim; dim3 *gDim; int *wSize;
} regfunc_params;
typedef struct {
  void **fatCubinHandle; char *hostVar; char *deviceAddress; const char *deviceName;
  int ext; size_t size; int constant; int global;
} regvar_params;
typedef struct { dim3 gridDim; dim3 blockDim; size_t sharedMem; struct CUstream_st *stream; } push_params;
typedef struct { dim3 *gridDim; dim3 *blockDim; size_t *sharedMem; void *stream; } pop_params;
typedef struct { cudaKernel_t *kernel; const void *hostFun; } getkernel_params;
typedef struct {
  cudaKernel_t kernel; dim3 gridDim; dim3 blockDim; void **args; size_t sharedMem; cudaStream_t stream;
} launch13_params;

#define CB(x) CUPTI_RUNTIME_TRACE_CBID_##x##_v13000

static int impl_regfat(regfat_params *p) { return 0; }
EXPORT void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin) {
  regfat_params p = { fatCubin };
  call(CB(__cudaRegisterFatBinary), "__cudaRegisterFatBinary", &p, (simi_impl_fn)impl_regfat, 0, 0);
  void **h = calloc(2, sizeof *h);
  h[0] = fatCubin;
  return h;
}
EXPORT void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {
  fathandle_params p = { fatCubinHandle };
  call(CB(__cudaRegisterFatBinaryEnd), "__cudaRegisterFatBinaryEnd", &p, (simi_impl_fn)impl_regfat, 0, 0);
}
EXPORT void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle) {
  fathandle_params p = { fatCubinHandle };
  call(CB(__cudaUnregisterFatBinary), "__cudaUnregisterFatBinary", &p, (simi_impl_fn)impl_regfat, 0, 0);
  free(fatCubinHandle);
}
EXPORT char CUDARTAPI __cudaInitModule(void **fatCubinHandle) {
  fathandle_params p = { fatCubinHandle };
  call(CB(__cudaInitModule), "__cudaInitModule", &p, (simi_impl_fn)impl_regfat, 0, 0);
  return 1;
}

static int impl_regfunc(regfunc_params *p) {
  void *f = simi_func_get(p->deviceName ? p->deviceName : p->deviceFun, p->hostFun);
  pthread_mutex_lock(&hmu);
  hostfn_put(p->hostFun, f);
  pthread_mutex_unlock(&hmu);
  return 0;
}
EXPORT void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                             const char *deviceName, int thread_limit, uint3 *tid,
                                             uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  regfunc_params p = { fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize };
  call(CB(__cudaRegisterFunction), "__cudaRegisterFunction", &p, (simi_impl_fn)impl_regfunc, 0, 0);
}

/* device variables: the host shadow variable itself serves as the device storage */
struct var { const void *host; size_t size; };
static struct var *vars;
static size_t nvars;
static int impl_regvar(regvar_params *p) {
  pthread_mutex_lock(&hmu);
  vars = realloc(vars, (nvars + 1) * sizeof *vars);
  vars[nvars++] = (struct var){ p->hostVar, p->size };
  pthread_mutex_unlock(&hmu);
  return 0;
}
EXPORT void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                        const char *deviceName, int ext, size_t size, int constant, int global) {
  regvar_params p = { fatCubinHandle, hostVar, deviceAddress, deviceName, ext, size, constant, global };
  call(CB(__cudaRegisterVar), "__cudaRegisterVar", &p, (simi_impl_fn)impl_regvar, 0, 0);
}
/* a __managed__ variable: managed memory, reached through *hostVarPtrAddress */
static int impl_regmanaged(regvar_params *p) {
  void **slot = (void **)p->hostVar, *m = NULL;
  if (!slot || simi_mem_alloc(&m, p->size, SIMI_MEM_MANAGED)) return cudaErrorMemoryAllocation;
  *slot = m;
  regvar_params q = *p;
  q.hostVar = m;
  return impl_regvar(&q);
}
EXPORT void CUDARTAPI __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
                                               const char *deviceName, int ext, size_t size, int constant, int global) {
  regvar_params p = { fatCubinHandle, (char *)hostVarPtrAddress, deviceAddress, deviceName, ext, size, constant, global };
  call(CB(__cudaRegisterManagedVar), "__cudaRegisterManagedVar", &p, (simi_impl_fn)impl_regmanaged, 0, 0);
}
EXPORT void CUDARTAPI __cudaRegisterHostVar(void **fatCubinHandle, const char *deviceName, char *hostVar, size_t size) {
  regvar_params p = { fatCubinHandle, hostVar, NULL, deviceName, 0, size, 0, 0 };
  call(CB(__cudaRegisterHostVar), "__cudaRegisterHostVar", &p, (simi_impl_fn)impl_regvar, 0, 0);
}
EXPORT void CUDARTAPI __cudaRegisterUnifiedTable(void **fatCubinHandle, void *table) {
  fathandle_params p = { fatCubinHandle };
  call(CB(__cudaRegisterUnifiedTable), "__cudaRegisterUnifiedTable", &p, (simi_impl_fn)impl_regfat, 0, 0);
}
EXPORT cudaError_t CUDARTAPI __cudaGetProcAddress(const char *symbol, void **funcPtr, int version, unsigned long long flags) {
  if (!funcPtr) return cudaErrorInvalidValue;
  *funcPtr = simi_driver_proc(symbol, version, 0);
  return *funcPtr ? cudaSuccess : cudaErrorSymbolNotFound;
}
/* size of a registered device variable, 0 if `host` is none */
size_t simrt_var_size(const void *host) {
  size_t sz = 0;
  pthread_mutex_lock(&hmu);
  for (size_t i = 0; i < nvars; i++) if (vars[i].host == host) { sz = vars[i].size; break; }
  pthread_mutex_unlock(&hmu);
  return sz;
}

/* <<<grid, block, smem, stream>>> pushes a configuration, the host stub pops it */
struct config { dim3 grid, block; size_t smem; void *stream; };
static __thread struct config cfgs[16];
static __thread int ncfg;
static int impl_push(push_params *p) {
  if (ncfg == 16) return cudaErrorInvalidConfiguration;
  cfgs[ncfg++] = (struct config){ p->gridDim, p->blockDim, p->sharedMem, p->stream };
  return 0;
}
EXPORT unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                      struct CUstream_st *stream) {
  push_params p = { gridDim, blockDim, sharedMem, stream };
  return (unsigned)call(CB(__cudaPushCallConfiguration), "__cudaPushCallConfiguration", &p, (simi_impl_fn)impl_push, 0, 1);
}
static int impl_pop(pop_params *p) {
  if (!ncfg) return cudaErrorMissingConfiguration;
  struct config *c = &cfgs[--ncfg];
  *p->gridDim = c->grid; *p->blockDim = c->block; *p->sharedMem = c->smem;
  *(void **)p->stream = c->stream;
  return 0;
}
EXPORT cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream) {
  pop_params p = { gridDim, blockDim, sharedMem, stream };
  return (cudaError_t)call(CB(__cudaPopCallConfiguration), "__cudaPopCallConfiguration", &p, (simi_impl_fn)impl_pop, 0, 1);
}
static int impl_getkernel(getkernel_params *p) {
  if (!p->kernel) return cudaErrorInvalidValue;
  void *f = func_of(p->hostFun);
  *p->kernel = f;
  return f ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}
EXPORT cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun) {
  getkernel_params p = { kernel, hostFun };
  return (cudaError_t)call(CB(__cudaGetKernel), "__cudaGetKernel", &p, (simi_impl_fn)impl_getkernel, 0, 1);
}

/* ---------------------------------------------------------------- launches */
static void *stream_of(void *s) { return (!s && simrt_ptds) ? (void *)cudaStreamPerThread : s; }

static int launch(const void *func, dim3 grid, dim3 block, size_t smem, cudaStream_t stream) {
  const char *name = simrt_kernel_name(func);
  if (!name) return cudaErrorInvalidDeviceFunction;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z) return cudaErrorInvalidConfiguration;
  if ((unsigned long long)block.x * block.y * block.z > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.grid[0] = grid.x; k.grid[1] = grid.y; k.grid[2] = grid.z;
  k.block[0] = block.x; k.block[1] = block.y; k.block[2] = block.z;
  k.dyn_smem = smem;
  return simi_launch(stream_of(stream), &k);
}
static int impl_launch13(launch13_params *p) { return launch(p->kernel, p->gridDim, p->blockDim, p->sharedMem, p->stream); }
EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                                size_t sharedMem, cudaStream_t stream) {
  launch13_params p = { kernel, gridDim, blockDim, args, sharedMem, stream };
  return (cudaError_t)call(CB(__cudaLaunchKernel), "__cudaLaunchKernel", &p, (simi_impl_fn)impl_launch13, 0, 1);
}
EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                                     size_t sharedMem, cudaStream_t stream) {
  launch13_params p = { kernel, gridDim, blockDim, args, sharedMem, stream };
  return (cudaError_t)call(CB(__cudaLaunchKernel_ptsz), "__cudaLaunchKernel_ptsz", &p, (simi_impl_fn)impl_launch13, 1, 1);
}
IMPL(cudaLaunchKernel, v7000) { return launch(p->func, p->gridDim, p->blockDim, p->sharedMem, p->stream); }
IMPL(cudaLaunchCooperativeKernel, v9000) { return launch(p->func, p->gridDim, p->blockDim, p->sharedMem, p->stream); }
IMPL(cudaLaunchKernelExC, v11060) {
  if (!p->config) return cudaErrorInvalidValue;
  return launch(p->func, p->config->gridDim, p->config->blockDim, p->config->dynamicSmemBytes, p->config->stream);
}
IMPL(cudaGetKernel, v12000) {
  if (!p->kernelPtr) return cudaErrorInvalidValue;
  *p->kernelPtr = func_of(p->entryFuncAddr);
  return *p->kernelPtr ? 0 : cudaErrorInvalidDeviceFunction;
}
IMPL(cudaGetFuncBySymbol, v11000) {
  if (!p->functionPtr) return cudaErrorInvalidValue;
  *p->functionPtr = func_of(p->symbolPtr);
  return *p->functionPtr ? 0 : cudaErrorInvalidDeviceFunction;
}
IMPL(cudaFuncGetName, v12030) {
  if (!p->name) return cudaErrorInvalidValue;
  *p->name = simrt_kernel_name(p->func);
  return *p->name ? 0 : cudaErrorInvalidDeviceFunction;
}
IMPL(cudaFuncGetAttributes, v3020) {
  if (!p->attr) return cudaErrorInvalidValue;
  if (!simrt_kernel_name(p->func)) return cudaErrorInvalidDeviceFunction;
  memset(p->attr, 0, sizeof *p->attr);
  p->attr->maxThreadsPerBlock = 1024;
  p->attr->numRegs = 32;
  p->attr->ptxVersion = 90;
  p->attr->binaryVersion = 90;
  p->attr->maxDynamicSharedSizeBytes = 49152;
  p->attr->preferredShmemCarveout = -1;
  return 0;
}
IMPL(cudaFuncSetAttribute, v9000) { return simrt_kernel_name(p->func) ? 0 : cudaErrorInvalidDeviceFunction; }
IMPL(cudaFuncSetCacheConfig, v3020) { return simrt_kernel_name(p->func) ? 0 : cudaErrorInvalidDeviceFunction; }
IMPL(cudaOccupancyMaxActiveBlocksPerMultiprocessor, v6050) {
  if (!p->numBlocks || p->blockSize <= 0) return cudaErrorInvalidValue;
  int n = 2048 / p->blockSize;
  *p->numBlocks = n > 32 ? 32 : n;
  return 0;
}
IMPL(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, v7000) {
  if (!p->numBlocks || p->blockSize <= 0) return cudaErrorInvalidValue;
  int n = 2048 / p->blockSize;
  *p->numBlocks = n > 32 ? 32 : n;
  return 0;
}
