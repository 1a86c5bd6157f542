/* dlh_dlsym.h — the table through which dlsym() on a handle of a CUDA library returns dlhook's
 * wrapper (preload/dlsym.c). Each hooks/gen/<lib>_hooks.c defines dlh_syms_<lib>[]: its wrappers
 * sorted by name (strcmp order). */
#ifndef DLH_DLSYM_H
#define DLH_DLSYM_H

typedef struct dlh_sym {
  const char *name;   /* exported name of the wrapper (= the real function's name) */
  void *wrapper;      /* dlhook's wrapper */
  void **real;        /* the wrapper's cache of the real function: set from the handle's symbol */
} dlh_sym;

#endif
