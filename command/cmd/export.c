/* export.c — `dlhook export` and `dlhook diff`: option parsing, the streaming trace scan that
 * every format uses (time window, progress on stderr), and small output helpers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "export.h"

uint64_t ex_events_scanned;

/* Per-trace clock offsets set by `dlhook merge` (ns added to every time of that trace). */
static char **off_paths;
static const int64_t *off_vals;
static size_t off_n;
void ex_set_offsets(char **paths, const int64_t *offsets, size_t n) {
  off_paths = paths;
  off_vals = offsets;
  off_n = n;
}
int64_t ex_offset_of(const char *path) {
  for (size_t i = 0; i < off_n; i++)
    if (!strcmp(off_paths[i], path)) return off_vals[i];
  return 0;
}

/* ---------------------------------------------------------------- scan */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct progress {
  double t0, last, after;
  uint64_t size;
  int shown, quiet;
  const char *what, *path;
} progress;

static void progress_tick(progress *pg, dlh_reader *r) {
  double t = now_s();
  if (pg->quiet || t - pg->t0 < pg->after || t - pg->last < 0.5) return;
  pg->last = t;
  pg->shown = 1;
  double pct = pg->size ? 100.0 * (double)dlh_reader_offset(r) / (double)pg->size : 0;
  fprintf(stderr, "\rdlhook: %s %s: %5.1f%%, %" PRIu64 " events, %.0f events/s ", pg->what,
          pg->path, pct > 100 ? 100 : pct, ex_events_scanned,
          (double)ex_events_scanned / (t - pg->t0));
}

