/* runner.c — runs a command and reports how it ended, for the reliability tests.
 *   runner [-k MS] [-s SIG] [-o FILE] -- CMD ARGS...
 * -k: send SIG (default SIGKILL) MS milliseconds after the start. Prints one line:
 *   status 0xWAITSTATUS exited E signal S core C kill_ns T  (T: CLOCK_MONOTONIC at the kill)
 * -o: the command's stdout goes to FILE. Exit 0, or 2 on a usage or fork error. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv) {
  long ms = -1;
  int sig = SIGKILL, a = 1;
  const char *out = NULL;
  for (; a < argc && strcmp(argv[a], "--"); a++) {
    if (!strcmp(argv[a], "-k") && a + 1 < argc) ms = atol(argv[++a]);
    else if (!strcmp(argv[a], "-s") && a + 1 < argc) sig = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-o") && a + 1 < argc) out = argv[++a];
    else { fprintf(stderr, "runner: bad option %s\n", argv[a]); return 2; }
  }
  if (a + 1 >= argc) { fprintf(stderr, "usage: runner [-k MS] [-s SIG] [-o FILE] -- CMD...\n"); return 2; }
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    if (out) {
      int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) { dup2(fd, 1); close(fd); }
    }
    execvp(argv[a + 1], argv + a + 1);
    _exit(127);
  }
  unsigned long long kill_ns = 0;
  if (ms >= 0) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
    kill_ns = mono_ns();
    kill(pid, sig);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  printf("status 0x%x exited %d signal %d core %d kill_ns %llu\n", st,
         WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0,
         WIFSIGNALED(st) ? !!WCOREDUMP(st) : 0, kill_ns);
  return 0;
}
