/* names.c — names a person can read in a terminal table (rd_kernel_short, rd_module_short and
 * the table-wide rd_names_* in rd.h).
 *
 * Kernel names: a PyTorch kernel's demangled name is its return type, its namespaces, its base
 * name, template arguments that hold whole functor types (lambdas nested three deep) and a
 * parameter list; cut at the table's width from the right, every row of a PyTorch trace reads
 * `void at::native::vectorized_elementwise_kernel<4, at::...`. Shortened the way nsys'
 * --shortnames and Kineto's names are read: the base name without namespaces, then the template
 * arguments that tell kernels apart, each without its namespaces (`CUDAFunctor_add<float>`), a
 * lambda by the function it is defined in (`GeluCUDAKernelImpl::lambda`), and without the
 * arguments every instance has (`std::array<char*, 3ul>`, casts). When that is still too wide,
 * the deepest template arguments go first (`ReduceOp<…>`), then the end of the name. Rows that
 * would read alike get their parameter list, then a cut in the middle.
 *
 * Module paths (`GPT.forward > Block.forward > Linear.forward`): the classes without
 * `.forward`, cut from the outside in (`… > Block > Linear`): the innermost modules tell rows
 * apart; rows that would read alike keep the outermost module too (`GPT > … > Linear`). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rd.h"

/* ---------------------------------------------------------------- a growing string */

typedef struct sb {
  char *s;
  size_t n, cap;
} sb;

