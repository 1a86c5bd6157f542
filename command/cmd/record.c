/* record.c — `dlhook record`: runs a command with libdlhook.so preloaded, then lists the traces
 * it wrote. The command's exit status is returned (128+N when it was killed by signal N). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rd.h"

static volatile sig_atomic_t child_pid;

/* Signals sent to dlhook itself (kill, a job manager) go on to the command. Signals from the
 * terminal already reach the whole foreground process group, the command included. */
static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (child_pid > 0 && si && si->si_code <= 0) kill((pid_t)child_pid, sig);
}

static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void help(void) {
  printf("usage: dlhook record [-o DIR] [--stacks MODE] [--sim] [--capture-range=MODE]\n"
         "                     [--delay S] [--duration S] [--lib PATH] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD with libdlhook.so preloaded (LD_PRELOAD) and writes its trace(s) to DIR.\n"
         "Returns CMD's exit status (128+N if it was killed by signal N), then lists on stderr\n"
         "the trace files written during the run, each with a short summary: calls, GPU\n"
         "records, dropped records, kernels and their GPU time.\n"
         "\n"
         "options:\n"
         "  -o, --output DIR  directory for the traces (default: .; created if missing)\n"
         "  --sim             run against the simulated CUDA libraries built next to dlhook\n"
         "                    (<dir of dlhook>/simcuda, prepended to LD_LIBRARY_PATH; its\n"
         "                    simcuda-audit.so, in LD_AUDIT, loads them in place of the\n"
         "                    program's own copies, e.g. a PyTorch wheel's)\n"
         "  --lib PATH        the libdlhook.so to preload (default: next to dlhook, or\n"
         "                    ../lib/libdlhook.so relative to it)\n"
         "  --stacks MODE     call stacks: none, native, python or mixed (DLHOOK_STACKS)\n"
         "  --capture-range=MODE\n"
         "                    record only part of the run (DLHOOK_CAPTURE_RANGE):\n"
         "                    cudaProfilerApi  between cudaProfilerStart and cudaProfilerStop\n"
         "                    nvtx:NAME[:N]    inside NVTX ranges named NAME (NAME* = prefix),\n"
         "                                     the first N only when given\n"
         "                    signal           from outside: dlhook ctl PID start|stop\n"
         "  --delay S         record nothing during the first S seconds (DLHOOK_DELAY)\n"
         "  --duration S      record nothing after DELAY + S seconds (DLHOOK_DURATION)\n");
}

static char *self_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  *slash = 0;
  return rd_xstrdup(buf[0] ? buf : "/");
}

static char *join(const char *a, const char *b) {
  char *s;
  if (asprintf(&s, "%s/%s", a, b) < 0) { rd_error("out of memory"); exit(RD_BAD_INPUT); }
  return s;
}

static int mkdirs(const char *dir) {
  char *d = rd_xstrdup(dir);
  for (char *p = d + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(d, 0777) < 0 && errno != EEXIST) { free(d); return -1; }
    *p = '/';
  }
  int rc = mkdir(d, 0777) < 0 && errno != EEXIST ? -1 : 0;
  free(d);
  if (rc == 0) {
    struct stat st;
    if (stat(dir, &st) < 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  }
  return rc;
}

/* A snapshot of the directory: names with inode and mtime. */
typedef struct entry {
  char *name;
  ino_t ino;
  struct timespec mtime;
} entry;

typedef struct snapshot {
  entry *v;
  size_t n;
} snapshot;

static int by_name(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static snapshot take_snapshot(const char *dir) {
  snapshot s = {0};
  size_t cap = 0;
  DIR *d = opendir(dir);
  if (!d) return s;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
      continue;
    char *path = join(dir, e->d_name);
    struct stat st;
    int ok = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    if (!ok) continue;
    if (s.n == cap) {
      cap = cap ? cap * 2 : 32;
      s.v = rd_xrealloc(s.v, cap * sizeof *s.v);
    }
    s.v[s.n++] = (entry){rd_xstrdup(e->d_name), st.st_ino, st.st_mtim};
  }
  closedir(d);
  if (s.n) qsort(s.v, s.n, sizeof *s.v, by_name);
  return s;
}

