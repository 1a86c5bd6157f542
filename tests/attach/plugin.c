/* plugin.c — a library the attachee opens with dlopen while it runs (--plugin PATH --plugin-at S):
 * from then on each step calls plugin_step(), which makes one cuBLAS call of its own. A library
 * loaded after `dlhook attach` must be hooked too (preload/attach.c rescans new modules). */
#include <cublas_v2.h>

int plugin_step(void *handle) {
  int v = 0;
  cublasGetVersion_v2((cublasHandle_t)handle, &v);
  return v;
}
