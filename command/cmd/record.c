/* record.c — `dlhook record`: runs a command with libdlhook.so preloaded, then lists the traces
 * it wrote. The command's exit status is returned (128+N when it was killed by signal N). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rd.h"
#include "rd_opts.h"

static volatile sig_atomic_t child_pid;

/* Signals sent to dlhook itself (kill, a job manager) go on to the command. Signals from the
 * terminal already reach the whole foreground process group, the command included. */
static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (child_pid > 0 && si && si->si_code <= 0) kill((pid_t)child_pid, sig);
}

static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* DLHOOK_CAPTURE_RANGE's forms (preload/capture.c reads them). */
static const rd_choice capture_ranges[] = {
    {"cudaProfilerApi", "between cudaProfilerStart and cudaProfilerStop", 0},
    {"nvtx:NAME[:N]", "inside NVTX ranges named NAME (NAME* = prefix), the first N only when given", 0},
    {"signal", "from outside: dlhook ctl PID start|stop", 0},
    {"none", "the whole run (the default)", 0},
    {NULL, NULL, 0}};

enum { OPT_SIM = RD_KEY(0), OPT_LIB, OPT_STACKS, OPT_RANGE, OPT_DELAY, OPT_DURATION, OPT_TORCH_MEM,
       OPT_SAMPLE_HZ, OPT_SAMPLE, OPT_FLIGHT, OPT_HANG };

/* DLHOOK_SAMPLE's values (preload/sample.c reads them). */
static const rd_choice sample_modes[] = {
    {"cuda", "from the process's first CUDA call; forked children of a sampled process too "
             "(the default)", 0},
    {"always", "from start-up, also in processes that never call CUDA (a launcher, a shell)", 0},
    {"off", "no host samples", 0},
    {NULL, NULL, 0}};