static void free_snapshot(snapshot *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i].name);
  free(s->v);
}

static int is_trace(const char *path) {
  FILE *f = dlh_open_input(path, NULL); /* a FIFO planted in the directory never blocks */
  if (!f) return 0;
  char m[8];
  int ok = fread(m, 1, 8, f) == 8 && memcmp(m, DLH_MAGIC, 8) == 0;
  fclose(f);
  return ok;
}

/* One line per trace: calls, dropped, and whether it is complete. */
static void summarize(const char *path) {
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  if (!r) {
    fprintf(stderr, "  %s: %s\n", path, err ? err : "unreadable");
    free(err);
    return;
  }
  uint64_t calls = 0, gpu = 0, dropped = 0, records = 0, kernels = 0, kernel_ns = 0;
  int trailer = 0, counters = 0, rc;
  const Dlh__Packet *p;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_API) {
      const Dlh__ApiBatch *b = p->api;
      calls += b->n_start_delta; /* a folded event stands for count calls */
      if (b->n_count == b->n_start_delta)
        for (size_t k = 0; k < b->n_count; k++) calls += b->count[k] > 1 ? b->count[k] - 1 : 0;
    }
    else if (p->data_case == DLH__PACKET__DATA_GPU) {
      gpu += p->gpu->n_kind;
      for (size_t k = 0; k < p->gpu->n_kind && k < p->gpu->n_dur; k++)
        if (p->gpu->kind[k] == 1) { kernels++; kernel_ns += p->gpu->dur[k]; }
    }
    else if (p->data_case == DLH__PACKET__DATA_TRAILER) {
      trailer = 1;
      dropped = p->trailer->dropped;
      records = p->trailer->records;
    } else if (p->data_case == DLH__PACKET__DATA_COUNTERS && !trailer) {
      counters = 1;
      dropped = p->counters->dropped;
      records = p->counters->records;
    }
  }
  (void)counters;
  (void)records;
  fprintf(stderr, "  %s: %" PRIu64 " calls, %" PRIu64 " GPU records, %" PRIu64 " dropped%s%s\n",
          path, calls, gpu, dropped, rc < 0 ? ", damaged: " : trailer ? "" : ", no trailer (incomplete)",
          rc < 0 ? dlh_reader_error(r) : "");
  fprintf(stderr, "      %" PRIu64 " kernel%s, %.3f ms GPU kernel time\n", kernels,
          kernels == 1 ? "" : "s", (double)kernel_ns / 1e6);
  dlh_reader_close(r);
}

