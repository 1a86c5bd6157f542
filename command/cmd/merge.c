/* merge.c — `dlhook merge`: traces of many processes, ranks and hosts on one timeline, written
 * in an export format (one process track group per rank).
 *
 * Each trace's times are moved onto the clock of the first trace given: the difference of the
 * traces' (realtime - trace clock) anchors (0 for processes of one host), refined for ranked
 * traces by their collectives (ranks.c: the n-th collective ends at the same moment on every
 * rank). The export then runs as `dlhook export` would, with those offsets; merge takes the
 * options of export (ex_options). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "rd.h"

const rd_command cmd_merge_spec = {
    .name = "merge",
    .synopsis = "-o OUT [--format FORMAT] [OPTIONS] TRACE...",
    .summary = "put traces of many ranks and hosts on one timeline, then export",
    .about = "Puts the traces of several processes, ranks or hosts on one timeline and writes "
             "them in an export format (default perfetto; the formats of dlhook export). Times "
             "are aligned on the clock anchors of the traces (realtime vs. trace clock) and, for "
             "ranks, refined on their NCCL collectives. The other options are those of dlhook "
             "export. Processes without GPU work (launchers, shells) are left out unless "
             "--keep-gpuless.",
    .examples = " dlhook merge -o job.pftrace traces/*.dlh\n"
                " dlhook merge -f kineto -o tb/ host*/traces/*.dlh",
    .options = ex_format_option,
    .common = ex_options,
};

int cmd_merge(int argc, char **argv) {
  rd_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t nfiles = 0;
  int shown, prc = ex_parse_options(&cmd_merge_spec, argc, argv, &o, files, &nfiles, &shown);
  if (prc != RD_OK || shown) {
    free(files);
    return prc;
  }
  if (!o.format) o.format = "perfetto";
  if (!o.out || nfiles == 0) {
    free(files);
    return rd_usage_error("merge", !o.out ? "-o OUT is required" : "no trace file given");
  }
  /* the export aligns the clocks after the first pass of every trace (links.c, ex_each) */
  o.merge = 1;
  o.offsets = rd_xmalloc(nfiles * sizeof *o.offsets);
  int rc = ex_run(&o, files, nfiles);
  free(o.offsets);
  free(files);
  return rc;
}