static void sb_put(sb *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = rd_xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

static void sb_str(sb *b, const char *s) { sb_put(b, s, strlen(s)); }

/* ---------------------------------------------------------------- parsing demangled names */

/* The end of the group that opens at s[i] ('<', '(', '{' or '['): the index after its closing
 * character, or n when it does not close. */
static size_t group_end(const char *s, size_t i, size_t n) {
  int depth = 0;
  for (; i < n; i++) {
    char c = s[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') depth++;
    else if (c == '>' || c == ')' || c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return n;
}

/* Splits s[0..n) at the depth-0 separator sep ("::" or ","); returns the number of parts
 * (at most max), their starts and lengths in st and ln. */
static size_t split(const char *s, size_t n, const char *sep, size_t *st, size_t *ln, size_t max) {
  size_t k = 0, from = 0, sl = strlen(sep);
  for (size_t i = 0; i < n;) {
    char c = s[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') { i = group_end(s, i, n); continue; }
    if (i + sl <= n && !memcmp(s + i, sep, sl)) {
      if (k + 1 < max) { st[k] = from; ln[k++] = i - from; from = i + sl; }
      i += sl;
      continue;
    }
    i++;
  }
  st[k] = from;
  ln[k++] = n - from;
  return k;
}

static void trim(const char **s, size_t *n) {
  while (*n && (**s == ' ')) { (*s)++; (*n)--; }
  while (*n && (*s)[*n - 1] == ' ') (*n)--;
}

static int starts(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

static void put_qname(sb *b, const char *s, size_t n, int depth, int maxd);

/* Whether a lambda is shown with its parameters (for rows that would read alike without). */
static __thread int lambda_params;

/* One template argument: nothing for what every instance has (std::array<...>), a literal
 * without its cast, else a type or function name without its namespaces. */
static void put_arg(sb *b, const char *s, size_t n, int depth, int maxd) {
  trim(&s, &n);
  if (!n || starts(s, n, "std::array<") || starts(s, n, "at::detail::Array<")) return;
  if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5))) return;
  if (s[0] == '(' && !starts(s, n, "(anonymous namespace)")) { /* (at::native::ADAM_MODE)1 */
    size_t e = group_end(s, 0, n);
    s += e;
    n -= e;
    trim(&s, &n);
  }
  put_qname(b, s, n, depth, maxd);
}

/* One component of a qualified name (`sum_functor<float, float, float>`,
 * `GeluCUDAKernelImpl(at::TensorIteratorBase&)`): the name, its template arguments shortened
 * (`<…>` past depth maxd), no parameter list. */
static void put_comp(sb *b, const char *s, size_t n, int depth, int maxd) {
  size_t i = 0;
  while (i < n && s[i] != '<' && s[i] != '(') i++;
  if (i < n && s[i] == '(' && starts(s, n, "operator()")) i += 2; /* not a parameter list */
  sb_put(b, s, i);
  if (i >= n || s[i] != '<') return;
  size_t e = group_end(s, i, n);
  if (depth >= maxd) { sb_str(b, "<\xe2\x80\xa6>"); return; }
  size_t st[64], ln[64];
  size_t k = split(s + i + 1, e - i - 2 > n ? 0 : e - i - 2, ",", st, ln, 64);
  sb_put(b, "<", 1);
  size_t before = b->n;
  for (size_t a = 0; a < k; a++) {
    size_t mark = b->n;
    if (b->n > before) sb_str(b, ", ");
    size_t m2 = b->n;
    put_arg(b, s + i + 1 + st[a], ln[a], depth + 1, maxd);
    if (b->n == m2) { b->n = mark; b->s[b->n] = 0; } /* left out: no separator either */
  }
  if (b->n == before) { b->n--; b->s[b->n] = 0; return; } /* every argument left out */
  sb_put(b, ">", 1);
  /* the rest after the arguments: pointer and reference marks, not another parameter list */
  for (size_t j = e; j < n && s[j] != '('; j++)
    if (s[j] == '*' || s[j] == '&') sb_put(b, s + j, 1);
}

static int lambda_comp(const char *s, size_t n) { return starts(s, n, "{lambda") || starts(s, n, "{unnamed"); }

/* A qualified name without its namespaces: its last component, or for a lambda the function
 * or class it is defined in and "::lambda". */
static void put_qname(sb *b, const char *s, size_t n, int depth, int maxd) {
  size_t st[64], ln[64];
  trim(&s, &n);
  if (starts(s, n, "const ")) { s += 6; n -= 6; }
  size_t k = split(s, n, "::", st, ln, 64), li = k;
  for (size_t i = 0; i < k && li == k; i++)
    if (lambda_comp(s + st[i], ln[i])) li = i;
  if (li == k) { put_comp(b, s + st[k - 1], ln[k - 1], depth, maxd); return; }
  for (size_t j = li; j-- > 0;) {
    const char *c = s + st[j];
    if (starts(c, ln[j], "operator") || c[0] == '{' || c[0] == '(') continue;
    put_comp(b, c, ln[j], depth, maxd);
    sb_str(b, "::");
    break;
  }
  sb_str(b, "lambda");
  if (!lambda_params) return;
  /* the innermost lambda's parameters: what tells apart the instances of one dispatch
   * (`{lambda(float)#1}`, `{lambda(c10::Half)#1}`) */
  for (size_t j = k; j-- > li;) {
    const char *c = s + st[j], *o = memchr(c, '(', ln[j]);
    if (!lambda_comp(c, ln[j]) || !o) continue;
    size_t e = group_end(c, (size_t)(o - c), ln[j]), sst[16], sln[16];
    size_t na = e - (size_t)(o - c) > 2 ? split(o + 1, e - (size_t)(o - c) - 2, ",", sst, sln, 16) : 0;
    sb_put(b, "(", 1);
    for (size_t a = 0; a < na; a++) {
      if (a) sb_str(b, ", ");
      put_qname(b, o + 1 + sst[a], sln[a], depth + 1, maxd);
    }
    sb_put(b, ")", 1);
    return;
  }
}

/* Where the name of a demangled function starts and its parameter list opens. */
static void find_name(const char *d, size_t n, size_t *name, size_t *params) {
  *name = 0;
  *params = n;
  for (size_t i = 0; i < n;) {
    char c = d[i];
    if (c == '(' && !starts(d + i, n - i, "(anonymous namespace)")) { *params = i; return; }
    if (c == '<' || c == '(' || c == '{' || c == '[') { i = group_end(d, i, n); continue; }
    if (c == ' ') *name = i + 1;
    i++;
  }
}

/* The short name of demangled d at template depth maxd, with the parameter list when params. */
static char *short_at(const char *d, int maxd, int params) {
  size_t n = strlen(d), nm, pl;
  find_name(d, n, &nm, &pl);
  sb b = {0};
  put_qname(&b, d + nm, pl - nm, 0, maxd);
  if (params && pl < n) {
    size_t e = group_end(d, pl, n), st[64], ln[64];
    size_t k = e - pl >= 2 ? split(d + pl + 1, e - pl - 2, ",", st, ln, 64) : 0;
    sb_put(&b, "(", 1);
    for (size_t a = 0; a < k; a++) {
      if (a) sb_str(&b, ", ");
      put_qname(&b, d + pl + 1 + st[a], ln[a], 1, maxd);
    }
    sb_put(&b, ")", 1);
  }
  if (!b.s) return rd_xstrdup(d);
  return b.s;
}

/* Columns of s as rd_term_fit counts them (a UTF-8 character is one). */
static size_t cols(const char *s) {
  size_t c = 0;
  for (; *s; s++) c += ((unsigned char)*s & 0xc0) != 0x80;
  return c;
}

/* s cut in the middle to width columns when wider: its start, "…", its end; malloc'd. */
static char *middle_cut(const char *s, size_t width) {
  size_t c = cols(s);
  if (c <= width || width < 5) return rd_xstrdup(s);
  size_t head = (width - 1) / 2, tail = width - 1 - head, o = 0, k = 0;
  sb b = {0};
  for (; s[o] && k < head; o++) k += ((unsigned char)s[o] & 0xc0) != 0x80;
  while (((unsigned char)s[o] & 0xc0) == 0x80) o++;
  sb_put(&b, s, o);
  sb_str(&b, "\xe2\x80\xa6");
  for (k = 0, o = strlen(s); o > 0 && k < tail;) {
    o--;
    k += ((unsigned char)s[o] & 0xc0) != 0x80;
  }
  sb_str(&b, s + o);
  return b.s;
}

/* Short name of kernel `name` (mangled or not) fitted to width columns; malloc'd. how 0: the
 * deepest template arguments elided first (the cell then cuts its end); 1: the same with the
 * parameter list, cut in the middle; 2: every template argument and the parameters of
 * lambdas, cut in the middle. */
static char *kernel_fit(const char *name, size_t width, int how) {
  char *dm = rd_demangle(name);
  const char *d = dm ? dm : name;
  char *s = NULL;
  if (!strchr(d, '<') && !strchr(d, '(')) s = rd_xstrdup(d); /* sm90_xmma_gemm_..., triton_... */
  lambda_params = how == 2;
  for (int maxd = 64; !s; maxd = maxd == 64 ? 3 : maxd - 1) {
    s = short_at(d, maxd, how == 1);
    if (how < 2 && maxd > 1 && cols(s) > width) { free(s); s = NULL; }
  }
  lambda_params = 0;
  free(dm);
  if (how == 0) return s; /* the table's cell cuts its end */
  char *m = middle_cut(s, width);
  free(s);
  return m;
}

char *rd_kernel_short(const char *name) { return kernel_fit(name ? name : "", (size_t)-1 / 2, 0); }

/* ---------------------------------------------------------------- module paths */

/* path with its components' ".forward" taken off, outermost first; *nc the number of them. */
static char **module_comps(const char *path, size_t *nc) {
  char **v = NULL;
  size_t n = 0;
  for (const char *p = path; p;) {
    const char *e = strstr(p, " > ");
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > 8 && !memcmp(p + len - 8, ".forward", 8)) len -= 8;
    v = rd_xrealloc(v, (n + 1) * sizeof *v);
    v[n] = rd_xmalloc(len + 1);
    memcpy(v[n], p, len);
    v[n++][len] = 0;
    p = e ? e + 3 : NULL;
  }
  *nc = n;
  return v;
}

/* The path of components [from, n) after head (the outermost one, or none), with "…" where
 * components were left out. */
static char *module_join(char **v, size_t n, size_t from, int head) {
  sb b = {0};
  if (head && from > 0) { sb_str(&b, v[0]); sb_str(&b, " > "); }
  if (from > (size_t)(head ? 1 : 0)) sb_str(&b, "\xe2\x80\xa6 > ");
  for (size_t i = from; i < n; i++) {
    if (i > from) sb_str(&b, " > ");
    sb_str(&b, v[i]);
  }
  return b.s ? b.s : rd_xstrdup("");
}

/* The path cut from the outside in to fit width (keeping the outermost module when head). */
static char *module_fit(const char *path, size_t width, int head) {
  size_t n;
  char **v = module_comps(path ? path : "", &n), *s = NULL;
  for (size_t from = 0; from < n; from++) {
    s = module_join(v, n, from, head);
    if (cols(s) <= width || from + 1 == n) break;
    free(s);
  }
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
  return s;
}

char *rd_module_short(const char *path, size_t width) { return module_fit(path, width, 0); }

/* ---------------------------------------------------------------- whole tables */

static int by_str(const void *a, const void *b, void *ctx) {
  char **v = ctx;
  return strcmp(v[*(const size_t *)a], v[*(const size_t *)b]);
}

/* Marks in dup[] the rows whose out[] reads like another row's. Returns how many. */
static size_t mark_dups(char **out, size_t n, char *dup) {
  size_t *ix = rd_xmalloc((n ? n : 1) * sizeof *ix), nd = 0;
  for (size_t i = 0; i < n; i++) ix[i] = i, dup[i] = 0;
  qsort_r(ix, n, sizeof *ix, by_str, out);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(out[ix[i]], out[ix[i - 1]])) dup[ix[i]] = dup[ix[i - 1]] = 1;
  for (size_t i = 0; i < n; i++) nd += dup[i];
  free(ix);
  return nd;
}

/* out[i]: names[i] fitted to width (rd_term_fit: padded, safe to print), by fit(name, width,
 * 0) and, for the rows that would read alike, by fit(name, width, 1), then fit(name, width, 2). */
static void table_names(const char *const *names, size_t n, size_t width, char **out,
                        char *(*fitf)(const char *, size_t, int)) {
  char *dup = rd_xmalloc(n ? n : 1), **raw = rd_xmalloc((n ? n : 1) * sizeof *raw);
  for (size_t i = 0; i < n; i++) raw[i] = fitf(names[i], width, 0);
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < n; i++) {
      out[i] = rd_xmalloc(4 * width + 4);
      rd_term_fit(out[i], 4 * width + 4, width, raw[i]);
    }
    if (pass == 2 || !mark_dups(out, n, dup)) break;
    for (size_t i = 0; i < n; i++) {
      free(out[i]);
      if (!dup[i]) continue;
      free(raw[i]);
      raw[i] = fitf(names[i], width, pass + 1);
    }
  }
  for (size_t i = 0; i < n; i++) free(raw[i]);
  free(raw);
  free(dup);
}

static char *module_fitf(const char *path, size_t width, int how) { return module_fit(path, width, how > 0); }

void rd_names_kernels(const char *const *names, size_t n, size_t width, char **out) {
  table_names(names, n, width, out, kernel_fit);
}

void rd_names_modules(const char *const *paths, size_t n, size_t width, char **out) {
  table_names(paths, n, width, out, module_fitf);
}

/* ---------------------------------------------------------------- places */

const char *rd_place_short(const char *place) {
  static char cwd[4096];
  static int have = -1;
  if (!place) return "";
  if (have < 0) have = getcwd(cwd, sizeof cwd - 1) != NULL;
  size_t n = have ? strlen(cwd) : 0;
  if (n > 1 && !strncmp(place, cwd, n) && place[n] == '/') return place + n + 1;
  return place;
}
