/* replay.c — runs the trace reader and every exporter of `dlhook` over a corpus of real traces
 * and N deterministic mutations of them (mutate.h), each command in a forked child that runs the
 * dlhook command's own main() (command/main.c, linked in as dlh_cmd_main) with a time limit.
 * Checks: no crash, no hang, exit 0 or 1, exit 1 comes with a message on stderr, the unmutated
 * corpus reads with exit 0, and every API/GPU event of the undamaged prefix of a mutant is still
 * in `dlhook dump` of the mutant (everything before the damage is read; checked on every
 * second mutant).
 *   replay [-n N] [-s FIRST] [-t SECONDS] [-w WORKDIR] CORPUS.dlh...
 * Mutation i (FIRST <= i < FIRST + N) damages corpus file i % files with kind i / files % kinds
 * and a seed from i: two processes with -s 0 -n 5000 and -s 5000 -n 5000 share 10,000 inputs.
 * Prints a summary per mutation kind; exit 0 when every check held, 1 otherwise. A failing input
 * is kept as WORKDIR/fail-<i>.dlh. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mutate.h"

int dlh_cmd_main(int argc, char **argv);

static const char *workdir = ".";
static unsigned timeout_s = 20;

typedef struct { uint8_t *p; size_t n; const char *name; } blob;

static int read_file(const char *path, blob *b) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16;
  b->p = malloc(cap);
  b->n = 0;
  size_t k;
  while (b->p && (k = fread(b->p + b->n, 1, cap - b->n, f)) > 0) {
    b->n += k;
    if (b->n == cap) b->p = realloc(b->p, cap *= 2);
  }
  fclose(f);
  b->name = path;
  return b->p ? 0 : -1;
}

static int write_file(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) { close(fd); return -1; }
    p += k;
    n -= (size_t)k;
  }
  return close(fd);
}

enum { R_OK0 = 0, R_OK1 = 1, R_BADRC, R_NOMSG, R_CRASH, R_HANG };
static const char *const rnames[] = {"exit 0", "exit 1", "bad exit code", "exit 1 without message",
                                     "crash", "hang"};

/* Runs `dlhook ARGV...` in a child; stdout to out (or /dev/null). Returns R_*. */
static int run(char **argv, const char *out, int *sig) {
  char err[4096];
  snprintf(err, sizeof err, "%s/stderr", workdir);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(2); }
  if (pid == 0) {
    int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) _exit(99);
    dup2(o, 1);
    dup2(e, 2);
    close(o);
    close(e);
    alarm(timeout_s);
    int argc = 0;
    while (argv[argc]) argc++;
    exit(dlh_cmd_main(argc, argv));
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  *sig = 0;
  if (WIFSIGNALED(st)) {
    *sig = WTERMSIG(st);
    return WTERMSIG(st) == SIGALRM ? R_HANG : R_CRASH;
  }
  int rc = WEXITSTATUS(st);
  if (rc == 0) return R_OK0;
  if (rc != 1) return R_BADRC;
  struct stat sb;
  return stat(err, &sb) == 0 && sb.st_size > 0 ? R_OK1 : R_NOMSG;
}

/* The event lines ("type":"api" and GPU records) of a dump output, sorted. */
typedef struct { char **l; size_t n; char *buf; } lines;
static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void event_lines(const char *path, lines *L) {
  blob b = {0};
  L->n = 0;
  L->l = NULL;
  L->buf = NULL;
  if (read_file(path, &b) != 0) return;
  b.p = realloc(b.p, b.n + 1);
  b.p[b.n] = 0;
  L->buf = (char *)b.p;
  size_t cap = 0;
  for (char *s = L->buf, *nl; *s; s = nl + 1) {
    nl = strchr(s, '\n');
    if (!nl) nl = s + strlen(s) - 1;
    else *nl = 0;
    if (strncmp(s, "{\"type\":\"api\"", 13) && strncmp(s, "{\"type\":\"kernel\"", 16) &&
        strncmp(s, "{\"type\":\"memcpy\"", 16) && strncmp(s, "{\"type\":\"memset\"", 16))
      continue;
    if (L->n == cap) L->l = realloc(L->l, (cap = cap ? cap * 2 : 1024) * sizeof *L->l);
    L->l[L->n++] = s;
  }
  if (L->n) qsort(L->l, L->n, sizeof *L->l, cmpstr);
}
/* Number of lines of A missing from B (multisets, both sorted). */
static size_t missing(const lines *A, const lines *B) {
  size_t i = 0, j = 0, miss = 0;
  while (i < A->n) {
    int c = j < B->n ? strcmp(A->l[i], B->l[j]) : -1;
    if (c == 0) { i++; j++; }
    else if (c < 0) { miss++; i++; }
    else j++;
  }
  return miss;
}
static void free_lines(lines *L) { free(L->l); free(L->buf); }

