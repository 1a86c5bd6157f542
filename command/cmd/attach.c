/* attach.c — `dlhook attach PID` and `dlhook detach PID`: profile a process that was started
 * without dlhook, for a while, and leave it as it was.
 *
 * The command side is a small ptrace injector (x86-64 Linux):
 *   1. Checks first, before the target is touched: same user (never a process of another user,
 *      root included), kernel.yama.ptrace_scope, CUDA actually loaded in the target.
 *   2. PTRACE_SEIZE + PTRACE_INTERRUPT of every thread in /proc/PID/task, repeated until a pass
 *      finds no new thread; each thread's registers are read to pick the one that runs the
 *      calls: preferably one blocked in a waiting system call (thread_rank), which holds no
 *      lock of malloc or the loader that the injected dlopen could wait for; never one of
 *      dlhook's own threads (named dlhook-*: detach waits for the writer). The other threads
 *      are released before anything runs in the target: a lock one of them holds is given back
 *      while the injected call waits for it, instead of deadlocking it.
 *   3. In the chosen thread: its general registers and its whole extended FPU/SIMD state saved;
 *      the arguments (strings, an out-buffer) written below the red zone of its stack; a call
 *      whose return address is 0, so that the return traps (SIGSEGV at rip 0) and comes back to
 *      us; orig_rax set to -1 so that the kernel's system call restart logic does not touch the
 *      call. Calls, in order: dlopen (libc.so.6 since glibc 2.34; libdl.so.2 before), dlerror on
 *      failure, then the library's exported dlhook_attach_start(settings, out, cap). The
 *      addresses come from /proc/PID/maps (the load base) and the dynamic symbol table of the
 *      mapped file (libelf).
 *   4. The saved stack bytes, registers and FPU state are put back and the thread detached with
 *      the trap signal suppressed; a thread that was inside a system call then restarts it
 *      (-ERESTARTSYS & co. and orig_rax were restored as they were; -ERESTART_RESTARTBLOCK,
 *      a timed sleep or wait, resumes with the time it had left: see resume_state).
 * Any failure restores what was changed and detaches every thread; no thread is ever left
 * stopped. SIGINT/SIGTERM/SIGHUP are held while a call runs in the target: leaving in the middle
 * would let that call return to address 0.
 *
 * The library is dlopen'ed through a symlink named libdlhook-attach.so (in a private temporary
 * directory): its constructor sees that name and initialises nothing (preload/attach.c does the
 * late initialisation: settings, GOT/PLT rewriting, CUPTI, the trace). A second attach finds the
 * library already mapped (the loader compares the file, not the name).
 * `dlhook detach PID` calls dlhook_attach_stop() the same way: every patched entry restored,
 * CUPTI unsubscribed, the trace flushed and closed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rd.h"
#include "rd_opts.h"

#if defined(__x86_64__) && defined(__linux__)
#define ATTACH_SUPPORTED 1
#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#else
#define ATTACH_SUPPORTED 0
#endif

enum { OPT_DURATION = RD_KEY(0), OPT_STACKS, OPT_LIB };
static const rd_option attach_options[] = {
    {"output", 'o', "DIR", "directory of the trace (default: the current directory; created if "
     "needed)", NULL, 0},
    {"duration", OPT_DURATION, "S", "stop by itself after S seconds (e.g. 3 or 0.5)", NULL, 0},
    {"stacks", OPT_STACKS, "MODE", "call stacks (default: mixed in Python, else native):",
     rd_stack_modes, 0},
    {"lib", OPT_LIB, "PATH", "the libdlhook.so to load (default: next to dlhook or ../lib)", NULL, 0},
    {"verbose", 'v', NULL, "say which thread of the process runs the injected calls", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};
static const rd_option detach_options[] = {
    {"verbose", 'v', NULL, "say which thread of the process runs the injected calls", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

#define ATTACH_LIMITS                                                                          \
  "Only processes of your own user; kernel.yama.ptrace_scope 1 needs CAP_SYS_PTRACE (or sudo) " \
  "unless PID is a child of dlhook, 2 needs CAP_SYS_PTRACE, 3 forbids it. A process without "   \
  "any CUDA library loaded is refused (nothing to record)."

const rd_command cmd_attach_spec = {
    .name = "attach",
    .synopsis = "[-v] PID [-o DIR] [--duration S] [--stacks MODE] [--lib PATH]",
    .summary = "profile a running process started without dlhook (ptrace)",
    .about = "Loads libdlhook.so into the running process PID (ptrace; x86-64 Linux), makes the "
             "CUDA, cuBLAS(Lt), cuDNN and NCCL calls it already bound go through dlhook, and "
             "subscribes to CUPTI: from now on its calls and GPU work are recorded into a new "
             "trace in DIR. It returns once recording runs and prints the trace's path. `dlhook "
             "detach PID` (or the end of --duration) restores every patched entry, unsubscribes "
             "CUPTI, and finishes the trace; the process runs on as before. Attaching again "
             "starts another trace.",
    .notes = ATTACH_LIMITS,
    .examples = " dlhook attach -o traces --duration 10 $(pgrep -f train.py)\n"
                " dlhook attach 4242 && sleep 5 && dlhook detach 4242",
    .options = attach_options,
};

const rd_command cmd_detach_spec = {
    .name = "detach",
    .synopsis = "[-v] PID",
    .summary = "stop profiling a process dlhook attached to; finish its trace",
    .about = "Stops the recording `dlhook attach` started in process PID: restores every patched "
             "entry, unsubscribes CUPTI, finishes the trace and prints its path. The process "
             "runs on as before. A process that runs under dlhook from its start (LD_PRELOAD) is "
             "not attached: its trace ends when it exits.",
    .notes = ATTACH_LIMITS,
    .options = detach_options,
};

#if !ATTACH_SUPPORTED

int cmd_attach(int argc, char **argv) {
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, &cmd_attach_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {}
  if (opt < 0) return g.status;
  rd_error("attach: not supported on this architecture (x86-64 Linux only)");
  return RD_BAD_INPUT;
}
int cmd_detach(int argc, char **argv) {
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, &cmd_detach_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {}
  if (opt < 0) return g.status;
  rd_error("detach: not supported on this architecture (x86-64 Linux only)");
  return RD_BAD_INPUT;
}

#else

/* ---------------------------------------------------------------- /proc helpers */

/* First line of /proc/PID/status that starts with key (e.g. "Uid:"): its value, or -1. */
static int status_field(long pid, const char *key, char *out, size_t cap) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int found = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl)) {
      snprintf(out, cap, "%s", line + kl);
      found = 0;
      break;
    }
  fclose(f);
  return found;
}

