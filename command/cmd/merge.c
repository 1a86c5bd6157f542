/* merge.c — `dlhook merge`: traces of many processes, ranks and hosts on one timeline, written
 * in an export format (one process track group per rank).
 *
 * Each trace's times are moved onto the clock of the first trace given: the difference of the
 * traces' (realtime - trace clock) anchors (0 for processes of one host), refined for ranked
 * traces by their collectives (ranks.c: the n-th collective ends at the same moment on every
 * rank). The export then runs as `dlhook export` would, with those offsets. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "rd.h"

int cmd_export(int argc, char **argv);

static void help(void) {
  printf("usage: dlhook merge -o OUT [--format FORMAT] [export options] TRACE...\n"
         "\n"
         "Puts the traces of several processes, ranks or hosts on one timeline and writes them\n"
         "in an export format (default perfetto; kineto, tensorboard, folded, svg, speedscope,\n"
         "pprof as in `dlhook export`). Times are aligned on the clock anchors of the traces\n"
         "(realtime vs. trace clock) and, for ranks, refined on their NCCL collectives.\n"
         "Other options (--window, --weight, --step-range, --keep-gpuless, -q) are passed to\n"
         "the export. Processes without GPU work (launchers, shells) are left out unless\n"
         "--keep-gpuless.\n");
}

int cmd_merge(int argc, char **argv) {
  const char *out = NULL, *format = "perfetto";
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  char **pass = rd_xmalloc(((size_t)argc + 6) * sizeof *pass);
  size_t nfiles = 0, npass = 0;
  int opts_done = 0;
  pass[npass++] = "export";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (opts_done || a[0] != '-') { files[nfiles++] = argv[i]; continue; }
    if (!strcmp(a, "--")) { opts_done = 1; continue; }
    if (rd_is_help(a)) { help(); free(files); free(pass); return RD_OK; }
    if ((!strcmp(a, "-o") || !strcmp(a, "--format") || !strcmp(a, "-f")) && i + 1 < argc) {
      if (a[1] == 'o') out = argv[++i]; else format = argv[++i];
      continue;
    }
    if (!strncmp(a, "--format=", 9)) { format = a + 9; continue; }
    /* everything else goes to the export, with its value when it takes one */
    pass[npass++] = argv[i];
    if ((!strcmp(a, "--window") || !strcmp(a, "--weight") || !strcmp(a, "--step-range") ||
         !strcmp(a, "--title")) && i + 1 < argc)
      pass[npass++] = argv[++i];
  }
  if (!out || nfiles == 0) {
    free(files);
    free(pass);
    return rd_usage_error("merge", !out ? "-o OUT is required" : "no trace file given");
  }
  /* the export aligns the clocks after the first pass of every trace (links.c, ex_each) */
  ex_merging = 1;
  char **av = rd_xmalloc((npass + nfiles + 6) * sizeof *av);
  size_t ac = 0;
  for (size_t i = 0; i < npass; i++) av[ac++] = pass[i];
  av[ac++] = "--format";
  av[ac++] = (char *)format;
  av[ac++] = "-o";
  av[ac++] = (char *)out;
  av[ac++] = "--";
  for (size_t i = 0; i < nfiles; i++) av[ac++] = files[i];
  av[ac] = NULL;
  int rc = cmd_export((int)ac, av);
  ex_merging = 0;
  free(av);
  free(files);
  free(pass);
  return rc;
}
