/* simdrv.h — shared by the simulated driver's source files (not exported). */
#ifndef SIMDRV_H
#define SIMDRV_H
#include "simint.h"

/* Runs one driver API call: CUPTI driver-domain enter/exit around impl (NULL: not supported). */
int simdrv_call(int cbid, const char *name, void *params, simi_impl_fn impl, int ptds);
/* Per-thread: calls made through a _ptsz/_ptds entry point use the per-thread default stream. */
extern __thread int simdrv_ptds;
extern const simi_sym simdrv_symtab[];
#endif
