/* Makes 3 runtime calls, then starts itself again with an empty environment, by MODE:
 *   execve     replaces itself (execve with envp = {NULL})
 *   spawn      posix_spawn a child with envp = {NULL} and waits for it
 *   execvp     clearenv() then execvp
 * The started program ("child" as argv[1]) makes 5 calls and exits 0. */
#include <cuda_runtime_api.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int n;
  if (argc > 1 && !strcmp(argv[1], "child")) {
    for (int i = 0; i < 5; i++) cudaGetDeviceCount(&n);
    printf("child LD_PRELOAD=%s\n", getenv("LD_PRELOAD") ? "set" : "unset");
    return 0;
  }
  const char *mode = argc > 1 ? argv[1] : "execve";
  for (int i = 0; i < 3; i++) cudaRuntimeGetVersion(&n);
  char *cargv[] = {argv[0], "child", NULL};
  char *empty[] = {NULL};
  fflush(stdout);
  if (!strcmp(mode, "execve")) {
    execve("/proc/self/exe", cargv, empty);
  } else if (!strcmp(mode, "execvp")) {
    clearenv();
    execvp(argv[0], cargv);
  } else if (!strcmp(mode, "spawn")) {
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, cargv, empty) != 0) return 2;
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
  }
  perror("exec");
  return 1;
}
