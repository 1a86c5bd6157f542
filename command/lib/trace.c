/* trace.c — opening traces for the dlhook subcommands: definition tables (functions, strings),
 * process info, trailer and counters, and the error reporting that goes with damaged files. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dlh_msg.h"
#include "vx.h"

/* ---------------------------------------------------------------- messages and memory */

void vx_error(const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fflush(stderr);
  va_start(ap, fmt);
  dlh_vmsg("", fmt, ap);
  va_end(ap);
}

int vx_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "dlhook%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'dlhook%s%s --help')\n", cmd ? " " : "", cmd ? cmd : "");
  return VX_USAGE;
}

int vx_is_help(const char *arg) { return !strcmp(arg, "--help") || !strcmp(arg, "-h"); }

void *vx_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
  return p;
}

void *vx_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
  return p;
}

char *vx_xstrdup(const char *s) {
  size_t n = strlen(s ? s : "") + 1;
  char *d = vx_xmalloc(n);
  memcpy(d, s ? s : "", n);
  return d;
}

/* ---------------------------------------------------------------- id map */

/* The hash of every id map of the command is keyed by a per-process random seed (vx_hash64 in
 * vx.h): ids come from the trace, and a trace built so that its ids share one slot of a fixed
 * hash would make each lookup linear (46,000 such function ids took `dlhook stats` from 0.25 s
 * to 75 s). */
uint64_t vx_hash_seed[2];

void vx_hash_seed_init(void) {
  if (vx_hash_seed[1]) return;
  uint64_t s[2] = {0, 0};
  if (getrandom(s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) { /* no entropy yet: mix */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
            (uint64_t)(uintptr_t)&ts;
    s[1] ^= (uint64_t)ts.tv_sec * 0xc2b2ae3d27d4eb4full ^ (uint64_t)(uintptr_t)s;
  }
  vx_hash_seed[0] = s[0];
  vx_hash_seed[1] = s[1] | 1;
}

uint64_t vx_hash_str(const char *s) {
  if (!vx_hash_seed[1]) vx_hash_seed_init();
  uint64_t h = 1469598103934665603ull ^ vx_hash_seed[0];
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return vx_hash64(h);
}

static size_t slot(uint32_t key, size_t cap) { return (size_t)vx_hash64(key) & (cap - 1); }

void *vx_map_get(const vx_map *m, uint32_t key) {
  if (!m->cap) return NULL;
  for (size_t i = slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->vals[i]) return NULL;
    if (m->keys[i] == key) return m->vals[i];
  }
}

void *vx_map_put(vx_map *m, uint32_t key, void *val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    vx_map n = {vx_xmalloc(nc * sizeof(uint32_t)), calloc(nc, sizeof(void *)), nc, 0};
    if (!n.vals) { vx_error("out of memory"); exit(VX_BAD_INPUT); }
    for (size_t i = 0; i < m->cap; i++)
      if (m->vals[i]) vx_map_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = n;
  }
  size_t i = slot(key, m->cap);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      void *old = m->vals[i];
      m->vals[i] = val;
      return old;
    }
  }
  m->keys[i] = key;
  m->vals[i] = val;
  m->n++;
  return NULL;
}

