/* diff.c — `dlhook diff`: a differential flame graph of two traces. */
#include <stdio.h>
#include <stdlib.h>

#include "export.h"

static void diff_help(void) {
  printf("usage: dlhook diff [--weight gpu|cpu|bytes] [--window START:END] -o OUT BEFORE AFTER\n"
         "\n"
         "A differential flame graph of two traces: frames are sized by AFTER and coloured by\n"
         "the change from BEFORE (red: grew, blue: shrank; stacks only in BEFORE are shown\n"
         "with zero width in AFTER's graph and listed in the folded output).\n"
         "OUT ending in .svg writes the SVG; anything else writes folded lines\n"
         "'frame;frame;frame BEFORE AFTER'.\n");
}

int cmd_diff(int argc, char **argv) {
  rd_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = ex_parse_options("diff", argc, argv, &o, files, &n, &shown);
  if (rc != RD_OK || shown) {
    if (shown) diff_help();
    free(files);
    return rc;
  }
  if (n != 2) rc = rd_usage_error("diff", "need two traces (BEFORE AFTER), got %zu", n);
  else if (!o.out) rc = rd_usage_error("diff", "no output given (-o OUT.svg or OUT.folded)");
  else rc = ex_flame_diff(&o, files[0], files[1]);
  free(files);
  return rc;
}