int ex_scan(const char *path, const ex_opts *o, const char *what, ex_sink *s) {
  vx_trace t;
  if (vx_trace_open(&t, path) < 0) return VX_BAD_INPUT;
  struct stat st;
  /* DLHOOK_PROGRESS_AFTER: seconds before progress shows (default 1; for tests) */
  const char *pa = getenv("DLHOOK_PROGRESS_AFTER");
  progress pg = {now_s(), 0, pa ? atof(pa) : 1.0, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0,
                 0, o->quiet, what, path};
  uint64_t base = 0, lo = 0, hi = UINT64_MAX;
  int have_base = 0;
  const Dlh__Packet *p;
  int rc, bad = 0;
  uint64_t tick = 0;
  const int64_t off = ex_offset_of(path); /* dlhook merge: this trace on the common timeline */
  vx_map knames = {0}; /* StringDef id -> demangled name (or a copy), for kernel names */
  while ((rc = vx_trace_next(&t, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_STRING && vx_map_get(&knames, p->string->id)) {
      const char *raw = p->string->value ? p->string->value : ""; /* redefined */
      char *k = vx_demangle(raw);
      free(vx_map_put(&knames, p->string->id, k ? k : vx_xstrdup(raw)));
    }
    if (p->data_case == DLH__PACKET__DATA_PROCESS && !have_base && p->process->has_start_ns) {
      base = p->process->start_ns + (uint64_t)off;
      have_base = 1;
    }
    if (o->have_window) {
      lo = base + o->win_start;
      hi = o->win_end == UINT64_MAX ? UINT64_MAX : base + o->win_end;
    }
    if (p->data_case == DLH__PACKET__DATA_API) {
      dlh_api_iter it;
      dlh_api_event ev;
      uint32_t tid = p->api->tid;
      dlh_api_iter_init(&it, p->api);
      while (dlh_api_iter_next(&it, &ev)) {
        ex_events_scanned++;
        ev.start_ns += (uint64_t)off;
        if (ev.start_ns >= hi || ev.start_ns + ev.dur_ns < lo) continue;
        if (s->api) s->api(s->ctx, &t, tid, &ev);
      }
      if (it.bad) bad = 1;
    } else if (p->data_case == DLH__PACKET__DATA_GPU) {
      const Dlh__GpuBatch *b = p->gpu;
      size_t n = b->n_kind;
      if ((b->n_start_delta && b->n_start_delta != n) || (b->n_dur && b->n_dur != n) ||
          (b->n_corr && b->n_corr != n) || (b->n_stream && b->n_stream != n) ||
          (b->n_name && b->n_name != n) || (b->n_nvals && b->n_nvals != n) ||
          (b->n_context && b->n_context != n) || (b->n_devices && b->n_devices != n)) {
        bad = 1;
        continue;
      }
      uint64_t ts = b->base_start_ns;
      size_t vpos = 0;
      for (size_t i = 0; i < n; i++) {
        ex_gpu g;
        ts += b->n_start_delta ? (uint64_t)b->start_delta[i] : 0;
        g.kind = b->kind[i];
        g.start = g.kind == 7 ? ts : ts + (uint64_t)off;
        g.dur = b->n_dur ? b->dur[i] : 0;
        g.corr = b->n_corr ? b->corr[i] : 0;
        g.stream = b->n_stream ? b->stream[i] : 0;
        g.name = b->n_name ? b->name[i] : 0;
        g.kname = NULL;
        if (g.name) {
          char *k = vx_map_get(&knames, g.name);
          if (!k) {
            const char *raw = vx_trace_string(&t, g.name);
            if (raw) {
              k = vx_demangle(raw);
              if (!k) k = vx_xstrdup(raw);
              vx_map_put(&knames, g.name, k);
            }
          }
          g.kname = k;
        }
        g.context = b->n_context ? b->context[i] : 0;
        g.device = b->n_devices ? b->devices[i] : b->device;
        g.nvals = b->n_nvals ? b->nvals[i] : 0;
        if (vpos + g.nvals > b->n_vals) { bad = 1; break; }
        g.vals = b->vals ? b->vals + vpos : NULL; /* no values at all: NULL (+ 0 is UB) */
        vpos += g.nvals;
        ex_events_scanned++;
        if (g.kind != 7 && (g.start >= hi || g.start + g.dur < lo)) continue;
        if (s->gpu) s->gpu(s->ctx, &t, &g);
      }
    } else if (s->packet) {
      s->packet(s->ctx, &t, p);
    }
    if (++tick % 64 == 0) progress_tick(&pg, t.r);
  }
  if (pg.shown) {
    double el = now_s() - pg.t0;
    fprintf(stderr, "\rdlhook: %s %s: done, %" PRIu64 " events in %.1f s%20s\n", what, path,
            ex_events_scanned, el, "");
  }
  if (bad) vx_error("%s: inconsistent event batch (skipped its remaining events)", path);
  vx_map_free(&knames, free);
  vx_trace_close(&t);
  return rc < 0 || bad ? VX_BAD_INPUT : VX_OK;
}

/* ---------------------------------------------------------------- u64 -> u32 hash map */


static size_t h64(uint64_t k, size_t cap) { return (size_t)vx_hash64(k) & (cap - 1); }


static void ex_m_grow(ex_u64map *m) {
  ex_u64map n = {0};
  n.cap = m->cap ? m->cap * 2 : 1024;
  n.keys = vx_xmalloc(n.cap * sizeof *n.keys);
  n.vals = calloc(n.cap, sizeof *n.vals);
  if (!n.vals) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i]) ex_m_put(&n, m->keys[i], m->vals[i] - 1);
  free(m->keys);
  free(m->vals);
  *m = n;
}

void ex_m_put(ex_u64map *m, uint64_t k, uint32_t v) {
  if ((m->n + 1) * 4 > m->cap * 3) ex_m_grow(m);
  size_t i = h64(k, m->cap);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) { m->vals[i] = v + 1; return; }
  m->keys[i] = k;
  m->vals[i] = v + 1;
  m->n++;
}

/* Returns 1 and sets *v when found. */
int ex_m_get(const ex_u64map *m, uint64_t k, uint32_t *v) {
  if (!m->cap) return 0;
  for (size_t i = h64(k, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) { *v = m->vals[i] - 1; return 1; }
  return 0;
}

/* Removes k (backward-shift deletion keeps probe chains intact). */
void ex_m_del(ex_u64map *m, uint64_t k) {
  if (!m->cap) return;
  size_t i = h64(k, m->cap);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k) break;
  if (!m->vals[i]) return;
  m->vals[i] = 0;
  m->n--;
  for (size_t j = (i + 1) & (m->cap - 1); m->vals[j]; j = (j + 1) & (m->cap - 1)) {
    size_t home = h64(m->keys[j], m->cap);
    /* move j back to i when i lies cyclically in [home, j) */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      m->vals[j] = 0;
      i = j;
    }
  }
}

