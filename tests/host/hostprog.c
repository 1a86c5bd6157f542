/* hostprog.c — ordinary programs doing what real programs do to their process (signals, fds,
 * fork and _exit, resource limits, alternate stacks), for the tests/host/ scenarios. Every call
 * is into the real CUDA runtime (no GPU needed: calls fail, and are still recorded). Each mode
 * prints what the program observed; the tests compare it with an untraced run.
 *   hostprog eintr             SIGTERM handler without SA_RESTART; a blocking read() must end
 *                              with EINTR when SIGTERM comes (a child sends it once the read
 *                              blocks, then, 3 s later, a byte: a read that was restarted
 *                              returns 1 instead)
 *   hostprog workers EXIT N... a helper thread polls CUDA; one worker per N is forked, makes N
 *                              cudaGetDeviceCount calls and ends with EXIT (_exit, _Exit,
 *                              quick_exit)
 *   hostprog fds FILE N        N calls; closes every fd >= 3, opens FILE (its own output) and
 *                              dup2()s it over 3..20; N more calls (with pauses), writing lines
 *                              to FILE; prints its own view of FILE and of its fd numbers (the
 *                              lowest free fd after the first calls, the number FILE got)
 *   hostprog fsize N           RLIMIT_FSIZE of 8 bytes, then N calls and a line on stdout
 *   hostprog clearenv N        clearenv(), then a forked child makes N calls; parent waits
 *   hostprog overflow N        N calls, then endless recursion: a stack overflow (SIGSEGV)
 *   hostprog ownstack N        installs its own alternate signal stack, makes N calls (in the
 *                              main thread and a new thread), says whether its stack is still
 *                              the main thread's one
 *   hostprog usr2 N            has its own SIGUSR2 handler (it prints "got K"); prints "ready",
 *                              makes calls until the handler ran 3 times (or 20 s), says how
 *                              often it ran; N: unused
 *   hostprog dlopen LIB N      says whether it runs under secure execution (AT_SECURE), loads
 *                              LIB with dlopen (as a CUDA injection library would be) and makes
 *                              N calls through it */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void calls(long n) {
  int c;
  for (long i = 0; i < n; i++) cudaGetDeviceCount(&c);
}

/* ---------------------------------------------------------------- eintr */

static volatile sig_atomic_t got_term;
static void on_term(int sig) { (void)sig; got_term = 1; }

/* Waits until process pid is blocked in read() (/proc/PID/syscall starts with the number of
 * read), at most 10 s: a signal sent earlier would not interrupt the read. */
static void wait_in_read(pid_t pid) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
  for (int i = 0; i < 10000; i++) {
    int fd = open(path, O_RDONLY);
    ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (r > 0) {
      buf[r] = 0;
      if (atol(buf) == SYS_read && buf[0] != '-') { usleep(20 * 1000); return; }
    }
    usleep(1000);
  }
}

static int mode_eintr(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term; /* no SA_RESTART: the program wants EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  calls(100);
  int p[2];
  if (pipe(p) != 0) return 2;
  pid_t parent = getpid(), child = fork();
  if (child == 0) {
    wait_in_read(parent);
    kill(parent, SIGTERM);
    sleep(3);
    ssize_t w = write(p[1], "x", 1);
    (void)w;
    _exit(0);
  }
  char b;
  ssize_t r = read(p[0], &b, 1);
  if (r < 0 && errno == EINTR) printf("read interrupted (EINTR), handler ran: %d\n", (int)got_term);
  else printf("read returned %zd (restarted), handler ran: %d\n", r, (int)got_term);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  calls(100);
  return 0;
}

/* ---------------------------------------------------------------- workers */

static atomic_int stop_helper;
static void *helper(void *arg) {
  (void)arg;
  int d;
  while (!atomic_load(&stop_helper)) {
    cudaGetDevice(&d);
    usleep(50);
  }
  return NULL;
}

static int mode_workers(int argc, char **argv) {
  const char *how = argv[2];
  pthread_t h;
  pthread_create(&h, NULL, helper, NULL);
  usleep(2000);
  for (int i = 3; i < argc; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      calls(atol(argv[i]));
      if (!strcmp(how, "_Exit")) _Exit(0);
      if (!strcmp(how, "quick_exit")) quick_exit(0);
      _exit(0);
    }
  }
  int bad = 0, st;
  while (wait(&st) > 0)
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  atomic_store(&stop_helper, 1);
  pthread_join(h, NULL);
  printf("workers done, %d failed\n", bad);
  return bad;
}

/* ---------------------------------------------------------------- fds */

