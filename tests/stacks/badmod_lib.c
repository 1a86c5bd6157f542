/* badmod_lib.c — a shared library whose one function calls the CUDA runtime; built several times
 * (tests/stacks/t_stacks_bad_modules.sh) into libraries that are stripped, dlclosed, replaced on
 * disk by garbage or unlinked while the profiler still has to name their frames. */
#include <cuda_runtime_api.h>

__attribute__((noinline)) int badmod_inner(void) {
  int n = -1;
  cudaGetDeviceCount(&n);
  return n;
}

__attribute__((visibility("default"))) int badmod_call(void) { return badmod_inner() + 1; }

/* the same call from another place: a pc of this library seen for the first time later on */
__attribute__((visibility("default"))) int badmod_again(void) { return badmod_inner() + 2; }
