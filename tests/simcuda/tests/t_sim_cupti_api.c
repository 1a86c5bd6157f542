/* t_sim_cupti_api.c — the CUPTI stand-in's API as a tool linked against libcupti uses it:
 * one subscriber only, enable/disable of callbacks, resource and driver domains, callback
 * params for driver calls, external correlation, the timestamp callback, buffer delivery when
 * buffers fill and from the periodic flush thread, result strings and ids, and the
 * nvcc-style registration path (__cudaRegisterFunction + cudaLaunchKernel) from C.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fails;
#define CHECK(c) do { if (!(c)) { fails++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

/* the registration calls nvcc emits, made by hand */
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **h);
extern void __cudaUnregisterFatBinary(void **h);
extern void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName,
                                   int thread_limit, void *tid, void *bid, void *bDim, void *gDim, int *wSize);
static void fake_kernel_stub(void) {}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
#define OFFSET 1000000000000ull
static uint64_t CUPTIAPI my_ts(void) { return now_ns() + OFFSET; }

static int drv_launch_ok, drv_launch_corr;
static int ctx_created, stream_created, drv_malloc_ok, rt_cbs, sync_cbs;
static uint32_t memset_corr, launch_corr;
static CUstream created_stream;
static void CUPTIAPI cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
  CHECK(ud == (void *)0x1234);
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *r = data;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) { ctx_created++; CHECK(r->context != NULL); }
    if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED) { stream_created++; created_stream = r->resourceHandle.stream; }
  } else if (dom == CUPTI_CB_DOMAIN_SYNCHRONIZE) {
    sync_cbs++;
  } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API) {
    const CUpti_CallbackData *d = data;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 && d->callbackSite == CUPTI_API_EXIT) {
      const cuMemAlloc_v2_params *p = d->functionParams;
      drv_malloc_ok = p->bytesize == 4096 && *p->dptr != 0 && *(CUresult *)d->functionReturnValue == CUDA_SUCCESS &&
                      strcmp(d->functionName, "cuMemAlloc_v2") == 0;
    }
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel && d->callbackSite == CUPTI_API_EXIT) {
      const cuLaunchKernel_params *p = d->functionParams;
      drv_launch_ok = p->gridDimX == 3 && p->blockDimX == 128 && d->symbolName && strcmp(d->symbolName, "drvkernel") == 0 &&
                      *(CUresult *)d->functionReturnValue == CUDA_SUCCESS;
      drv_launch_corr = (int)d->correlationId;
    }
  } else if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
    const CUpti_CallbackData *d = data;
    rt_cbs++;
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020 && d->callbackSite == CUPTI_API_ENTER) memset_corr = d->correlationId;
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 && d->callbackSite == CUPTI_API_ENTER) {
      launch_corr = d->correlationId;
      CHECK(d->symbolName && strcmp(d->symbolName, "_Z11fake_kernelv") == 0);
      const cudaLaunchKernel_v7000_params *p = d->functionParams;
      CHECK(p->func == (const void *)fake_kernel_stub && p->gridDim.x == 7 && p->blockDim.x == 96);
    }
  }
}

static pthread_t main_thread;
static int drv_kernels, cuda_events, devices, getdevice_records, malloc_records;
static uint64_t last_kernel_end, event_ts;
static int bufs_done, bufs_other_thread, kernels, memsets, ext_ok, ts_ok = 1, ts_seen;
static uint32_t kernel_stream;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void CUPTIAPI req(uint8_t **b, size_t *sz, size_t *mx) {
  *sz = 1024;
  *b = aligned_alloc(8, *sz);
  *mx = 0;
}
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  pthread_mutex_lock(&mu);
  bufs_done++;
  if (!pthread_equal(pthread_self(), main_thread)) bufs_other_thread++;
  CUpti_Activity *r = NULL;
  uint64_t now = my_ts();
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      if (strcmp(k->name, "drvkernel") == 0) { drv_kernels += (int)k->correlationId == drv_launch_corr; continue; }
      kernels++;
      kernel_stream = k->streamId;
      if (k->end > last_kernel_end) last_kernel_end = k->end;
      ts_seen++;
      if (k->start < OFFSET || k->end > now + 5000000000ull) ts_ok = 0;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT) {
      CUpti_ActivityCudaEvent2 *e = (CUpti_ActivityCudaEvent2 *)r;
      cuda_events++;
      event_ts = e->deviceTimestamp;
      if (e->streamId != kernel_stream || e->eventId == 0 || e->correlationId == 0) cuda_events = -100;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
      CUpti_ActivityDevice5 *d = (CUpti_ActivityDevice5 *)r;
      if (d->numMultiprocessors == 132 && d->computeCapabilityMajor == 9 && d->name && strstr(d->name, "(simulated)")) devices++;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)r;
      if (m->correlationId == memset_corr && m->bytes == 4096 && m->value == 7) memsets++;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      CUpti_ActivityExternalCorrelation *e = (CUpti_ActivityExternalCorrelation *)r;
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 && e->externalId == 42 && e->correlationId == memset_corr)
        ext_ok++;
      if (e->externalId != 42) ext_ok = -100;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER || r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
      if (a->start < OFFSET) ts_ok = 0;
      if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME && a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) getdevice_records++;
      if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME && a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) malloc_records++;
    }
  }
  pthread_mutex_unlock(&mu);
  free(b);
}