static int mode_fds(const char *file, long n) {
  calls(n);
  usleep(100 * 1000);
  int probe = open("/dev/null", O_RDONLY); /* the lowest free number: dlhook's fds are not there */
  printf("first free fd after the calls: %d\n", probe);
  close(probe);
  for (int fd = 3; fd < 1024; fd++) close(fd); /* a daemon's "close everything" */
  int own = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (own < 0) { perror("open"); return 2; }
  printf("own file opened as fd %d\n", own);
  for (int fd = 3; fd <= 20; fd++)
    if (fd != own) dup2(own, fd); /* a harness that takes over a range of numbers */
  for (int round = 0; round < 5; round++) {
    calls(n / 5);
    char line[64];
    int len = snprintf(line, sizeof line, "line %d\n", round);
    if (write(own, line, (size_t)len) != len) { perror("write"); return 3; }
    usleep(60 * 1000); /* several flush intervals of DLHOOK_FLUSH_MS=20 */
  }
  char buf[4096];
  ssize_t r = pread(own, buf, sizeof buf - 1, 0);
  buf[r > 0 ? r : 0] = 0;
  printf("own file (%zd bytes):\n%s", r, buf);
  return 0;
}

/* ---------------------------------------------------------------- fsize */

static int mode_fsize(long n) {
  struct rlimit rl = {8, 8};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) { perror("setrlimit"); return 2; }
  calls(n);
  printf("made %ld calls under an 8-byte file size limit\n", n);
  return 0;
}

/* ---------------------------------------------------------------- clearenv */

static int mode_clearenv(long n) {
  calls(10);
  clearenv();
  pid_t pid = fork();
  if (pid == 0) {
    calls(n);
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return 0;
}

/* ---------------------------------------------------------------- overflow */

static volatile long limit = -1; /* never reached: the stack ends first */
static int recurse(volatile char *prev, long depth) {
  volatile char pad[4096];
  pad[0] = (char)depth;
  pad[4095] = prev ? prev[0] : 0;
  if (depth == limit) return 0;
  return recurse(pad, depth + 1) + pad[100];
}

static int mode_overflow(long n) {
  calls(n);
  printf("made %ld calls, now overflowing the stack\n", n);
  fflush(stdout);
  return recurse(NULL, 0);
}

/* ---------------------------------------------------------------- ownstack */

static char own_stack[256 * 1024];

static void *thread_calls(void *arg) {
  calls((long)arg);
  stack_t cur;
  sigaltstack(NULL, &cur);
  return (void *)(long)!(cur.ss_flags & SS_DISABLE);
}

static int mode_ownstack(long n) {
  stack_t ss = {.ss_sp = own_stack, .ss_size = sizeof own_stack, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) { perror("sigaltstack"); return 2; }
  calls(n);
  stack_t cur;
  sigaltstack(NULL, &cur);
  printf("main thread alternate stack still its own: %s\n",
         cur.ss_sp == own_stack && cur.ss_size == sizeof own_stack ? "yes" : "no");
  pthread_t t;
  void *has = NULL;
  pthread_create(&t, NULL, thread_calls, (void *)n);
  pthread_join(t, &has);
  (void)has; /* a new thread may get dlhook's stack: nothing the program can observe */
  return 0;
}

/* ---------------------------------------------------------------- usr2 */

static volatile sig_atomic_t usr2_count;
static void on_usr2(int sig) {
  (void)sig;
  usr2_count++;
  char msg[] = "got 0\n";
  msg[4] = (char)('0' + usr2_count % 10);
  ssize_t w = write(1, msg, sizeof msg - 1);
  (void)w;
}

static int mode_usr2(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr2;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, NULL);
  printf("ready\n");
  for (int i = 0; i < 20000 && usr2_count < 3; i++) {
    calls(10);
    usleep(1000);
  }
  printf("program's SIGUSR2 handler ran %d times\n", (int)usr2_count);
  return 0;
}

/* ---------------------------------------------------------------- dlopen */

static int mode_dlopen(const char *lib, long n) {
  printf("secure execution: %s\n", getauxval(AT_SECURE) ? "yes" : "no");
  int c;
  cudaGetDeviceCount(&c); /* the real runtime first */
  void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
  if (!h) { printf("dlopen failed: %s\n", dlerror()); return 1; }
  cudaError_t (*f)(int *) = (cudaError_t (*)(int *))dlsym(h, "cudaGetDeviceCount");
  if (!f) return 1;
  long ok = 0;
  for (long i = 0; i < n; i++) ok += f(&c) == cudaGetDeviceCount(&c);
  printf("%ld calls through %s\n", ok, strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) { fprintf(stderr, "usage: hostprog MODE ARGS (see the header)\n"); return 2; }
  const char *m = argv[1];
  long n = argc > 2 ? atol(argv[argc - 1]) : 1000;
  if (!strcmp(m, "eintr")) return mode_eintr();
  if (!strcmp(m, "workers") && argc > 3) return mode_workers(argc, argv);
  if (!strcmp(m, "fds") && argc > 3) return mode_fds(argv[2], n);
  if (!strcmp(m, "fsize")) return mode_fsize(n);
  if (!strcmp(m, "clearenv")) return mode_clearenv(n);
  if (!strcmp(m, "overflow")) return mode_overflow(n);
  if (!strcmp(m, "ownstack")) return mode_ownstack(n);
  if (!strcmp(m, "usr2")) return mode_usr2();
  if (!strcmp(m, "dlopen") && argc > 3) return mode_dlopen(argv[2], n);
  fprintf(stderr, "hostprog: unknown mode %s\n", m);
  return 2;
}
