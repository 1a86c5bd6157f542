// Throws and catches C++ exceptions and calls backtrace() around CUDA runtime calls; prints
// what it observes (no addresses) so that the output with and without libdlhook.so can be
// compared: which object defines backtrace and _Unwind_RaiseException, the functions that
// backtrace_symbols names, and the exceptions caught.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <stdexcept>
#include <stdio.h>
#include <string.h>
#include <string>

extern "C" void _Unwind_RaiseException(void);

static const char *object_of(void *p) {
  Dl_info di;
  if (!dladdr(p, &di) || !di.dli_fname) return "?";
  const char *s = strrchr(di.dli_fname, '/');
  return s ? s + 1 : di.dli_fname;
}

__attribute__((noinline)) void show_backtrace(const char *where) {
  void *pcs[64];
  int n = backtrace(pcs, 64);
  char **names = backtrace_symbols(pcs, n);
  printf("%s: backtrace:", where);
  for (int i = 0; i < n && names; i++) {
    const char *open = strchr(names[i], '('), *plus = open ? strchr(open, '+') : NULL;
    if (open && plus && plus > open + 1) printf(" %.*s", (int)(plus - open - 1), open + 1);
  }
  printf("\n");
  free(names);
}

__attribute__((noinline)) void level3(int i) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  show_backtrace("level3");
  if (i % 2) throw std::runtime_error("odd " + std::to_string(i) + " err " + std::to_string((int)e));
  throw i;
}
__attribute__((noinline)) void level2(int i) { level3(i); }
__attribute__((noinline)) void level1(int i) {
  try {
    level2(i);
  } catch (int v) {
    printf("caught int %d\n", v);
    throw std::logic_error("rethrown " + std::to_string(v));
  }
}

int main() {
  printf("backtrace from %s\n", object_of((void *)&backtrace));
  printf("_Unwind_RaiseException from %s\n", object_of((void *)&_Unwind_RaiseException));
  int caught = 0;
  for (int i = 0; i < 6; i++) {
    try {
      level1(i);
    } catch (const std::exception &e) {
      printf("caught %s\n", e.what());
      caught++;
    }
  }
  show_backtrace("main");
  printf("%d exceptions caught\n", caught);
  return caught == 6 ? 0 : 1;
}
