/* opts.c — the option parser of every dlhook command (rd_opts.h): getopt_long driven by each
 * command's table, the error messages, and the help text and manual page written from the same
 * table. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rd.h"
#include "rd_opts.h"

#define WIDTH 80     /* help text is filled to this many columns */
#define HELP_COL 24  /* where an option's help starts */

const rd_choice rd_stack_modes[] = {
    {"none", "no call stacks", 0},
    {"native", "native frames (libunwind)", 0},
    {"python", "Python frames only", 0},
    {"mixed", "native frames with Python frames in place of the interpreter's own", 0},
    {NULL, NULL, 0}};

/* ---------------------------------------------------------------- the parser */

/* Every command takes -h/--help; it is listed after the command's own options. */
static const rd_option help_option = {"help", 'h', NULL, "show this help and exit", NULL, 0};

static int has_short(const rd_option *o) { return o->key > 0 && o->key < 128 && isalnum(o->key); }

void rd_getopt_init(rd_getopt *g, const rd_command *c, int argc, char **argv) {
  memset(g, 0, sizeof *g);
  g->cmd = c;
  g->argc = argc;
  g->argv = argv;
  g->choice = -1;
  /* '-' delivers operands in place (key 1) whatever POSIXLY_CORRECT says; '+' stops at the first
   * one; ':' reports a missing value apart from an unknown option. */
  char *s = g->shortopts;
  *s++ = c->in_order ? '+' : '-';
  *s++ = ':';
  *s++ = 'h';
  size_t n = 0;
  const rd_option *tables[2] = {c->options, c->common};
  for (int t = 0; t < 2; t++)
    for (const rd_option *o = tables[t]; o && o->name; o++) {
      if (n + 2 >= sizeof g->longopts / sizeof *g->longopts) abort(); /* a table too long */
      g->longopts[n] = (struct option){o->name, !o->arg ? no_argument
                                                : (o->flags & RD_OPT_OPTIONAL) ? optional_argument
                                                : required_argument, NULL, o->key};
      g->byindex[n++] = o;
      if (has_short(o)) {
        *s++ = (char)o->key;
        if (o->arg) *s++ = ':';
      }
    }
  g->longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
  g->byindex[n++] = &help_option;
  memset(&g->longopts[n], 0, sizeof g->longopts[n]);
  *s = 0;
  optind = 0; /* getopt starts afresh (a command may parse after another one: report, stats) */
  opterr = 0; /* the messages are ours */
}

static const rd_option *find_long(const rd_getopt *g, const char *name, size_t len) {
  for (size_t i = 0; g->longopts[i].name; i++)
    if (strlen(g->longopts[i].name) == len && !strncmp(g->longopts[i].name, name, len))
      return g->byindex[i];
  return NULL;
}

static const rd_option *find_key(const rd_getopt *g, int key) {
  for (size_t i = 0; g->longopts[i].name; i++)
    if (g->byindex[i]->key == key) return g->byindex[i];
  return NULL;
}

static int stop(rd_getopt *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int stop(rd_getopt *g, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  g->status = rd_usage_error(g->cmd->name, "%s", msg);
  return -1;
}

static int choice_matches(const rd_choice *c, const char *v, size_t len) {
  if (strlen(c->name) == len && !strncasecmp(c->name, v, len)) return 1;
  const char *colon = strchr(c->name, ':');
  if (!colon) return 0;
  size_t plen = (size_t)(colon - c->name) + 1; /* "nvtx:" of "nvtx:NAME[:N]" */
  return len > plen && !strncasecmp(c->name, v, plen);
}

/* Index of value v (len bytes) among the choices, or -1. */
static int find_choice(const rd_choice *choices, const char *v, size_t len) {
  for (int i = 0; choices[i].name; i++)
    if (choice_matches(&choices[i], v, len)) return i;
  return -1;
}

const char *rd_choices_text(const rd_choice *choices) {
  static char buf[1024];
  size_t n = 0, count = 0, seen = 0;
  for (const rd_choice *c = choices; c->name; c++) count += !c->hidden;
  buf[0] = 0;
  for (const rd_choice *c = choices; c->name && n < sizeof buf; c++) {
    if (c->hidden) continue;
    seen++;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", seen == 1 ? "" : seen == count ? " or " : ", ",
                          c->name);
  }
  return buf;
}

/* The noun of an argument name in messages: "MODE" -> "mode", "TYPE[,TYPE...]" -> "type". */
static void noun(char *dst, size_t cap, const char *arg) {
  size_t i = 0;
  for (; arg && isalpha((unsigned char)arg[i]) && i + 1 < cap; i++) dst[i] = (char)tolower(arg[i]);
  dst[i] = 0;
  if (!i) snprintf(dst, cap, "value");
}

