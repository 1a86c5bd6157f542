/* Prelude of the generated runtime entry points (gen_stubs.py cudart). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda_runtime_api.h>
#include <generated_cuda_runtime_api_meta.h>
#include "simrt.h"
#define SIMCU_EXPORT __attribute__((visibility("default")))
#define CUDAAPI_CC CUDARTAPI
#define SIMI_SYMTAB_NAME simrt_symtab
