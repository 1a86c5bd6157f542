/* config.c — DLHOOK_* settings, read once in the constructor through the one table of them
 * (dlh_settings.def). A bad value gives one warning and the default; nothing read from the
 * environment reaches a shell. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlh_internal.h"
#include "dlh_signame.h"

dlh_config dlh_cfg;

/* ---------------------------------------------------------------- the table */

enum { K_BOOL, K_UINT, K_SECONDS, K_CHOICE, K_SIGNAL, K_STRING, K_INT };
enum {
#define DLH_SETTING(name, kind, def, lo, hi, choices, ddef, doc) S_##name,
#include "dlh_settings.def"
#undef DLH_SETTING
  S_COUNT
};
static const struct setting {
  const char *name, *choices;
  int kind;
  long long def;
  unsigned long long lo, hi;
} table[S_COUNT] = {
#define DLH_SETTING(name, kind, def, lo, hi, choices, ddef, doc) \
  [S_##name] = {#name, choices, K_##kind, def, lo, hi},
#include "dlh_settings.def"
#undef DLH_SETTING
};
/* The values read: numbers (SECONDS in ns, CHOICE an index, BOOL 0/1), or the text. */
static struct { long long v; const char *s; } val[S_COUNT];

static long long bad(const struct setting *d, const char *s, const char *expected) {
  dlh_warn("ignoring %s='%.64s' (expected %s)", d->name, s, expected);
  return d->def;
}

/* One setting by the rules of its kind; a malformed value warns once and gives the default. */
static long long parse(const struct setting *d, const char *s) {
  char *end, want[96];
  errno = 0;
  switch (d->kind) {
  case K_BOOL:
    if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
      return 1;
    if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
      return 0;
    snprintf(want, sizeof want, "0 or 1; using %lld", d->def);
    return bad(d, s, want);
  case K_UINT: {
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-' || s[0] == '+' || v < d->lo || v > d->hi) {
      snprintf(want, sizeof want, "an integer in %llu..%llu; using %lld", d->lo, d->hi, d->def);
      return bad(d, s, want);
    }
    return (long long)v;
  }
  case K_SECONDS: {
    double v = strtod(s, &end);
    if (errno || *end || !(v >= 0) || v > 1e7) return bad(d, s, "seconds, e.g. 2 or 0.5");
    return (long long)(v * 1e9);
  }
  case K_CHOICE: {
    if (!strcmp(s, "0")) return 0;
    const char *c = d->choices;
    for (long long i = 0; *c; i++) {
      size_t n = strcspn(c, "|");
      if (strlen(s) == n && !strncasecmp(s, c, n)) return i;
      c += n + (c[n] == '|');
    }
    snprintf(want, sizeof want, "one of %s", d->choices);
    return bad(d, s, want);
  }
  case K_SIGNAL: {
    int sig = dlh_parse_signal(s);
    if (!dlh_ctl_signal_ok(sig))
      return bad(d, s, "a signal such as USR2 or RTMIN+3; using SIGUSR2");
    return sig;
  }
  case K_INT: {
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return bad(d, s, "an integer");
    return v;
  }
  }
  return d->def;
}

/* Reads every setting of the table from the environment, once. */
static void read_settings(void) {
  for (int i = 0; i < S_COUNT; i++) {
    const struct setting *d = &table[i];
    const char *s = getenv(d->name);
    val[i].v = d->def;
    val[i].s = "";
    if (!s || !*s) continue;
    if (d->kind == K_STRING) {
      char *copy = strdup(s); /* kept for the life of the process */
      val[i].s = copy ? copy : "";
    } else {
      val[i].v = parse(d, s);
    }
  }
}

/* Whether a setting was given (non-empty) in the environment at start-up. */
static int given(int i) { const char *s = getenv(table[i].name); return s && *s; }

static int env_int_any(const char *const *names, int def) {
  for (; *names; names++) {
    const char *s = getenv(*names);
    if (s && *s) {
      char *end;
      long v = strtol(s, &end, 10);
      if (!*end && v >= 0 && v < INT_MAX) return (int)v;
    }
  }
  return def;
}

/* Appends src to dst (bounded); returns 0 when it did not fit. */
static int append(char *dst, size_t cap, size_t *len, const char *src) {
  size_t n = strlen(src);
  if (*len + n + 1 > cap) return 0;
  memcpy(dst + *len, src, n + 1);
  *len += n;
  return 1;
}

/* The host name as it may appear in a file name: a '/' in it (anyone may set the UTS name in a
 * namespace of their own) would put the trace outside DLHOOK_OUTPUT, so it becomes '_'; an
 * empty name or "."/".." becomes "localhost". */
static void host_name(char *host, size_t cap) {
  snprintf(host, cap, "localhost");
  char h[256] = "";
  if (gethostname(h, sizeof h - 1) != 0) return;
  h[sizeof h - 1] = 0;
  for (char *c = h; *c; c++)
    if (*c == '/') *c = '_';
  if (!h[0] || !strcmp(h, ".") || !strcmp(h, "..")) return;
  snprintf(host, cap, "%s", h);
}

