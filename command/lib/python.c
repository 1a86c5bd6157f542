/* python.c — the commands that run on the Python package (command/python/dlhook): `dlhook export
 * --format parquet`, `dlhook sql`, `dlhook analyze`. The Parquet files are written by pyarrow
 * and queried by DuckDB or Spark, well-kept libraries from PyPI; the command finds them in the
 * interpreter named by DLHOOK_PYTHON (default python3) and the package next to itself. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rd.h"

static int is_dir_with(const char *dir, const char *file) {
  char p[PATH_MAX];
  struct stat st;
  return snprintf(p, sizeof p, "%s/%s", dir, file) < (int)sizeof p && stat(p, &st) == 0;
}

/* The directory that holds the package dlhook/: DLHOOK_PYTHONPATH, else, beside the command,
 * ../share/dlhook/python (installed), ../command/python (the build tree: build/dlhook), or
 * ../.. (the wheel: site-packages/dlhook/bin/dlhook). NULL when none has it. */
static char *package_dir(const char *self) {
  const char *e = getenv("DLHOOK_PYTHONPATH");
  if (e && *e) return rd_xstrdup(e);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", self);
  char *slash = strrchr(dir, '/');
  if (!slash) return NULL;
  *slash = 0;
  static const char *const rel[] = {"../share/dlhook/python", "../command/python", "../.."};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, rel[i]) >= (int)sizeof p) continue;
    if (is_dir_with(p, "dlhook/tables.py")) {
      char *r = realpath(p, NULL);
      return r ? r : rd_xstrdup(p);
    }
  }
  return NULL;
}

int rd_python(const char *cmd, int argc, char **argv) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) { rd_error("%s: cannot find the dlhook command itself (/proc/self/exe)", cmd); return RD_BAD_INPUT; }
  self[n] = 0;
  char *pkg = package_dir(self);
  if (!pkg) {
    rd_error("%s: the Python package of dlhook is not installed beside the command "
             "(set DLHOOK_PYTHONPATH to the directory that holds dlhook/)", cmd);
    return RD_BAD_INPUT;
  }
  const char *py = getenv("DLHOOK_PYTHON");
  if (!py || !*py) py = "python3";
  const char *old = getenv("PYTHONPATH");
  char *pp = NULL;
  if (asprintf(&pp, "%s%s%s", pkg, old && *old ? ":" : "", old && *old ? old : "") < 0) pp = NULL;
  if (!pp) { rd_error("out of memory"); return RD_BAD_INPUT; }
  setenv("PYTHONPATH", pp, 1);
  setenv("DLHOOK_BIN", self, 1);
  free(pp);
  free(pkg);
  char **av = rd_xmalloc(((size_t)argc + 5) * sizeof *av);
  size_t k = 0;
  av[k++] = (char *)py;
  av[k++] = "-m";
  av[k++] = "dlhook.cli";
  av[k++] = (char *)cmd;
  for (int i = 0; i < argc; i++) av[k++] = argv[i];
  av[k] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) { rd_error("%s: fork: %s", cmd, strerror(errno)); free(av); return RD_BAD_INPUT; }
  if (pid == 0) {
    execvp(py, av);
    fprintf(stderr, "dlhook: %s: cannot run %s (%s): set DLHOOK_PYTHON to a Python with pyarrow "
            "and duckdb (pip install dlhook[tables])\n", cmd, py, strerror(errno));
    _exit(127);
  }
  free(av);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return RD_BAD_INPUT;
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 127 ? RD_BAD_INPUT : WEXITSTATUS(st);
  return RD_BAD_INPUT;
}
