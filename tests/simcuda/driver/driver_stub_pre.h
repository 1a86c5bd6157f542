/* Prelude of the generated driver entry points (gen_stubs.py cuda). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <generated_cuda_meta.h>
#include "simdrv.h"
#define SIMCU_EXPORT __attribute__((visibility("default")))
#define CUDAAPI_CC CUDAAPI
#define SIMI_SYMTAB_NAME simdrv_symtab
