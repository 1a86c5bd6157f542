/* rd_opts.h — the one option parser of the dlhook command, on top of getopt_long.
 *
 * Each command describes itself once, in an rd_command: its synopsis, a few paragraphs about
 * it, and a static table of its options (long name, short letter, argument name, help text and,
 * for an enumeration, the one list of the values it allows). From that table the parser accepts
 * `--opt=value`, `--opt value`, `-o value` and `-ovalue` for every option, checks enumerated
 * values, and prints the error messages; `--help` and the manual page (`dlhook help --man CMD`)
 * are written from the same table, so they cannot drift from what the command accepts.
 *
 *   static const rd_option opts[] = {
 *     {"output", 'o', "DIR", "directory of the traces", NULL, 0},
 *     {"stacks", RD_KEY(1), "MODE", "call stacks", rd_stack_modes, 0},
 *     {0}};
 *   const rd_command cmd_x_spec = {.name = "x", .synopsis = "[-o DIR] TRACE...",
 *                                  .summary = "one line", .about = "...", .options = opts};
 *   rd_getopt g;
 *   int k;
 *   rd_getopt_init(&g, &cmd_x_spec, argc, argv);
 *   while ((k = rd_getopt_next(&g)) > 0)
 *     switch (k) {
 *       case 'o': out = g.arg; break;
 *       case RD_KEY(1): stacks = g.arg; break;
 *       case RD_OPERAND: files[n++] = g.arg; break;
 *     }
 *   if (k < 0) return g.status;   (help printed: RD_OK; usage error printed: RD_USAGE)
 */
#ifndef RD_OPTS_H
#define RD_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* One allowed value of an enumerated option. A name that ends in ":..." after a placeholder
 * (`nvtx:NAME[:N]`) allows every value that starts with the text up to and including its ':'.
 * Matching ignores case (as the DLHOOK_* settings do). A hidden value (an alias kept for old
 * scripts) is accepted but listed nowhere. Lists end with an entry whose name is NULL. */
typedef struct rd_choice {
  const char *name;
  const char *help;  /* one line for --help and the manual; NULL: the name says it */
  int hidden;
} rd_choice;

/* Keys of options without a short letter: RD_KEY(0), RD_KEY(1), ... (above every letter). */
#define RD_KEY(n) (256 + (n))
/* The key rd_getopt_next returns for an operand (g->arg is the operand). */
#define RD_OPERAND 1

/* Option flags. */
enum {
  RD_OPT_LIST = 1,  /* the value is a comma-separated list of choices (each one is checked) */
  RD_OPT_OPTIONAL = 2, /* the value may be left out (`--opt` or `--opt=value`, never
                        * `--opt value`); g.arg is then NULL. Long options only. */
};

/* One option of a command. Tables end with an entry whose name is NULL. */
typedef struct rd_option {
  const char *name;      /* long name, without "--" */
  int key;               /* its short letter ('o') when it has one, else RD_KEY(n) */
  const char *arg;       /* the argument's name in help ("DIR"); NULL: takes no argument */
  const char *help;      /* what it does: one paragraph, filled to the width of the terminal */
  const rd_choice *choices; /* an enumeration's allowed values, else NULL */
  int flags;             /* RD_OPT_* */
} rd_option;

/* A command: what --help and the manual page say, and what the parser accepts. Texts are
 * paragraphs separated by an empty line ("\n\n"); a paragraph that starts with a space is
 * preformatted (printed as it is, each line indented), every other one is filled. */
typedef struct rd_command {
  const char *name;      /* "record" (NULL for dlhook itself) */
  const char *synopsis;  /* what follows "dlhook NAME " in the usage line; lines separated by
                          * '\n' are alternative forms */
  const char *summary;   /* one line: the command list of `dlhook --help`, the manual's NAME */
  const char *about;     /* the description, before the options */
  const char *notes;     /* after the options (may be NULL) */
  const char *examples;  /* the manual's EXAMPLES section (may be NULL) */
  const char *exit_status; /* the manual's EXIT STATUS when not the usual 0/1/2 (may be NULL) */
  /* prints a section of its own after the description (dlhook's list of commands): as text,
   * or as troff when man (may be NULL) */
  void (*more)(FILE *f, int man);
  const rd_option *options;  /* the command's own options */
  const rd_option *common;   /* a table it shares with other commands (export's), or NULL */
  int in_order;          /* options end at the first operand: `record [OPTS] PROG ARGS...`
                          * leaves the options of PROG alone */
} rd_command;

/* The state of one parse. Fields after `status` are the parser's own. */
typedef struct rd_getopt {
  const char *arg;       /* the value of the option just returned (NULL when it takes none),
                          * or the operand for RD_OPERAND */
  int choice;            /* index of the value in the option's choices (-1 when it has none or
                          * for a list) */
  const rd_option *opt;  /* the option just returned (NULL for an operand) */
  int optind;            /* after the end: index in argv of the first argument not parsed (the
                          * program of `record`), argc when every argument was parsed */
  int status;            /* after a stop (-1): RD_OK when --help was printed, RD_USAGE after a
                          * usage error was printed */
  const rd_command *cmd;
  int argc;
  char **argv;
  int rest;              /* delivering the operands after "--" */
  struct option longopts[64];
  const rd_option *byindex[64];
  char shortopts[160];
} rd_getopt;

/* Prepares to parse argv[1..argc-1] (argv[0] is the command's name) by c's tables. */
void rd_getopt_init(rd_getopt *g, const rd_command *c, int argc, char **argv);
/* The next option or operand: its key (an option's key, or RD_OPERAND with the operand in
 * g->arg); 0 at the end (g->optind says where the parse ended); -1 to stop, after --help was
 * printed (g->status = RD_OK) or after a usage error was printed (g->status = RD_USAGE):
 * "dlhook CMD: unknown option '--x' (see 'dlhook CMD --help')", "--o needs a value", a
 * value not among the choices, a value given to an option that takes none. */
int rd_getopt_next(rd_getopt *g);

/* Prints "usage: dlhook NAME SYNOPSIS", the description, the options and the notes, filled
 * to 80 columns. */
void rd_help(FILE *f, const rd_command *c);
/* Prints the manual page of c (troff, man(7) macros): NAME, SYNOPSIS, DESCRIPTION, OPTIONS
 * (with each enumeration's values), the notes, EXAMPLES, EXIT STATUS, SEE ALSO. `others` lists
 * the commands named in SEE ALSO (NULL-terminated; c itself is skipped). */
void rd_man(FILE *f, const rd_command *c, const rd_command *const *others);
/* Prints text (paragraphs as in rd_command's texts) as --help does, or as troff when man: for
 * a command's `more` section. */
void rd_help_text(FILE *f, const char *text, int man);
/* "a, b or c": the visible values of a list, for messages (static buffer). */
const char *rd_choices_text(const rd_choice *choices);

/* The call stack modes of DLHOOK_STACKS (record, attach). */
extern const rd_choice rd_stack_modes[];

#endif