static unsigned long long cap_mask(long pid, const char *key) {
  char v[128];
  if (status_field(pid, key, v, sizeof v) != 0) return 0;
  return strtoull(v, NULL, 16);
}

#define CAP_SYS_PTRACE_BIT 19

static int have_cap_ptrace(void) {
  return (cap_mask((long)getpid(), "CapEff:") >> CAP_SYS_PTRACE_BIT) & 1;
}

static int yama_scope(void) {
  FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
  if (!f) return -1; /* no Yama: classic rules */
  int v = -1;
  if (fscanf(f, "%d", &v) != 1) v = -1;
  fclose(f);
  return v;
}

static long parent_of(long pid) {
  char v[64];
  if (status_field(pid, "PPid:", v, sizeof v) != 0) return -1;
  return strtol(v, NULL, 10);
}

static int is_descendant(long pid) {
  long me = (long)getpid();
  for (int i = 0; i < 4096 && pid > 1; i++) {
    pid = parent_of(pid);
    if (pid == me) return 1;
  }
  return 0;
}

/* The checks made before the target is touched. Returns 0, or RD_BAD_INPUT after a message. */
static int check_target(const char *cmd, long pid) {
  char v[256];
  if (pid == (long)getpid()) {
    rd_error("%s: process %ld is dlhook itself", cmd, pid);
    return RD_BAD_INPUT;
  }
  if (status_field(pid, "Uid:", v, sizeof v) != 0) {
    rd_error("%s: no process %ld (%s)", cmd, pid, strerror(errno ? errno : ESRCH));
    return RD_BAD_INPUT;
  }
  unsigned long r, e, s, fs;
  if (sscanf(v, "%lu %lu %lu %lu", &r, &e, &s, &fs) != 4) {
    rd_error("%s: cannot read the owner of process %ld", cmd, pid);
    return RD_BAD_INPUT;
  }
  unsigned long me = (unsigned long)getuid();
  if (r != me || e != me || s != me || fs != me) {
    rd_error("%s: process %ld belongs to uid %lu (you are uid %lu): dlhook attaches only to "
             "processes of your own user; run it as that user", cmd, pid, e != me ? e : r, me);
    return RD_BAD_INPUT;
  }
  int scope = yama_scope();
  int cap = have_cap_ptrace();
  if (scope == 3) {
    rd_error("%s: ptrace is disabled on this system (kernel.yama.ptrace_scope = 3; only a reboot "
             "lowers it): cannot attach", cmd);
    return RD_BAD_INPUT;
  }
  if (scope == 2 && !cap) {
    rd_error("%s: kernel.yama.ptrace_scope = 2 allows ptrace only with CAP_SYS_PTRACE: run dlhook "
             "with sudo (as root) or give it the capability (setcap cap_sys_ptrace+ep)", cmd);
    return RD_BAD_INPUT;
  }
  if (scope == 1 && !cap && !is_descendant(pid)) {
    /* the target may have allowed us with prctl(PR_SET_PTRACER): only a warning-free try tells;
     * a refusal is explained after PTRACE_SEIZE fails */
  }
  return 0;
}

/* Explains an EPERM from PTRACE_SEIZE. */
static void explain_eperm(const char *cmd, long pid) {
  char tv[64];
  long tracer = status_field(pid, "TracerPid:", tv, sizeof tv) == 0 ? strtol(tv, NULL, 10) : 0;
  if (tracer > 0) {
    rd_error("%s: process %ld is already traced by process %ld (a debugger, strace): a process "
             "has one tracer at a time", cmd, pid, tracer);
    return;
  }
  int scope = yama_scope();
  int cap = have_cap_ptrace();
  if (scope == 1 && !cap && !is_descendant(pid)) {
    rd_error("%s: not permitted to trace process %ld: kernel.yama.ptrace_scope = 1 lets only a "
             "parent trace its children. Run dlhook with sudo, give it CAP_SYS_PTRACE (setcap "
             "cap_sys_ptrace+ep), or lower the setting (sysctl kernel.yama.ptrace_scope=0)", cmd,
             pid);
    return;
  }
  unsigned long long theirs = cap_mask(pid, "CapPrm:"), ours = cap_mask((long)getpid(), "CapEff:");
  if (!cap && (theirs & ~ours)) {
    rd_error("%s: not permitted to trace process %ld: it holds capabilities dlhook lacks "
             "(CapPrm %llx, dlhook has %llx) and dlhook has no CAP_SYS_PTRACE; run dlhook with "
             "the same privileges as the process (e.g. sudo)", cmd, pid, theirs, ours);
    return;
  }
  rd_error("%s: not permitted to trace process %ld (ptrace: %s): it may be set-user-ID or "
           "not dumpable (prctl PR_SET_DUMPABLE), or already traced by a debugger; dlhook "
           "needs CAP_SYS_PTRACE for it", cmd, pid, strerror(EPERM));
}

/* A mapping of /proc/PID/maps. */
typedef struct {
  uint64_t lo, hi, off;
  char path[PATH_MAX];
} mapping;

typedef int (*map_pred)(const char *path, const void *arg);

/* The executable mapping of a file whose path satisfies pred (the loaded image: a copy of the
 * file that the program or dlhook's symbolizer mapped for reading is never executable).
 * Returns 0 when found. */
