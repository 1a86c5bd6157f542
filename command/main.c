/* main.c — the dlhook command: dispatches to one file per subcommand. Each subcommand describes
 * its options in a table (rd_opts.h) that its parser, its --help and its manual page read. */
#include <stdio.h>
#include <string.h>

#include "rd.h"
#include "rd_opts.h"

#define COMMANDS(X)                                                                        \
  X(record) X(ctl) X(attach) X(detach) X(report) X(advise) X(dump) X(stats) X(export) X(diff) \
  X(merge) X(symbolize) X(sql) X(analyze) X(hang)
#define DECLARE(name)                      \
  int cmd_##name(int argc, char **argv);   \
  extern const rd_command cmd_##name##_spec;
COMMANDS(DECLARE)
#undef DECLARE

static const struct {
  const rd_command *spec;
  int (*run)(int, char **);
} commands[] = {
#define ENTRY(name) {&cmd_##name##_spec, cmd_##name},
    COMMANDS(ENTRY)
#undef ENTRY
};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static void list_commands(FILE *f, int man) {
  if (man) fputs(".SH COMMANDS\n", f);
  else fputs("commands:\n", f);
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const rd_command *c = commands[i].spec;
    if (man) fprintf(f, ".TP\n.BR dlhook\\-%s (1)\n%s\n", c->name, c->summary);
    else fprintf(f, "  %-9s %s\n", c->name, c->summary);
  }
}

enum { OPT_VERSION = 'V' };
static const rd_option options[] = {
    {"version", OPT_VERSION, NULL, "show the version (also: dlhook version)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

static const rd_command dlhook_spec = {
    .name = NULL,
    .synopsis = "COMMAND [ARGS...]\n--version",
    .summary = "profile the CUDA, cuBLAS, cuDNN and NCCL calls of a program",
    .about = "dlhook records the CUDA, cuBLAS, cuDNN and NCCL calls of a program and the GPU "
             "work they cause, and reads the traces it writes. `dlhook COMMAND --help` (or "
             "`dlhook help COMMAND`) shows the options of a command.",
    .more = list_commands,
    .notes = "exit status: 0 success, 1 bad or damaged input, 2 usage error",
    .examples = " make demo\n"
                " dlhook record -o traces -- ./train --steps 20\n"
                " dlhook stats traces/*.dlh\n"
                " dlhook report -o report.html traces/*.dlh",
    .options = options,
    .in_order = 1,
};

static const rd_command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(name, commands[i].spec->name)) return commands[i].spec;
  return NULL;
}

/* `dlhook help [COMMAND]`, and two forms `make man` uses: `dlhook help --man [COMMAND]` prints
 * the manual page, `dlhook help --commands` the names of the commands; and one that `make
 * advise-doc` uses: `dlhook help --advise-classes` prints docs/advise.md's table of classes. */
static int help(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--advise-classes")) {
    rd_advise_classes_doc(stdout);
    return RD_OK;
  }
  if (argc > 1 && !strcmp(argv[1], "--commands")) {
    for (size_t i = 0; i < NCOMMANDS; i++) printf("%s\n", commands[i].spec->name);
    return RD_OK;
  }
  int man = argc > 1 && !strcmp(argv[1], "--man");
  const char *name = argc > 1 + man ? argv[1 + man] : NULL;
  const rd_command *c = name && strcmp(name, "dlhook") ? find(name) : &dlhook_spec;
  if (!c) return rd_usage_error(NULL, "unknown command '%s'", name);
  if (man) {
    const rd_command *all[NCOMMANDS + 1];
    for (size_t i = 0; i < NCOMMANDS; i++) all[i] = commands[i].spec;
    all[NCOMMANDS] = NULL;
    rd_man(stdout, c, all);
  } else {
    rd_help(stdout, c);
  }
  return RD_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    rd_help(stderr, &dlhook_spec);
    return RD_USAGE;
  }
  if (!strcmp(argv[1], "help")) return help(argc - 1, argv + 1);
  if (!strcmp(argv[1], "version")) argv[1] = "--version";
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, &dlhook_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == OPT_VERSION) {
      printf("dlhook %s (trace format %u)\n", DLHOOK_VERSION, DLH_FORMAT_VERSION);
      return RD_OK;
    }
  }
  if (opt < 0) return g.status;
  if (g.optind >= argc) return rd_usage_error(NULL, "no command given");
  const char *cmd = argv[g.optind];
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(cmd, commands[i].spec->name)) return commands[i].run(argc - g.optind, argv + g.optind);
  return rd_usage_error(NULL, "unknown command '%s'", cmd);
}