static const rd_option options[] = {
    {"output", 'o', "DIR", "directory for the traces (default: .; created if missing)", NULL, 0},
    {"sim", OPT_SIM, NULL,
     "run against the simulated CUDA libraries built next to dlhook (<dir of dlhook>/simcuda, "
     "prepended to LD_LIBRARY_PATH; its simcuda-audit.so, in LD_AUDIT, loads them in place of "
     "the program's own copies, e.g. a PyTorch wheel's)", NULL, 0},
    {"lib", OPT_LIB, "PATH",
     "the libdlhook.so to preload (default: next to dlhook, or ../lib/libdlhook.so relative to "
     "it)", NULL, 0},
    {"stacks", OPT_STACKS, "MODE", "call stacks (DLHOOK_STACKS):", rd_stack_modes, 0},
    {"capture-range", OPT_RANGE, "MODE", "record only part of the run (DLHOOK_CAPTURE_RANGE):",
     capture_ranges, 0},
    {"sample-hz", OPT_SAMPLE_HZ, "N",
     "host samples per second of each thread (DLHOOK_SAMPLE_HZ; default 200, 0 = off): on-CPU "
     "samples with the mixed stack at N per second of the thread's CPU time, wait samples with "
     "its Python frames and the system call it waits in at N per second of wall time", NULL, 0},
    {"sample", OPT_SAMPLE, "WHEN", "when host sampling starts (DLHOOK_SAMPLE):", sample_modes, 0},
    {"delay", OPT_DELAY, "S", "record nothing during the first S seconds (DLHOOK_DELAY)", NULL, 0},
    {"duration", OPT_DURATION, "S", "record nothing after DELAY + S seconds (DLHOOK_DURATION)", NULL, 0},
    {"flight-recorder", OPT_FLIGHT, "SECONDS",
     "flight recorder (DLHOOK_MODE=flight): keep the last SECONDS (default 120; "
     "DLHOOK_FLIGHT_S) of the trace in memory, within the memory budget (DLHOOK_MEM_MB), and write it "
     "only when the process dies of a signal, gets SIGTERM or SIGINT, exits with a non-zero "
     "status, gets cudaErrorMemoryAllocation, has a call in flight longer than --hang "
     "seconds, or is told to (`dlhook ctl PID dump`); any of these in one process makes every "
     "process recording into the same directory dump too. The dump is "
     "<trace name>.flight.dlh; `dlhook hang DIR` reads a job's dumps.", NULL, RD_OPT_OPTIONAL},
    {"hang", OPT_HANG, "S", "with --flight-recorder: a call in flight longer than S seconds "
     "dumps the job (DLHOOK_HANG_S, default 300; 0: no hang watchdog)", NULL, 0},
    {"torch-memory", OPT_TORCH_MEM, NULL,
     "make PyTorch's GPU memory visible tensor by tensor: adds backend:cudaMallocAsync to "
     "PYTORCH_CUDA_ALLOC_CONF (after a comma when it is set already; when it names a backend "
     "already, that one is kept, with a warning). PyTorch then allocates and frees every "
     "tensor with cudaMallocAsync/cudaFreeAsync instead of its caching allocator, so dlhook "
     "records each one and "
     "`dlhook stats --memory` attributes it to the aten operator, module and line that allocated "
     "it (without this option dlhook sees only the large segments the caching allocator asks "
     "CUDA for). It changes how the program allocates: the caching allocator's own segment reuse "
     "is off (CUDA's stream-ordered pool reuses memory instead), which changes allocation timing "
     "and can change fragmentation, the peak and the speed; it does not change the program's "
     "results.", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_record_spec = {
    .name = "record",
    .synopsis = "[OPTIONS] [--] PROGRAM [ARGS...]",
    .summary = "run a program under the profiler and write its trace",
    .about = "Runs PROGRAM with libdlhook.so preloaded (LD_PRELOAD) and writes its trace(s) to "
             "DIR. Returns PROGRAM's exit status (128+N if it was killed by signal N), then lists "
             "on stderr the trace files written during the run, each with a short summary: calls, "
             "GPU records, dropped records, kernels and their GPU time.\n\n"
             "Options end at PROGRAM (or at --): the options after it are PROGRAM's own.",
    .examples = " dlhook record -o traces -- python train.py --epochs 1\n"
                " dlhook record --torch-memory -o traces -- python train.py\n"
                " dlhook record --stacks=mixed --capture-range=nvtx:train_step:5 ./train\n"
                " dlhook record --capture-range=signal ./train &\n"
                " dlhook ctl $! start\n"
                " dlhook record --flight-recorder=300 --hang=600 -o dumps -- ./train\n"
                " dlhook hang dumps",
    .exit_status = "PROGRAM's exit status (128+N when signal N killed it); 2 on a usage error; 1 "
                   "when PROGRAM cannot run or the output directory cannot be created (126 or "
                   "127 as a shell says when PROGRAM cannot be executed or found).",
    .options = options,
    .in_order = 1,
};

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
  if (s.n) rd_qsort(s.v, s.n, sizeof *s.v, by_name);
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

/* The libdlhook.so to preload: LIB when given, else the one next to dlhook (dir) or in ../lib.
 * Returns its real path (malloc'd), or NULL after printing why. */
static char *find_lib(const char *lib, const char *dir) {
  char *libpath = NULL;
  if (lib) {
    libpath = realpath(lib, NULL);
    if (!libpath) rd_error("record: %s: %s", lib, strerror(errno));
    return libpath;
  }
  if (dir) {
    char *c1 = join(dir, "libdlhook.so"), *c2 = join(dir, "../lib/libdlhook.so");
    if (access(c1, R_OK) == 0) libpath = realpath(c1, NULL);
    else if (access(c2, R_OK) == 0) libpath = realpath(c2, NULL);
    free(c1);
    free(c2);
  }
  if (!libpath)
    rd_error("record: cannot find libdlhook.so next to the dlhook binary (%s) or in ../lib; "
             "use --lib PATH", dir ? dir : "?");
  return libpath;
}

/* Sets NAME to VALUE, in front of what NAME held (a ':'-separated list). Returns 0 or -1. */
static int prepend_env(const char *name, const char *value) {
  const char *old = getenv(name);
  char *v;
  if (old && *old) {
    if (asprintf(&v, "%s:%s", value, old) < 0) return -1;
  } else {
    v = rd_xstrdup(value);
  }
  int rc = setenv(name, v, 1);
  free(v);
  return rc;
}

/* --torch-memory: backend:cudaMallocAsync in PYTORCH_CUDA_ALLOC_CONF, after the user's own
 * settings; a backend the user named is kept (warned). Returns 0 or -1. */
static int set_torch_memory_env(void) {
  static const char key[] = "PYTORCH_CUDA_ALLOC_CONF", want[] = "backend:cudaMallocAsync";
  const char *old = getenv(key);
  if (!old || !*old) return setenv(key, want, 1);
  if (strstr(old, "backend")) {
    if (!strstr(old, "backend:cudaMallocAsync"))
      rd_error("record: warning: --torch-memory: %s=%s names a backend already; kept (tensor "
               "allocations stay invisible unless it is cudaMallocAsync)", key, old);
    return 0;
  }
  char *v;
  if (asprintf(&v, "%s,%s", old, want) < 0) return -1;
  int rc = setenv(key, v, 1);
  free(v);
  return rc;
}

/* --sim: the simulated CUDA libraries built next to dlhook (DIR/simcuda) first in
 * LD_LIBRARY_PATH, and the rtld-audit module that loads them in place of a program's own CUDA
 * libraries (wheels' RPATH'ed copies) in LD_AUDIT, as tests/simcuda/run does. Returns 0 or -1. */
static int set_sim_env(const char *dir) {
  char *simdir = join(dir ? dir : ".", "simcuda");
  if (access(simdir, X_OK) != 0)
    rd_error("record: warning: %s does not exist (build the simulated CUDA stack)", simdir);
  int rc = prepend_env("LD_LIBRARY_PATH", simdir);
  char *audit = join(simdir, "simcuda-audit.so");
  const char *olda = getenv("LD_AUDIT");
  const char *redirect = getenv("SIMCUDA_REDIRECT");
  if (rc == 0 && (!redirect || strcmp(redirect, "0")) && access(audit, R_OK) == 0 &&
      !(olda && strstr(olda, audit)))
    rc = prepend_env("LD_AUDIT", audit);
  free(audit);
  free(simdir);
  return rc;
}

/* Runs cmd with the signals of fwd_signals sent to dlhook passed on to it; returns its exit
 * status (128+N when signal N killed it), or -1 when it could not be started. */
static int run_child(char **cmd, int announce) {
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
    return -1;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "dlhook: record: cannot run %s: %s\n", cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  if (announce)
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
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Lists on stderr, with a summary each, the traces in out that are not in `before` (new, or
 * rewritten since). */
static void list_traces(const char *out, const snapshot *before, const char *prog) {
  snapshot after = take_snapshot(out);
  size_t ntraces = 0;
  for (size_t k = 0; k < after.n; k++) {
    entry key = {after.v[k].name, 0, {0, 0}};
    entry *old_e = before->n ? bsearch(&key, before->v, before->n, sizeof *before->v, by_name) : NULL;
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
    fprintf(stderr, "dlhook: no trace was written to %s (did %s load libdlhook.so?)\n", out, prog);
  free_snapshot(&after);
}

int cmd_record(int argc, char **argv) {
  const char *out = ".", *lib = NULL, *stacks = NULL, *range = NULL, *delay = NULL,
             *duration = NULL, *hz = NULL, *when = NULL, *flight = NULL, *hang = NULL;
  int flight_on = 0;
  int sim = 0, torch_mem = 0, opt;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_record_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    switch (opt) {
      case 'o': out = g.arg; break;
      case OPT_SIM: sim = 1; break;
      case OPT_TORCH_MEM: torch_mem = 1; break;
      case OPT_LIB: lib = g.arg; break;
      case OPT_STACKS: stacks = g.arg; break;
      case OPT_RANGE: range = g.arg; break;
      case OPT_DELAY: delay = g.arg; break;
      case OPT_DURATION: duration = g.arg; break;
      case OPT_SAMPLE_HZ: hz = g.arg; break;
      case OPT_SAMPLE: when = g.arg; break;
      case OPT_FLIGHT: flight_on = 1; flight = g.arg; break;
      case OPT_HANG: hang = g.arg; break;
    }
  }
  if (opt < 0) return g.status;
  if (g.optind >= argc) return rd_usage_error("record", "no command given");
  const char *secs[4] = {delay, duration, flight, hang};
  static const char *const sec_names[4] = {"delay", "duration", "flight-recorder", "hang"};
  for (int k = 0; k < 4; k++) {
    char *e;
    if (secs[k] && (!*secs[k] || strtod(secs[k], &e) < 0 || *e || strtod(secs[k], NULL) > 1e7))
      return rd_usage_error("record", "--%s: expected seconds, e.g. 2 or 0.5", sec_names[k]);
  }
  if (hang && !flight_on) return rd_usage_error("record", "--hang needs --flight-recorder");
  if (hz) {
    char *e;
    unsigned long v = strtoul(hz, &e, 10);
    if (!*hz || *e || *hz == '-' || v > 10000)
      return rd_usage_error("record", "--sample-hz: expected samples per second, 0 to 10000");
  }
  if (when && strcmp(when, "cuda") && strcmp(when, "always") && strcmp(when, "off"))
    return rd_usage_error("record", "--sample: expected cuda, always or off");
  if (!*out) return rd_usage_error("record", "empty output directory");
  char **cmd = argv + g.optind;

  char *dir = self_dir();
  char *libpath = find_lib(lib, dir);
  int rc = RD_BAD_INPUT;
  if (!libpath) goto done;
  if (mkdirs(out) < 0) {
    rd_error("record: cannot create output directory %s: %s", out, strerror(errno));
    goto done;
  }

  /* the environment of the command: the preload, the output directory, the settings */
  size_t ol = strlen(out);
  char *outenv = rd_xmalloc(ol + 2);
  memcpy(outenv, out, ol + 1);
  if (out[ol - 1] != '/') strcat(outenv, "/");
  int env_rc = prepend_env("LD_PRELOAD", libpath) | setenv("DLHOOK_OUTPUT", outenv, 1);
  free(outenv);
  if (sim) env_rc |= set_sim_env(dir);
  if (torch_mem) env_rc |= set_torch_memory_env();
  const char *const envs[9][2] = {{"DLHOOK_STACKS", stacks}, {"DLHOOK_CAPTURE_RANGE", range},
                                  {"DLHOOK_DELAY", delay}, {"DLHOOK_DURATION", duration},
                                  {"DLHOOK_SAMPLE_HZ", hz}, {"DLHOOK_SAMPLE", when},
                                  {"DLHOOK_MODE", flight_on ? "flight" : NULL},
                                  {"DLHOOK_FLIGHT_S", flight}, {"DLHOOK_HANG_S", hang}};
  for (int k = 0; k < 9; k++)
    if (envs[k][1]) env_rc |= setenv(envs[k][0], envs[k][1], 1);
  if (env_rc) {
    rd_error("record: cannot set the environment");
    goto done;
  }

  snapshot before = take_snapshot(out);
  rc = run_child(cmd, range && !strcasecmp(range, "signal"));
  if (rc < 0) rc = RD_BAD_INPUT;
  else list_traces(out, &before, cmd[0]);
  free_snapshot(&before);
done:
  free(libpath);
  free(dir);
  return rc;
}
