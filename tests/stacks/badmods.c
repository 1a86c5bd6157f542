/* badmods — loads each library named on the command line (LIB:ACTION), calls its badmod_call()
 * (one cudaGetDeviceCount), then does ACTION to it: keep, close (dlclose), garbage (a file of
 * garbage renamed over its path: the mapping stays, the file on disk is no ELF), unlink.
 * Prints one line per library; exit 0 when every library loaded and was called. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[i]);
    char *action = strrchr(path, ':');
    if (!action) return 2;
    *action++ = 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*call)(void) = h ? (int (*)(void))dlsym(h, "badmod_call") : NULL;
    if (!call) { fprintf(stderr, "%s: %s\n", path, dlerror()); rc = 1; continue; }
    int r = call();
    if (!strcmp(action, "close")) {
      dlclose(h);
    } else if (!strcmp(action, "garbage")) {
      char tmp[4200];
      snprintf(tmp, sizeof tmp, "%s.tmp", path);
      int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      static const char junk[] = "\x7f" "ELF\x02\x01\x01 this is not an object file at all";
      for (int k = 0; k < 64; k++) (void)!write(fd, junk, sizeof junk);
      close(fd);
      rename(tmp, path);
    } else if (!strcmp(action, "unlink")) {
      unlink(path);
    }
    printf("%s %s: %d\n", strrchr(path, '/') ? strrchr(path, '/') + 1 : path, action, r);
  }
  return rc;
}
