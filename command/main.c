/* main.c — the dlhook command: dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "rd.h"

int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_attach(int argc, char **argv);  /* attach.c */
int cmd_detach(int argc, char **argv);  /* attach.c */

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
  {"record", cmd_record, "run a program under the profiler and write its trace"},
  {"ctl", cmd_ctl, "start or stop recording of a running process (capture ranges)"},
  {"attach", cmd_attach, "profile a running process started without dlhook (ptrace)"},
  {"detach", cmd_detach, "stop profiling a process dlhook attached to; finish its trace"},
  {"report", cmd_report, "one self-contained HTML page: flame graph, timeline, tables"},
  {"dump", cmd_dump, "print the events of traces as JSON lines"},
  {"stats", cmd_stats, "summarise API calls and kernels of traces"},
  {"export", cmd_export, "convert traces for TensorBoard, Perfetto, HTA, flame graphs"},
  {"diff", cmd_diff, "differential flame graph of two traces"},
  {"merge", cmd_merge, "put traces of many ranks and hosts on one timeline, then export"},
  {"symbolize", cmd_symbolize, "add names to the stack addresses a recording left unresolved"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: dlhook COMMAND [ARGS...]\n"
          "\n"
          "dlhook records the CUDA, cuBLAS, cuDNN and NCCL calls of a program and the GPU work\n"
          "they cause, and reads the traces it writes.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\n"
          "options:\n"
          "  -h, --help     show this help (dlhook COMMAND --help: help on a command)\n"
          "  --version      show the version\n"
          "\n"
          "exit status: 0 success, 1 bad or damaged input, 2 usage error\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return RD_USAGE;
  }
  const char *cmd = argv[1];
  if (rd_is_help(cmd) || !strcmp(cmd, "help")) {
    if (argc > 2 && strcmp(cmd, "help") == 0) {
      for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[2], commands[i].name)) {
          char *av[] = {argv[2], "--help", NULL};
          return commands[i].run(2, av);
        }
      return rd_usage_error(NULL, "unknown command '%s'", argv[2]);
    }
    usage(stdout);
    return RD_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
    printf("dlhook %s (trace format %u)\n", DLHOOK_VERSION, DLH_FORMAT_VERSION);
    return RD_OK;
  }
  if (cmd[0] == '-') return rd_usage_error(NULL, "unknown option '%s'", cmd);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  return rd_usage_error(NULL, "unknown command '%s'", cmd);
}
