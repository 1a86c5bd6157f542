/* advise.c — `dlhook advise`: a ranked list of findings (known causes of lost time, with their
 * cost per step, evidence, place in the user's code and fix) for recorded programs. The
 * analysis is command/lib/advise.c. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_opts.h"
#include "rd_scan.h"

enum { OPT_JSON = RD_KEY(0), OPT_MAX_EVENTS };
static const rd_option options[] = {
    {"json", OPT_JSON, NULL, "print one JSON object instead of the text (its fields: below)", NULL, 0},
    {"max-events", OPT_MAX_EVENTS, "N",
     "read at most N events of a trace (API calls, GPU records, host samples), say so and exit "
     "1 after the findings of what was read; 0: no limit. Default: 1 Mi, or 2 per byte of the "
     "trace file when more (advise keeps ~150 bytes per call; dlhook export --help)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_advise_spec = {
    .name = "advise",
    .synopsis = "[--json] TRACE...",
    .summary = "rank the known causes of lost time in traces, with their fixes",
    .about = "Looks for known causes of lost time in the traces and lists them, costliest "
             "first. Each finding has a class id, an estimated cost (ms per step and share of "
             "the step time, and how it was estimated), its evidence (the calls, GPU ops or "
             "samples, their count and time), the place in the user's code (the innermost frame "
             "of the user's own Python code, else of the program's executable) and the usual fix. "
             "A step is an NVTX range named like one (\"ProfilerStep#3\", \"step 3\"); without "
             "them, in a PyTorch program, the time from the end of one Optimizer.step (else "
             "backward, else training_step) to the end of the next; in a program without "
             "Python the steps are found from the repeating calls; only what is inside steps "
             "counts. Several traces: the same class at the same place is one finding. With no "
             "finding above the thresholds it says \"no findings above the thresholds\".",
    .more = rd_advise_classes_help,
    .notes = "--json prints one object:\n\n"
             " {\"findings\":[{rank,class,cost_ms_per_step,cost_pct,estimate,\n"
             "   evidence:{calls,ns,functions,steps,step_ns,steps_from,detail},place,\n"
             "   dataset_place (input-starved),trace,traces,fix}],\n"
             "  \"steps\":[{trace,steps,step_ns,steps_from}]}\n\n"
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
  rd_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.quiet = 1;
  ro.events_limited = 2; /* ~150 bytes per event: half the limit */
  rd_getopt_init(&g, &cmd_advise_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == OPT_JSON) json = 1;
    else if (opt == OPT_MAX_EVENTS) {
      if (rd_parse_max_events("advise", g.arg, &ro) != RD_OK) { free(files); return RD_USAGE; }
    } else files[nfiles++] = (char *)g.arg;
  }
  if (opt < 0) { free(files); return g.status; }
  if (nfiles == 0) {
    free(files);
    return rd_usage_error("advise", "no trace file given");
  }
  rd_advise *x = rd_advise_new();
  int rc = RD_OK;
  rd_ranks_in **rk = calloc(nfiles, sizeof *rk); /* several traces: the collectives of each */
  if (!rk) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  for (size_t i = 0; i < nfiles; i++) {
    rd_trace t;
    if (rd_open(&t, files[i], &ro, NULL) != RD_OK) {
      rc = RD_BAD_INPUT;
      if (t.opens == 0) { rd_trace_close(&t); continue; }
    }
    rd_sink a = rd_advise_sink(x), r;
    rd_tee tee = {{&a}, 1};
    if (nfiles > 1) {
      rk[i] = rd_ranks_in_new(files[i]);
      r = rd_ranks_in_sink(rk[i]);
      tee.s[tee.n++] = &r;
    }
    rd_sink s = rd_tee_sink(&tee);
    if (rd_pass(&t, &ro, "advise", &s) != RD_OK) rc = RD_BAD_INPUT;
    rd_advise_trace_end(x, &t);
    if (rk[i]) rd_ranks_in_end(rk[i], &t);
    rd_trace_close(&t);
  }
  if (nfiles > 1 && rd_ranks_finish(rk, nfiles)) rd_advise_ranks(x);
  free(rk);
  if (json) {
    fputs("{\"findings\":", stdout);
    rd_advise_json(stdout, x);
    fputs(",\"steps\":", stdout);
    rd_advise_steps_json(stdout, x);
    fputs("}\n", stdout);
  } else {
    rd_advise_table(stdout, x);
  }
  rd_advise_free(x);
  rd_ranks_free();
  if (fflush(stdout) != 0) {
    rd_error("advise: write error on standard output");
    rc = RD_BAD_INPUT;
  }
  free(files);
  return rc;
}
