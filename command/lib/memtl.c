/* memtl.c — the memory section of `dlhook report` (rd_memtl.h): live device memory of a trace
 * over time, stacked by place, for millions of allocations.
 *
 * Every sample of the ledger is an allocation or a free; each allocation has a place in three
 * groupings: the user's line (rd_torch_of; in a program without PyTorch the first frame outside
 * dlhook and the CUDA libraries), the module path and the innermost operator. The
 * RD_MEMTL_KEYS places of each grouping that hold the most at the peak (then the most in all)
 * are drawn, the rest summed as "other". Up to RD_MEMTL_BINS samples are written one by one;
 * past that the trace's span is cut into RD_MEMTL_BINS bins and each bin is written as the
 * moment in it when the total was highest (what a pixel of a zoomed-out chart should show: the
 * peak is never smoothed away). Values are KiB, rounded up. */
#include "rd_memtl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_scan.h"

enum { G_LINE, G_MODULE, G_OP, NG };
static const char *const gname[NG] = {"line", "module", "op"};

typedef struct gkey {
  const char *name; /* interned by torch.c, or in names (owned) */
  uint64_t at_peak, total, allocs, peak_allocs;
} gkey;

typedef struct gtab {
  gkey *k;
  size_t n, cap;
  rd_map ix;        /* name pointer hash -> index + 1 */
  uint32_t *rank;   /* key -> its slot (0..KEYS-1, KEYS = other) */
} gtab;

static int ours(const rd_frame *f) {
  const char *m = f->module;
  if (!m) return 0;
  const char *b = strrchr(m, '/') ? strrchr(m, '/') + 1 : m;
  return !strncmp(b, "libdlhook", 9) || !strncmp(b, "libcudart", 9) || !strncmp(b, "libcuda.", 8);
}

/* The first frame of a stack outside dlhook and CUDA, as "function (file:line)" (malloc'd). */
static char *where(const rd_trace *t, uint32_t stack) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  char buf[400], nm[256];
  for (size_t i = 0; i < n; i++) {
    if (ours(&fr[i])) continue;
    const char *file = fr[i].file ? (strrchr(fr[i].file, '/') ? strrchr(fr[i].file, '/') + 1 : fr[i].file) : NULL;
    if (file && fr[i].line) snprintf(buf, sizeof buf, "%s (%s:%u)", rd_frame_name(&fr[i], nm, sizeof nm), file, fr[i].line);
    else snprintf(buf, sizeof buf, "%s", rd_frame_name(&fr[i], nm, sizeof nm));
    return rd_xstrdup(buf);
  }
  return rd_xstrdup(stack ? "(outside the program)" : "(no stack recorded)");
}

/* The stack as text, innermost first, dlhook's and CUDA's frames left out (malloc'd). */
static char *stack_text(const rd_trace *t, uint32_t stack) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr), shown = 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return rd_xstrdup("");
  for (size_t i = 0; i < n && shown < 24; i++) {
    if (ours(&fr[i])) continue;
    char nm[256];
    fprintf(m, "%s%s", shown++ ? "\n" : "", rd_frame_name(&fr[i], nm, sizeof nm));
    if (fr[i].file && fr[i].line) {
      const char *b = strrchr(fr[i].file, '/');
      fprintf(m, "  %s:%u", b ? b + 1 : fr[i].file, fr[i].line);
    }
  }
  if (n > shown + 0 && shown == 24) fputs("\n...", m);
  fclose(m);
  return buf;
}