void vx_map_free(vx_map *m, void (*free_val)(void *)) {
  if (free_val)
    for (size_t i = 0; i < m->cap; i++)
      if (m->vals[i]) free_val(m->vals[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- traces */

static void func_free(void *p) {
  vx_func *f = p;
  if (!f) return;
  for (size_t i = 0; i < f->nargs; i++) free(f->argname[i]);
  free(f->argname);
  free(f->argtype);
  free(f->name);
  free(f);
}

int vx_trace_open(vx_trace *t, const char *path) {
  memset(t, 0, sizeof *t);
  t->path = path;
  char *err = NULL;
  t->r = dlh_reader_open(path, &err);
  if (!t->r) {
    vx_error("%s: %s", path, err ? err : "cannot open");
    free(err);
    return -1;
  }
  /* First pass: the stack definitions of the whole file (damage is reported by the second) */
  const Dlh__Packet *p;
  while (dlh_reader_next(t->r, &p) == 1) {
    switch (p->data_case) {
      case DLH__PACKET__DATA_STACK:
      case DLH__PACKET__DATA_MODULE:
      case DLH__PACKET__DATA_SYMBOL:
      case DLH__PACKET__DATA_PY_FRAME:
        vx_stacks_define(t, p);
        break;
      default:
        break;
    }
  }
  dlh_reader_close(t->r);
  t->r = dlh_reader_open(path, &err);
  if (!t->r) {
    vx_error("%s: %s", path, err ? err : "cannot open");
    free(err);
    vx_stacks_free(t);
    return -1;
  }
  t->defs_read = 1;
  return 0;
}

static void define(vx_trace *t, const Dlh__Packet *p) {
  switch (p->data_case) {
    case DLH__PACKET__DATA_FUNCTION: {
      const Dlh__FunctionDesc *d = p->function;
      vx_func *f = vx_xmalloc(sizeof *f);
      f->id = d->id;
      f->name = vx_xstrdup(d->name ? d->name : "");
      f->domain = d->has_domain ? (int)d->domain : 0;
      f->nargs = d->n_args;
      f->argname = vx_xmalloc(d->n_args * sizeof *f->argname);
      f->argtype = vx_xmalloc(d->n_args * sizeof *f->argtype);
      for (size_t i = 0; i < d->n_args; i++) {
        const Dlh__ArgDesc *a = d->args[i];
        char tmp[32];
        snprintf(tmp, sizeof tmp, "arg%zu", i);
        f->argname[i] = vx_xstrdup(a && a->name && *a->name ? a->name : tmp);
        f->argtype[i] = a && a->has_type ? a->type : 1;
      }
      func_free(vx_map_put(&t->funcs, d->id, f));
      break;
    }
    case DLH__PACKET__DATA_STRING:
      free(vx_map_put(&t->strings, p->string->id,
                      vx_xstrdup(p->string->value ? p->string->value : "")));
      break;
    case DLH__PACKET__DATA_PROCESS:
      t->have_process = 1;
      t->pid = p->process->pid;
      break;
    case DLH__PACKET__DATA_TRAILER:
      t->have_trailer = 1;
      t->trailer_records = p->trailer->records;
      t->trailer_dropped = p->trailer->dropped;
      t->pcs_unsymbolized = p->trailer->pcs_unsymbolized;
      break;
    case DLH__PACKET__DATA_COUNTERS:
      t->have_counters = 1;
      t->counters_records = p->counters->records;
      t->counters_dropped = p->counters->dropped;
      break;
    case DLH__PACKET__DATA_API:
      t->api_events += p->api->n_start_delta;
      break;
    case DLH__PACKET__DATA_STACK:
    case DLH__PACKET__DATA_MODULE:
    case DLH__PACKET__DATA_SYMBOL:
    case DLH__PACKET__DATA_PY_FRAME:
      if (!t->defs_read) vx_stacks_define(t, p);
      break;
    case DLH__PACKET__DATA_GPU:
      t->gpu_events += p->gpu->n_kind;
      break;
    default:
      break;
  }
}

int vx_trace_next(vx_trace *t, const Dlh__Packet **p) {
  int rc = dlh_reader_next(t->r, p);
  if (rc == 1) {
    t->packets++;
    define(t, *p);
  } else if (rc < 0) {
    const char *m = dlh_reader_error(t->r);
    if (dlh_reader_skipped(t->r))
      vx_error("%s: damaged trace: %s", t->path, m ? m : "read error");
    else
      vx_error("%s: damaged trace: %s (%llu complete frames read before it)", t->path,
               m ? m : "read error", (unsigned long long)dlh_reader_frames(t->r));
  }
  return rc;
}

void vx_trace_close(vx_trace *t) {
  dlh_reader_close(t->r);
  vx_map_free(&t->funcs, func_free);
  vx_map_free(&t->strings, free);
  vx_stacks_free(t);
  t->r = NULL;
}

const vx_func *vx_trace_func(const vx_trace *t, uint32_t id) { return vx_map_get(&t->funcs, id); }

const char *vx_trace_string(const vx_trace *t, uint32_t id) { return vx_map_get(&t->strings, id); }

const char *vx_domain_name(int d) {
  static const char *const names[] = {"unknown", "cudart", "driver", "cublas", "cublasLt",
                                      "cudnn",   "nccl",   "nvtx",   "dlhook"};
  return d >= 0 && d < (int)(sizeof names / sizeof *names) ? names[d] : "unknown";
}

const char *vx_func_name(const vx_trace *t, uint32_t id) {
  static char buf[32];
  const vx_func *f = vx_trace_func(t, id);
  if (f && f->name[0]) return f->name;
  snprintf(buf, sizeof buf, "fn#%u", id);
  return buf;
}

uint64_t vx_trace_records(const vx_trace *t) {
  if (t->have_trailer) return t->trailer_records;
  if (t->have_counters) return t->counters_records;
  return t->api_events + t->gpu_events;
}

uint64_t vx_trace_dropped(const vx_trace *t) {
  if (t->have_trailer) return t->trailer_dropped;
  if (t->have_counters) return t->counters_dropped;
  return 0;
}

const char *vx_gpu_kind_name(uint32_t kind) {
  static const char *const names[] = {"gpu", "kernel", "memcpy", "memset",
                                      "sync", "event", "overhead"};
  return kind < sizeof names / sizeof *names ? names[kind] : "gpu";
}

/* ---------------------------------------------------------------- JSON */

size_t vx_utf8_seq(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
  if (n == 3) {
    unsigned cp = (c & 0x0f) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
    if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  } else if (n == 4) {
    unsigned cp = (c & 0x07) << 18 | (p[1] & 0x3fu) << 12 | (p[2] & 0x3fu) << 6 | (p[3] & 0x3fu);
    if (cp < 0x10000 || cp > 0x10ffff) return 0;
  }
  return n;
}

char *vx_utf8_dup(const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t len = strlen((const char *)p), bad = 0;
  for (size_t i = 0, k; i < len; i += k ? k : 1)
    if (!(k = vx_utf8_seq(p + i))) bad++;
  char *d = vx_xmalloc(len + 2 * bad + 1), *o = d;
  for (size_t i = 0, k; i < len; i += k ? k : 1) {
    k = vx_utf8_seq(p + i);
    if (k) {
      memcpy(o, p + i, k);
      o += k;
    } else {
      memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
      o += 3;
    }
  }
  *o = 0;
  return d;
}

/* One character of a terminal cell: its bytes as shown (escaped or not) and its length in the
 * source. Returns the bytes written to out (at most 4). */
static size_t term_char(const unsigned char *p, char out[5], size_t *srclen) {
  size_t k = vx_utf8_seq(p);
  *srclen = k ? k : 1;
  /* C0, DEL, C1 (U+0080..U+009F, e.g. CSI) and bytes that are not UTF-8: shown as \xNN */
  if (k == 0 || (k == 1 && (*p < 0x20 || *p == 0x7f)) || (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
    snprintf(out, 5, "\\x%02x", k == 2 ? p[1] : p[0]);
    return 4;
  }
  memcpy(out, p, k);
  return k;
}

void vx_term_fit(char *dst, size_t cap, size_t width, const char *src) {
  const unsigned char *p = (const unsigned char *)(src ? src : "");
  char ch[5];
  size_t o = 0, cols = 0, total = 0, sl;
  if (cap < 4 * width + 4 || width < 4) { if (cap) dst[0] = 0; return; }
  /* columns of the whole text (one per character, 4 per escape), counted up to width + 1 */
  for (const unsigned char *q = p; *q && total <= width; q += sl) {
    size_t b = term_char(q, ch, &sl);
    total += b == 4 && ch[0] == '\\' ? 4 : 1; /* a 4-byte UTF-8 character never starts so */
  }
  size_t room = total > width ? width - 3 : width;
  while (*p) {
    size_t b = term_char(p, ch, &sl);
    size_t w = b == 4 && ch[0] == '\\' ? 4 : 1;
    if (cols + w > room) break;
    memcpy(dst + o, ch, b);
    o += b;
    cols += w;
    p += sl;
  }
  if (total > width) {
    memcpy(dst + o, "...", 3);
    o += 3;
    cols += 3;
  }
  while (cols < width) { dst[o++] = ' '; cols++; }
  dst[o] = 0;
}

void vx_json_str(FILE *f, const char *s) {
  if (!s) { fputs("null", f); return; }
  const unsigned char *p = (const unsigned char *)s;
  putc('"', f);
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') { putc('\\', f); putc((int)c, f); p++; continue; }
    if (c < 0x20) {
      switch (c) {
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default: fprintf(f, "\\u%04x", c);
      }
      p++;
      continue;
    }
    size_t n = vx_utf8_seq(p);
    if (n) {
      fwrite(p, 1, n, f);
      p += n;
    } else {
      fputs("\\ufffd", f);
      p++;
    }
  }
  putc('"', f);
}

void vx_json_double(FILE *f, double d) {
  if (d != d || d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
    fputs("null", f);
    return;
  }
  fprintf(f, "%.17g", d);
}

/* __cxa_demangle from the C++ runtime (linked with -lstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *vx_demangle(const char *name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  int status = 0;
  char *d = __cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(d);
    return NULL;
  }
  return d;
}
