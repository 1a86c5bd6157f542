/* inductor.c — torch.compile's generated code, read once per file per trace.
 *
 * Inductor writes each compiled graph as a Python module under /tmp/torchinductor_$USER/ (its
 * cache directory, TORCHINDUCTOR_CACHE_DIR) and runs it: a Triton kernel launched from it has
 * that file among the Python frames of its stack. Above each kernel's definition
 *
 *     # Topologically Sorted Source Nodes: [gelu, mul, add], Original ATen: [aten.gelu, aten.mul, aten.add]
 *     ...
 *     triton_poi_fused_add_gelu_mul_0 = async_compile.triton('triton_poi_fused_add_gelu_mul_0', '''
 *
 * says what it fused, and the module's call() launches it on a line `NAME.run(...)`. When the
 * writer first defines a Python frame of such a file (emit_pyframe in symbolize.c: on the writer
 * thread, never on the program's), the file is read and one InductorKernel packet per kernel is
 * written, so that the trace carries what the file says after the file is gone. Files already
 * read in this trace are remembered by a hash of their path. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind_int.h"

#define MAX_FILE (16u << 20)   /* generated modules are tens of KiB; larger is not Inductor's */
#define MAX_KERNELS 4096

static uint64_t *seen;         /* path hashes of the files read in this trace */
static size_t nseen, capseen;
static const void *seen_enc;   /* the trace (encoder) they belong to */

static uint64_t hash_path(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

int dlh_inductor_file(const char *file) { return file && strstr(file, "/torchinductor_") != NULL; }

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > MAX_FILE) {
    close(fd);
    return NULL;
  }
  size_t n = (size_t)st.st_size, got = 0;
  char *b = malloc(n + 1);
  if (!b) { close(fd); return NULL; }
  while (got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  b[got] = 0;
  *len = got;
  return b;
}

typedef struct ikernel {
  char *name, *nodes, *aten;
  uint32_t def_line;
  uint32_t *lines;
  size_t nlines, caplines;
} ikernel;

static int is_ident(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The text between "[" after `key` and the matching "]" of line [s, e), or NULL. */
static char *bracket_after(const char *s, const char *e, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = s; p + kl <= e; p++) {
    if (memcmp(p, key, kl)) continue;
    const char *a = p + kl;
    if (a >= e || *a != '[') return NULL;
    const char *z = memchr(a, ']', (size_t)(e - a));
    if (!z) return NULL;
    size_t n = (size_t)(z - a - 1);
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, a + 1, n);
    r[n] = 0;
    return r;
  }
  return NULL;
}

/* "aten.gelu, aten.mul" -> "aten::gelu, aten::mul" (torch.profiler's spelling); in place growth */
static char *aten_names(char *s) {
  if (!s) return NULL;
  size_t n = 0;
  for (const char *p = s; *p; p++) n += (p[0] == '.' && p - s >= 4 && !memcmp(p - 4, "aten", 4)) ? 2 : 1;
  char *r = malloc(n + 1);
  if (!r) return s;
  char *q = r;
  for (const char *p = s; *p; p++) {
    if (p[0] == '.' && p - s >= 4 && !memcmp(p - 4, "aten", 4)) { *q++ = ':'; *q++ = ':'; }
    else *q++ = *p;
  }
  *q = 0;
  free(s);
  return r;
}

static void add_line(ikernel *k, uint32_t line) {
  if (k->nlines && k->lines[k->nlines - 1] == line) return;
  if (k->nlines == k->caplines) {
    size_t nc = k->caplines ? k->caplines * 2 : 4;
    uint32_t *v = realloc(k->lines, nc * sizeof *v);
    if (!v) return;
    k->lines = v;
    k->caplines = nc;
  }
  k->lines[k->nlines++] = line;
}