int cmd_record(int argc, char **argv) {
  const char *out = ".", *lib = NULL, *stacks = NULL, *range = NULL, *delay = NULL,
             *duration = NULL;
  int sim = 0, i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) { i++; break; }
    if (a[0] != '-') break;
    if (rd_is_help(a)) { help(); return RD_OK; }
    if (!strcmp(a, "--sim")) { sim = 1; continue; }
    if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--lib")) {
      if (i + 1 >= argc) return rd_usage_error("record", "%s needs a value", a);
      if (!strcmp(a, "--lib")) lib = argv[++i];
      else out = argv[++i];
      continue;
    }
    if (!strcmp(a, "--stacks") || !strcmp(a, "--capture-range") || !strcmp(a, "--delay") ||
        !strcmp(a, "--duration")) {
      if (i + 1 >= argc) return rd_usage_error("record", "%s needs a value", a);
      const char **dst = a[2] == 's' ? &stacks : a[2] == 'c' ? &range : a[3] == 'e' ? &delay : &duration;
      *dst = argv[++i];
      continue;
    }
    if (!strncmp(a, "--stacks=", 9)) { stacks = a + 9; continue; }
    if (!strncmp(a, "--capture-range=", 16)) { range = a + 16; continue; }
    if (!strncmp(a, "--delay=", 8)) { delay = a + 8; continue; }
    if (!strncmp(a, "--duration=", 11)) { duration = a + 11; continue; }
    if (!strncmp(a, "--output=", 9)) { out = a + 9; continue; }
    if (!strncmp(a, "--lib=", 6)) { lib = a + 6; continue; }
    if (!strncmp(a, "-o", 2)) { out = a + 2; continue; }
    return rd_usage_error("record", "unknown option '%s'", a);
  }
  if (i >= argc) return rd_usage_error("record", "no command given");
  if (stacks && strcmp(stacks, "none") && strcmp(stacks, "native") && strcmp(stacks, "python") &&
      strcmp(stacks, "mixed"))
    return rd_usage_error("record", "--stacks: expected none, native, python or mixed");
  if (range && strcmp(range, "cudaProfilerApi") && strncmp(range, "nvtx:", 5) &&
      strcmp(range, "signal") && strcmp(range, "none"))
    return rd_usage_error("record", "--capture-range: expected cudaProfilerApi, nvtx:NAME[:N], "
                          "signal or none");
  const char *secs[2] = {delay, duration};
  for (int k = 0; k < 2; k++) {
    char *e;
    if (secs[k] && (!*secs[k] || strtod(secs[k], &e) < 0 || *e))
      return rd_usage_error("record", "--%s: expected seconds, e.g. 2 or 0.5", k ? "duration" : "delay");
  }
  if (!*out) return rd_usage_error("record", "empty output directory");
  char **cmd = argv + i;

  char *dir = self_dir();
  char *libpath = NULL;
  if (lib) {
    libpath = realpath(lib, NULL);
    if (!libpath) { rd_error("record: %s: %s", lib, strerror(errno)); free(dir); return RD_BAD_INPUT; }
  } else if (dir) {
    char *c1 = join(dir, "libdlhook.so"), *c2 = join(dir, "../lib/libdlhook.so");
    if (access(c1, R_OK) == 0) libpath = realpath(c1, NULL);
    else if (access(c2, R_OK) == 0) libpath = realpath(c2, NULL);
    free(c1);
    free(c2);
  }
  if (!libpath) {
    rd_error("record: cannot find libdlhook.so next to the dlhook binary (%s) or in ../lib; "
             "use --lib PATH", dir ? dir : "?");
    free(dir);
    return RD_BAD_INPUT;
  }
  if (mkdirs(out) < 0) {
    rd_error("record: cannot create output directory %s: %s", out, strerror(errno));
    free(dir); free(libpath);
    return RD_BAD_INPUT;
  }

  /* environment for the command */
  const char *old = getenv("LD_PRELOAD");
  char *preload;
  if (old && *old) {
    if (asprintf(&preload, "%s:%s", libpath, old) < 0) preload = NULL;
  } else {
    preload = rd_xstrdup(libpath);
  }
  size_t ol = strlen(out);
  char *outenv = rd_xmalloc(ol + 2);
  memcpy(outenv, out, ol + 1);
  if (out[ol - 1] != '/') strcat(outenv, "/");
  if (!preload || setenv("LD_PRELOAD", preload, 1) < 0 || setenv("DLHOOK_OUTPUT", outenv, 1) < 0) {
    rd_error("record: cannot set the environment");
    return RD_BAD_INPUT;
  }
  if (sim) {
    char *simdir = join(dir ? dir : ".", "simcuda"), *llp;
    const char *oldl = getenv("LD_LIBRARY_PATH");
    if (access(simdir, X_OK) != 0)
      rd_error("record: warning: %s does not exist (build the simulated CUDA stack)", simdir);
    if (oldl && *oldl) { if (asprintf(&llp, "%s:%s", simdir, oldl) < 0) llp = NULL; }
    else llp = rd_xstrdup(simdir);
    if (!llp || setenv("LD_LIBRARY_PATH", llp, 1) < 0) {
      rd_error("record: cannot set the environment");
      return RD_BAD_INPUT;
    }
    free(llp);
    /* the rtld-audit module that loads the stand-ins in place of a program's own CUDA
     * libraries (wheels' RPATH'ed copies), as tests/simcuda/run does */
    char *audit = join(simdir, "simcuda-audit.so"), *la = NULL;
    const char *olda = getenv("LD_AUDIT");
    const char *redirect = getenv("SIMCUDA_REDIRECT");
    if ((!redirect || strcmp(redirect, "0")) && access(audit, R_OK) == 0 &&
        !(olda && strstr(olda, audit))) {
      if (olda && *olda) { if (asprintf(&la, "%s:%s", audit, olda) < 0) la = NULL; }
      else la = rd_xstrdup(audit);
      if (!la || setenv("LD_AUDIT", la, 1) < 0) {
        rd_error("record: cannot set the environment");
        return RD_BAD_INPUT;
      }
    }
    free(la);
    free(audit);
    free(simdir);
  }

  const char *const envs[4][2] = {{"DLHOOK_STACKS", stacks}, {"DLHOOK_CAPTURE_RANGE", range},
                                  {"DLHOOK_DELAY", delay}, {"DLHOOK_DURATION", duration}};
  for (int k = 0; k < 4; k++)
    if (envs[k][1] && setenv(envs[k][0], envs[k][1], 1) < 0) {
      rd_error("record: cannot set the environment");
      return RD_BAD_INPUT;
    }

  snapshot before = take_snapshot(out);

  struct sigaction sa, saved[sizeof fwd_signals / sizeof *fwd_signals];
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigset_t block, oldmask;
  sigemptyset(&block);
  for (size_t k = 0; k < sizeof fwd_signals / sizeof *fwd_signals; k++)
    sigaddset(&block, fwd_signals[k]);
  sigprocmask(SIG_BLOCK, &block, &oldmask);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    rd_error("record: fork: %s", strerror(errno));
    return RD_BAD_INPUT;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "dlhook: record: cannot run %s: %s\n", cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  if (range && !strcmp(range, "signal"))
    fprintf(stderr, "dlhook: recording process %ld; start and stop it with: dlhook ctl %ld "
            "start|stop\n", (long)pid, (long)pid);
  for (size_t k = 0; k < sizeof fwd_signals / sizeof *fwd_signals; k++)
    sigaction(fwd_signals[k], &sa, &saved[k]);
  sigprocmask(SIG_SETMASK, &oldmask, NULL);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { status = 0; break; }
  }
  for (size_t k = 0; k < sizeof fwd_signals / sizeof *fwd_signals; k++)
    sigaction(fwd_signals[k], &saved[k], NULL);
  child_pid = 0;
  int rc = WIFEXITED(status) ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  /* traces written during the run */
  snapshot after = take_snapshot(out);
  size_t ntraces = 0;
  for (size_t k = 0; k < after.n; k++) {
    entry key = {after.v[k].name, 0, {0, 0}};
    entry *old_e = before.n ? bsearch(&key, before.v, before.n, sizeof *before.v, by_name) : NULL;
    if (old_e && old_e->ino == after.v[k].ino && old_e->mtime.tv_sec == after.v[k].mtime.tv_sec &&
        old_e->mtime.tv_nsec == after.v[k].mtime.tv_nsec)
      continue;
    char *path = join(out, after.v[k].name);
    if (is_trace(path)) {
      if (ntraces++ == 0) fprintf(stderr, "dlhook: traces written to %s:\n", out);
      summarize(path);
    }
    free(path);
  }
  if (ntraces == 0)
    fprintf(stderr, "dlhook: no trace was written to %s (did %s load libdlhook.so?)\n", out,
            cmd[0]);
  free_snapshot(&before);
  free_snapshot(&after);
  free(preload);
  free(outenv);
  free(libpath);
  free(dir);
  return rc;
}