/* Checks the value of an enumerated option; returns 0, or -1 after the message. */
static int check_choices(rd_getopt *g, const rd_option *o, const char *v) {
  char what[32];
  noun(what, sizeof what, o->arg);
  if (!(o->flags & RD_OPT_LIST)) {
    g->choice = find_choice(o->choices, v, strlen(v));
    if (g->choice >= 0) return 0;
    return stop(g, "--%s: unknown %s '%s' (expected %s)", o->name, what, v, rd_choices_text(o->choices));
  }
  for (const char *p = v;; p++) {
    size_t len = strcspn(p, ",");
    if (len && find_choice(o->choices, p, len) < 0)
      return stop(g, "--%s: unknown %s '%.*s' (expected %s)", o->name, what, (int)len, p,
                  rd_choices_text(o->choices));
    p += len;
    if (!*p) break;
  }
  return 0;
}

int rd_getopt_next(rd_getopt *g) {
  g->arg = NULL;
  g->opt = NULL;
  g->choice = -1;
  if (g->rest) { /* after "--": every argument is an operand */
    if (optind < g->argc) {
      g->arg = g->argv[optind++];
      return RD_OPERAND;
    }
    g->optind = g->argc;
    return 0;
  }
  int before = optind ? optind : 1, li = -1;
  /* getopt is in the middle of "-abc" when argv[before] is such a group; a long option is
   * always a whole argument of its own */
  const char *elem = before < g->argc ? g->argv[before] : "";
  int is_long = elem[0] == '-' && elem[1] == '-' && elem[2];
  int k = getopt_long(g->argc, g->argv, g->shortopts, g->longopts, &li);
  if (k == -1) {
    g->optind = optind;
    if (g->cmd->in_order) return 0;
    g->rest = 1;
    return rd_getopt_next(g);
  }
  if (k == 1) {
    g->arg = optarg;
    return RD_OPERAND;
  }
  size_t nlen = is_long ? strcspn(elem + 2, "=") : 0;
  if (k == '?') {
    if (!is_long) return stop(g, "unknown option '-%c'", optopt);
    const rd_option *o = find_long(g, elem + 2, nlen);
    if (o && !o->arg && elem[2 + nlen] == '=') return stop(g, "--%s takes no value", o->name);
    return stop(g, "unknown option '--%.*s'", (int)nlen, elem + 2);
  }
  if (k == ':') {
    if (is_long) return stop(g, "--%.*s needs a value", (int)nlen, elem + 2);
    return stop(g, "-%c needs a value", optopt);
  }
  const rd_option *o = li >= 0 ? g->byindex[li] : find_key(g, k);
  /* getopt_long takes any unambiguous abbreviation (--out for --output); the commands take
   * the whole name only, so that a new option never makes an old abbreviation ambiguous */
  if (is_long && li >= 0 && (strlen(o->name) != nlen || strncmp(o->name, elem + 2, nlen)))
    return stop(g, "unknown option '--%.*s'", (int)nlen, elem + 2);
  if (o == &help_option) {
    rd_help(stdout, g->cmd);
    g->status = RD_OK;
    return -1;
  }
  if (!o) return stop(g, "unknown option '-%c'", k); /* not reached: getopt knows the table */
  g->opt = o;
  g->arg = optarg;
  if (o->choices && check_choices(g, o, optarg) < 0) return -1;
  return o->key;
}

/* ---------------------------------------------------------------- help */

/* Writes the words of text[0..len) filled between column `indent` and WIDTH; the cursor is at
 * column *col. The first word goes right there, after a space when `sep`, or on a new line when
 * it does not fit. Ends without a newline. */
static void fill(FILE *f, const char *text, size_t len, int indent, int *col, int sep) {
  const char *p = text, *end = text + len;
  for (;;) {
    while (p < end && isspace((unsigned char)*p)) p++;
    const char *w = p;
    while (p < end && !isspace((unsigned char)*p)) p++;
    int wl = (int)(p - w);
    if (!wl) break;
    if (*col > indent && *col + sep + wl > WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      *col = indent;
    } else if (sep) {
      fputc(' ', f);
      (*col)++;
    }
    fwrite(w, 1, (size_t)wl, f);
    *col += wl;
    sep = 1;
  }
}