/* Expands %p (pid), %h (host), %r (rank, or "norank"), %% in a file name pattern. */
static int expand(const char *pat, char *out, size_t cap) {
  char host[256], num[32];
  host_name(host, sizeof host);
  size_t len = 0;
  out[0] = 0;
  for (const char *p = pat; *p; p++) {
    char one[2] = {*p, 0};
    const char *piece = one;
    if (*p == '%' && p[1]) {
      p++;
      if (*p == 'p') { snprintf(num, sizeof num, "%d", (int)getpid()); piece = num; }
      else if (*p == 'h') piece = host;
      else if (*p == 'r') {
        if (dlh_cfg.rank >= 0) { snprintf(num, sizeof num, "%d", dlh_cfg.rank); piece = num; }
        else piece = "norank";
      } else if (*p == '%') piece = "%";
      else { one[0] = '%'; if (!append(out, cap, &len, one)) return 0; one[0] = *p; }
    }
    if (!append(out, cap, &len, piece)) return 0;
  }
  return 1;
}

/* DLHOOK_OUTPUT as the process started with it: a forked child names its trace from it even
 * when the program changed its environment (clearenv, unsetenv) in between. */
static const char *output_setting = "";

/* Computes the output path from DLHOOK_OUTPUT (file pattern, or directory). */
static void output_path(void) {
  const char *o = output_setting;
  char host[256], base[512];
  host_name(host, sizeof host);
  if (dlh_cfg.rank >= 0)
    snprintf(base, sizeof base, "%s-r%d-%d.dlh", host, dlh_cfg.rank, (int)getpid());
  else
    snprintf(base, sizeof base, "%s-%d.dlh", host, (int)getpid());
  struct stat st;
  int is_dir = 0;
  if (!o || !*o) o = ".";
  size_t ol = strlen(o);
  if (o[ol - 1] == '/' || (stat(o, &st) == 0 && S_ISDIR(st.st_mode))) is_dir = 1;
  if (is_dir) {
    char dir[4096];
    if (!expand(o, dir, sizeof dir)) goto toolong;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dir[--dl] = 0;
    if (dlh_output_mkdir(dir, 0755) != 0 && errno != EEXIST) { /* the writer reports open errors */ }
    if ((size_t)snprintf(dlh_cfg.output, sizeof dlh_cfg.output, "%s/%s", dir, base) >=
        sizeof dlh_cfg.output)
      goto toolong;
  } else if (!expand(o, dlh_cfg.output, sizeof dlh_cfg.output)) {
    goto toolong;
  }
  return;
toolong:
  dlh_warn("DLHOOK_OUTPUT is too long; writing %s in the current directory", base);
  snprintf(dlh_cfg.output, sizeof dlh_cfg.output, "%s", base);
}

/* DLHOOK_OUTPUT=/dev/null records nothing (and says so once); a device, FIFO or socket, or a
 * name in a device directory (/dev/full, /dev/stdout), is refused with one warning: a trace is
 * a file of its own, never a stream into something else (the program's stdout, a FIFO that may
 * have no reader). Either way the program runs untraced. */
static void refuse_special_output(void) {
  const char *what;
  if (!dlh_cfg.enabled) return;
  int kind = dlh_output_kind(dlh_cfg.output, &what);
  if (kind == DLH_OUTPUT_NULL)
    dlh_info("DLHOOK_OUTPUT is /dev/null: nothing is recorded");
  else if (kind == DLH_OUTPUT_SPECIAL)
    dlh_warn("cannot record to %s (%s); the program runs untraced", dlh_cfg.output, what);
  if (kind != DLH_OUTPUT_FILE) dlh_cfg.enabled = 0;
}

/* Under a finite RLIMIT_AS (ulimit -v) every byte of address space dlhook reserves is one the
 * program cannot have: the stack arena and tables (137 MiB), a ring per thread (8 MiB) and the
 * stacks of its two threads (8 MiB each) made the program's own allocations fail where it ran
 * untraced (libcudart failed to load). There the memory budget, unless DLHOOK_MEM_MB is given,
 * is a sixteenth of the limit (at least 4 MiB, at most the default) and rings are at most an
 * eighth of it (dlhook says so once); the stack arena and the threads' stacks shrink too
 * (stacks.c, writer.c). */
static void fit_address_space(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  dlh_cfg.as_limit = (uint64_t)rl.rlim_cur;
  uint64_t share = dlh_cfg.as_limit / 16, before = dlh_cfg.mem_limit;
  if (share < (4u << 20)) share = 4u << 20;
  if (!given(S_DLHOOK_MEM_MB) && dlh_cfg.mem_limit > share) dlh_cfg.mem_limit = share;
  if (!given(S_DLHOOK_RING_KB) && dlh_cfg.ring_bytes > dlh_cfg.mem_limit / 8)
    dlh_cfg.ring_bytes = dlh_cfg.mem_limit / 8;
  if (dlh_cfg.mem_limit < before)
    dlh_info("RLIMIT_AS is %llu MiB: dlhook keeps to a %llu MiB budget (DLHOOK_MEM_MB) and "
             "reserves less address space", (unsigned long long)(dlh_cfg.as_limit >> 20),
             (unsigned long long)(dlh_cfg.mem_limit >> 20));
}

