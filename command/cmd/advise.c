/* advise.c — `dlhook advise`: a ranked list of findings (known causes of lost time, with their
 * cost per step, evidence, place in the user's code and fix) for recorded programs. The
 * analysis is command/lib/advise.c. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_opts.h"
#include "rd_scan.h"

enum { OPT_JSON = RD_KEY(0) };
static const rd_option options[] = {
    {"json", OPT_JSON, NULL, "print one JSON object instead of the text (its fields: below)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_advise_spec = {
    .name = "advise",
    .synopsis = "[--json] TRACE...",
    .summary = "rank the known causes of lost time in traces, with their fixes",
    .about = "Looks for known causes of lost time in the traces and lists them, costliest "
             "first. Each finding has a class id, an estimated cost (ms per step and share of "
             "the step time, and how it was estimated), its evidence (the calls, their count and "
             "time), the place in the user's code (the innermost frame of the user's own Python "
             "code, else of the program's executable) and the usual fix. A step is an NVTX range "
             "named like one (\"ProfilerStep#3\", \"step 3\"), and then only the calls inside steps count; without steps the trace's span is "
             "one step.\n\n"
             "Classes (a finding needs its count and a cost of at least 1% of the step time):\n\n"
             " sync-in-loop: cudaStreamSynchronize, cudaDeviceSynchronize, "
             "cudaEventSynchronize, synchronous cudaMemcpy (.item(), .cpu()) and their driver "
             "forms, at least 3 calls from one place and one per step; cost: the host's time "
             "blocked in them.\n"
             " pageable-h2d: host-to-device copies whose source is pageable memory (the GPU's "
             "memcpy record says so), at least 3 from one place; cost: the host's time in those "
             "copy calls.\n"
             " malloc-in-loop: cudaMalloc/cudaFree (cuMemAlloc/cuMemFree) after the first step "
             "(without steps: every call of a place but its first), at least 2 from one place; "
             "cost: their time; threshold 0.1% of the step time.\n\n"
             "With no finding above the thresholds it says \"no findings above the "
             "thresholds\".",
    .notes = "--json prints one object:\n\n"
             " {\"findings\":[{rank,class,cost_ms_per_step,cost_pct,estimate,\n"
             "   evidence:{calls,ns,functions,steps,step_ns},place,trace,fix}]}\n\n"
             "exit status: 0 (findings or not), 1 bad or damaged input, 2 usage error",
    .examples = " dlhook advise traces/*.dlh\n"
                " dlhook advise --json traces/*.dlh | jq '.findings[0]'",
    .options = options,
};

int cmd_advise(int argc, char **argv) {
  int json = 0, opt;
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t nfiles = 0;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_advise_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == OPT_JSON) json = 1;
    else files[nfiles++] = (char *)g.arg;
  }
  if (opt < 0) { free(files); return g.status; }
  if (nfiles == 0) {
    free(files);
    return rd_usage_error("advise", "no trace file given");
  }
  rd_advise *x = rd_advise_new();
  int rc = RD_OK;
  rd_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.quiet = 1;
  for (size_t i = 0; i < nfiles; i++) {
    rd_trace t;
    if (rd_open(&t, files[i], &ro, NULL) != RD_OK) {
      rc = RD_BAD_INPUT;
      if (t.opens == 0) { rd_trace_close(&t); continue; }
    }
    rd_sink s = rd_advise_sink(x);
    if (rd_pass(&t, &ro, "advise", &s) != RD_OK) rc = RD_BAD_INPUT;
    rd_advise_trace_end(x, &t);
    rd_trace_close(&t);
  }
  if (json) {
    fputs("{\"findings\":", stdout);
    rd_advise_json(stdout, x);
    fputs("}\n", stdout);
  } else {
    rd_advise_table(stdout, x);
  }
  rd_advise_free(x);
  if (fflush(stdout) != 0) {
    rd_error("advise: write error on standard output");
    rc = RD_BAD_INPUT;
  }
  free(files);
  return rc;
}
