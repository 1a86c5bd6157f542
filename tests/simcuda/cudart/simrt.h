/* simrt.h — shared by the stand-in runtime's source files (not exported). */
#ifndef SIMRT_H
#define SIMRT_H
#include "simint.h"

/* Runs one runtime API call: initialises the simulation, reports CUPTI runtime-domain
 * enter/exit around impl (NULL: cudaErrorNotSupported), records the thread's last error. */
int simrt_call(int cbid, const char *name, void *params, simi_impl_fn impl, int ptds);
/* 1 while the current call came through a _ptsz/_ptds entry point. */
extern __thread int simrt_ptds;
extern const simi_sym simrt_symtab[];
/* name of the kernel registered for a host stub / cudaKernel_t, or NULL */
const char *simrt_kernel_name(const void *func);
#endif