/* Prints paragraphs (see rd_command) at the given indent. */
static void paragraphs(FILE *f, const char *text, int indent) {
  for (const char *p = text; p && *p;) {
    const char *e = strstr(p, "\n\n");
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (*p == ' ') { /* preformatted */
      for (const char *l = p; l < p + len;) {
        const char *nl = memchr(l, '\n', (size_t)(p + len - l));
        size_t ll = nl ? (size_t)(nl - l) : (size_t)(p + len - l);
        fprintf(f, "%*s%.*s\n", indent, "", (int)ll, l);
        l += ll + 1;
      }
    } else {
      int col = indent;
      fprintf(f, "%*s", indent, "");
      fill(f, p, len, indent, &col, 0);
      fputc('\n', f);
    }
    if (!e) break;
    fputc('\n', f);
    p = e + 2;
  }
}

static int has_choice_help(const rd_choice *c) {
  for (; c && c->name; c++)
    if (!c->hidden && c->help) return 1;
  return 0;
}

static void help_option_line(FILE *f, const rd_option *o) {
  char left[128];
  int n;
  if (has_short(o))
    n = snprintf(left, sizeof left, "  -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
  else
    n = snprintf(left, sizeof left, "  --%s%s%s%s", o->name,
                 !o->arg ? "" : (o->flags & RD_OPT_OPTIONAL) ? "[=" : " ", o->arg ? o->arg : "",
                 o->arg && (o->flags & RD_OPT_OPTIONAL) ? "]" : "");
  if (n + 2 > HELP_COL) fprintf(f, "%s\n%*s", left, HELP_COL, "");
  else fprintf(f, "%-*s", HELP_COL, left);
  int col = HELP_COL;
  fill(f, o->help, strlen(o->help), HELP_COL, &col, 0);
  if (o->choices && !has_choice_help(o->choices)) {
    char text[1100];
    snprintf(text, sizeof text, "(%s)", rd_choices_text(o->choices));
    fill(f, text, strlen(text), HELP_COL, &col, 1);
  }
  fputc('\n', f);
  if (!has_choice_help(o->choices)) return;
  int w = 0;
  for (const rd_choice *c = o->choices; c->name; c++)
    if (!c->hidden && (int)strlen(c->name) > w) w = (int)strlen(c->name);
  /* "name  help" side by side; with long names each help goes below its name instead */
  int below = HELP_COL + 2 + w + 2 > WIDTH / 2 - 4;
  for (const rd_choice *c = o->choices; c->name; c++) {
    if (c->hidden) continue;
    int ind = below ? HELP_COL + 6 : HELP_COL + 2 + w + 2;
    if (below) fprintf(f, "%*s%s\n%*s", HELP_COL + 2, "", c->name, ind, "");
    else fprintf(f, "%*s%-*s  ", HELP_COL + 2, "", w, c->name);
    col = ind;
    if (c->help) fill(f, c->help, strlen(c->help), ind, &col, 0);
    fputc('\n', f);
  }
}

void rd_help(FILE *f, const rd_command *c) {
  const char *name = c->name ? c->name : "";
  for (const char *s = c->synopsis, *first = s; s;) {
    const char *nl = strchr(s, '\n');
    fprintf(f, "%s dlhook%s%s %.*s\n", s == first ? "usage:" : "      ", *name ? " " : "", name,
            (int)(nl ? nl - s : (long)strlen(s)), s);
    s = nl ? nl + 1 : NULL;
  }
  fputc('\n', f);
  paragraphs(f, c->about, 0);
  if (c->more) {
    fputc('\n', f);
    c->more(f, 0);
  }
  fputs("\noptions:\n", f);
  const rd_option *tables[2] = {c->options, c->common};
  for (int t = 0; t < 2; t++)
    for (const rd_option *o = tables[t]; o && o->name; o++) help_option_line(f, o);
  help_option_line(f, &help_option);
  if (c->notes) {
    fputc('\n', f);
    paragraphs(f, c->notes, 0);
  }
}

/* ---------------------------------------------------------------- manual pages */

/* Text for troff: backslashes and minus signs escaped, a leading control character neutralized,
 * newlines kept when `keep_lines` (preformatted), else turned into spaces. */
static void troff_text(FILE *f, const char *s, size_t len, int keep_lines) {
  int bol = 1;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (ch == '\n' && !keep_lines) ch = ' ';
    if (bol && (ch == '.' || ch == '\'')) fputs("\\&", f);
    if (bol && !keep_lines && ch == ' ') continue;
    bol = 0;
    if (ch == '\\') fputs("\\e", f);
    else if (ch == '-') fputs("\\-", f);
    else fputc(ch, f);
    if (ch == '\n') bol = 1;
  }
}