static int find_mapping(long pid, map_pred pred, const void *arg, mapping *out) {
  char path[64], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "/proc/%ld/maps", pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int found = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo, hi, off;
    char perms[8];
    int n = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &n) < 4 || !n) continue;
    char *p = line + n;
    size_t len = strlen(p);
    while (len && (p[len - 1] == '\n' || p[len - 1] == ' ')) p[--len] = 0;
    if (p[0] != '/' || perms[2] != 'x' || !pred(p, arg)) continue;
    if (found != 0 || lo < out->lo) {
      out->lo = lo;
      out->hi = hi;
      out->off = off;
      snprintf(out->path, sizeof out->path, "%s", p);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

static const char *base_of(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* libc.so.6 (or an old libc-2.NN.so) */
static int is_libc(const char *p, const void *arg) {
  (void)arg;
  const char *b = base_of(p);
  return !strcmp(b, "libc.so.6") || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}
static int is_libdl(const char *p, const void *arg) {
  (void)arg;
  const char *b = base_of(p);
  return !strcmp(b, "libdl.so.2") || !strncmp(b, "libdl-2.", 8);
}
static int is_dlhook(const char *p, const void *arg) {
  (void)arg;
  const char *b = base_of(p);
  return !strncmp(b, "libdlhook", 9) && strstr(b, ".so") != NULL;
}
static int same_path(const char *p, const void *arg) { return !strcmp(p, (const char *)arg); }
static int is_cuda_lib(const char *p, const void *arg) {
  (void)arg;
  static const char *const names[] = {"libcuda.so", "libcudart.so", "libcublas.so",
                                      "libcublasLt.so", "libcudnn.so", "libnccl.so", NULL};
  const char *b = base_of(p);
  for (int i = 0; names[i]; i++)
    if (!strncmp(b, names[i], strlen(names[i]))) return 1;
  return 0;
}

/* ---------------------------------------------------------------- ELF symbols (libelf) */

/* The address of the default-version definition of `name` in the object whose executable
 * segment is mapped at m, from the dynamic symbol table of its file (read through
 * /proc/PID/root: the target's view of the file system). Returns 0 when not found. */
static uint64_t remote_symbol(long pid, const mapping *m, const char *name) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "/proc/%ld/root%s", pid, m->path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fd = open(m->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  elf_version(EV_CURRENT);
  Elf *e = elf_begin(fd, ELF_C_READ, NULL);
  uint64_t addr = 0, seg_vaddr = UINT64_MAX;
  if (!e || elf_kind(e) != ELF_K_ELF) goto out;
  size_t nph = 0;
  if (elf_getphdrnum(e, &nph) != 0) goto out;
  for (size_t i = 0; i < nph; i++) { /* the segment mapped at m: its file offset, executable */
    GElf_Phdr ph;
    if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
        (ph.p_offset & ~(uint64_t)0xfff) == m->off)
      seg_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
  }
  if (seg_vaddr == UINT64_MAX) goto out;
  Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
  GElf_Shdr dsh;
  memset(&dsh, 0, sizeof dsh);
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_DYNSYM) { dynsym = scn; dsh = sh; }
    if (sh.sh_type == SHT_GNU_versym) versym = scn;
  }
  if (!dynsym || !dsh.sh_entsize) goto out;
  Elf_Data *d = elf_getdata(dynsym, NULL);
  Elf_Data *vd = versym ? elf_getdata(versym, NULL) : NULL;
  size_t n = dsh.sh_size / dsh.sh_entsize;
  uint64_t hidden_match = 0;
  for (size_t i = 0; d && i < n; i++) {
    GElf_Sym s;
    if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value) continue;
    int type = GELF_ST_TYPE(s.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    const char *sn = elf_strptr(e, dsh.sh_link, s.st_name);
    if (!sn || strcmp(sn, name)) continue;
    GElf_Versym vs = 0;
    if (vd && gelf_getversym(vd, (int)i, &vs) && (vs & 0x8000)) { /* a compat version */
      hidden_match = s.st_value;
      continue;
    }
    addr = s.st_value;
    break;
  }
  if (!addr) addr = hidden_match;
  if (addr) addr = m->lo - seg_vaddr + addr;
out:
  if (e) elf_end(e);
  close(fd);
  return addr;
}

/* ---------------------------------------------------------------- threads */

#define ERESTART_RESTARTBLOCK 516 /* the kernel's internal code (not in user headers) */

typedef struct {
  pid_t tid;
  char comm[20];      /* the thread's name */
  int stopped;        /* in a ptrace-stop, ours to detach */
  int pending_sig;    /* a signal-delivery-stop caught while stopping: re-delivered at detach */
  struct user_regs_struct regs;
} tstate;

typedef struct {
  long pid;
  tstate *t;
  size_t n, cap;
  int memfd;
  const char *cmd;
  int exited;         /* the process went away while we held it */
  int verbose;        /* -v: say which thread runs the calls */
  pid_t ptid;         /* the chosen thread: PTRACE_PEEKDATA/POKEDATA when /proc/PID/mem fails */
} target;

static tstate *find_thread(target *tg, pid_t tid) {
  for (size_t i = 0; i < tg->n; i++)
    if (tg->t[i].tid == tid) return &tg->t[i];
  return NULL;
}

/* Waits for tid's next ptrace-stop. Returns 0 with *status, or -1 (the thread is gone). */
static int wait_stop(pid_t tid, int *status) {
  for (;;) {
    pid_t r = waitpid(tid, status, __WALL);
    if (r == tid) {
      if (WIFEXITED(*status) || WIFSIGNALED(*status)) return -1;
      return 0;
    }
    if (r < 0 && errno == EINTR) continue;
    return -1;
  }
}

/* Stops every thread of the process (PTRACE_SEIZE + PTRACE_INTERRUPT), repeating until a pass
 * over /proc/PID/task finds no new thread. Returns 0, or -1 after a message (every thread taken
 * so far is released by the caller through release_all). */
static int stop_all(target *tg) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", tg->pid);
  for (int pass = 0; pass < 1000; pass++) {
    DIR *d = opendir(path);
    if (!d) {
      rd_error("%s: process %ld exited", tg->cmd, tg->pid);
      tg->exited = 1;
      return -1;
    }
    int added = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
      char *end;
      long tid = strtol(de->d_name, &end, 10);
      if (*end || tid <= 0 || find_thread(tg, (pid_t)tid)) continue;
      if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) != 0) {
        if (errno == ESRCH) continue; /* that thread ended */
        int err = errno;
        closedir(d);
        if (err == EPERM) explain_eperm(tg->cmd, tg->pid);
        else rd_error("%s: cannot trace thread %ld of process %ld: %s", tg->cmd, tid, tg->pid,
                      strerror(err));
        return -1;
      }
      if (tg->n == tg->cap) {
        tg->cap = tg->cap ? tg->cap * 2 : 16;
        tg->t = rd_xrealloc(tg->t, tg->cap * sizeof *tg->t);
      }
      tstate *t = &tg->t[tg->n++];
      memset(t, 0, sizeof *t);
      t->tid = (pid_t)tid;
      char cp[96];
      snprintf(cp, sizeof cp, "/proc/%ld/task/%ld/comm", tg->pid, tid);
      FILE *cf = fopen(cp, "re");
      if (cf) {
        if (fgets(t->comm, sizeof t->comm, cf)) t->comm[strcspn(t->comm, "\n")] = 0;
        fclose(cf);
      }
      added = 1;
      if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0) continue; /* ended: waited below */
      int st;
      if (wait_stop(t->tid, &st) != 0) continue;
      t->stopped = 1;
      if ((st >> 16) == 0) t->pending_sig = WSTOPSIG(st); /* a signal arrived first: kept */
      if (ptrace(PTRACE_GETREGS, t->tid, NULL, &t->regs) != 0) t->stopped = 0;
    }
    closedir(d);
    if (!added) return 0;
  }
  rd_error("%s: process %ld keeps creating threads; giving up", tg->cmd, tg->pid);
  return -1;
}

