/* dlh_hooks.h — the registry of the generated wrappers: what preload/ knows of hooks/. Each
 * hooks/gen/<lib>_hooks.c defines, for one library of DLH_HOOKED_LIBS:
 *   dlh_fns_<lib>[], dlh_fns_<lib>_count    the descriptors of its wrapped functions (index =
 *                                           position, fn id = DLH_FN_ID(domain, index)): the
 *                                           writer names functions through them;
 *   dlh_syms_<lib>[], dlh_syms_<lib>_count  its wrappers sorted by name (strcmp order): dlsym()
 *                                           on a handle of the library returns the wrapper
 *                                           (preload/dlsym.c).
 * A library is added here and in scripts/gen_hooks.py together (tests/hooks/t_hooks_registry.sh
 * checks that the list and hooks/gen/ agree; the link fails on a listed library without tables). */
#ifndef DLH_HOOKS_H
#define DLH_HOOKS_H

#include "dlh_hook.h"

/* X(name, LIB): the name of the tables and the DLH_LIB_* id (common/dlh_cuda_libs.def). */
#define DLH_HOOKED_LIBS(X) X(cudart, CUDART) X(cublas, CUBLAS) X(cublasLt, CUBLASLT) \
                           X(cudnn, CUDNN) X(nccl, NCCL)

typedef struct dlh_sym {
  const char *name;   /* exported name of the wrapper (= the real function's name) */
  void *wrapper;      /* the name's address as bound in the global scope: dlhook's wrapper only
                       * when no other interposer comes first (preload/dlsym.c looks its own up) */
  void **real;        /* the wrapper's cache of the real function (set by preload/attach.c and,
                       * once attached, from the handle's symbol) */
  void *own;          /* a second entry, recorded like the wrapper, that calls the library's own
                       * definition: what a handle lookup gets (preload/dlsym.c), as untraced */
  void **own_real;    /* its cache of that definition, set by preload/dlsym.c before it hands
                       * the entry out */
} dlh_sym;

#define DLH_HOOKS_DECLARE(lib, LIB)                 \
  extern const dlh_fn_desc dlh_fns_##lib[];         \
  extern const unsigned dlh_fns_##lib##_count;      \
  extern const dlh_sym dlh_syms_##lib[];            \
  extern const unsigned dlh_syms_##lib##_count;
DLH_HOOKED_LIBS(DLH_HOOKS_DECLARE)
#undef DLH_HOOKS_DECLARE

/* The entry of a name dlhook wraps (any library's table), with the DLH_LIB_* of its library in
 * *lib; NULL when the name is not wrapped (defined in preload/dlsym.c, used by preload/attach.c). */
const dlh_sym *dlh_sym_find(const char *name, int *lib);

#endif