static void parse_and_emit(struct dlh_encoder *w, const char *path, char *buf, size_t len) {
  ikernel *ks = NULL;
  size_t nk = 0, capk = 0;
  char *meta_nodes = NULL, *meta_aten = NULL; /* the metadata comment of the block above */
  int in_string = 0;                          /* inside a kernel's ''' source ''' */
  uint32_t line = 0;
  const char *end = buf + len;
  for (const char *s = buf; s < end;) {
    const char *e = memchr(s, '\n', (size_t)(end - s));
    if (!e) e = end;
    line++;
    const char *p = s;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (in_string) {
      for (const char *q = s; q + 3 <= e; q++)
        if (!memcmp(q, "'''", 3)) { in_string = 0; break; }
    } else if (p < e && *p == '#') {
      char *nodes = bracket_after(p, e, "Source Nodes: ");
      if (nodes) {
        free(meta_nodes);
        free(meta_aten);
        meta_nodes = nodes;
        meta_aten = aten_names(bracket_after(p, e, "Original ATen: "));
      }
    } else if (p < e) {
      /* NAME = async_compile.triton('NAME', ''' ... */
      const char *q = p;
      while (q < e && is_ident(*q)) q++;
      static const char def[] = " = async_compile.triton(";
      size_t nl = (size_t)(q - p);
      if (p == s && nl && (size_t)(e - q) >= sizeof def - 1 && !memcmp(q, def, sizeof def - 1)) {
        if (nk < MAX_KERNELS) {
          if (nk == capk) {
            size_t nc = capk ? capk * 2 : 16;
            ikernel *v = realloc(ks, nc * sizeof *v);
            if (!v) break;
            ks = v;
            capk = nc;
          }
          ikernel *k = &ks[nk];
          memset(k, 0, sizeof *k);
          k->name = strndup(p, nl);
          if (k->name) {
            k->nodes = meta_nodes;
            k->aten = meta_aten;
            meta_nodes = meta_aten = NULL;
            k->def_line = line;
            nk++;
          }
        }
        int quotes = 0; /* the source opens on this line; closes on it only when there are two */
        for (const char *r = q; r + 3 <= e; r++)
          if (!memcmp(r, "'''", 3)) { quotes++; r += 2; }
        in_string = quotes == 1;
      } else {
        /* NAME.run(... : a launch of a kernel defined above (its lines up to the closing ')') */
        if (nl && q < e && *q == '.' && (size_t)(e - q) >= 5 && !memcmp(q, ".run(", 5)) {
          for (size_t i = 0; i < nk; i++) {
            if (strlen(ks[i].name) != nl || memcmp(ks[i].name, p, nl)) continue;
            int depth = 0;
            const char *ls = s, *le = e;
            uint32_t ln = line;
            for (;;) {
              for (const char *r = ls; r < le; r++) depth += *r == '(' ? 1 : *r == ')' ? -1 : 0;
              add_line(&ks[i], ln);
              if (depth <= 0 || le >= end || ln - line > 64) break;
              ls = le + 1;
              const char *ne = memchr(ls, '\n', (size_t)(end - ls));
              le = ne ? ne : end;
              ln++;
            }
            break;
          }
        }
        free(meta_nodes);
        free(meta_aten);
        meta_nodes = meta_aten = NULL;
      }
    }
    s = e < end ? e + 1 : end;
  }
  free(meta_nodes);
  free(meta_aten);
  for (size_t i = 0; i < nk; i++) {
    ikernel *k = &ks[i];
    Dlh__Packet pk = DLH__PACKET__INIT;
    Dlh__InductorKernel ik = DLH__INDUCTOR_KERNEL__INIT;
    ik.file = (char *)path;
    ik.kernel = k->name;
    ik.source_nodes = k->nodes;
    ik.aten_ops = k->aten;
    ik.has_def_line = 1;
    ik.def_line = k->def_line;
    ik.n_launch_line = k->nlines;
    ik.launch_line = k->lines;
    pk.data_case = DLH__PACKET__DATA_INDUCTOR;
    pk.inductor = &ik;
    (void)dlh_enc_packet(w, &pk);
    free(k->name);
    free(k->nodes);
    free(k->aten);
    free(k->lines);
  }
  free(ks);
}

void dlh_inductor_note(struct dlh_encoder *w, const char *file) {
  if (!w || !dlh_inductor_file(file)) return;
  if (seen_enc != w) { nseen = 0; seen_enc = w; } /* a new trace: every file read again */
  uint64_t h = hash_path(file);
  for (size_t i = 0; i < nseen; i++)
    if (seen[i] == h) return;
  if (nseen == capseen) {
    size_t nc = capseen ? capseen * 2 : 64;
    uint64_t *v = realloc(seen, nc * sizeof *v);
    if (!v) return;
    seen = v;
    capseen = nc;
  }
  seen[nseen++] = h;
  size_t len = 0;
  char *buf = slurp(file, &len);
  if (!buf) return;
  parse_and_emit(w, file, buf, len);
  free(buf);
}