/* Detaches one thread (re-delivering a signal it was stopped with). */
static void release(tstate *t) {
  if (!t->tid) return;
  ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->pending_sig);
  t->stopped = 0;
  t->tid = 0;
}

static void release_all(target *tg) {
  for (size_t i = 0; i < tg->n; i++) release(&tg->t[i]);
}

/* How good a thread is to run the calls: one blocked in a waiting system call (sleep, poll,
 * read, wait) is between two pieces of its own work and holds no lock of malloc or of the loader
 * that the injected dlopen needs; a futex wait may be a lock wait inside such code (it holds no
 * lock it waits for, but maybe another); memory system calls (mmap, brk, madvise) are often made
 * by malloc with its arena lock held; a thread stopped in user code may be anywhere. The main
 * thread wins ties (its stack is the largest). */
static int thread_rank(const tstate *t) {
  /* dlhook's own threads (the writer: detach waits for it) are never used; the threads of the
   * CUDA driver, CUPTI and NCCL only when there is no other */
  if (!strncmp(t->comm, "dlhook-", 7)) return -1;
  if (!strncasecmp(t->comm, "cuda", 4) || !strncasecmp(t->comm, "cupti", 5) ||
      !strncasecmp(t->comm, "nccl", 4))
    return 0;
  long long nr = (long long)t->regs.orig_rax;
  if (nr < 0) return 1;
  /* a timed sleep resumes through restart_block, with the time it had left (resume_state) */
  if ((long long)t->regs.rax == -ERESTART_RESTARTBLOCK) return 3;
  switch (nr) {
    case 7: case 23: case 35: case 230: case 232: case 233: case 270: case 271: case 281:
    case 0: case 17: case 19: case 295: case 45: case 47: case 61: case 247: case 34:
    case 43: case 288: case 299:
      /* poll select nanosleep clock_nanosleep epoll_wait epoll_ctl pselect6 ppoll epoll_pwait
       * read pread64 readv preadv recvfrom recvmsg wait4 waitid pause accept accept4 recvmmsg */
      return 4;
    case 202: return 3;                           /* futex */
    case 9: case 10: case 11: case 12: case 25: case 28: return 0; /* mmap mprotect munmap brk
                                                                       mremap madvise */
    default: return 2;
  }
}

static tstate *pick_thread(target *tg) {
  tstate *best = NULL;
  int best_rank = -1;
  for (size_t i = 0; i < tg->n; i++) {
    tstate *t = &tg->t[i];
    if (!t->stopped) continue;
    int rank = thread_rank(t);
    if (rank < 0) continue;
    int r = rank * 2 + (t->tid == (pid_t)tg->pid);
    if (r > best_rank) { best = t; best_rank = r; }
  }
  return best;
}

/* ---------------------------------------------------------------- remote calls */

typedef struct {
  tstate *t;
  struct user_regs_struct saved;
  void *xstate;
  struct iovec xiov;
  int have_xstate;
  struct user_fpregs_struct fp;
  int have_fp;
  int ran;             /* a call ran in the thread (its restart_block may have changed) */
} chosen;

static volatile sig_atomic_t interrupted;
static void on_term(int sig) { (void)sig; interrupted = 1; }

/* Whether the process has ended (gone, or a zombie waiting for its parent). */
static int target_gone(const target *tg) {
  char v[64];
  if (status_field(tg->pid, "State:", v, sizeof v) != 0) return 1;
  const char *p = v;
  while (*p == ' ' || *p == '\t') p++;
  return *p == 'Z' || *p == 'X';
}

static void exited_msg(target *tg, const char *what) {
  rd_error("%s: process %ld exited during the attach (%s)", tg->cmd, tg->pid, what);
  tg->exited = 1;
}

/* Reads or writes the target's memory: /proc/PID/mem, or word by word through ptrace where a
 * hardened kernel refuses writes there (proc_mem.force_override). Returns 0, or -1. */
static int mem_rw(target *tg, int write, uint64_t addr, void *buf, size_t len) {
  ssize_t r = tg->memfd < 0 ? -1
              : write ? pwrite(tg->memfd, buf, len, (off_t)addr)
                      : pread(tg->memfd, buf, len, (off_t)addr);
  if (r == (ssize_t)len) return 0;
  if (!tg->ptid) return -1;
  uint8_t *b = buf;
  for (uint64_t a = addr & ~7ull; a < addr + len; a += 8) {
    errno = 0;
    long w = ptrace(PTRACE_PEEKDATA, tg->ptid, (void *)a, NULL);
    if (errno) return -1;
    uint8_t word[8];
    memcpy(word, &w, 8);
    for (int k = 0; k < 8; k++) {
      uint64_t at = a + (uint64_t)k;
      if (at < addr || at >= addr + len) continue;
      if (write) word[k] = b[at - addr];
      else b[at - addr] = word[k];
    }
    if (write) {
      memcpy(&w, word, 8);
      if (ptrace(PTRACE_POKEDATA, tg->ptid, (void *)a, (void *)w) != 0) return -1;
    }
  }
  return 0;
}

#define ARG_DATA (1ull << 63) /* an argument that is an offset into the data block */

/* Calls fn(args) in the chosen thread with `data` copied below the red zone of its stack (args
 * flagged ARG_DATA are offsets into that block). Afterwards the block is read back into
 * `data` (out-buffers) and the stack bytes are restored. Returns 0 with *ret = rax, -1 after a
 * message. The thread stays stopped (in the trap's signal-delivery-stop). */
