/* silentprog.c — programs whose calls dlhook used to lose without a word (tests/host/t_*.sh of
 * issue 39's "silent loss" group). Every call is into the real CUDA runtime (no GPU needed:
 * calls fail, and are still recorded). Each mode prints what the program did.
 *   silentprog goes-on N       N calls, SIGTERM to itself, N more calls (as pid 1 of a PID
 *                              namespace, where the default action of SIGTERM is to go on)
 *   silentprog goes-on-once N  the same with a one-shot handler (SA_RESETHAND) that prints,
 *                              and a second SIGTERM, under the default, after N more calls
 *   silentprog reraise N       its own SIGTERM handler puts the default back and re-raises;
 *                              N calls, then SIGTERM to itself (run with SIGTERM ignored at
 *                              start, as `nohup` or a shell's `trap '' TERM` leave it)
 *   silentprog dfl N           puts SIGTERM's default action back, N calls, raise(SIGTERM)
 *   silentprog daemon N M      N calls, daemon(3) (the parent ends in libc's own _exit), then
 *                              M calls in the daemon, which says "daemon done" and exits
 *   silentprog rmdir DIR N     N calls, a pause of 0.3 s, removes DIR and the files in it (the
 *                              trace's), N calls */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void calls(long n) {
  int c;
  for (long i = 0; i < n; i++) cudaGetDeviceCount(&c);
}

static void on_term_once(int sig) { (void)sig; write(1, "handler ran\n", 12); }

static void on_term(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
}

static int mode_rmdir(const char *dir, long n) {
  calls(n);
  usleep(300 * 1000); /* the trace's first frames are written (DLHOOK_FLUSH_MS=100) */
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d) closedir(d);
  if (rmdir(dir) != 0) perror("rmdir");
  calls(n);
  printf("removed %s between the calls\n", dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: silentprog MODE N...\n"); return 2; }
  const char *m = argv[1];
  long n = atol(argv[argc > 3 && !strcmp(m, "rmdir") ? 3 : 2]);
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(m, "goes-on")) {
    calls(n);
    kill(getpid(), SIGTERM);
    calls(n);
    printf("pid %d went on after SIGTERM\n", (int)getpid());
    return 0;
  }
  if (!strcmp(m, "goes-on-once")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term_once;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGTERM, &sa, NULL);
    calls(n);
    kill(getpid(), SIGTERM);
    calls(n);
    kill(getpid(), SIGTERM);
    calls(n);
    printf("pid %d went on after SIGTERM\n", (int)getpid());
    return 0;
  }
  if (!strcmp(m, "reraise")) {
    signal(SIGTERM, on_term);
    calls(n);
    kill(getpid(), SIGTERM);
    pause();
    return 1;
  }
  if (!strcmp(m, "dfl")) {
    signal(SIGTERM, SIG_DFL);
    calls(n);
    raise(SIGTERM);
    return 1;
  }
  if (!strcmp(m, "daemon") && argc > 3) {
    calls(n);
    if (daemon(1, 1) != 0) { perror("daemon"); return 1; }
    calls(atol(argv[3]));
    printf("daemon done\n");
    return 0;
  }
  if (!strcmp(m, "rmdir") && argc > 3) return mode_rmdir(argv[2], n);
  fprintf(stderr, "silentprog: unknown mode %s\n", m);
  return 2;
}
