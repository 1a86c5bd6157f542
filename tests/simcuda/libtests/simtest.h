/* simtest.h — helpers of the library stand-in tests (tests/simcuda/libtests). The tests are
 * ordinary CUDA programs linked against the real libraries: on a GPU they run natively; without
 * one they re-execute themselves through the simulator ($SIMRUN), and skip (77) when neither
 * exists. */
#ifndef SIMTEST_H
#define SIMTEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

static int simtest_failures;
#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n");                                                                 \
      simtest_failures++;                                                                    \
    }                                                                                        \
  } while (0)
#define OK(call) CHECK((call) == 0, "%s returned non-zero", #call)

static inline void simtest_init(int argc, char **argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) return;
  const char *simrun = getenv("SIMRUN");
  if (getenv("SIMTEST_UNDER_SIM")) {
    fprintf(stderr, "no device even under the simulator\n");
    exit(1);
  }
  if (simrun && access(simrun, R_OK) == 0) {
    char exe[4096];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
      exe[l] = 0;
      setenv("SIMTEST_UNDER_SIM", "1", 1);
      setenv("SIMCUDA_DEVICES", "8", 0); /* multi-device tests (NCCL) */
      setenv("SIMCUDA_NUMERICS", "all", 0); /* results of every size are checked */
      char **av = calloc((size_t)argc + 3, sizeof *av);
      av[0] = "sh";
      av[1] = (char *)simrun;
      av[2] = exe;
      for (int i = 1; i < argc; i++) av[i + 2] = argv[i];
      execv("/bin/sh", av);
      perror("execv");
      exit(1);
    }
  }
  printf("no GPU and no simulator ($SIMRUN)\n");
  exit(77);
}

static inline int simtest_close(const double *got, const double *want, size_t n, double tol,
                                const char *what) {
  for (size_t i = 0; i < n; i++)
    if (fabs(got[i] - want[i]) > tol * (1 + fabs(want[i]))) {
      fprintf(stderr, "FAIL %s: element %zu = %g, want %g\n", what, i, got[i], want[i]);
      simtest_failures++;
      return 0;
    }
  return 1;
}

/* Optional check through CUPTI (loaded with dlopen, since the tests do not link it): kernel
 * activity records. simtest_cupti_start() returns 0 when CUPTI is not available. */
#include <dlfcn.h>
#include <cupti.h>
static char simtest_knames[64][160];
static int simtest_nk;
static void CUPTIAPI simtest_buf_req(uint8_t **buf, size_t *size, size_t *max) {
  *size = 1 << 20;
  *buf = aligned_alloc(8, *size);
  *max = 0;
}
static CUptiResult (*simtest_next)(uint8_t *, size_t, CUpti_Activity **);
static void CUPTIAPI simtest_buf_done(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
  CUpti_Activity *rec = NULL;
  while (simtest_next && simtest_next(buf, valid, &rec) == CUPTI_SUCCESS)
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      if (simtest_nk < 64 && k->name) snprintf(simtest_knames[simtest_nk++], 160, "%s", k->name);
    }
  free(buf);
}
static CUptiResult (*simtest_flush)(uint32_t);
static inline int simtest_cupti_start(void) {
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!h) return 0;
  CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
      (CUptiResult(*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))dlsym(h, "cuptiActivityRegisterCallbacks");
  CUptiResult (*en)(CUpti_ActivityKind) = (CUptiResult(*)(CUpti_ActivityKind))dlsym(h, "cuptiActivityEnable");
  simtest_next = (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))dlsym(h, "cuptiActivityGetNextRecord");
  simtest_flush = (CUptiResult(*)(uint32_t))dlsym(h, "cuptiActivityFlushAll");
  if (!reg || !en || !simtest_next || !simtest_flush) return 0;
  if (reg(simtest_buf_req, simtest_buf_done) != CUPTI_SUCCESS) return 0;
  return en(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
}
/* number of kernel records seen so far whose name contains `part` */
static inline int simtest_cupti_count(const char *part) {
  if (simtest_flush) simtest_flush(1);
  int n = 0;
  for (int i = 0; i < simtest_nk; i++) n += strstr(simtest_knames[i], part) != NULL;
  return n;
}

static inline int simtest_done(const char *name) {
  if (simtest_failures) {
    fprintf(stderr, "%s: %d failure(s)\n", name, simtest_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}
#endif
