/* output.c — where the trace may be created: the directories of DLHOOK_OUTPUT are walked one
 * component at a time, and the file is created inside the last one with openat.
 *
 * Two hazards shape it. A directory symlink planted by another user in a shared directory
 * (/tmp/shared/run -> /home/victim/.ssh) would be followed by open() wherever the
 * fs.protected_symlinks sysctl is 0: here a symlink is followed only when the user running the
 * program (or root) owns it, whatever the sysctl. And a trace must never be created inside a
 * device directory: DLHOOK_OUTPUT=/dev/null used to give /dev/null.1 (the name is taken, so the
 * next free name was created next to it); /dev (when it is a file system of its own) and
 * pseudo file systems (proc, sysfs, devpts, cgroup, ...) hold no trace. Every fd made here is
 * closed before returning, except the one returned; nothing is allocated (the first recorded
 * call, which opens the trace, may come from a signal handler). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dlh_internal.h"

/* A symlink may be followed when the user running the program, or root, owns it: one planted
 * by someone else never is. */
static int link_trusted(const struct stat *st) {
  return st->st_uid == geteuid() || st->st_uid == 0;
}

/* Opens the directory path[0..len) (O_PATH), following only trusted symlinks, at most 40.
 * Returns the fd, or -1 with errno (EPERM for a symlink of another user's). */
static int open_dir(const char *path, size_t len) {
  char rest[PATH_MAX], target[1024];
  if (len >= sizeof rest) { errno = ENAMETOOLONG; return -1; }
  memcpy(rest, path, len);
  rest[len] = 0;
  int fd = open(rest[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  size_t pos = 0;
  for (int links = 0; fd >= 0;) {
    while (rest[pos] == '/') pos++;
    if (!rest[pos]) return fd;
    size_t end = pos;
    while (rest[end] && rest[end] != '/') end++;
    char save = rest[end];
    rest[end] = 0;
    const char *c = rest + pos;
    struct stat st;
    int nfd = -1, e = 0;
    if (!strcmp(c, ".")) {
      rest[end] = save;
      pos = end;
      continue;
    }
    if (fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      e = errno;
    } else if (S_ISLNK(st.st_mode)) {
      ssize_t n = -1;
      if (!link_trusted(&st)) e = EPERM;
      else if (++links > 40) e = ELOOP;
      else if ((n = readlinkat(fd, c, target, sizeof target)) < 0) e = errno;
      else if ((size_t)n >= sizeof target ||
               (size_t)n + (save ? strlen(rest + end + 1) : 0) + 2 > sizeof rest)
        e = ENAMETOOLONG;
      if (e) {
        close(fd);
        errno = e;
        return -1;
      }
      /* The walk goes on with the link's target in place of the link. */
      size_t left = save ? strlen(rest + end + 1) : 0;
      memmove(rest + n + 1, rest + end + 1, left);
      rest[n + 1 + left] = 0;
      memcpy(rest, target, (size_t)n);
      rest[n] = '/';
      pos = 0;
      if (target[0] == '/') {
        close(fd);
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
      }
      continue;
    } else {
      /* O_NOFOLLOW: a directory replaced by a symlink since the fstatat is not followed. */
      nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (nfd < 0) e = errno;
    }
    close(fd);
    if (e) {
      errno = e;
      return -1;
    }
    fd = nfd;
    rest[end] = save;
    pos = end;
  }
  return -1;
}

/* Whether the directory fd is one no trace goes into: /dev (when it is a file system of its
 * own: a chroot whose /dev is a plain directory of the root file system cannot be told apart)
 * or a pseudo file system. */
static int device_dir(int fd) {
  struct stat d, dev, root;
  if (fstat(fd, &d) == 0 && stat("/dev", &dev) == 0 && stat("/", &root) == 0 &&
      dev.st_dev != root.st_dev && d.st_dev == dev.st_dev)
    return 1;
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return 0;
  switch ((unsigned long)fs.f_type) {
  case 0x9fa0:     /* proc */
  case 0x62656572: /* sysfs */
  case 0x1cd1:     /* devpts */
  case 0x27e0eb:   /* cgroup */
  case 0x63677270: /* cgroup2 */
  case 0x64626720: /* debugfs */
  case 0x74726163: /* tracefs */
  case 0x73636673: /* securityfs */
  case 0x19800202: /* mqueue */
  case 0xcafe4a11: /* bpf */
  case 0x62656570: /* configfs */
  case 0x6165676c: /* pstore */
  case 0xde5e81e4: /* efivarfs */
  case 0xf97cff8c: /* selinuxfs */
  case 0x42494e4d: /* binfmt_misc */
  case 0x65735543: /* fusectl */
    return 1;
  }
  return 0;
}

/* Splits path into its directory (path[0..*dlen), "." when empty) and its last component. */
static const char *split(const char *path, size_t *dlen) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    *dlen = 0;
    return path;
  }
  *dlen = slash == path ? 1 : (size_t)(slash - path);
  return slash + 1;
}

static int open_parent(const char *path, const char **base, int creating) {
  size_t dlen;
  *base = split(path, &dlen);
  if (!**base) { errno = EISDIR; return -1; }
  int dfd = dlen ? open_dir(path, dlen) : open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0 && creating && device_dir(dfd)) {
    close(dfd);
    errno = EPERM;
    return -1;
  }
  return dfd;
}

int dlh_output_open(const char *path, int flags, mode_t mode) {
  const char *base;
  int dfd = open_parent(path, &base, (flags & O_CREAT) != 0);
  if (dfd < 0) return -1;
  int fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC, mode);
  int e = errno;
  close(dfd);
  errno = e;
  return fd;
}

int dlh_output_mkdir(const char *dir, mode_t mode) {
  const char *base;
  int dfd = open_parent(dir, &base, 1);
  if (dfd < 0) return -1;
  int r = mkdirat(dfd, base, mode);
  int e = errno;
  close(dfd);
  errno = e;
  return r;
}

int dlh_output_kind(const char *path, const char **what) {
  struct stat st;
  *what = NULL;
  /* A symlink of another user's at the name itself is never followed: the trace takes the next
   * free name (dlh_output_open's O_EXCL), whatever the link points to. */
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && !link_trusted(&st)) return DLH_OUTPUT_FILE;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) {
      *what = "/dev/null";
      return DLH_OUTPUT_NULL;
    }
    *what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
          : S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device"
          : S_ISSOCK(st.st_mode) ? "a socket" : "a special file";
    return DLH_OUTPUT_SPECIAL;
  }
  const char *base;
  int dfd = open_parent(path, &base, 0);
  if (dfd < 0 && errno == EPERM) {
    *what = "a directory on the way is another user's symlink";
    return DLH_OUTPUT_SPECIAL;
  }
  if (dfd < 0) return DLH_OUTPUT_FILE; /* creating it will fail and say why */
  int dev = device_dir(dfd);
  close(dfd);
  if (dev) {
    *what = "in a device directory";
    return DLH_OUTPUT_SPECIAL;
  }
  return DLH_OUTPUT_FILE;
}
