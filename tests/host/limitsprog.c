/* limitsprog.c — ordinary programs living within limits the system or they themselves set (a
 * seccomp filter, file descriptor and address-space limits, their own file on fd 2), for the
 * tests/host/ scenarios. Every call is into the real CUDA runtime (no GPU needed: calls fail,
 * and are still recorded). Each mode prints what the program observed; the tests compare it with
 * an untraced run.
 *   limitsprog nothreads N   installs a seccomp filter that refuses new threads (clone with
 *                            CLONE_THREAD: EPERM; clone3: ENOSYS, as container runtimes answer
 *                            for calls they do not know), makes N calls, says what its own
 *                            pthread_create returned
 *   limitsprog stderr FILE N closes fd 2 and opens FILE (its data file, which gets fd 2), makes
 *                            N calls, writes its own lines to fd 2, exits 0
 *   limitsprog nofile N      makes N calls, then opens /dev/null until EMFILE (three times,
 *                            closing them in between), prints the most it could open, makes
 *                            N calls more
 *   limitsprog as MB N       allocates and touches MB MiB at start-up (what a program loads
 *                            before its first CUDA call: libraries, data), then makes N
 *                            calls; says whether it could, and prints its VmPeak on stderr */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void calls(long n) {
  int c;
  for (long i = 0; i < n; i++) cudaGetDeviceCount(&c);
}

/* ---------------------------------------------------------------- nothreads */

static void *nothing(void *arg) { return arg; }

static int mode_nothreads(long n) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    printf("no seccomp filter: %s\n", strerror(errno));
    return 77;
  }
  calls(n);
  pthread_t t;
  int r = pthread_create(&t, NULL, nothing, NULL);
  if (r == 0) pthread_join(t, NULL);
  printf("%ld calls; own pthread_create: %s\n", n, r ? strerror(r) : "ok");
  return 0;
}

/* ---------------------------------------------------------------- stderr */

static int mode_stderr(const char *file, long n) {
  close(2);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd != 2) return 2;
  calls(n);
  for (int i = 0; i < 3; i++) dprintf(2, "data line %d\n", i);
  calls(n);
  dprintf(2, "last data line\n");
  return 0;
}

/* ---------------------------------------------------------------- nofile */

static int mode_nofile(long n) {
  calls(n);
  /* The most it could open in three tries, 200 ms apart: an fd dlhook holds only for a moment
   * (a file read while symbolizing) is not what this measures. */
  static int mine[1 << 16];
  int best = 0, e = 0;
  for (int round = 0; round < 3; round++) {
    usleep(200 * 1000);
    int count = 0, fd;
    while (count < (int)(sizeof mine / sizeof *mine) && (fd = open("/dev/null", O_RDONLY)) >= 0)
      mine[count++] = fd;
    e = errno;
    if (count > best) best = count;
    while (count > 0) close(mine[--count]);
  }
  printf("opened %d files (%s)\n", best, strerror(e));
  calls(n);
  return 0;
}

/* ---------------------------------------------------------------- as */

static long vm_peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmPeak:", 7)) kb = atol(line + 7);
  if (f) fclose(f);
  return kb;
}

static int mode_as(long mb, long n) {
  size_t bytes = (size_t)mb << 20;
  char *p = malloc(bytes);
  if (!p) {
    printf("cannot allocate %ld MiB\n", mb);
    return 1;
  }
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1; /* its libraries and data, at start-up */
  calls(n);
  printf("allocated %ld MiB, then made %ld calls\n", mb, n);
  fprintf(stderr, "vm_peak_kb %ld\n", vm_peak_kb());
  free(p);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) { fprintf(stderr, "usage: limitsprog MODE ARGS (see the header)\n"); return 2; }
  const char *m = argv[1];
  long n = argc > 2 ? atol(argv[argc - 1]) : 100;
  if (!strcmp(m, "nothreads")) return mode_nothreads(n);
  if (!strcmp(m, "stderr") && argc > 3) return mode_stderr(argv[2], n);
  if (!strcmp(m, "nofile")) return mode_nofile(n);
  if (!strcmp(m, "as") && argc > 3) return mode_as(atol(argv[2]), n);
  fprintf(stderr, "limitsprog: unknown mode %s\n", m);
  return 2;
}
