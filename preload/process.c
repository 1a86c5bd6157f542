/* process.c — which process dlhook is recording, how it was loaded, and whether it records. */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "dlh_internal.h"

volatile int dlh_recording;
pid_t dlh_pid;                  /* the traced process (set again after fork) */
int dlh_attach_mode;            /* loaded by `dlhook attach` */
void *dlh_attach_handle;        /* attach.c: dlhook's own handle, while attached */

int dlh_foreign_process(void) { return getpid() != dlh_pid; }

/* `dlhook attach` loads the library through a symlink of this name (attach.c). */
int dlh_attach_detect(void) {
  Dl_info di;
  if (!dladdr((void *)dlh_attach_detect, &di) || !di.dli_fname) return 0;
  const char *b = strrchr(di.dli_fname, '/');
  b = b ? b + 1 : di.dli_fname;
  if (strcmp(b, "libdlhook-attach.so") != 0) return 0;
  dlh_attach_mode = 1;
  return 1;
}

/* dlhook's own definition of a name while attached: the wrapper tables' addresses were bound in
 * the global scope first, which for a library loaded late is the real library's. */
void *dlh_attach_wrapper(const char *name) {
  return dlh_attach_handle ? dlsym(dlh_attach_handle, name) : NULL;
}