void ex_m_free(ex_u64map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- helpers */

int ex_arg(const vx_trace *t, const dlh_api_event *ev, const char *names, uint64_t *v) {
  const vx_func *f = vx_trace_func(t, ev->fn);
  if (!f) return 0;
  for (size_t i = 0; i < f->nargs && i < ev->nargs; i++) {
    const char *a = f->argname[i];
    size_t al = strlen(a);
    for (const char *n = names; *n;) {
      const char *e = strchr(n, '|');
      size_t nl = e ? (size_t)(e - n) : strlen(n);
      if (nl == al && !strncmp(n, a, nl)) {
        *v = ev->args[i];
        return 1;
      }
      n += nl + (e != NULL);
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- output files
 *
 * Every output is written to a new file with a random name (mkstemp: O_CREAT|O_EXCL, so no
 * planted file or symlink is ever opened) in the destination's directory, and renamed into
 * place when complete: a symlink planted at the output path is replaced, never followed, and
 * readers never see half a file. The directory must belong to the user (or root) or be sticky:
 * elsewhere others could swap the file after it is written. */

typedef struct ex_out {
  FILE *f;
  char *tmp;
  struct ex_out *next;
} ex_out;
static ex_out *outs;

/* The directory part of path ("." when none), malloc'd. */
static char *dir_of(const char *path) {
  const char *sl = strrchr(path, '/');
  if (!sl) return vx_xstrdup(".");
  if (sl == path) return vx_xstrdup("/");
  char *d = vx_xstrdup(path);
  d[sl - path] = 0;
  return d;
}

int ex_dir_safe(const char *dir) {
  struct stat st;
  if (stat(dir, &st) < 0) {
    vx_error("%s: %s", dir, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    vx_error("%s: not a directory", dir);
    return -1;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
      !(st.st_mode & S_ISVTX)) {
    vx_error("%s: writable by others and not sticky (others could replace what dlhook writes "
             "there); choose a directory of your own", dir);
    return -1;
  }
  return 0;
}

static ssize_t gz_write(void *c, const char *buf, size_t n) {
  if (n == 0) return 0;
  int w = gzwrite((gzFile)c, buf, (unsigned)n);
  return w <= 0 ? -1 : w;
}

static int gz_close(void *c) { return gzclose((gzFile)c) == Z_OK ? 0 : -1; }

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

FILE *ex_create(const char *path, int gz) {
  if (!gz && !strcmp(path, "-")) return stdout;
  int fd = open_in_place(path);
  if (fd != -1) {
    FILE *f = NULL;
    if (fd >= 0 && !gz) {
      f = fdopen(fd, "wb");
    } else if (fd >= 0) {
      gzFile z = gzdopen(fd, "wb1");
      cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
      if (z && !(f = fopencookie(z, "w", io))) gzclose(z);
      fd = -1;
    }
    if (!f) {
      vx_error("%s: %s", path, strerror(errno ? errno : EIO));
      if (fd >= 0) close(fd);
    }
    return f; /* not registered: ex_close just closes it */
  }
  char *dir = dir_of(path);
  if (ex_dir_safe(dir) < 0) { free(dir); return NULL; }
  size_t tl = strlen(dir) + 32;
  char *tmp = vx_xmalloc(tl);
  snprintf(tmp, tl, "%s/.dlhook-out-XXXXXX", dir);
  free(dir);
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    vx_error("%s: %s", path, strerror(errno));
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
    gzFile z = gzdopen(fd, "wb1");
    if (z) {
      gzbuffer(z, 1 << 17);
      cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
      f = fopencookie(z, "w", io);
      if (!f) gzclose(z);
      else setvbuf(f, NULL, _IOFBF, 1 << 16);
    } else {
      close(fd);
    }
    fd = -1;
  }
  if (!f) {
    if (fd >= 0) close(fd);
    vx_error("%s: cannot start %s", path, gz ? "gzip" : "writing");
    unlink(tmp);
    free(tmp);
    return NULL;
  }
  ex_out *o = vx_xmalloc(sizeof *o);
  *o = (ex_out){f, tmp, outs};
  outs = o;
  return f;
}

/* Takes f's registration off the list; returns its temporary name (malloc'd) or NULL. */
static char *out_take(FILE *f) {
  for (ex_out **pp = &outs; *pp; pp = &(*pp)->next) {
    if ((*pp)->f != f) continue;
    ex_out *o = *pp;
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
  if (bad) vx_error("%s: write error", path);
  return bad ? -1 : 0;
}

int ex_close(FILE *f, const char *path) {
  char *tmp = out_take(f);
  int rc = out_finish(f, path);
  if (!tmp) return rc;
  struct stat l;
  char lt[8] = "";
  if (rc == 0 && lstat(path, &l) == 0 &&
      ((!S_ISREG(l.st_mode) && !S_ISLNK(l.st_mode)) ||
       (S_ISLNK(l.st_mode) && readlink(path, lt, sizeof lt - 1) > 0 && !strncmp(lt, "/proc/", 6)))) {
    /* a directory, a device, a link into /proc: never replaced */
    vx_error("%s: exists and is not a file", path);
    rc = -1;
  }
  if (rc == 0 && rename(tmp, path) < 0) {
    vx_error("%s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc < 0) unlink(tmp);
  free(tmp);
  return rc;
}

char *ex_close_new(FILE *f, const char *dir, const char *stem, const char *ext) {
  char *tmp = out_take(f);
  size_t cap = strlen(dir) + strlen(stem) + strlen(ext) + 32;
  char *path = vx_xmalloc(cap);
  snprintf(path, cap, "%s/%s%s", dir, stem, ext);
  int rc = out_finish(f, path);
  if (rc == 0 && tmp) {
    for (unsigned i = 2;; i++) {
      /* link() never replaces: a name taken (by another trace of this export, an earlier
       * export, or anyone) moves this one on to stem-2, stem-3, ... */
      if (link(tmp, path) == 0) break;
      if (errno != EEXIST || i > 100000) {
        vx_error("%s: %s", path, strerror(errno));
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

void ex_safe_name(char *dst, size_t cap, const char *src, const char *dflt) {
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

int ex_mkdirs(const char *path) {
  char *d = vx_xstrdup(path);
  for (char *p = d + 1;; p++) {
    if (*p == '/' || !*p) {
      char c = *p;
      *p = 0;
      if (mkdir(d, 0777) < 0 && errno != EEXIST) {
        vx_error("%s: %s", d, strerror(errno));
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

const char *ex_memcpy_kind(uint64_t k) {
  static const char *const n[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                  "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof n / sizeof *n ? n[k] : "Unknown";
}

const char *ex_gpu_name(const vx_trace *t, const ex_gpu *g, char *buf, size_t n) {
  if (g->kname && *g->kname) return g->kname;
  switch (g->kind) {
    case 1: snprintf(buf, n, g->name ? "kernel#%u" : "kernel", g->name); break;
    case 2: snprintf(buf, n, "Memcpy %s", ex_memcpy_kind(g->nvals > 1 ? g->vals[1] : 0)); break;
    case 3: snprintf(buf, n, "Memset"); break;
    case 4: snprintf(buf, n, "Sync"); break;
    default: snprintf(buf, n, "%s", vx_gpu_kind_name(g->kind)); break;
  }
  return buf;
}

const char *ex_frame_name(const vx_frame *fr, char *buf, size_t n) {
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

void ex_put_varint(FILE *f, uint64_t v) {
  while (v >= 0x80) {
    putc((int)(v & 0x7f) | 0x80, f);
    v >>= 7;
  }
  putc((int)v, f);
}

/* ---------------------------------------------------------------- command line */

/* "1.5", "20ms", "300us", "1000ns", "2s"; empty = `dflt`. Returns 0 or -1. */
static int parse_time(const char *s, size_t len, uint64_t dflt, uint64_t *out) {
  if (len == 0) { *out = dflt; return 0; }
  char buf[64];
  if (len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (end == buf || errno || v < 0) return -1;
  double mul = 1e9;
  if (!strcmp(end, "ns")) mul = 1;
  else if (!strcmp(end, "us")) mul = 1e3;
  else if (!strcmp(end, "ms")) mul = 1e6;
  else if (!strcmp(end, "s") || !*end) mul = 1e9;
  else return -1;
  *out = (uint64_t)(v * mul + 0.5);
  return 0;
}

static void help(void) {
  printf("usage: dlhook export --format FORMAT -o OUT [options] TRACE...\n"
         "\n"
         "Converts traces for the viewers people already use.\n"
         "\n"
         "formats:\n"
         "  kineto      PyTorch profiler Chrome-trace JSON, gzipped, one file per trace:\n"
         "              OUT/<host>_rank<R>_<pid>.<ms>.pt.trace.json.gz (Holistic Trace\n"
         "              Analysis, Perfetto UI, chrome://tracing, TensorBoard's PyTorch plugin)\n"
         "  perfetto    Perfetto's native protobuf trace (OUT is a file; streamed, interned\n"
         "              names; for traces too large for JSON): ui.perfetto.dev\n"
         "  tensorboard an xprof run: OUT/plugins/profile/<run>/rank<R>.xplane.pb\n"
         "              (tensorboard --logdir OUT, or xprof)\n"
         "  folded      flame graph stacks, one 'frame;frame;frame WEIGHT' line per stack\n"
         "  svg         interactive flame graph (zoom, search, tooltips)\n"
         "  speedscope  speedscope's JSON file format (speedscope.app)\n"
         "  pprof       gzipped profile.proto (go tool pprof, pprof -http)\n"
         "\n"
         "options:\n"
         "  -f, --format FORMAT    one of the formats above\n"
         "  -o, --output OUT       output file (directory for kineto and tensorboard)\n"
         "  --weight gpu|cpu|bytes flame graph weight: GPU time of the work a call launched,\n"
         "                         with the kernel as leaf (default); time inside the calls;\n"
         "                         bytes allocated or copied\n"
         "  --window START:END     only events that overlap this window, times from the\n"
         "                         trace's start in s (or with a unit: ns, us, ms, s); either\n"
         "                         side may be empty (\"2:\" = from 2 s to the end)\n"
         "  --step-range NAME      kineto: NVTX ranges named NAME mark profiler steps\n"
         "                         (default: ranges named like 'step N' or 'ProfilerStep#N')\n"
         "  --title TEXT           svg title\n"
         "  --keep-gpuless         also export processes that did no GPU work (launchers,\n"
         "                         shells; left out of kineto, perfetto and tensorboard by\n"
         "                         default)\n"
         "  -q, --quiet            no progress on stderr\n"
         "\n"
         "Several traces (ranks, processes) go into one flame graph, one Perfetto file or one\n"
         "xprof run; kineto writes one file per trace. Exports stream: memory stays bounded by\n"
         "the number of distinct stacks (flame graphs) or of threads and streams.\n");
}

static void diff_help(void) {
  printf("usage: dlhook diff [--weight gpu|cpu|bytes] [--window START:END] -o OUT BEFORE AFTER\n"
         "\n"
         "A differential flame graph of two traces: frames are sized by AFTER and coloured by\n"
         "the change from BEFORE (red: grew, blue: shrank; stacks only in BEFORE are shown\n"
         "with zero width in AFTER's graph and listed in the folded output).\n"
         "OUT ending in .svg writes the SVG; anything else writes folded lines\n"
         "'frame;frame;frame BEFORE AFTER'.\n");
}

static int parse_common(const char *cmd, int argc, char **argv, ex_opts *o, char **files,
                        size_t *nfiles, int *help_shown) {
  int opts_done = 0;
  *help_shown = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
#define NEED_ARG()                                                         \
  if (i + 1 >= argc) return vx_usage_error(cmd, "%s needs a value", a); \
  const char *v = argv[++i]
    if (opts_done || a[0] != '-' || !a[1]) {
      files[(*nfiles)++] = argv[i];
    } else if (!strcmp(a, "--")) {
      opts_done = 1;
    } else if (vx_is_help(a)) {
      *help_shown = 1;
      return VX_OK;
    } else if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
      NEED_ARG();
      o->format = v;
    } else if (!strncmp(a, "--format=", 9)) {
      o->format = a + 9;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      NEED_ARG();
      o->out = v;
    } else if (!strcmp(a, "--weight")) {
      NEED_ARG();
      if (!strcmp(v, "gpu")) o->weight = EX_W_GPU;
      else if (!strcmp(v, "cpu")) o->weight = EX_W_CPU;
      else if (!strcmp(v, "bytes")) o->weight = EX_W_BYTES;
      else return vx_usage_error(cmd, "--weight must be gpu, cpu or bytes, not '%s'", v);
    } else if (!strcmp(a, "--window")) {
      NEED_ARG();
      const char *c = strchr(v, ':');
      if (!c || parse_time(v, (size_t)(c - v), 0, &o->win_start) < 0 ||
          parse_time(c + 1, strlen(c + 1), UINT64_MAX, &o->win_end) < 0 ||
          o->win_end <= o->win_start)
        return vx_usage_error(cmd, "bad --window '%s' (START:END, e.g. 1.5:3 or 200ms:)", v);
      o->have_window = 1;
    } else if (!strcmp(a, "--step-range")) {
      NEED_ARG();
      o->step_range = v;
    } else if (!strcmp(a, "--title")) {
      NEED_ARG();
      o->title = v;
    } else if (!strcmp(a, "--keep-gpuless")) {
      o->keep_gpuless = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else {
      return vx_usage_error(cmd, "unknown option '%s'", a);
    }
#undef NEED_ARG
  }
  return VX_OK;
}

int cmd_export(int argc, char **argv) {
  ex_opts o = {0};
  char **files = vx_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = parse_common("export", argc, argv, &o, files, &n, &shown);
  if (rc != VX_OK || shown) {
    if (shown) help();
    free(files);
    return rc;
  }
  static const struct {
    const char *name;
    int (*run)(const ex_opts *, char **, size_t);
  } fmts[] = {{"kineto", ex_kineto},     {"perfetto", ex_perfetto},     {"tensorboard", ex_xplane},
              {"xplane", ex_xplane},     {"folded", ex_flame},          {"svg", ex_flame},
              {"speedscope", ex_flame},  {"pprof", ex_flame}};
  if (!o.format) rc = vx_usage_error("export", "no --format given");
  else if (!o.out) rc = vx_usage_error("export", "no output given (-o OUT)");
  else if (n == 0) rc = vx_usage_error("export", "no trace file given");
  else {
    rc = -1;
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
      if (!strcmp(o.format, fmts[i].name)) rc = fmts[i].run(&o, files, n);
    if (rc == -1)
      rc = vx_usage_error("export", "unknown format '%s' (kineto, perfetto, tensorboard, "
                          "folded, svg, speedscope, pprof)", o.format);
  }
  free(files);
  return rc;
}

int cmd_diff(int argc, char **argv) {
  ex_opts o = {0};
  char **files = vx_xmalloc((size_t)argc * sizeof *files);
  size_t n = 0;
  int shown, rc = parse_common("diff", argc, argv, &o, files, &n, &shown);
  if (rc != VX_OK || shown) {
    if (shown) diff_help();
    free(files);
    return rc;
  }
  if (n != 2) rc = vx_usage_error("diff", "need two traces (BEFORE AFTER), got %zu", n);
  else if (!o.out) rc = vx_usage_error("diff", "no output given (-o OUT.svg or OUT.folded)");
  else rc = ex_flame_diff(&o, files[0], files[1]);
  free(files);
  return rc;
}