static void man_paragraphs(FILE *f, const char *text) {
  for (const char *p = text; p && *p;) {
    const char *e = strstr(p, "\n\n");
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (*p == ' ') {
      fputs(".PP\n.RS 4\n.nf\n", f);
      troff_text(f, p, len, 1);
      fputs("\n.fi\n.RE\n", f);
    } else {
      fputs(".PP\n", f);
      troff_text(f, p, len, 0);
      fputc('\n', f);
    }
    if (!e) break;
    p = e + 2;
  }
}

void rd_help_text(FILE *f, const char *text, int man) {
  if (man) man_paragraphs(f, text);
  else paragraphs(f, text, 0);
}

static void man_upper(FILE *f, const char *s) {
  for (; *s; s++) fputc(toupper((unsigned char)*s), f);
}

static void man_option(FILE *f, const rd_option *o) {
  fputs(".TP\n", f);
  if (has_short(o)) fprintf(f, "\\fB\\-%c\\fR, ", o->key);
  fputs("\\fB\\-\\-", f);
  troff_text(f, o->name, strlen(o->name), 0);
  fputs("\\fR", f);
  if (o->arg) {
    fputs((o->flags & RD_OPT_OPTIONAL) ? "[=\\fI" : " \\fI", f);
    troff_text(f, o->arg, strlen(o->arg), 0);
    fputs((o->flags & RD_OPT_OPTIONAL) ? "\\fR]" : "\\fR", f);
  }
  fputc('\n', f);
  troff_text(f, o->help, strlen(o->help), 0);
  fputc('\n', f);
  if (!o->choices) return;
  if (!has_choice_help(o->choices)) {
    fputs("Values: ", f);
    const char *t = rd_choices_text(o->choices);
    troff_text(f, t, strlen(t), 0);
    fputs(".\n", f);
    return;
  }
  fputs(".RS\n", f);
  for (const rd_choice *c = o->choices; c->name; c++) {
    if (c->hidden) continue;
    fputs(".TP\n\\fB", f);
    troff_text(f, c->name, strlen(c->name), 0);
    fputs("\\fR\n", f);
    if (c->help) troff_text(f, c->help, strlen(c->help), 0);
    fputc('\n', f);
  }
  fputs(".RE\n", f);
}

void rd_man(FILE *f, const rd_command *c, const rd_command *const *others) {
  const char *name = c->name;
  fputs(".\\\" Generated by `dlhook help --man` from the command's option table (make man).\n", f);
  fputs(".TH DLHOOK", f);
  if (name) { fputc('-', f); man_upper(f, name); }
  fputs(" 1 \"\" \"dlhook\" \"dlhook manual\"\n.nh\n.SH NAME\n", f);
  fprintf(f, "dlhook%s%s \\- ", name ? "\\-" : "", name ? name : "");
  troff_text(f, c->summary, strlen(c->summary), 0);
  fputs("\n.SH SYNOPSIS\n", f);
  for (const char *s = c->synopsis; s;) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    fprintf(f, "\\fBdlhook%s%s\\fR ", name ? " " : "", name ? name : "");
    troff_text(f, s, len, 0);
    fputs(nl ? "\n.br\n" : "\n", f);
    s = nl ? nl + 1 : NULL;
  }
  fputs(".SH DESCRIPTION\n", f);
  man_paragraphs(f, c->about);
  if (c->more) c->more(f, 1);
  fputs(".SH OPTIONS\n", f);
  const rd_option *tables[2] = {c->options, c->common};
  for (int t = 0; t < 2; t++)
    for (const rd_option *o = tables[t]; o && o->name; o++) man_option(f, o);
  man_option(f, &help_option);
  if (c->notes) {
    fputs(".SH NOTES\n", f);
    man_paragraphs(f, c->notes);
  }
  if (c->examples) {
    fputs(".SH EXAMPLES\n", f);
    man_paragraphs(f, c->examples);
  }
  fputs(".SH EXIT STATUS\n", f);
  man_paragraphs(f, c->exit_status ? c->exit_status
                                   : "0 on success; 1 when an input is missing, unreadable or "
                                     "damaged (what could be read is still used); 2 on a usage "
                                     "error.");
  fputs(".SH SEE ALSO\n", f);
  size_t n = 0, total = 0;
  for (const rd_command *const *o = others; o && *o; o++) total += *o != c && (*o)->name;
  if (name) total++;
  if (name) fprintf(f, ".BR dlhook (1)%s\n", ++n < total ? "," : "");
  for (const rd_command *const *o = others; o && *o; o++) {
    if (*o == c || !(*o)->name) continue;
    fprintf(f, ".BR dlhook\\-%s (1)%s\n", (*o)->name, ++n < total ? "," : "");
  }
}