static uint32_t gtab_key(gtab *g, const char *name) {
  uint32_t h = (uint32_t)(rd_hash_str(name) & 0x7fffffff) | 1;
  for (;; h = (h * 2654435761u) | 1) { /* probe with another hash on a collision of names */
    uintptr_t v = (uintptr_t)rd_map_get(&g->ix, h);
    if (!v) break;
    if (!strcmp(g->k[v - 1].name, name)) return (uint32_t)(v - 1);
  }
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 32;
    g->k = rd_xrealloc(g->k, g->cap * sizeof *g->k);
  }
  memset(&g->k[g->n], 0, sizeof g->k[g->n]);
  g->k[g->n].name = rd_xstrdup(name);
  rd_map_put(&g->ix, h, (void *)(uintptr_t)(g->n + 1));
  return (uint32_t)g->n++;
}

/* Orders keys: most bytes at the peak, then most allocated in all. */
static const gkey *sort_keys;
static int by_peak(const void *a, const void *b) {
  const gkey *p = &sort_keys[*(const uint32_t *)a], *q = &sort_keys[*(const uint32_t *)b];
  if (p->at_peak != q->at_peak) return p->at_peak < q->at_peak ? 1 : -1;
  if (p->total != q->total) return p->total < q->total ? 1 : -1;
  return strcmp(p->name, q->name);
}

static uint64_t kib(uint64_t b) { return (b + 1023) / 1024; }

long rd_memtl_pick(const rd_mem_sample *v, long n, long *idx) {
  if (n <= 4 * RD_MEMTL_BINS) {
    for (long i = 0; i < n; i++) idx[i] = i;
    return n;
  }
  uint64_t t0 = v[0].ts_ns, span = v[n - 1].ts_ns - t0 + 1;
  long k = 0, i = 0;
  while (i < n) {
    uint64_t b = (uint64_t)((double)(v[i].ts_ns - t0) / (double)span * RD_MEMTL_BINS);
    long j = i, lo = i, hi = i;
    while (j < n && (uint64_t)((double)(v[j].ts_ns - t0) / (double)span * RD_MEMTL_BINS) == b) {
      if (v[j].live_bytes < v[lo].live_bytes) lo = j;
      if (v[j].live_bytes > v[hi].live_bytes) hi = j;
      j++;
    }
    long pick[4] = {i, lo < hi ? lo : hi, lo < hi ? hi : lo, j - 1};
    for (int q = 0; q < 4; q++)
      if (!k || pick[q] > idx[k - 1]) idx[k++] = pick[q];
    i = j;
  }
  return k;
}

/* Each allocation's keys (v[0..n), by its stack, computed once per stack): its line, module
 * and operator in the groups g, whose totals it adds to; *peak: the sample of the highest live
 * bytes. Returns the keys (malloc'd, n rows). */
typedef uint32_t keyrow[NG]; /* an allocation's key in each group */

static keyrow *alloc_keys(rd_trace *t, const rd_mem_sample *v, long n, int torch, gtab g[NG],
                          long *peak) {
  uint32_t (*key)[NG] = rd_xmalloc((size_t)n * sizeof *key);
  *peak = -1;
  rd_u64map stk = {0}; /* stack -> index into skey */
  uint32_t (*skey)[NG] = NULL;
  size_t nskey = 0, capskey = 0;
  for (long i = 0; i < n; i++) {
    if (*peak < 0 || v[i].live_bytes > v[*peak].live_bytes) *peak = i;
    if (v[i].bytes <= 0) continue;
    uint32_t s;
    if (!rd_m_get(&stk, v[i].stack, &s)) {
      if (nskey == capskey) {
        capskey = capskey ? 2 * capskey : 64;
        skey = rd_xrealloc(skey, capskey * sizeof *skey);
      }
      const rd_torch *c = torch && v[i].stack ? rd_torch_of(t, v[i].stack) : NULL;
      char *w = c && c->user ? NULL : where(t, v[i].stack);
      skey[nskey][G_LINE] = gtab_key(&g[G_LINE], c && c->user ? c->user : w);
      skey[nskey][G_MODULE] = gtab_key(&g[G_MODULE], c && c->module ? c->module : "(no module)");
      skey[nskey][G_OP] = gtab_key(&g[G_OP], c && rd_torch_op(c) ? rd_torch_op(c) : "(no operator)");
      free(w);
      s = (uint32_t)nskey++;
      rd_m_put(&stk, v[i].stack, s);
    }
    memcpy(key[i], skey[s], sizeof key[i]);
    for (int q = 0; q < NG; q++) {
      g[q].k[key[i][q]].total += (uint64_t)v[i].bytes;
      g[q].k[key[i][q]].allocs++;
    }
  }
  free(skey);
  rd_m_free(&stk);
  return key;
}

