/* runstat — runs a command and appends its cost to a file, like time(1) with finer units:
 *
 *   runstat OUTFILE CMD [ARGS...]
 *
 * appends one line "wall_ns=... user_us=... sys_us=... maxrss_kb=... status=..." to OUTFILE.
 * maxrss_kb is the largest resident set of the command or any descendant it waited for
 * (getrusage's ru_maxrss for children); the command's exit status is returned. */
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: runstat OUTFILE CMD [ARGS...]\n");
    return 2;
  }
  uint64_t t0 = now();
  pid_t pid = fork();
  if (pid < 0) { perror("runstat: fork"); return 127; }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0) {}
  uint64_t wall = now() - t0;
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  FILE *f = fopen(argv[1], "a");
  if (!f) { perror(argv[1]); return code; }
  fprintf(f, "wall_ns=%llu user_us=%llu sys_us=%llu maxrss_kb=%ld status=%d\n",
          (unsigned long long)wall,
          (unsigned long long)ru.ru_utime.tv_sec * 1000000ull + (unsigned long long)ru.ru_utime.tv_usec,
          (unsigned long long)ru.ru_stime.tv_sec * 1000000ull + (unsigned long long)ru.ru_stime.tv_usec,
          ru.ru_maxrss, code);
  fclose(f);
  return code;
}
