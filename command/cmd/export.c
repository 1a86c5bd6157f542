/* export.c — `dlhook export`: the options of the exporters (shared with `dlhook diff`) and the
 * table of formats. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

/* ---------------------------------------------------------------- command line */

/* "1.5", "20ms", "300us", "1000ns", "2s"; empty = `dflt`. Returns 0 or -1. */
static int parse_time(const char *s, size_t len, uint64_t dflt, uint64_t *out) {
  if (len == 0) { *out = dflt; return 0; }
  char buf[64];
  if (len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (end == buf || errno || v < 0) return -1;
  double mul = 1e9;
  if (!strcmp(end, "ns")) mul = 1;
  else if (!strcmp(end, "us")) mul = 1e3;
  else if (!strcmp(end, "ms")) mul = 1e6;
  else if (!strcmp(end, "s") || !*end) mul = 1e9;
  else return -1;
  *out = (uint64_t)(v * mul + 0.5);
  return 0;
}

/* The formats: the one list that --format accepts, that --help and the manual pages show, and
 * that exporters[] below runs (in the same order). */
static const rd_choice formats[] = {
    {"kineto", "PyTorch profiler Chrome-trace JSON, gzipped, one file per trace in the directory "
     "OUT: <host>_rank<R>_<pid>.<ms>.pt.trace.json.gz (<host>_<pid>... without a rank; the "
     "PyTorch profiler's layout): Holistic Trace Analysis, TensorBoard's PyTorch plugin, "
     "ui.perfetto.dev, chrome://tracing", 0},
    {"perfetto", "Perfetto's native protobuf trace (OUT is a file; streamed, interned names; for "
     "traces too large for JSON): ui.perfetto.dev", 0},
    {"tensorboard", "an xprof run in the logdir OUT: plugins/profile/<run>/rank<R>.xplane.pb "
     "(<host>[_<pid>] without a rank): tensorboard --logdir OUT (profile plugin), or xprof", 0},
    {"xplane", NULL, 1}, /* the old name of tensorboard */
    {"folded", "flame graph stacks, one 'frame;frame;frame WEIGHT' line per stack: "
     "flamegraph.pl, inferno, speedscope", 0},
    {"svg", "interactive flame graph (click to zoom, search, tooltips): any browser", 0},
    {"speedscope", "speedscope's JSON file format (speedscope.app)", 0},
    {"pprof", "gzipped profile.proto: go tool pprof -http=: OUT", 0},
    {"parquet", "a Parquet dataset in the directory OUT, one file per trace and table, "
     "partitioned as TABLE/job=J/host=H/rank=R/PID.parquet (calls, gpu, nvtx, memory, stacks, "
     "samples, operators, threads, processes, anchors; docs/tables.md), converted one "
     "process per core with pyarrow: dlhook sql, dlhook analyze, DuckDB, Spark, pandas", 0},
    {"columns", NULL, 1}, /* one trace as binary columns, for the Parquet writer (columns.c) */
    {"memory-snapshot", "one trace's GPU memory as the pickle torch.cuda.memory._snapshot() "
     "returns (OUT is a file: segments, device_traces of alloc/free actions with their stacks; "
     "every tensor when recorded with --torch-memory, else CUDA's segments): "
     "pytorch.org/memory_viz, torch.cuda._memory_viz", 0},
    {NULL, NULL, 0}};
static int (*const exporters[])(const rd_opts *, char **, size_t) = {
    ex_kineto, ex_perfetto, ex_xplane, ex_xplane, ex_flame, ex_flame, ex_flame, ex_flame,
    ex_parquet, ex_columns, ex_memsnap};
_Static_assert(sizeof exporters / sizeof *exporters == sizeof formats / sizeof *formats - 1,
               "one exporter per format");

/* --weight: the index of a value is its RD_W_* */
static const rd_choice weights[] = {
    {"gpu", "GPU time of the work a call launched, with the kernel as leaf (the default)", 0},
    {"cpu", "time inside the calls", 0},
    {"bytes", "bytes allocated or copied", 0},
    {"samples", "on-CPU time from the host samples (recorded with DLHOOK_SAMPLE_HZ), under "
     "each sample's mixed Python and native stack", 0},
    {"wait", "wait time from the host samples: the waiting threads' Python frames, with the "
     "CUDA call in flight ([in cudaStreamSynchronize]) and the system call ([wait: futex]) "
     "as leaves", 0},
    {NULL, NULL, 0}};
_Static_assert(RD_W_GPU == 0 && RD_W_CPU == 1 && RD_W_BYTES == 2 && RD_W_SAMPLES == 3 &&
               RD_W_WAIT == 4, "weights[] is in RD_W_ order");

/* --fold: the index of a value is its RD_FOLD_* */
static const rd_choice folds[] = {
    {"stack", "the recorded call stack, native and Python frames (the default)", 0},
    {"op", "PyTorch's operator path, outermost first (aten::linear;aten::addmm), below the "
     "autograd node (autograd::engine::evaluate_function: AddmmBackward0) for backward work; "
     "calls outside any operator under [no operator]", 0},
    {"module", "the module path: the forward() frames (Sequential.forward;Conv2d.forward); "
     "calls outside any module under [no module]", 0},
    {"line", "the Python frames down to the innermost line of the user's own code, that line "
     "as FILE:LINE (train.py:57); calls without one under [no user line]", 0},
    {NULL, NULL, 0}};
_Static_assert(RD_FOLD_STACK == 0 && RD_FOLD_OP == 1 && RD_FOLD_MODULE == 2 && RD_FOLD_LINE == 3,
               "folds[] is in RD_FOLD_ order");

enum { OPT_WEIGHT = RD_KEY(0), OPT_WINDOW, OPT_STEP_RANGE, OPT_TITLE, OPT_KEEP_GPULESS, OPT_NO_GZIP,
       OPT_FOLD, OPT_MAX_EVENTS };

const rd_option ex_format_option[] = {
    {"format", 'f', "FORMAT", "the output format:", formats, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_option ex_options[] = {
    {"output", 'o', "OUT", "output file (directory for kineto and tensorboard)", NULL, 0},
    {"weight", OPT_WEIGHT, "WEIGHT", "flame graph weight:", weights, 0},
    {"fold", OPT_FOLD, "FOLD",
     "flame graph frames (the GPU time, API time or bytes of each call go to its folded "
     "stack; the kernel or, for --weight cpu and bytes, the API function stays the leaf; "
     "a host sample's time goes to its stack's, with --weight wait's leaves):",
     folds, 0},
    {"window", OPT_WINDOW, "START:END",
     "only events that overlap this window, times from the trace's start in s (or with a unit: "
     "ns, us, ms, s); either side may be empty (\"2:\" = from 2 s to the end)", NULL, 0},
    {"step-range", OPT_STEP_RANGE, "NAME",
     "kineto: NVTX ranges named NAME mark profiler steps (default: ranges named like 'step N' or "
     "'ProfilerStep#N')", NULL, 0},
    {"title", OPT_TITLE, "TEXT", "svg title", NULL, 0},
    {"keep-gpuless", OPT_KEEP_GPULESS, NULL,
     "also export processes that did no GPU work (launchers, shells; left out of kineto, "
     "perfetto and tensorboard by default)", NULL, 0},
    {"no-gzip", OPT_NO_GZIP, NULL,
     "kineto: plain JSON files (.pt.trace.json, what torch.profiler's tensorboard_trace_handler "
     "writes by default) instead of gzipped ones: about twice as fast to write, ten to thirty "
     "times larger", NULL, 0},
    {"max-events", OPT_MAX_EVENTS, "N",
     "the formats that hold every event (kineto, perfetto, tensorboard, parquet) stop after N "
     "events of a trace (API calls, GPU records, host samples; a folded call counts once), "
     "say so and exit 1; 0: no limit. Default: 2 Mi events, or 4 per byte of the trace file "
     "when more, which no recorded trace reaches (a tight loop of calls writes at most ~2 per "
     "byte) but a few KB built to expand into tens of millions of alike events do. Flame "
     "graphs aggregate and read every event", NULL, 0},
    {"quiet", 'q', NULL, "no progress on stderr", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_export_spec = {
    .name = "export",
    .synopsis = "--format FORMAT -o OUT [OPTIONS] TRACE...",
    .summary = "convert traces for TensorBoard, Perfetto, HTA, flame graphs",
    .about = "Converts traces for the viewers people already use.",
    .notes = "Several traces (ranks, processes) go into one flame graph, one Perfetto file or one "
             "xprof run; kineto writes one file per trace. Exports stream: memory stays bounded "
             "by the number of distinct stacks (flame graphs) or of threads and streams.",
    .examples = " dlhook export -f kineto -o tb/ traces/*.dlh\n"
                " dlhook export --format=perfetto -o run.pftrace traces/*.dlh\n"
                " dlhook export -f svg --weight=cpu --window 2:5 -o flame.svg trace.dlh\n"
                " dlhook export -f folded --fold op -o ops.folded trace.dlh\n"
                " dlhook export -f svg --weight samples -o oncpu.svg trace.dlh\n"
                " dlhook export -f svg --weight wait -o wait.svg trace.dlh",
    .options = ex_format_option,
    .common = ex_options,
};

int ex_parse_options(const rd_command *cmd, int argc, char **argv, rd_opts *o, char **files,
                     size_t *nfiles, int *help_shown) {
  *help_shown = 0;
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, cmd, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    const char *v = g.arg, *c;
    switch (opt) {
      case RD_OPERAND: files[(*nfiles)++] = (char *)v; break;
      case 'f': o->format = formats[g.choice].name; break;
      case 'o': o->out = v; break;
      case OPT_WEIGHT: o->weight = g.choice; break;
      case OPT_FOLD: o->fold = g.choice; break;
      case OPT_WINDOW:
        c = strchr(v, ':');
        if (!c || parse_time(v, (size_t)(c - v), 0, &o->win_start) < 0 ||
            parse_time(c + 1, strlen(c + 1), UINT64_MAX, &o->win_end) < 0 ||
            o->win_end <= o->win_start)
          return rd_usage_error(cmd->name, "bad --window '%s' (START:END, e.g. 1.5:3 or 200ms:)", v);
        o->have_window = 1;
        break;
      case OPT_STEP_RANGE: o->step_range = v; break;
      case OPT_TITLE: o->title = v; break;
      case OPT_KEEP_GPULESS: o->keep_gpuless = 1; break;
      case OPT_NO_GZIP: o->no_gzip = 1; break;
      case OPT_MAX_EVENTS:
        if (rd_parse_max_events(cmd->name, v, o) != RD_OK) return RD_USAGE;
        break;
      case 'q': o->quiet = 1; break;
    }
  }
  if (opt < 0) *help_shown = g.status == RD_OK;
  return opt < 0 ? g.status : RD_OK;
}

int ex_run(const rd_opts *o, char **files, size_t n) {
  rd_progress_plan(files, n); /* export and merge: the progress line on a terminal */
  for (size_t i = 0; formats[i].name; i++)
    if (!strcmp(o->format, formats[i].name)) {
      rd_opts lo = *o; /* the outputs of every event have the event limit, flame graphs not */
      lo.events_limited = exporters[i] != ex_flame;
      return exporters[i](&lo, files, n);
    }
  return rd_usage_error("export", "unknown format '%s' (%s)", o->format, rd_choices_text(formats));
}

int cmd_export(int argc, char **argv) {
  rd_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = ex_parse_options(&cmd_export_spec, argc, argv, &o, files, &n, &shown);
  if (rc != RD_OK || shown) {
    free(files);
    return rc;
  }
  if (!o.format) rc = rd_usage_error("export", "no --format given");
  else if (!o.out) rc = rd_usage_error("export", "no output given (-o OUT)");
  else if (n == 0) rc = rd_usage_error("export", "no trace file given");
  else rc = ex_run(&o, files, n);
  free(files);
  return rc;
}