/* What is live at the peak sample: held[i] = 1 when allocation i is (malloc'd, n of them);
 * adds it to the at-peak figures of its keys in g. */
static char *held_at_peak(const rd_mem_sample *v, long n, long peak, uint32_t (*key)[NG],
                          gtab g[NG]) {
  char *held = rd_xcalloc((size_t)n, 1);
  rd_u64map at = {0};
  for (long i = 0; i <= peak; i++) {
    uint32_t a;
    if (v[i].bytes > 0) {
      held[i] = 1;
      rd_m_put(&at, v[i].ptr, (uint32_t)i);
    } else if (rd_m_get(&at, v[i].ptr, &a)) {
      held[a] = 0;
      rd_m_del(&at, v[i].ptr);
    }
  }
  rd_m_free(&at);
  for (long i = 0; i <= peak; i++)
    if (held[i])
      for (int q = 0; q < NG; q++) {
        g[q].k[key[i][q]].at_peak += (uint64_t)v[i].bytes;
        g[q].k[key[i][q]].peak_allocs++;
      }
  return held;
}

/* The "at_peak" object's members: per group its keys that hold memory at the peak, most first
 * (order[q]: the keys of group q sorted), up to 20. */
static void at_peak_json(FILE *f, const gtab g[NG], uint32_t *const order[NG]) {
  for (int q = 0; q < NG; q++) {
    fprintf(f, "%s\"%s\":[", q ? "," : "", gname[q]);
    int first = 1;
    for (size_t k = 0; k < g[q].n && k < 20; k++) {
      const gkey *e = &g[q].k[order[q][k]];
      if (!e->at_peak) break;
      fputs(first ? "{\"name\":" : ",{\"name\":", f);
      first = 0;
      rd_json_str(f, e->name);
      fprintf(f, ",\"bytes\":%" PRIu64 ",\"allocations\":%" PRIu64 ",\"allocated_in_all\":%" PRIu64 "}",
              e->at_peak, e->peak_allocs, e->total);
    }
    putc(']', f);
  }
}

/* The "peak_stacks" array's members: the 10 stacks whose allocations held the most at the
 * peak (held), each with its place (the line key), bytes, allocations, function and stack. */
static void peak_stacks_json(FILE *f, rd_trace *t, const rd_mem_sample *v, long peak,
                             const char *held, const gtab g[NG], uint32_t (*key)[NG]) {
  rd_u64map sx = {0};
  struct ps { uint32_t stack; uint64_t bytes, n; long any; } *ps = NULL;
  size_t nps = 0, capps = 0;
  for (long k = 0; k <= peak; k++) {
    if (!held[k]) continue;
    uint32_t s;
    if (!rd_m_get(&sx, v[k].stack, &s)) {
      if (nps == capps) {
        capps = capps ? 2 * capps : 64;
        ps = rd_xrealloc(ps, capps * sizeof *ps);
      }
      ps[nps] = (struct ps){v[k].stack, 0, 0, k};
      s = (uint32_t)nps++;
      rd_m_put(&sx, v[k].stack, s);
    }
    ps[s].bytes += (uint64_t)v[k].bytes;
    ps[s].n++;
  }
  rd_m_free(&sx);
  for (int shown = 0; shown < 10; shown++) {
    size_t top = nps;
    for (size_t k = 0; k < nps; k++)
      if (ps[k].n && (top == nps || ps[k].bytes > ps[top].bytes)) top = k;
    if (top == nps) break;
    fputs(shown ? ",{\"place\":" : "{\"place\":", f);
    rd_json_str(f, g[G_LINE].k[key[ps[top].any][G_LINE]].name);
    char *st = stack_text(t, ps[top].stack);
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"allocations\":%" PRIu64 ",\"function\":", ps[top].bytes, ps[top].n);
    rd_json_str(f, rd_func_name(t, v[ps[top].any].fn));
    fputs(",\"stack\":", f);
    rd_json_str(f, st);
    putc('}', f);
    free(st);
    ps[top].n = 0;
  }
  free(ps);
}

