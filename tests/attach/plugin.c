/* plugin.c — a library the attachee opens with dlopen while it runs (--plugin PATH --plugin-at S):
 * from then on each step calls plugin_step(), which makes one cuBLAS call of its own. A library
 * loaded after `dlhook attach` must be hooked too (preload/attach.c rescans new modules). Linked
 * with lazy binding (the attachee itself binds everything at start: full RELRO), so both kinds
 * of GOT are rewritten and put back. */
#include <cublas_v2.h>

/* Called once, after the last step (after detach in tests/attach/t_attach_dlopen.sh): its import
 * is still unbound (lazy binding) when dlhook rewrites the library's GOT, and must work once the
 * entry is put back. */
int plugin_end(void *handle) {
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  cublasStatus_t st = cublasGetMathMode((cublasHandle_t)handle, &mode);
  return st == CUBLAS_STATUS_SUCCESS ? (int)mode : -1;
}

int plugin_step(void *handle) {
  int v = 0;
  cublasGetVersion_v2((cublasHandle_t)handle, &v);
  return v;
}
