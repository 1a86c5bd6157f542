/* config.c — DLHOOK_* settings, read once in the constructor. A bad value gives one warning
 * and the default; nothing read from the environment reaches a shell. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlh_internal.h"
#include "dlh_signame.h"

dlh_config dlh_cfg;

/* One line "dlhook: <prefix><message>\n" on stderr with a single write (async-signal-tolerant,
 * no stdio). */
static void vmsg(const char *prefix, const char *fmt, va_list ap) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "dlhook: %s", prefix);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

void dlh_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("warning: ", fmt, ap);
  va_end(ap);
}

void dlh_info(const char *fmt, ...) {
  if (dlh_cfg.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vmsg("", fmt, ap);
  va_end(ap);
}

/* Parses an unsigned integer setting in [lo, hi]; warns and returns def when malformed. */
static uint64_t env_uint(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-' || v < lo || v > hi) {
    dlh_warn("ignoring %s='%.64s' (expected an integer in %llu..%llu); using %llu", name, s,
             (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)def);
    return def;
  }
  return v;
}

static int env_bool(const char *name, int def) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
    return 1;
  if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
    return 0;
  dlh_warn("ignoring %s='%.64s' (expected 0 or 1); using %d", name, s, def);
  return def;
}

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

/* Parses a duration in seconds ("2", "0.5"); warns and returns 0 when malformed. */
static uint64_t env_seconds_ns(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= 0) || v > 1e7) {
    dlh_warn("ignoring %s='%.64s' (expected seconds, e.g. 2 or 0.5)", name, s);
    return 0;
  }
  return (uint64_t)(v * 1e9);
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
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { /* the writer reports open errors */ }
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

void dlh_config_load(void) {
  memset(&dlh_cfg, 0, sizeof dlh_cfg);
  dlh_cfg.quiet = env_bool("DLHOOK_QUIET", 0);
  dlh_cfg.enabled = !env_bool("DLHOOK_DISABLE", 0);
  dlh_cfg.ring_bytes = env_uint("DLHOOK_RING_KB", 8192, 4, 1 << 20) * 1024;
  dlh_cfg.mem_limit = env_uint("DLHOOK_MEM_MB", 64, 1, 1 << 20) << 20;
  dlh_cfg.flush_ms = (unsigned)env_uint("DLHOOK_FLUSH_MS", 1000, 10, 3600 * 1000);
  dlh_cfg.exit_ms = (unsigned)env_uint("DLHOOK_EXIT_MS", 200, 0, 60 * 1000);
  dlh_cfg.symbolize = env_bool("DLHOOK_SYMBOLIZE", 1);
  dlh_cfg.zstd_level = (int)env_uint("DLHOOK_ZSTD_LEVEL", 3, 1, 19);
  dlh_cfg.signals = env_bool("DLHOOK_SIGNALS", 1);
  static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                          "PMIX_RANK", "SLURM_PROCID", NULL};
  static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
  static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                          "SLURM_NTASKS", NULL};
  dlh_cfg.stacks = -1;
  const char *st = getenv("DLHOOK_STACKS");
  if (st && *st) {
    static const char *const modes[] = {"none", "native", "python", "mixed"};
    for (int i = 0; i < 4; i++)
      if (!strcasecmp(st, modes[i])) dlh_cfg.stacks = i;
    if (!strcmp(st, "0")) dlh_cfg.stacks = 0;
    if (dlh_cfg.stacks < 0)
      dlh_warn("ignoring DLHOOK_STACKS='%.64s' (expected none, native, python or mixed)", st);
  }
  dlh_cfg.stack_depth = (unsigned)env_uint("DLHOOK_STACK_DEPTH", 64, 1, 256);
  const char *cr = getenv("DLHOOK_CAPTURE_RANGE");
  snprintf(dlh_cfg.capture_range, sizeof dlh_cfg.capture_range, "%s", cr ? cr : "");
  dlh_cfg.delay_ns = env_seconds_ns("DLHOOK_DELAY");
  dlh_cfg.duration_ns = env_seconds_ns("DLHOOK_DURATION");
  dlh_cfg.ctl_signal = SIGUSR2;
  const char *sg = getenv("DLHOOK_SIGNAL");
  if (sg && *sg) {
    int sig = dlh_parse_signal(sg);
    if (!dlh_ctl_signal_ok(sig))
      dlh_warn("ignoring DLHOOK_SIGNAL='%.64s' (expected a signal such as USR2 or RTMIN+3); "
               "using SIGUSR2", sg);
    else dlh_cfg.ctl_signal = sig;
    dlh_cfg.ctl_signal_set = 1;
  }
  const char *skew = getenv("DLHOOK_REALTIME_SKEW_NS");
  if (skew && *skew) dlh_cfg.realtime_skew_ns = strtoll(skew, NULL, 10);
  dlh_cfg.rank = env_int_any(rank_vars, -1);
  dlh_cfg.local_rank = env_int_any(local_vars, -1);
  dlh_cfg.world_size = env_int_any(size_vars, -1);
  const char *o = getenv("DLHOOK_OUTPUT");
  char *copy = strdup(o ? o : ""); /* kept for the life of the process */
  output_setting = copy ? copy : "";
  output_path();
}

/* In a forked child: the parent's settings stay (the program may have cleared its environment
 * since start-up); a rank the program set for the child is taken; the trace gets the child's
 * name. */
void dlh_config_after_fork(void) {
  static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                          "PMIX_RANK", "SLURM_PROCID", NULL};
  static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
  static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                          "SLURM_NTASKS", NULL};
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
