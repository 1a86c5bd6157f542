/* output.c — the exporters' output: files written in place or atomically, gzip, directory
 * checks, safe names; and the display names of GPU records and stack frames. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rd_scan.h"

/* ---------------------------------------------------------------- output files
 *
 * Every output is written to a new file with a random name (mkstemp: O_CREAT|O_EXCL, so no
 * planted file or symlink is ever opened) in the destination's directory, and renamed into
 * place when complete: a symlink planted at the output path is replaced, never followed, and
 * readers never see half a file. The directory must belong to the user (or root) or be sticky:
 * elsewhere others could swap the file after it is written. */

typedef struct rd_out {
  FILE *f;
  char *tmp;
  struct rd_out *next;
} rd_out;
static rd_out *outs;

/* The directory part of path ("." when none), malloc'd. */
static char *dir_of(const char *path) {
  const char *sl = strrchr(path, '/');
  if (!sl) return rd_xstrdup(".");
  if (sl == path) return rd_xstrdup("/");
  char *d = rd_xstrdup(path);
  d[sl - path] = 0;
  return d;
}

int rd_dir_safe(const char *dir) {
  struct stat st;
  if (stat(dir, &st) < 0) {
    rd_error("%s: %s", dir, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    rd_error("%s: not a directory", dir);
    return -1;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
      !(st.st_mode & S_ISVTX)) {
    rd_error("%s: writable by others and not sticky (others could replace what dlhook writes "
             "there); choose a directory of your own", dir);
    return -1;
  }
  return 0;
}

/* Whether path is written into as it is instead of replaced: a device, pipe or socket (-o
 * /dev/null, a FIFO), or the user's or root's symlink to one or to /proc/self/fd/N (such as
 * /dev/stdout). Returns -1 (no), or an open fd. A symlink planted by someone else, or one to
 * a regular file, is replaced like any other path. */
static int open_in_place(const char *path) {
  struct stat l, st;
  if (lstat(path, &l) < 0) return -1;
  int dev = S_ISCHR(l.st_mode) || S_ISFIFO(l.st_mode) || S_ISSOCK(l.st_mode);
  if (!dev) {
    if (!S_ISLNK(l.st_mode) || (l.st_uid != geteuid() && l.st_uid != 0)) return -1;
    char t[64];
    ssize_t n = readlink(path, t, sizeof t - 1);
    if (n > 14) {
      t[n] = 0;
      char *end;
      long fdn = strtol(t + 14, &end, 10);
      if (!strncmp(t, "/proc/self/fd/", 14) && !*end && end != t + 14 && fdn >= 0 &&
          fdn < 1 << 20)
        return fcntl((int)fdn, F_DUPFD_CLOEXEC, 3); /* our own stdout, with its offset */
    }
    if (stat(path, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
      return -1;
  }
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
  return fd < 0 ? -2 : fd;
}

FILE *rd_create(const char *path, int gz) {
  if (!gz && !strcmp(path, "-")) return stdout;
  int fd = open_in_place(path);
  if (fd != -1) {
    FILE *f = NULL;
    if (fd >= 0 && !gz) {
      f = fdopen(fd, "wb");
    } else if (fd >= 0) {
      f = rd_gzip_fdopen(fd);
      fd = -1;
    }
    if (!f) {
      rd_error("%s: %s", path, strerror(errno ? errno : EIO));
      if (fd >= 0) close(fd);
    }
    return f; /* not registered: rd_close just closes it */
  }
  char *dir = dir_of(path);
  if (rd_dir_safe(dir) < 0) { free(dir); return NULL; }
  size_t tl = strlen(dir) + 32;
  char *tmp = rd_xmalloc(tl);
  snprintf(tmp, tl, "%s/.dlhook-out-XXXXXX", dir);
  free(dir);
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    rd_error("%s: %s", path, strerror(errno));
    free(tmp);
    return NULL;
  }
  mode_t um = umask(0);
  umask(um);
  fchmod(fd, 0666 & ~um); /* what a plain creat() would have given */
  FILE *f = NULL;
  if (!gz) {
    f = fdopen(fd, "wb");
  } else {
    f = rd_gzip_fdopen(fd); /* closes fd on failure */
    fd = -1;
  }
  if (!f) {
    if (fd >= 0) close(fd);
    rd_error("%s: cannot start %s", path, gz ? "gzip" : "writing");
    unlink(tmp);
    free(tmp);
    return NULL;
  }
  rd_out *o = rd_xmalloc(sizeof *o);
  *o = (rd_out){f, tmp, outs};
  outs = o;
  return f;
}

/* Takes f's registration off the list; returns its temporary name (malloc'd) or NULL. */
static char *out_take(FILE *f) {
  for (rd_out **pp = &outs; *pp; pp = &(*pp)->next) {
    if ((*pp)->f != f) continue;
    rd_out *o = *pp;
    char *tmp = o->tmp;
    *pp = o->next;
    free(o);
    return tmp;
  }
  return NULL;
}

/* Flushes and closes f; returns 0, or -1 after printing a write error for `path`. */
static int out_finish(FILE *f, const char *path) {
  int bad = ferror(f);
  if (fflush(f) != 0) bad = 1;
  if (fclose(f) != 0) bad = 1;
  if (bad) rd_error("%s: write error", path);
  return bad ? -1 : 0;
}

int rd_close(FILE *f, const char *path) {
  char *tmp = out_take(f);
  int rc = out_finish(f, path);
  if (!tmp) return rc;
  struct stat l;
  char lt[8] = "";
  if (rc == 0 && lstat(path, &l) == 0 &&
      ((!S_ISREG(l.st_mode) && !S_ISLNK(l.st_mode)) ||
       (S_ISLNK(l.st_mode) && readlink(path, lt, sizeof lt - 1) > 0 && !strncmp(lt, "/proc/", 6)))) {
    /* a directory, a device, a link into /proc: never replaced */
    rd_error("%s: exists and is not a file", path);
    rc = -1;
  }
  if (rc == 0 && rename(tmp, path) < 0) {
    rd_error("%s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc < 0) unlink(tmp);
  free(tmp);
  return rc;
}

char *rd_close_new(FILE *f, const char *dir, const char *stem, const char *ext) {
  char *tmp = out_take(f);
  size_t cap = strlen(dir) + strlen(stem) + strlen(ext) + 32;
  char *path = rd_xmalloc(cap);
  snprintf(path, cap, "%s/%s%s", dir, stem, ext);
  int rc = out_finish(f, path);
  if (rc == 0 && tmp) {
    for (unsigned i = 2;; i++) {
      /* link() never replaces: a name taken (by another trace of this export, an earlier
       * export, or anyone) moves this one on to stem-2, stem-3, ... */
      if (link(tmp, path) == 0) break;
      if (errno != EEXIST || i > 100000) {
        rd_error("%s: %s", path, strerror(errno));
        rc = -1;
        break;
      }
      snprintf(path, cap, "%s/%s-%u%s", dir, stem, i, ext);
    }
  }
  if (tmp) unlink(tmp);
  free(tmp);
  if (rc < 0) { free(path); return NULL; }
  return path;
}

void rd_safe_name(char *dst, size_t cap, const char *src, const char *dflt) {
  size_t o = 0;
  if (!cap) return;
  for (const char *s = src ? src : ""; *s && o + 1 < cap && o < 64; s++) {
    unsigned char c = (unsigned char)*s;
    int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || (c == '.' && o > 0);
    dst[o++] = keep ? (char)c : '_';
  }
  dst[o] = 0;
  if (!o) snprintf(dst, cap, "%s", dflt);
}

int rd_mkdirs(const char *path) {
  char *d = rd_xstrdup(path);
  for (char *p = d + 1;; p++) {
    if (*p == '/' || !*p) {
      char c = *p;
      *p = 0;
      if (mkdir(d, 0777) < 0 && errno != EEXIST) {
        rd_error("%s: %s", d, strerror(errno));
        free(d);
        return -1;
      }
      *p = c;
      if (!c) break;
    }
  }
  free(d);
  return 0;
}

const char *rd_memcpy_kind(uint64_t k) {
  static const char *const n[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                  "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof n / sizeof *n ? n[k] : "Unknown";
}

const char *rd_gpu_name(const rd_trace *t, const rd_gpu *g, char *buf, size_t n) {
  if (g->kname && *g->kname) return g->kname;
  switch (g->kind) {
    case 1: snprintf(buf, n, g->name ? "kernel#%u" : "kernel", g->name); break;
    case 2: snprintf(buf, n, "Memcpy %s", rd_memcpy_kind(g->nvals > 1 ? g->vals[1] : 0)); break;
    case 3: snprintf(buf, n, "Memset"); break;
    case 4: snprintf(buf, n, "Sync"); break;
    default: snprintf(buf, n, "%s", rd_gpu_kind_name(g->kind)); break;
  }
  return buf;
}

const char *rd_frame_name(const rd_frame *fr, char *buf, size_t n) {
  const char *name = fr->function;
  if ((!name || !*name) && fr->python && fr->file) name = fr->file;
  if (name && *name) return name;
  const char *m = fr->module ? strrchr(fr->module, '/') : NULL;
  m = m ? m + 1 : fr->module;
  if (m) { /* stable across runs: the address in the file, not the ASLR address; the name cut
            * at a character boundary */
    int len = (int)strnlen(m, 60);
    while (len > 0 && ((unsigned char)m[len] & 0xc0) == 0x80) len--;
    if (fr->has_modoff) snprintf(buf, n, "%.*s+0x%" PRIx64, len, m, fr->modoff);
    else snprintf(buf, n, "[%.*s]", len, m);
  }
  else snprintf(buf, n, "0x%" PRIx64, fr->pc);
  return buf;
}

void rd_put_varint(FILE *f, uint64_t v) {
  while (v >= 0x80) {
    putc((int)(v & 0x7f) | 0x80, f);
    v >>= 7;
  }
  putc((int)v, f);
}