static const char *formats[] = {"kineto", "perfetto", "tensorboard", "folded", "svg",
                                "speedscope", "pprof", "columns"};
#define NFMT (sizeof formats / sizeof *formats)
static int fmt_ok[NFMT];

int main(int argc, char **argv) {
  long n = 10000, first = 0;
  int a = 1;
  for (; a < argc && argv[a][0] == '-'; a++) {
    if (!strcmp(argv[a], "-n") && a + 1 < argc) n = atol(argv[++a]);
    else if (!strcmp(argv[a], "-s") && a + 1 < argc) first = atol(argv[++a]);
    else if (!strcmp(argv[a], "-t") && a + 1 < argc) timeout_s = (unsigned)atoi(argv[++a]);
    else if (!strcmp(argv[a], "-w") && a + 1 < argc) workdir = argv[++a];
    else { fprintf(stderr, "usage: replay [-n N] [-s FIRST] [-t SECONDS] [-w WORKDIR] CORPUS...\n"); return 2; }
  }
  int ncorp = argc - a;
  if (ncorp <= 0) { fprintf(stderr, "replay: no corpus files\n"); return 2; }
  blob *corp = calloc((size_t)ncorp, sizeof *corp);
  for (int i = 0; i < ncorp; i++)
    if (read_file(argv[a + i], &corp[i]) != 0) { perror(argv[a + i]); return 2; }
  char in[4096], pre[4096], dout[4096], pout[4096], xout[4096];
  snprintf(in, sizeof in, "%s/input.dlh", workdir);
  snprintf(pre, sizeof pre, "%s/prefix.dlh", workdir);
  snprintf(dout, sizeof dout, "%s/dump.jsonl", workdir);
  snprintf(pout, sizeof pout, "%s/prefix.jsonl", workdir);
  snprintf(xout, sizeof xout, "%s/export.out", workdir);
  int sig, bad = 0;
  long runs = 0, counts[FZ_KINDS][6] = {{0}}, prefix_checked = 0, prefix_events = 0;

  /* The unmutated corpus: everything reads, every exporter works. */
  for (int c = 0; c < ncorp; c++) {
    char *dump[] = {"dlhook", "dump", (char *)corp[c].name, NULL};
    char *stats[] = {"dlhook", "stats", "--json", (char *)corp[c].name, NULL};
    int r1 = run(dump, NULL, &sig), r2 = run(stats, NULL, &sig);
    if (r1 != R_OK0 || r2 != R_OK0) {
      fprintf(stderr, "replay: corpus %s: dump %s, stats %s\n", corp[c].name, rnames[r1], rnames[r2]);
      bad = 1;
    }
    for (size_t f = 0; f < NFMT; f++) {
      char xo[4200];
      snprintf(xo, sizeof xo, "%s-%s", xout, formats[f]); /* a directory for some formats */
      char *ex[] = {"dlhook", "export", "--format", (char *)formats[f], "-o", xo, (char *)corp[c].name, NULL};
      int r = run(ex, NULL, &sig);
      if (c == 0) fmt_ok[f] = r == R_OK0;
      else if (fmt_ok[f] && r != R_OK0) {
        fprintf(stderr, "replay: corpus %s: export %s: %s\n", corp[c].name, formats[f], rnames[r]);
        bad = 1;
      }
      if (r == R_CRASH || r == R_HANG) bad = 1;
      runs++;
    }
    runs += 2;
  }
  printf("corpus: %d traces; exporters run:", ncorp);
  for (size_t f = 0; f < NFMT; f++) if (fmt_ok[f]) printf(" %s", formats[f]);
  printf("\n");

  for (long i = first; i < first + n; i++) {
    int c = (int)(i % ncorp);
    unsigned kind = (unsigned)((i / ncorp) % FZ_KINDS);
    size_t mlen, clean;
    uint8_t *m = fz_damage(corp[c].p, corp[c].n, kind, (uint64_t)i * 0x9e3779b97f4a7c15ull + 1, &mlen, &clean);
    if (!m || write_file(in, m, mlen) != 0) { fprintf(stderr, "replay: cannot write %s\n", in); return 2; }
    int worst = R_OK0, r;
    const char *what = "";
    char *dump[] = {"dlhook", "dump", in, NULL};
    char *stats_j[] = {"dlhook", "stats", "--json", in, NULL};
    char *stats_t[] = {"dlhook", "stats", in, NULL};
    size_t f = (size_t)i % NFMT;
    while (!fmt_ok[f] && f < NFMT) f++;
    char xo[4200];
    snprintf(xo, sizeof xo, "%s-%s", xout, f < NFMT ? formats[f] : "none");
    /* the flame graphs take turns at the weights: GPU time, on-CPU and wait samples */
    static const char *const weights[] = {"gpu", "samples", "wait"};
    char *ex[] = {"dlhook", "export", "--format", f < NFMT ? (char *)formats[f] : "folded",
                  "--weight", (char *)weights[(i / NFMT) % 3], "-o", xo, in, NULL};
    struct { char **argv; const char *out; const char *name; } cmds[] = {
        {dump, dout, "dump"}, {stats_j, NULL, "stats --json"}, {stats_t, NULL, "stats"},
        {ex, NULL, f < NFMT ? formats[f] : NULL}};
    for (size_t k = 0; k < 4; k++) {
      if (!cmds[k].name || (k == 2 && i % 4)) continue; /* the table: every 4th input */
      r = run(cmds[k].argv, cmds[k].out, &sig);
      runs++;
      if (r > R_OK1 || (k == 0 && r > worst)) { if (r > worst) worst = r; what = cmds[k].name; }
      if (r > R_OK1) fprintf(stderr, "replay: input %ld (%s of %s): %s: %s%s\n", i, fz_kind_names[kind],
                             corp[c].name, cmds[k].name, rnames[r], sig ? " (signal)" : "");
      if (k == 0) counts[kind][r]++;
    }
    (void)what;
    if (worst > R_OK1) {
      char keep[4200];
      snprintf(keep, sizeof keep, "%s/fail-%ld.dlh", workdir, i);
      write_file(keep, m, mlen);
      bad = 1;
    } else if (clean > FZ_HEADER && i % 2 == 0) {
      /* everything before the damage is still read */
      write_file(pre, corp[c].p, clean);
      char *pd[] = {"dlhook", "dump", pre, NULL};
      r = run(pd, pout, &sig);
      if (r <= R_OK1) {
        lines A, B;
        event_lines(pout, &A);
        event_lines(dout, &B);
        size_t miss = missing(&A, &B);
        prefix_checked++;
        prefix_events += (long)A.n;
        if (miss) {
          fprintf(stderr, "replay: input %ld (%s of %s): %zu of %zu events before the damage "
                  "(offset %zu) not read\n", i, fz_kind_names[kind], corp[c].name, miss, A.n, clean);
          char keep[4200];
          snprintf(keep, sizeof keep, "%s/fail-%ld.dlh", workdir, i);
          write_file(keep, m, mlen);
          bad = 1;
        }
        free_lines(&A);
        free_lines(&B);
      }
    }
    free(m);
  }
  printf("%ld mutated traces, %ld dlhook runs; dump per mutation kind (exit 0 / exit 1 with a message / failures):\n", n, runs);
  for (unsigned k = 0; k < FZ_KINDS; k++)
    printf("  %-11s %5ld / %5ld / %ld\n", fz_kind_names[k], counts[k][R_OK0], counts[k][R_OK1],
           counts[k][R_BADRC] + counts[k][R_NOMSG] + counts[k][R_CRASH] + counts[k][R_HANG]);
  printf("prefix check: %ld mutants, %ld events before the damage, all read: %s\n", prefix_checked,
         prefix_events, bad ? "NO" : "yes");
  return bad;
}
