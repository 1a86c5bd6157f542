/* diff.c — `dlhook diff`: a differential flame graph of two traces. */
#include <stdio.h>
#include <stdlib.h>

#include "export.h"

const rd_command cmd_diff_spec = {
    .name = "diff",
    .synopsis = "[--weight WEIGHT] [--fold FOLD] [--window START:END] -o OUT BEFORE AFTER",
    .summary = "differential flame graph of two traces",
    .about = "A differential flame graph of two traces: frames are sized by AFTER and coloured "
             "by the change from BEFORE (red: grew, blue: shrank; stacks only in BEFORE are "
             "shown with zero width in AFTER's graph and listed in the folded output). OUT "
             "ending in .svg writes the SVG; anything else writes folded lines 'frame;frame;frame "
             "BEFORE AFTER'. The options are those of dlhook export.",
    .examples = " dlhook diff -o change.svg before.dlh after.dlh\n"
                " dlhook diff --weight=cpu -o change.folded before.dlh after.dlh",
    .common = ex_options,
};

int cmd_diff(int argc, char **argv) {
  rd_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = ex_parse_options(&cmd_diff_spec, argc, argv, &o, files, &n, &shown);
  if (rc != RD_OK || shown) {
    free(files);
    return rc;
  }
  if (n != 2) rc = rd_usage_error("diff", "need two traces (BEFORE AFTER), got %zu", n);
  else if (!o.out) rc = rd_usage_error("diff", "no output given (-o OUT.svg or OUT.folded)");
  else rc = ex_flame_diff(&o, files[0], files[1]);
  free(files);
  return rc;
}
