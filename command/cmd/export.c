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

static void help(void) {
  printf("usage: dlhook export --format FORMAT -o OUT [options] TRACE...\n"
         "\n"
         "Converts traces for the viewers people already use.\n"
         "\n"
         "formats:\n"
         "  kineto      PyTorch profiler Chrome-trace JSON, gzipped, one file per trace:\n"
         "              OUT/<host>_rank<R>_<pid>.<ms>.pt.trace.json.gz (Holistic Trace\n"
         "              Analysis, Perfetto UI, chrome://tracing, TensorBoard's PyTorch plugin)\n"
         "  perfetto    Perfetto's native protobuf trace (OUT is a file; streamed, interned\n"
         "              names; for traces too large for JSON): ui.perfetto.dev\n"
         "  tensorboard an xprof run: OUT/plugins/profile/<run>/rank<R>.xplane.pb\n"
         "              (tensorboard --logdir OUT, or xprof)\n"
         "  folded      flame graph stacks, one 'frame;frame;frame WEIGHT' line per stack\n"
         "  svg         interactive flame graph (zoom, search, tooltips)\n"
         "  speedscope  speedscope's JSON file format (speedscope.app)\n"
         "  pprof       gzipped profile.proto (go tool pprof, pprof -http)\n"
         "\n"
         "options:\n"
         "  -f, --format FORMAT    one of the formats above\n"
         "  -o, --output OUT       output file (directory for kineto and tensorboard)\n"
         "  --weight gpu|cpu|bytes flame graph weight: GPU time of the work a call launched,\n"
         "                         with the kernel as leaf (default); time inside the calls;\n"
         "                         bytes allocated or copied\n"
         "  --window START:END     only events that overlap this window, times from the\n"
         "                         trace's start in s (or with a unit: ns, us, ms, s); either\n"
         "                         side may be empty (\"2:\" = from 2 s to the end)\n"
         "  --step-range NAME      kineto: NVTX ranges named NAME mark profiler steps\n"
         "                         (default: ranges named like 'step N' or 'ProfilerStep#N')\n"
         "  --title TEXT           svg title\n"
         "  --keep-gpuless         also export processes that did no GPU work (launchers,\n"
         "                         shells; left out of kineto, perfetto and tensorboard by\n"
         "                         default)\n"
         "  -q, --quiet            no progress on stderr\n"
         "\n"
         "Several traces (ranks, processes) go into one flame graph, one Perfetto file or one\n"
         "xprof run; kineto writes one file per trace. Exports stream: memory stays bounded by\n"
         "the number of distinct stacks (flame graphs) or of threads and streams.\n");
}

int ex_parse_options(const char *cmd, int argc, char **argv, rd_opts *o, char **files,
                     size_t *nfiles, int *help_shown) {
  int opts_done = 0;
  *help_shown = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
#define NEED_ARG()                                                         \
  if (i + 1 >= argc) return rd_usage_error(cmd, "%s needs a value", a); \
  const char *v = argv[++i]
    if (opts_done || a[0] != '-' || !a[1]) {
      files[(*nfiles)++] = argv[i];
    } else if (!strcmp(a, "--")) {
      opts_done = 1;
    } else if (rd_is_help(a)) {
      *help_shown = 1;
      return RD_OK;
    } else if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
      NEED_ARG();
      o->format = v;
    } else if (!strncmp(a, "--format=", 9)) {
      o->format = a + 9;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      NEED_ARG();
      o->out = v;
    } else if (!strcmp(a, "--weight")) {
      NEED_ARG();
      if (!strcmp(v, "gpu")) o->weight = RD_W_GPU;
      else if (!strcmp(v, "cpu")) o->weight = RD_W_CPU;
      else if (!strcmp(v, "bytes")) o->weight = RD_W_BYTES;
      else return rd_usage_error(cmd, "--weight must be gpu, cpu or bytes, not '%s'", v);
    } else if (!strcmp(a, "--window")) {
      NEED_ARG();
      const char *c = strchr(v, ':');
      if (!c || parse_time(v, (size_t)(c - v), 0, &o->win_start) < 0 ||
          parse_time(c + 1, strlen(c + 1), UINT64_MAX, &o->win_end) < 0 ||
          o->win_end <= o->win_start)
        return rd_usage_error(cmd, "bad --window '%s' (START:END, e.g. 1.5:3 or 200ms:)", v);
      o->have_window = 1;
    } else if (!strcmp(a, "--step-range")) {
      NEED_ARG();
      o->step_range = v;
    } else if (!strcmp(a, "--title")) {
      NEED_ARG();
      o->title = v;
    } else if (!strcmp(a, "--keep-gpuless")) {
      o->keep_gpuless = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else {
      return rd_usage_error(cmd, "unknown option '%s'", a);
    }
#undef NEED_ARG
  }
  return RD_OK;
}

int ex_merging;

int cmd_export(int argc, char **argv) {
  rd_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = ex_parse_options("export", argc, argv, &o, files, &n, &shown);
  if (rc != RD_OK || shown) {
    if (shown) help();
    free(files);
    return rc;
  }
  static const struct {
    const char *name;
    int (*run)(const rd_opts *, char **, size_t);
  } fmts[] = {{"kineto", ex_kineto},     {"perfetto", ex_perfetto},     {"tensorboard", ex_xplane},
              {"xplane", ex_xplane},     {"folded", ex_flame},          {"svg", ex_flame},
              {"speedscope", ex_flame},  {"pprof", ex_flame}};
  if (!o.format) rc = rd_usage_error("export", "no --format given");
  else if (!o.out) rc = rd_usage_error("export", "no output given (-o OUT)");
  else if (n == 0) rc = rd_usage_error("export", "no trace file given");
  else {
    rc = -1;
    o.merge = ex_merging;
    o.offsets = o.merge ? rd_xmalloc(n * sizeof *o.offsets) : NULL;
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
      if (!strcmp(o.format, fmts[i].name)) rc = fmts[i].run(&o, files, n);
    if (rc == -1)
      rc = rd_usage_error("export", "unknown format '%s' (kineto, perfetto, tensorboard, "
                          "folded, svg, speedscope, pprof)", o.format);
    free(o.offsets);
  }
  free(files);
  return rc;
}