static int remote_call(target *tg, chosen *c, uint64_t fn, int nargs, const uint64_t *args,
                       void *data, size_t dlen, uint64_t *ret, int timeout_s, const char *what) {
  struct user_regs_struct r = c->saved;
  uint64_t base = (r.rsp - 512 - dlen) & ~(uint64_t)15; /* below the 128-byte red zone */
  uint64_t sp = base - 8;                               /* rsp % 16 == 8 at entry */
  size_t span = 8 + dlen;
  uint8_t *orig = rd_xmalloc(span);
  if (mem_rw(tg, 0, sp, orig, span) != 0) {
    if (target_gone(tg)) {
      exited_msg(tg, what);
      c->t->tid = 0;
      free(orig);
      return -1;
    }
    rd_error("%s: cannot read the stack of thread %d: %s", tg->cmd, c->t->tid, strerror(errno));
    free(orig);
    return -1;
  }
  uint8_t *img = rd_xmalloc(span);
  memset(img, 0, 8); /* return address 0: the return traps */
  if (dlen) memcpy(img + 8, data, dlen);
  if (mem_rw(tg, 1, sp, img, span) != 0) {
    rd_error("%s: cannot write the stack of thread %d: %s", tg->cmd, c->t->tid, strerror(errno));
    free(orig); free(img);
    return -1;
  }
  free(img);
  unsigned long long *regs_args[6] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
  for (int i = 0; i < nargs && i < 6; i++)
    *regs_args[i] = (args[i] & ARG_DATA) ? base + (args[i] & ~ARG_DATA) : args[i];
  r.rip = fn;
  r.rsp = sp;
  r.rax = 0;
  r.orig_rax = (unsigned long long)-1; /* not in a system call: no restart applied to the call */
  r.eflags &= ~0x400ull;              /* DF clear, as the ABI requires at a call */
  int rc = -1;
  c->ran = 1;
  if (ptrace(PTRACE_SETREGS, c->t->tid, NULL, &r) != 0 ||
      ptrace(PTRACE_CONT, c->t->tid, NULL, NULL) != 0) {
    if (errno == ESRCH || target_gone(tg)) { /* killed while held (SIGKILL ends a tracee) */
      int st;
      waitpid(c->t->tid, &st, __WALL | WNOHANG);
      exited_msg(tg, what);
      c->t->tid = 0;
      free(orig);
      return -1;
    }
    rd_error("%s: cannot start %s in thread %d: %s", tg->cmd, what, c->t->tid, strerror(errno));
    goto restore;
  }
  time_t deadline = time(NULL) + timeout_s, warned = 0;
  for (;;) {
    int st;
    pid_t w = waitpid(c->t->tid, &st, __WALL | WNOHANG);
    if (w == 0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
      if (time(NULL) > deadline && !warned) {
        warned = 1;
        fprintf(stderr, "dlhook: %s: %s has not returned after %d s; still waiting (leaving now "
                "would make it return to address 0)\n", tg->cmd, what, timeout_s);
      }
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
      exited_msg(tg, what);
      c->t->tid = 0;
      free(orig);
      return -1;
    }
    int sig = WSTOPSIG(st), ev = st >> 16;
    if (ev == PTRACE_EVENT_STOP) { /* our interrupt, or a group-stop: go on */
      ptrace(PTRACE_CONT, c->t->tid, NULL, NULL);
      continue;
    }
    if (sig == SIGSEGV) {
      struct user_regs_struct now;
      if (ptrace(PTRACE_GETREGS, c->t->tid, NULL, &now) == 0 && now.rip == 0) {
        *ret = now.rax;
        rc = 0;
        break;
      }
      rd_error("%s: %s crashed in process %ld (SIGSEGV at %#llx); its registers are restored", tg->cmd,
               what, tg->pid, now.rip);
      break;
    }
    ptrace(PTRACE_CONT, c->t->tid, NULL, (void *)(long)sig); /* the program's own signal */
  }
  if (rc == 0 && dlen) mem_rw(tg, 0, base, data, dlen);
restore:
  mem_rw(tg, 1, sp, orig, span);
  free(orig);
  return rc;
}

#define PROBE_FAILED (-1000000LL)

/* Resumes the chosen thread (in a ptrace-stop inside signal delivery) into restart_syscall under
 * PTRACE_SYSCALL, with an interrupt pending from its syscall-entry-stop on, so that the restarted
 * wait returns at once; then, interrupted again at the syscall-exit-stop, lets it stop inside
 * signal delivery (the interrupt's stop), where its registers can be set for the real
 * resumption. Returns restart_syscall's result, or PROBE_FAILED (the thread is then gone, or
 * could not be resumed). A signal for the program that comes meanwhile is kept for the detach. */
static long long probe_restart(chosen *c) {
  pid_t tid = c->t->tid;
  struct user_regs_struct r = c->saved;
  r.rax = 219; /* __NR_restart_syscall */
  r.rip -= 2;  /* the `syscall` instruction */
  r.orig_rax = (unsigned long long)-1;
  if (ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0 ||
      ptrace(PTRACE_SETREGS, tid, NULL, &r) != 0 || ptrace(PTRACE_SYSCALL, tid, NULL, NULL) != 0)
    return PROBE_FAILED;
  long long res = PROBE_FAILED;
  for (int phase = 0; phase < 3;) { /* 0: to the entry, 1: to the exit, 2: to the interrupt */
    int st;
    if (wait_stop(tid, &st) != 0) {
      c->t->tid = 0; /* the process ended */
      return PROBE_FAILED;
    }
    int sig = WSTOPSIG(st), ev = st >> 16;
    int sysstop = ev == 0 && sig == (SIGTRAP | 0x80);
    if (sysstop && phase == 0) {
      phase = 1;
      if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) return PROBE_FAILED;
    } else if (sysstop && phase == 1) {
      struct user_regs_struct now;
      if (ptrace(PTRACE_GETREGS, tid, NULL, &now) != 0) return PROBE_FAILED;
      res = (long long)now.rax;
      phase = 2; /* this stop took the interrupt: one more, for the stop in signal delivery */
      if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) return PROBE_FAILED;
    } else if (ev == PTRACE_EVENT_STOP && phase == 2) {
      phase = 3;
      break;
    } else if (ev == 0 && !sysstop && !c->t->pending_sig) {
      c->t->pending_sig = sig; /* the program's own signal: delivered at the detach */
    }
    if (ptrace(phase == 2 ? PTRACE_CONT : PTRACE_SYSCALL, tid, NULL, NULL) != 0)
      return PROBE_FAILED;
  }
  return res;
}

/* Called with the chosen thread's registers saved, after the calls: how it is to resume. A
 * system call it was stopped in with -ERESTARTSYS, -ERESTARTNOINTR or -ERESTARTNOHAND is
 * restarted by the kernel from the registers alone (restored as they were).
 * -ERESTART_RESTARTBLOCK (nanosleep, clock_nanosleep, poll and futex waits with a timeout)
 * resumes through the thread's restart_block, which holds what is left of the wait (a sleep's
 * expiry). dlhook's own code leaves it alone (it sleeps with ppoll), but a call made in the
 * thread may have replaced it (any nanosleep resets it, a signal handler's return too), and the
 * thread would then see EINTR. So the restart is tried first (probe_restart):
 * -ERESTART_RESTARTBLOCK again means the restart_block is intact, and the registers are restored
 * as they were: the wait goes on for the time it had left. Another result means the wait ended
 * meanwhile: the call returns it. -EINTR means it was replaced: only then is the call made again
 * from the start (the `syscall` instruction re-executed with the same arguments; a relative
 * timeout then starts over), unless the thread was in restart_syscall already (a wait stopped
 * twice), whose original call is not known any more: it returns EINTR, as the kernel would. */