char *rd_memtl_json(rd_trace *t, const rd_mem_sample *v, long n, uint32_t gi, size_t *len) {
  if (n <= 0) return NULL;
  int torch = rd_stacks_have_module(t, "libtorch_cpu.");
  gtab g[NG];
  memset(g, 0, sizeof g);
  /* each allocation's keys, by its stack (computed once per stack) */
  long peak;
  uint32_t (*key)[NG] = alloc_keys(t, v, n, torch, g, &peak);
  /* what is live at the peak (held: allocation i is live then) */
  char *held = held_at_peak(v, n, peak, key, g);
  /* the keys drawn: the first RD_MEMTL_KEYS in order, the rest "other" */
  uint32_t *order[NG];
  size_t nk[NG];
  for (int q = 0; q < NG; q++) {
    order[q] = rd_xmalloc((g[q].n ? g[q].n : 1) * sizeof *order[q]);
    for (size_t k = 0; k < g[q].n; k++) order[q][k] = (uint32_t)k;
    sort_keys = g[q].k;
    if (g[q].n) rd_qsort(order[q], g[q].n, sizeof *order[q], by_peak);
    g[q].rank = rd_xmalloc((g[q].n ? g[q].n : 1) * sizeof *g[q].rank);
    for (size_t k = 0; k < g[q].n; k++) g[q].rank[order[q][k]] = k < RD_MEMTL_KEYS ? (uint32_t)k : RD_MEMTL_KEYS;
    nk[q] = g[q].n < RD_MEMTL_KEYS ? g[q].n : RD_MEMTL_KEYS;
  }

  char *buf = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&buf, &blen);
  if (!f) abort();
  uint64_t base = v[0].ts_ns;
  fprintf(f, "{\"g\":%u,\"base\":%" PRIu64 ",\"samples\":%ld,\"peak\":%" PRIu64 ",\"peak_t\":%" PRIu64
             ",\"torch\":%d,\"unit\":1024,\"groups\":{",
          gi, base, n, v[peak].live_bytes, v[peak].ts_ns - base, torch);
  for (int q = 0; q < NG; q++) {
    fprintf(f, "%s\"%s\":{\"keys\":[", q ? "," : "", gname[q]);
    for (size_t k = 0; k < nk[q]; k++) {
      if (k) putc(',', f);
      rd_json_str(f, g[q].k[order[q][k]].name);
    }
    if (g[q].n > nk[q]) fputs(nk[q] ? ",\"other\"" : "\"other\"", f);
    fputs("]}", f);
  }
  fputs("},\n\"t\":[", f);
  /* the bins: one per sample when few, else RD_MEMTL_BINS over the span, each at its highest */
  int per_sample = n <= RD_MEMTL_BINS;
  uint64_t span = v[n - 1].ts_ns - base + 1;
  long nb = per_sample ? n : RD_MEMTL_BINS;
  uint64_t *cur[NG], *best[NG]; /* running live bytes per slot; the bin's values at its highest */
  size_t ns[NG];
  for (int q = 0; q < NG; q++) {
    ns[q] = nk[q] + (g[q].n > nk[q]);
    cur[q] = rd_xcalloc(RD_MEMTL_KEYS + 1, sizeof *cur[q]);
    best[q] = rd_xcalloc(RD_MEMTL_KEYS + 1, sizeof *best[q]);
  }
  /* columns are written per slot afterwards: keep the bins' values (KiB) */
  uint64_t *tv = rd_xmalloc((size_t)nb * sizeof *tv);
  uint32_t *val[NG];
  for (int q = 0; q < NG; q++) val[q] = rd_xmalloc((size_t)nb * (RD_MEMTL_KEYS + 1) * sizeof *val[q]);
  rd_u64map live = {0}; /* ptr -> allocation index */
  long b = 0, i = 0;
  while (i < n && b < nb) {
    uint64_t hi_t = per_sample ? v[i].ts_ns : base + (uint64_t)((double)span * (double)(b + 1) / (double)nb);
    uint64_t top = 0, top_t = v[i].ts_ns;
    int any = 0;
    for (; i < n && (per_sample ? !any : v[i].ts_ns < hi_t); i++) {
      uint32_t a;
      if (v[i].bytes > 0) {
        rd_m_put(&live, v[i].ptr, (uint32_t)i);
        for (int q = 0; q < NG; q++) cur[q][g[q].rank[key[i][q]]] += (uint64_t)v[i].bytes;
      } else if (rd_m_get(&live, v[i].ptr, &a)) {
        rd_m_del(&live, v[i].ptr);
        for (int q = 0; q < NG; q++) cur[q][g[q].rank[key[a][q]]] -= (uint64_t)-v[i].bytes;
      }
      if (!any || v[i].live_bytes > top) {
        top = v[i].live_bytes;
        top_t = v[i].ts_ns;
        for (int q = 0; q < NG; q++) memcpy(best[q], cur[q], (RD_MEMTL_KEYS + 1) * sizeof *cur[q]);
      }
      any = 1;
    }
    if (!any) { /* an empty bin: what was live at its start */
      top_t = hi_t;
      for (int q = 0; q < NG; q++) memcpy(best[q], cur[q], (RD_MEMTL_KEYS + 1) * sizeof *cur[q]);
    }
    tv[b] = per_sample ? top_t - base : (uint64_t)((double)span * (double)b / (double)nb);
    for (int q = 0; q < NG; q++)
      for (size_t s = 0; s < ns[q]; s++) val[q][(size_t)b * (RD_MEMTL_KEYS + 1) + s] = (uint32_t)kib(best[q][s]);
    b++;
  }
  nb = b;
  rd_m_free(&live);
  for (long k = 0; k < nb; k++) fprintf(f, k ? ",%" PRIu64 : "%" PRIu64, tv[k]);
  fprintf(f, "],\"end\":%" PRIu64 ",\"v\":{", span);
  for (int q = 0; q < NG; q++) {
    fprintf(f, "%s\"%s\":[", q ? "," : "", gname[q]);
    for (size_t s = 0; s < ns[q]; s++) {
      fputs(s ? ",\n[" : "\n[", f);
      for (long k = 0; k < nb; k++) fprintf(f, k ? ",%u" : "%u", val[q][(size_t)k * (RD_MEMTL_KEYS + 1) + s]);
      putc(']', f);
    }
    putc(']', f);
  }
  fputs("},\n\"at_peak\":{", f);
  at_peak_json(f, g, order);
  /* the stacks that hold the most at the peak */
  fputs("},\n\"peak_stacks\":[", f);
  peak_stacks_json(f, t, v, peak, held, g, key);
  fputs("]}", f);
  fclose(f);
  for (int q = 0; q < NG; q++) {
    for (size_t k = 0; k < g[q].n; k++) free((char *)g[q].k[k].name);
    free(g[q].k);
    free(g[q].rank);
    rd_map_free(&g[q].ix, NULL);
    free(order[q]);
    free(cur[q]);
    free(best[q]);
    free(val[q]);
  }
  free(tv);
  free(held);
  free(key);
  *len = blen;
  return buf;
}
