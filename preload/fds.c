/* fds.c — file descriptors that dlhook's code creates live above the program's range.
 *
 * Programs close every fd (daemons, closefrom, close_range) or dup2() their own files over low
 * numbers (test harnesses, shells). An fd of dlhook's at a low number would then be the program's
 * file, and dlhook would write into it. The trace fd is moved up by writer.c. The other one is
 * libunwind's: it validates memory by writing one byte into a pipe it makes with pipe2() on its
 * first use (in a program thread, at the first call stack), and when a read of that pipe fails it
 * closes both numbers and makes a new pipe. pipe2() is wrapped: a pipe made by libunwind (the
 * caller is libunwind.so or libdlhook.so itself, which has no other use for pipes) is moved up,
 * so the program's low numbers are neither taken nor, later, closed or written by libunwind.
 *
 * Moving fds up keeps the program's numbers, not its budget: every fd counts against the soft
 * RLIMIT_NOFILE (numbers above it do not exist), and under RLIMIT_NOFILE=64 the program had 3
 * fds fewer. libunwind needs no pipe, only one fd that it can read one byte from (or get EAGAIN)
 * and write one byte of memory into (EFAULT when that memory is not readable): a datagram
 * socket connected to itself is such an fd, and libunwind gets it as both "ends" of its pipe.
 * dlhook then holds two fds: the trace and that socket (a pipe where sockets are refused).
 * libunwind closes both "ends" when a read fails (the program closed the number): the second
 * close of the same number fails, unless another thread of the program took the number in the
 * instant between the two, the same window the two numbers of a pipe had. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <stdint.h>
#include <unistd.h>

#include "dlh_internal.h"

int dlh_fd_floor(void) {
  struct rlimit rl;
  rlim_t lim = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < lim) lim = rl.rlim_cur;
  return lim < 128 ? -1 : (int)(lim - 64);
}

/* Moves fd (just made by dlhook's code) to the lowest free number at or above dlh_fd_floor(),
 * close-on-exec. The low number is closed only while it still is the same file (another thread
 * of the program may dup2() over it at any moment). Returns the new fd, or fd unchanged. */
int dlh_fd_move_up(int fd) {
  int floor = dlh_fd_floor();
  struct stat a, b;
  if (floor < 0 || fd >= floor || fstat(fd, &a) != 0) return fd;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
  if (hi < 0) return fd;
  if (fstat(hi, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    close(hi); /* fd was replaced before the copy: hi is a copy of the program's file */
    return fd;
  }
  if (fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) close(fd);
  return hi;
}

static int (*real_pipe2)(int[2], int);

/* The address ranges of libunwind's code (a libunwind*.so, and libdlhook.so itself, which links
 * libunwind in some builds and makes no pipes of its own), found once in the constructor after
 * unwind/ loaded libunwind: the pipe2() wrapper may run in a signal handler (a call stack taken
 * in a handler), where dladdr and dlsym (locks, malloc) must not be called. */
#define NRANGES 8
static struct { uintptr_t lo, hi; } ranges[NRANGES];
static int nranges;

static int add_ranges(struct dl_phdr_info *info, size_t size, void *self) {
  (void)size;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (uintptr_t)self - lo < ph->p_memsz) mine = 1;
  }
  if (!mine && strncmp(base, "libunwind", 9) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum && nranges < NRANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    ranges[nranges].lo = info->dlpi_addr + ph->p_vaddr;
    ranges[nranges].hi = ranges[nranges].lo + ph->p_memsz;
    nranges++;
  }
  return 0;
}

/* Constructor, first of all (lookups only; also under secure execution): the real pipe2. */
void dlh_fds_resolve(void) {
  real_pipe2 = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
}

/* Constructor, after dlh_stacks_init (libunwind is loaded): where libunwind's code is. */
void dlh_fds_init(void) {
  nranges = 0;
  dl_iterate_phdr(add_ranges, (void *)(uintptr_t)&dlh_fds_init);
}

static int from_unwinder(void *pc) {
  for (int i = 0; i < nranges; i++)
    if ((uintptr_t)pc - ranges[i].lo < ranges[i].hi - ranges[i].lo) return 1;
  return 0;
}

/* One fd that behaves as libunwind's validation pipe: a Unix datagram socket bound to an
 * automatic (abstract) name and connected to itself. Returns it, or -1. */
static int self_socket(int flags) {
  int type = SOCK_DGRAM | SOCK_CLOEXEC | (flags & O_NONBLOCK ? SOCK_NONBLOCK : 0);
  int fd = socket(AF_UNIX, type, 0);
  if (fd < 0) return -1;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  socklen_t len = sizeof(sa_family_t); /* autobind */
  if (bind(fd, (struct sockaddr *)&a, len) != 0 ||
      (len = sizeof a, getsockname(fd, (struct sockaddr *)&a, &len)) != 0 ||
      connect(fd, (struct sockaddr *)&a, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

DLH_EXPORT int pipe2(int fds[2], int flags) {
  if (!real_pipe2) real_pipe2 = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2"); /* before init */
  if (!real_pipe2) { errno = ENOSYS; return -1; }
  if ((flags & O_CLOEXEC) && from_unwinder(__builtin_return_address(0))) {
    int e = errno, fd = self_socket(flags);
    if (fd >= 0) {
      fds[0] = fds[1] = dlh_fd_move_up(fd);
      errno = e;
      return 0;
    }
  }
  int r = real_pipe2(fds, flags);
  if (r == 0 && (flags & O_CLOEXEC) && from_unwinder(__builtin_return_address(0))) {
    int e = errno;
    fds[0] = dlh_fd_move_up(fds[0]);
    fds[1] = dlh_fd_move_up(fds[1]);
    errno = e;
  }
  return r;
}