int main(void) {
  main_thread = pthread_self();
  CUpti_SubscriberHandle sub, sub2;
  CHECK(cuptiSubscribe(&sub, cb, (void *)0x1234) == CUPTI_SUCCESS);
  CHECK(cuptiSubscribe(&sub2, cb, NULL) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const char *s = NULL;
  CHECK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s) == CUPTI_SUCCESS && s &&
        strcmp(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0);
  const char *cbname = NULL;
  CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &cbname) == CUPTI_SUCCESS &&
        strcmp(cbname, "cudaMalloc") == 0);
  CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cbname) == CUPTI_SUCCESS &&
        strcmp(cbname, "cuLaunchKernel") == 0);
  uint32_t ver = 0;
  CHECK(cuptiGetVersion(&ver) == CUPTI_SUCCESS && ver == CUPTI_API_VERSION);
  CHECK(cuptiEventGroupCreate(NULL, NULL, 0) == CUPTI_ERROR_NOT_SUPPORTED);
  CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS);
  CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_SYNCHRONIZE) == CUPTI_SUCCESS);
  CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == CUPTI_SUCCESS);
  CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  uint32_t st = 9;
  CHECK(cuptiGetCallbackState(&st, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) == CUPTI_SUCCESS && st == 1);
  CHECK(cuptiActivityRegisterTimestampCallback(my_ts) == CUPTI_SUCCESS);
  CHECK(cuptiActivityRegisterCallbacks(req, done) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT) == CUPTI_SUCCESS);
  CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS);

  /* registration as nvcc's module constructor does it */
  static char fatbin[16];
  void **h = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(h, (const char *)fake_kernel_stub, (char *)"_Z11fake_kernelv", "_Z11fake_kernelv", -1, 0, 0, 0, 0, 0);
  __cudaRegisterFatBinaryEnd(h);

  void *d = NULL;
  CHECK(cudaMalloc(&d, 4096) == cudaSuccess);
  int gd = -1;
  CHECK(cudaGetDevice(&gd) == cudaSuccess && gd == 0);
  CHECK(ctx_created == 1);
  /* external correlation around one call */
  CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42) == CUPTI_SUCCESS);
  CHECK(cudaMemset(d, 7, 4096) == cudaSuccess);
  uint64_t last = 0;
  CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) == CUPTI_SUCCESS && last == 42);
  CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) == CUPTI_ERROR_QUEUE_EMPTY);

  /* driver API through libcuda */
  CUdeviceptr dp = 0;
  CHECK(cuMemAlloc(&dp, 4096) == CUDA_SUCCESS);
  CHECK(drv_malloc_ok);
  /* a kernel through the driver API: module, function, cuLaunchKernel, and cuGetProcAddress */
  CUmodule mod;
  CUfunction fn;
  CHECK(cuModuleLoadData(&mod, fatbin) == CUDA_SUCCESS);
  CHECK(cuModuleGetFunction(&fn, mod, "drvkernel") == CUDA_SUCCESS);
  CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == CUPTI_SUCCESS);
  CHECK(cuLaunchKernel(fn, 3, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
  CHECK(drv_launch_ok);
  const char *fnname = NULL;
  CHECK(cuFuncGetName(&fnname, fn) == CUDA_SUCCESS && strcmp(fnname, "drvkernel") == 0);
  void *pfn = NULL;
  CUdriverProcAddressQueryResult qr;
  CHECK(cuGetProcAddress("cuMemAlloc", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &qr) == CUDA_SUCCESS && pfn == (void *)cuMemAlloc_v2);
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
  const char *es = NULL;
  CHECK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &es) == CUDA_SUCCESS && strcmp(es, "out of memory") == 0);
  CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &es) == CUDA_SUCCESS && strcmp(es, "CUDA_ERROR_INVALID_VALUE") == 0);

  /* a created stream: resource callback, stream id as CUPTI reports it */
  cudaStream_t str;
  CHECK(cudaStreamCreate(&str) == cudaSuccess);
  CHECK(stream_created == 1 && created_stream == (CUstream)str);
  CUcontext ctx = NULL;
  CHECK(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx);
  uint32_t cid = 0, sid = 0, dev = 9;
  CHECK(cuptiGetContextId(ctx, &cid) == CUPTI_SUCCESS && cid != 0);
  CHECK(cuptiGetStreamIdEx(ctx, (CUstream)str, 0, &sid) == CUPTI_SUCCESS && sid != 0);
  CHECK(cuptiGetDeviceId(ctx, &dev) == CUPTI_SUCCESS && dev == 0);

  /* many launches with 1 KB buffers: buffers fill and are handed over on the way */
  void *args[1] = { 0 };
  for (int i = 0; i < 200; i++)
    CHECK(cudaLaunchKernel((const void *)fake_kernel_stub, (dim3){ 7, 1, 1 }, (dim3){ 96, 1, 1 }, args, 0, str) == cudaSuccess);
  CHECK(launch_corr != 0);
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev) == cudaSuccess);
  CHECK(cudaEventRecord(ev, str) == cudaSuccess);
  CHECK(cudaStreamSynchronize(str) == cudaSuccess);
  CHECK(sync_cbs >= 1);
  CHECK(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  pthread_mutex_lock(&mu);
  CHECK(kernels == 200);
  CHECK(drv_kernels == 1);
  CHECK(cuda_events == 1 && event_ts >= last_kernel_end);
  if (cuda_events != 1 || event_ts < last_kernel_end) printf("cuda_events %d ts %llu last %llu\n", cuda_events, (unsigned long long)event_ts, (unsigned long long)last_kernel_end);
  CHECK(devices == 1);
  CHECK(getdevice_records == 0 && malloc_records == 1);
  CHECK(kernel_stream == sid);
  CHECK(memsets == 1);
  CHECK(ext_ok == 1);
  CHECK(ts_ok && ts_seen > 0);
  CHECK(bufs_done > 10);
  pthread_mutex_unlock(&mu);
  size_t dropped = 9;
  CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 0);

  /* periodic flush: records arrive without an explicit flush, from another thread */
  CHECK(cuptiActivityFlushPeriod(10) == CUPTI_SUCCESS);
  CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS);
  CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  int k0 = kernels;
  CHECK(cudaLaunchKernel((const void *)fake_kernel_stub, (dim3){ 7, 1, 1 }, (dim3){ 96, 1, 1 }, args, 0, str) == cudaSuccess);
  for (int i = 0; i < 200; i++) {
    pthread_mutex_lock(&mu);
    int k = kernels;
    pthread_mutex_unlock(&mu);
    if (k > k0) break;
    usleep(10000);
  }
  pthread_mutex_lock(&mu);
  CHECK(kernels == k0 + 1);
  CHECK(bufs_other_thread > 0);
  pthread_mutex_unlock(&mu);
  CHECK(cuptiActivityFlushPeriod(0) == CUPTI_SUCCESS);

  /* unsubscribe: no more callbacks */
  CHECK(cuptiUnsubscribe(sub) == CUPTI_SUCCESS);
  int n = rt_cbs;
  cudaDeviceSynchronize();
  CHECK(rt_cbs == n);
  CHECK(cuptiSubscribe(&sub2, cb, (void *)0x1234) == CUPTI_SUCCESS);
  __cudaUnregisterFatBinary(h);
  printf(fails ? "t_sim_cupti_api: FAILED\n" : "t_sim_cupti_api: OK\n");
  return fails ? 1 : 0;
}
