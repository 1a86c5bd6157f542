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

/* The entry of a name dlhook wraps (any library's table), with the DLH_LIB_* of its library in
 * *lib; NULL when the name is not wrapped (preload/dlsym.c). */
const dlh_sym *dlh_sym_find(const char *name, int *lib);

#endif