static void resume_state(target *tg, chosen *c) {
  struct user_regs_struct *r = &c->saved;
  if ((long long)r->orig_rax < 0 || (long long)r->rax != -ERESTART_RESTARTBLOCK) return;
  unsigned char insn[2];
  if (mem_rw(tg, 0, r->rip - 2, insn, 2) != 0 || insn[0] != 0x0f || insn[1] != 0x05) return;
  long long res = probe_restart(c);
  if (res == -ERESTART_RESTARTBLOCK || !c->t->tid) return;
  if (res != -EINTR && res != PROBE_FAILED) {
    r->rax = (unsigned long long)res; /* the wait's own result, as if it had been restarted */
    r->orig_rax = (unsigned long long)-1;
    return;
  }
  if (r->orig_rax == 219) { /* already a restart_syscall: no call left to make again */
    r->rax = (unsigned long long)-EINTR;
    r->orig_rax = (unsigned long long)-1;
    return;
  }
  r->rax = r->orig_rax;
  r->rip -= 2;
  r->orig_rax = (unsigned long long)-1;
}

static int save_thread(chosen *c) {
  c->saved = c->t->regs;
  c->xstate = rd_xmalloc(1 << 16);
  c->xiov.iov_base = c->xstate;
  c->xiov.iov_len = 1 << 16;
  c->have_xstate = ptrace(PTRACE_GETREGSET, c->t->tid, (void *)NT_X86_XSTATE, &c->xiov) == 0;
  c->have_fp = ptrace(PTRACE_GETFPREGS, c->t->tid, NULL, &c->fp) == 0;
  return 0;
}

static void restore_thread(chosen *c) {
  if (!c->t || !c->t->tid) return;
  ptrace(PTRACE_SETREGS, c->t->tid, NULL, &c->saved);
  if (c->have_xstate) ptrace(PTRACE_SETREGSET, c->t->tid, (void *)NT_X86_XSTATE, &c->xiov);
  else if (c->have_fp) ptrace(PTRACE_SETFPREGS, c->t->tid, NULL, &c->fp);
}

/* Takes the process: stops all threads, picks one, releases the others. Returns the chosen
 * thread saved in *c, or -1 after a message (nothing left stopped). */
