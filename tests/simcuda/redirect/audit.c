/* simcuda-audit.so: an rtld-audit module (LD_AUDIT, see rtld-audit(7)) that puts the simulated
 * CUDA libraries ahead of a program's own copies.
 *
 * The hazard: PyPI wheels (torch, nvidia-*-cu13) find their CUDA libraries through DT_RPATH
 * ($ORIGIN/../../nvidia/cu13/lib), which is searched before LD_LIBRARY_PATH, and torch also
 * dlopens them by full path (torch/__init__.py _preload_cuda_deps). Neither goes through
 * LD_LIBRARY_PATH, so tests/simcuda/run could only replace libcuda.so.1, and the wheel's real
 * cudart then failed on the simulated driver.
 *
 * la_objsearch is called with the original name of every library the dynamic loader is asked
 * for (a DT_NEEDED soname or a dlopen argument, with or without a directory) before any
 * search. When the name's last component is a file in this module's own directory (the
 * simulated libraries: libcuda.so.1, libcudart.so.13, libcupti.so.13, libcublas.so.13, ...),
 * the loader is told to load that file instead; every other name passes unchanged. A library
 * already loaded under that soname is found before the loader asks us, so one copy of each
 * library is loaded. The module defines no symbol-binding callbacks (la_symbind, la_pltenter):
 * binding is not slowed.
 *
 * Runs in its own link-map namespace with its own libc; keeps a fixed table, no allocation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXLIB 96
#define NAMEMAX 96

static char dir[4096];
static size_t dirlen;
static char names[MAXLIB][NAMEMAX];
static int nnames;
static char paths[MAXLIB][4096 + NAMEMAX];

static int simulated(const char *base) {
  /* CUDA library sonames only: the directory also holds this module and build leftovers */
  return strncmp(base, "lib", 3) == 0 && strstr(base, ".so") && strcmp(base, "simcuda-audit.so");
}

static void scan(void) {
  Dl_info di;
  if (!dladdr((void *)scan, &di) || !di.dli_fname) return;
  const char *slash = strrchr(di.dli_fname, '/');
  if (!slash) return;
  dirlen = (size_t)(slash - di.dli_fname);
  if (dirlen >= sizeof dir) { dirlen = 0; return; }
  memcpy(dir, di.dli_fname, dirlen);
  dir[dirlen] = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && nnames < MAXLIB) {
    size_t n = strlen(e->d_name);
    if (n >= NAMEMAX || !simulated(e->d_name)) continue;
    memcpy(names[nnames], e->d_name, n + 1);
    snprintf(paths[nnames], sizeof paths[nnames], "%s/%s", dir, e->d_name);
    nnames++;
  }
  closedir(d);
}

__attribute__((visibility("default"))) unsigned la_version(unsigned version) {
  scan();
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((visibility("default"))) char *la_objsearch(const char *name, uintptr_t *cookie,
                                                          unsigned flag) {
  (void)cookie;
  if (flag != LA_SER_ORIG || !name) return (char *)name;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (!simulated(base)) return (char *)name;
  for (int i = 0; i < nnames; i++)
    if (strcmp(names[i], base) == 0) {
      /* already one of ours (a path into our directory): leave it */
      if (base != name && (size_t)(base - name - 1) == dirlen && !strncmp(name, dir, dirlen))
        return (char *)name;
      return paths[i];
    }
  return (char *)name;
}
