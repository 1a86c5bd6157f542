/* fns.c — the functions dlhook records, and the real functions behind the wrappers.
 *
 * A function id is (domain << 16) | index: the index in the generated table of its library
 * (hooks/dlh_hooks.h), in NVTX's table (below), or 0x8000 | CUPTI's callback id for a call that
 * only CUPTI saw (a driver call, or a runtime call of a statically linked cudart that has no
 * wrapper), named by what CUPTI said (dlh_fn_set_name). */
#include <cupti.h>
#include <dlfcn.h>

#include "dlh_hooks.h"
#include "dlh_internal.h"

/* ---------------------------------------------------------------- by id */

/* The NVTX events (domain DLH_DOMAIN_NVTX; nvtx.c stores them, indexes DLH_NVTX_FN_*). */
static const char *const nvtx_args[] = {"message", "domain", "color", "category"};
static const uint8_t nvtx_types[] = {DLH_ARG_STR, DLH_ARG_STR, DLH_ARG_UINT, DLH_ARG_UINT};
static const dlh_fn_desc fns_nvtx[] = {
    [DLH_NVTX_FN_RANGE] = {"nvtxRange", 4, nvtx_args, nvtx_types},
    [DLH_NVTX_FN_MARK] = {"nvtxMark", 4, nvtx_args, nvtx_types},
    [DLH_NVTX_FN_STARTEND] = {"nvtxRangeStartEnd", 4, nvtx_args, nvtx_types},
};
static const unsigned fns_nvtx_count = sizeof fns_nvtx / sizeof *fns_nvtx;

const dlh_fn_desc *dlh_fn_lookup(uint32_t id, int *domain) {
  const dlh_fn_desc *t = NULL;
  const unsigned *n = NULL;
  unsigned d = id >> 16, i = id & 0xffff;
  switch (d) {
#define CASE(dom, tab, cnt) case dom: t = tab; n = &cnt; break;
    CASE(DLH_DOMAIN_CUDART, dlh_fns_cudart, dlh_fns_cudart_count)
    CASE(DLH_DOMAIN_CUBLAS, dlh_fns_cublas, dlh_fns_cublas_count)
    CASE(DLH_DOMAIN_CUBLASLT, dlh_fns_cublasLt, dlh_fns_cublasLt_count)
    CASE(DLH_DOMAIN_CUDNN, dlh_fns_cudnn, dlh_fns_cudnn_count)
    CASE(DLH_DOMAIN_NCCL, dlh_fns_nccl, dlh_fns_nccl_count)
    CASE(DLH_DOMAIN_NVTX, fns_nvtx, fns_nvtx_count)
#undef CASE
    default: return NULL;
  }
  if (domain) *domain = (int)d;
  if (!t || !n || i >= *n) return NULL;
  return &t[i];
}

/* Names of the calls only CUPTI saw, by callback id (set by cupti.c from its callbacks, read
 * by the writer thread). */
static _Atomic(const char *) rt_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static _Atomic(const char *) drv_names[CUPTI_DRIVER_TRACE_CBID_SIZE];

static _Atomic(const char *) *cupti_slot(uint32_t id) {
  unsigned d = id >> 16, i = id & 0x7fff;
  if (!(id & 0x8000)) return NULL;
  if (d == DLH_DOMAIN_CUDART && i < CUPTI_RUNTIME_TRACE_CBID_SIZE) return &rt_names[i];
  if (d == DLH_DOMAIN_DRIVER && i < CUPTI_DRIVER_TRACE_CBID_SIZE) return &drv_names[i];
  return NULL;
}

void dlh_fn_set_name(uint32_t id, const char *name) {
  _Atomic(const char *) *s = cupti_slot(id);
  if (s) atomic_store(s, name);
}

const char *dlh_fn_name(uint32_t id) {
  const dlh_fn_desc *d = dlh_fn_lookup(id, NULL);
  if (d) return d->name;
  _Atomic(const char *) *s = cupti_slot(id);
  return s ? atomic_load(s) : NULL;
}

/* ---------------------------------------------------------------- the real functions */

const char *const dlh_lib_sonames[DLH_LIB_COUNT] = {
#define DLH_CUDA_LIB(name, lib, soname) [DLH_LIB_##lib] = soname,
#include "dlh_cuda_libs.def"
#undef DLH_CUDA_LIB
};

/* Wrappers cache the real function for good, so the library that defines it must stay mapped:
 * a program that dlcloses the CUDA runtime and opens it again (a dlopen/dlclose storm) would
 * otherwise call through a pointer into unmapped memory. RTLD_NODELETE on the loaded object
 * pins it; its dlclose then only drops the reference. */
void dlh_pin_library(void *sym) {
  Dl_info info;
  if (!dladdr(sym, &info) || !info.dli_fname || !info.dli_fname[0]) return;
  void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (h) dlclose(h);
}

void *dlh_resolve(const char *name, int lib) {
  struct dlh_thread *t = dlh_self;
  if (t) t->hot.blocked++;
  void *p = dlsym(RTLD_NEXT, name);
  if (!p && lib >= 0 && lib < DLH_LIB_COUNT) {
    void *h = dlopen(dlh_lib_sonames[lib], RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      p = dlsym(h, name);
      dlclose(h);
    }
  }
  if (p) dlh_pin_library(p);
  if (t) t->hot.blocked--;
  return p;
}