static int take(target *tg, chosen *c) {
  char mem[64];
  snprintf(mem, sizeof mem, "/proc/%ld/mem", tg->pid);
  if (stop_all(tg) != 0) {
    release_all(tg);
    return -1;
  }
  c->t = pick_thread(tg);
  if (!c->t) {
    rd_error("%s: no thread of process %ld could be stopped", tg->cmd, tg->pid);
    release_all(tg);
    return -1;
  }
  if (tg->verbose)
    fprintf(stderr, "dlhook: %s: %zu threads stopped; the calls run in thread %d (%s, %s %lld)\n",
            tg->cmd, tg->n, c->t->tid, c->t->comm,
            (long long)c->t->regs.orig_rax >= 0 ? "in system call" : "in user code, rip",
            (long long)c->t->regs.orig_rax >= 0 ? (long long)c->t->regs.orig_rax
                                                : (long long)c->t->regs.rip);
  /* -1: ptrace's word access only (mem_rw); tests force it with DLHOOK_TEST_ATTACH_PTRACE_MEM=1
   * (a kernel that refuses writes to /proc/PID/mem) */
  const char *pm = getenv("DLHOOK_TEST_ATTACH_PTRACE_MEM");
  tg->memfd = pm && !strcmp(pm, "1") ? -1 : open(mem, O_RDWR | O_CLOEXEC);
  tg->ptid = c->t->tid;
  save_thread(c);
  for (size_t i = 0; i < tg->n; i++)
    if (&tg->t[i] != c->t) release(&tg->t[i]);
  /* Tests only (tests/attach/t_attach_refused.sh): a pause with the chosen thread held, so that
   * a test can end the process exactly while it is being attached. */
  const char *pause_ms = getenv("DLHOOK_TEST_ATTACH_PAUSE_MS");
  if (pause_ms && *pause_ms) {
    fprintf(stderr, "dlhook: %s: test pause of %s ms\n", tg->cmd, pause_ms);
    struct timespec ts = {atoi(pause_ms) / 1000, (long)(atoi(pause_ms) % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* Puts the chosen thread back as it was and lets it go. */
static void give_back(target *tg, chosen *c) {
  if (c->ran) resume_state(tg, c);
  restore_thread(c);
  if (c->t && c->t->tid) {
    c->t->pending_sig = c->t->pending_sig == SIGSEGV ? 0 : c->t->pending_sig;
    release(c->t);
  }
  if (tg->memfd >= 0) close(tg->memfd);
  tg->memfd = -1;
  tg->ptid = 0;
  free(c->xstate);
  c->xstate = NULL;
}

static void hold_signals(int on) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on ? on_term : SIG_DFL;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Reads a NUL-terminated string of the target (at most cap-1 bytes). */
static void remote_string(target *tg, uint64_t addr, char *out, size_t cap) {
  out[0] = 0;
  if (!addr) return;
  size_t n = 0;
  while (n + 1 < cap) {
    char ch;
    if (mem_rw(tg, 0, addr + n, &ch, 1) != 0 || !ch) break;
    out[n++] = ch;
  }
  out[n] = 0;
}

/* ---------------------------------------------------------------- commands */

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

static char *find_lib(const char *lib) {
  if (lib) return realpath(lib, NULL);
  char *dir = self_dir(), *res = NULL;
  if (!dir) return NULL;
  const char *cand[] = {"libdlhook.so", "../lib/libdlhook.so"};
  for (int i = 0; i < 2 && !res; i++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, cand[i]);
    if (access(p, R_OK) == 0) res = realpath(p, NULL);
  }
  free(dir);
  return res;
}

static int mkdirs(const char *dir) {
  char *d = rd_xstrdup(dir);
  for (char *p = d + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(d, 0777) < 0 && errno != EEXIST) { free(d); return -1; }
    *p = '/';
  }
  int r = mkdir(d, 0777) < 0 && errno != EEXIST ? -1 : 0;
  free(d);
  return r;
}

static long parse_pid(const char *cmd, const char *s) {
  char *end;
  long pid = strtol(s, &end, 10);
  if (*end || pid <= 0 || pid > INT_MAX) {
    rd_usage_error(cmd, "'%s' is not a process id", s);
    return -1;
  }
  return pid;
}

/* Results of dlhook_attach_start / dlhook_attach_stop (preload/attach.c). */
enum { AT_OK = 0, AT_ALREADY = 1, AT_PRELOADED = 2, AT_FAILED = 3, AT_NOT_ATTACHED = 4 };
#define OUT_CAP 4096

/* The options and the operand of `dlhook attach`, checked. */
typedef struct attach_opts {
  const char *out, *duration, *stacks, *lib;
  long pid;
  int verbose;
} attach_opts;

/* Reads argv into o; returns -1 when all is well, else the exit status (after a message). */
static int read_attach_args(attach_opts *o, int argc, char **argv) {
  const char *pids = NULL;
  int opt;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_attach_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    switch (opt) {
      case 'o': o->out = g.arg; break;
      case OPT_DURATION: o->duration = g.arg; break;
      case OPT_STACKS: o->stacks = g.arg; break;
      case OPT_LIB: o->lib = g.arg; break;
      case 'v': o->verbose = 1; break;
      case RD_OPERAND:
        if (pids) return rd_usage_error("attach", "one PID only ('%s' and '%s')", pids, g.arg);
        pids = g.arg;
        break;
    }
  }
  if (opt < 0) return g.status;
  if (!pids) return rd_usage_error("attach", "expected a PID");
  o->pid = parse_pid("attach", pids);
  if (o->pid < 0) return RD_USAGE;
  if (o->duration) {
    char *e;
    double v = strtod(o->duration, &e);
    if (!*o->duration || *e || !(v > 0) || v > 1e7)
      return rd_usage_error("attach", "--duration: expected seconds, e.g. 3 or 0.5");
  }
  if (!*o->out) return rd_usage_error("attach", "empty output directory");
  if (strchr(o->out, '\n')) return rd_usage_error("attach", "-o: a directory name with a newline");
  return -1;
}

/* The target's dlopen and dlerror: libc's (glibc >= 2.34), else libdl's, else libc's own
 * __libc_dlopen_mode (older glibc without libdl loaded; *flags then gets __RTLD_DLOPEN and there
 * is no dlerror). Returns 0, or -1 when there is none. */
static int find_dlopen(long pid, uint64_t *dlopen_a, uint64_t *dlerror_a, uint64_t *flags) {
  mapping libc;
  memset(&libc, 0, sizeof libc);
  *dlopen_a = *dlerror_a = 0;
  if (find_mapping(pid, is_libc, NULL, &libc) == 0) {
    *dlopen_a = remote_symbol(pid, &libc, "dlopen");
    *dlerror_a = remote_symbol(pid, &libc, "dlerror");
  }
  if (!*dlopen_a && find_mapping(pid, is_libdl, NULL, &libc) == 0) {
    *dlopen_a = remote_symbol(pid, &libc, "dlopen");
    *dlerror_a = remote_symbol(pid, &libc, "dlerror");
  }
  if (!*dlopen_a && find_mapping(pid, is_libc, NULL, &libc) == 0) {
    /* glibc < 2.34 without libdl loaded: libc's own entry (__RTLD_DLOPEN marks a dlopen) */
    *dlopen_a = remote_symbol(pid, &libc, "__libc_dlopen_mode");
    *flags |= 0x80000000u;
    *dlerror_a = 0;
  }
  return *dlopen_a ? 0 : -1;
}

/* In the stopped target: dlopen(link) through dlopen_a, then dlhook_attach_start with the
 * settings (output directory outabs, --duration, --stacks); prints what happened. Returns RD_OK
 * when the target records, else RD_BAD_INPUT (after a message). */
static int load_and_start(target *tg, chosen *c, const attach_opts *o, const char *libpath,
                          char *link, const char *outabs, uint64_t dlopen_a,
                          uint64_t dlerror_a, uint64_t dlopen_flags) {
  long pid = o->pid;
  /* dlopen(link, RTLD_NOW | RTLD_LOCAL) */
  uint64_t args[2] = {ARG_DATA | 0, dlopen_flags};
  uint64_t handle = 0;
  if (remote_call(tg, c, dlopen_a, 2, args, link, strlen(link) + 1, &handle, 60, "dlopen") != 0)
    return RD_BAD_INPUT;
  if (!handle) {
    char why[1024] = "unknown error";
    uint64_t msg = 0;
    if (dlerror_a && remote_call(tg, c, dlerror_a, 0, NULL, NULL, 0, &msg, 10, "dlerror") == 0)
      remote_string(tg, msg, why, sizeof why);
    rd_error("attach: the process could not load %s: %s", libpath, why);
    return RD_BAD_INPUT;
  }
  mapping me;
  memset(&me, 0, sizeof me);
  uint64_t start_a = 0;
  if (find_mapping(pid, same_path, libpath, &me) == 0 || find_mapping(pid, is_dlhook, NULL, &me) == 0)
    start_a = remote_symbol(pid, &me, "dlhook_attach_start");
  if (!start_a) {
    rd_error("attach: %s is loaded in process %ld but has no dlhook_attach_start (an older "
             "libdlhook.so?)", me.path[0] ? me.path : libpath, pid);
    return RD_BAD_INPUT;
  }
  /* settings, then the out-buffer */
  char settings[PATH_MAX + 256];
  int sl = snprintf(settings, sizeof settings, "output=%s/\nduration=%s\nstacks=%s\n", outabs,
                    o->duration ? o->duration : "", o->stacks ? o->stacks : "");
  size_t dlen = (size_t)sl + 1 + OUT_CAP;
  char *block = rd_xmalloc(dlen);
  memcpy(block, settings, (size_t)sl + 1);
  memset(block + sl + 1, 0, OUT_CAP);
  uint64_t sargs[3] = {ARG_DATA | 0, ARG_DATA | (uint64_t)(sl + 1), OUT_CAP};
  uint64_t res = 0;
  int cr = remote_call(tg, c, start_a, 3, sargs, block, dlen, &res, 60, "dlhook_attach_start");
  char msg[OUT_CAP + 1];
  memcpy(msg, block + sl + 1, OUT_CAP);
  msg[OUT_CAP] = 0;
  free(block);
  if (cr != 0) return RD_BAD_INPUT;
  switch ((int)res) {
    case AT_OK:
      printf("dlhook: attached to process %ld; recording to %s\n", pid, msg);
      printf("dlhook: stop with `dlhook detach %ld`%s\n", pid,
             o->duration ? " (or wait for --duration)" : "");
      return RD_OK;
    case AT_ALREADY:
      rd_error("attach: process %ld is already attached (recording to %s); `dlhook detach %ld` "
               "first", pid, msg, pid);
      break;
    case AT_PRELOADED:
      rd_error("attach: process %ld already runs under dlhook (LD_PRELOAD or "
               "CUDA_INJECTION64_PATH); its trace is being written already", pid);
      break;
    default:
      rd_error("attach: dlhook could not start recording in process %ld: %s", pid,
               msg[0] ? msg : "unknown error");
      break;
  }
  return RD_BAD_INPUT;
}

int cmd_attach(int argc, char **argv) {
  attach_opts o = {.out = "."};
  int rc = read_attach_args(&o, argc, argv);
  if (rc >= 0) return rc;
  long pid = o.pid;

  char *libpath = find_lib(o.lib);
  if (!libpath) {
    rd_error("attach: cannot find %s; use --lib PATH", o.lib ? o.lib : "libdlhook.so next to dlhook or in ../lib");
    return RD_BAD_INPUT;
  }
  rc = check_target("attach", pid);
  if (rc) { free(libpath); return rc; }
  mapping m;
  memset(&m, 0, sizeof m);
  if (find_mapping(pid, is_cuda_lib, NULL, &m) != 0) {
    rd_error("attach: process %ld has no CUDA library loaded (libcuda, libcudart, libcublas, "
             "libcudnn, libnccl): nothing to record; attach once it uses CUDA", pid);
    free(libpath);
    return RD_BAD_INPUT;
  }
  if (mkdirs(o.out) < 0) {
    rd_error("attach: cannot create output directory %s: %s", o.out, strerror(errno));
    free(libpath);
    return RD_BAD_INPUT;
  }
  char *outabs = realpath(o.out, NULL);
  if (!outabs) {
    rd_error("attach: %s: %s", o.out, strerror(errno));
    free(libpath);
    return RD_BAD_INPUT;
  }
  uint64_t dlopen_a, dlerror_a, dlopen_flags = 0x2 /* RTLD_NOW */;
  if (find_dlopen(pid, &dlopen_a, &dlerror_a, &dlopen_flags) != 0) {
    rd_error("attach: cannot find dlopen in process %ld (glibc is needed: dlopen in libc.so.6 "
             "since 2.34, libdl.so.2 or __libc_dlopen_mode before)", pid);
    free(libpath); free(outabs);
    return RD_BAD_INPUT;
  }
  /* The marker name the constructor recognises (see the header comment). */
  char tmpl[PATH_MAX];
  const char *tmpdir = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/dlhook-attach.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(tmpl)) {
    rd_error("attach: cannot create a temporary directory (%s): %s", tmpl, strerror(errno));
    free(libpath); free(outabs);
    return RD_BAD_INPUT;
  }
  chmod(tmpl, 0755);
  char link[PATH_MAX + 32];
  snprintf(link, sizeof link, "%s/libdlhook-attach.so", tmpl);
  if (symlink(libpath, link) != 0) {
    rd_error("attach: cannot create %s: %s", link, strerror(errno));
    rmdir(tmpl);
    free(libpath); free(outabs);
    return RD_BAD_INPUT;
  }

  target tg = {.pid = pid, .memfd = -1, .cmd = "attach", .verbose = o.verbose};
  chosen c;
  memset(&c, 0, sizeof c);
  rc = RD_BAD_INPUT;
  hold_signals(1);
  if (take(&tg, &c) == 0) {
    rc = load_and_start(&tg, &c, &o, libpath, link, outabs, dlopen_a, dlerror_a, dlopen_flags);
    give_back(&tg, &c);
  }
  release_all(&tg);
  hold_signals(0);
  unlink(link);
  rmdir(tmpl);
  free(tg.t);
  free(libpath);
  free(outabs);
  return rc;
}

