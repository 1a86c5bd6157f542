/* fakepreload.c — stands for a program's own LD_PRELOAD library (jemalloc, tcmalloc): says on
 * stderr that it was loaded. tests/host/t_exec_keeps_preload.sh checks that a child started
 * under dlhook with its own LD_PRELOAD still loads it. */
#include <unistd.h>

__attribute__((constructor)) static void loaded(void) {
  static const char msg[] = "fake preload loaded\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
}