static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        "PMIX_RANK", "SLURM_PROCID", NULL};
static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                         "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS", NULL};

void dlh_config_load(void) {
  memset(&dlh_cfg, 0, sizeof dlh_cfg);
  /* DLHOOK_QUIET first: it decides whether the others' messages print */
  read_settings();
  dlh_cfg.quiet = (int)val[S_DLHOOK_QUIET].v;
  dlh_msg_quiet = dlh_cfg.quiet;
  dlh_cfg.enabled = !val[S_DLHOOK_DISABLE].v;
  dlh_cfg.ring_bytes = (uint64_t)val[S_DLHOOK_RING_KB].v * 1024;
  dlh_cfg.ring_wait_ns = (uint64_t)val[S_DLHOOK_RING_WAIT_MS].v * 1000000u;
  dlh_cfg.mem_limit = (uint64_t)val[S_DLHOOK_MEM_MB].v << 20;
  fit_address_space(); /* after DLHOOK_RING_KB and DLHOOK_MEM_MB: it may lower both */
  dlh_cfg.fold = (int)val[S_DLHOOK_FOLD].v;
  dlh_cfg.flush_ms = (unsigned)val[S_DLHOOK_FLUSH_MS].v;
  dlh_cfg.exit_ms = (unsigned)val[S_DLHOOK_EXIT_MS].v;
  dlh_cfg.symbolize = (int)val[S_DLHOOK_SYMBOLIZE].v;
  dlh_cfg.zstd_level = (int)val[S_DLHOOK_ZSTD_LEVEL].v;
  dlh_cfg.signals = (int)val[S_DLHOOK_SIGNALS].v;
  dlh_cfg.cupti = (int)val[S_DLHOOK_CUPTI].v;
  dlh_cfg.cupti_noise = (int)val[S_DLHOOK_CUPTI_NOISE].v;
  dlh_cfg.nvtx = (int)val[S_DLHOOK_NVTX].v;
  snprintf(dlh_cfg.nccl_events, sizeof dlh_cfg.nccl_events, "%s", val[S_DLHOOK_NCCL_EVENTS].s);
  dlh_cfg.follow_exec = (int)val[S_DLHOOK_FOLLOW_EXEC].v;
  dlh_cfg.stacks = (int)val[S_DLHOOK_STACKS].v;
  dlh_cfg.stack_depth = (unsigned)val[S_DLHOOK_STACK_DEPTH].v;
  dlh_cfg.sample_hz = (unsigned)val[S_DLHOOK_SAMPLE_HZ].v;
  dlh_cfg.sample_budget = (unsigned)val[S_DLHOOK_SAMPLE_BUDGET].v;
  dlh_cfg.sample = (int)val[S_DLHOOK_SAMPLE].v;
  snprintf(dlh_cfg.capture_range, sizeof dlh_cfg.capture_range, "%s",
           val[S_DLHOOK_CAPTURE_RANGE].s);
  dlh_cfg.delay_ns = (uint64_t)val[S_DLHOOK_DELAY].v;
  dlh_cfg.duration_ns = (uint64_t)val[S_DLHOOK_DURATION].v;
  dlh_cfg.ctl_signal = (int)val[S_DLHOOK_SIGNAL].v;
  dlh_cfg.ctl_signal_set = given(S_DLHOOK_SIGNAL);
  dlh_cfg.realtime_skew_ns = val[S_DLHOOK_REALTIME_SKEW_NS].v;
  dlh_cfg.flight = (int)val[S_DLHOOK_MODE].v == 1;
  dlh_cfg.flight_ns = (uint64_t)val[S_DLHOOK_FLIGHT_S].v;
  dlh_cfg.hang_ns = (uint64_t)val[S_DLHOOK_HANG_S].v;
  dlh_cfg.flight_disk = (uint64_t)val[S_DLHOOK_FLIGHT_DISK_MB].v << 20;
  dlh_cfg.rank = env_int_any(rank_vars, -1);
  dlh_cfg.local_rank = env_int_any(local_vars, -1);
  dlh_cfg.world_size = env_int_any(size_vars, -1);
  output_setting = val[S_DLHOOK_OUTPUT].s;
  output_path();
  refuse_special_output();
}

/* In a forked child: the parent's settings stay (the program may have cleared its environment
 * since start-up); a rank the program set for the child is taken; the trace gets the child's
 * name. */
void dlh_config_after_fork(void) {
  dlh_cfg.rank = env_int_any(rank_vars, dlh_cfg.rank);
  dlh_cfg.local_rank = env_int_any(local_vars, dlh_cfg.local_rank);
  dlh_cfg.world_size = env_int_any(size_vars, dlh_cfg.world_size);
  output_path();
}

/* dlhook attach (attach.c): the trace goes where DLHOOK_OUTPUT=o would have put it. */
void dlh_config_set_output(const char *o) {
  char *copy = strdup(o ? o : "");
  if (copy) output_setting = copy; /* kept: a forked child names its trace from it */
  output_path();
}