int cmd_detach(int argc, char **argv) {
  const char *pids = NULL;
  int verbose = 0, opt;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_detach_spec, argc, argv);
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == 'v') verbose = 1;
    else if (pids) return rd_usage_error("detach", "expected a PID");
    else pids = g.arg;
  }
  if (opt < 0) return g.status;
  if (!pids) return rd_usage_error("detach", "expected a PID");
  long pid = parse_pid("detach", pids);
  if (pid < 0) return RD_USAGE;
  int rc = check_target("detach", pid);
  if (rc) return rc;
  mapping me;
  memset(&me, 0, sizeof me);
  if (find_mapping(pid, is_dlhook, NULL, &me) != 0) {
    rd_error("detach: process %ld does not have libdlhook.so loaded: not attached", pid);
    return RD_BAD_INPUT;
  }
  uint64_t stop_a = remote_symbol(pid, &me, "dlhook_attach_stop");
  if (!stop_a) {
    rd_error("detach: %s in process %ld has no dlhook_attach_stop", me.path, pid);
    return RD_BAD_INPUT;
  }
  target tg = {.pid = pid, .memfd = -1, .cmd = "detach", .verbose = verbose};
  chosen c;
  memset(&c, 0, sizeof c);
  rc = RD_BAD_INPUT;
  hold_signals(1);
  if (take(&tg, &c) == 0) {
    char *buf = rd_xmalloc(OUT_CAP);
    memset(buf, 0, OUT_CAP);
    uint64_t args[2] = {ARG_DATA | 0, OUT_CAP}, res = 0;
    if (remote_call(&tg, &c, stop_a, 2, args, buf, OUT_CAP, &res, 60, "dlhook_attach_stop") == 0) {
      buf[OUT_CAP - 1] = 0;
      if (res == AT_OK) {
        printf("dlhook: detached from process %ld; wrote %s\n", pid, buf);
        rc = RD_OK;
      } else if (res == AT_PRELOADED) {
        rd_error("detach: process %ld runs under dlhook from its start (LD_PRELOAD or "
                 "CUDA_INJECTION64_PATH), not attached: its trace ends when it exits (dlhook ctl "
                 "and capture ranges choose what is recorded)", pid);
      } else if (res == AT_NOT_ATTACHED) {
        rd_error("detach: process %ld is not attached (never attached, already detached, or "
                 "its --duration ended)%s%s", pid, buf[0] ? "; last trace: " : "", buf);
      } else {
        rd_error("detach: %s", buf[0] ? buf : "failed");
      }
    }
    free(buf);
    give_back(&tg, &c);
  }
  release_all(&tg);
  hold_signals(0);
  free(tg.t);
  return rc;
}

#endif
