/* findings.c — what the finding classes of `dlhook advise` share (rd_findings.h): which calls a
 * function name is, the place of a stack in the user's code, tallies, and the finding being
 * built. */
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_findings.h"

/* ---------------------------------------------------------------- calls */

static int name_in(const char *n, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (!strcmp(n, names[i])) return 1;
  return 0;
}
int adv_sync_fn(const char *n) {
  static const char *const names[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                      "cudaEventSynchronize", "cudaThreadSynchronize",
                                      "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol",
                                      "cuStreamSynchronize", "cuCtxSynchronize",
                                      "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyDtoH",
                                      "cuMemcpy", NULL};
  return name_in(n, names);
}
int adv_malloc_fn(const char *n) {
  static const char *const names[] = {"cudaMalloc", "cudaFree", "cudaMallocManaged",
                                      "cudaMallocPitch", "cuMemAlloc_v2", "cuMemFree_v2",
                                      "cuMemAlloc", "cuMemFree", NULL};
  return name_in(n, names);
}
int adv_copy_fn(const char *n) { return !strncmp(n, "cudaMemcpy", 10) || !strncmp(n, "cuMemcpy", 8); }
int adv_collective_fn(const char *n) {
  static const char *const names[] = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce",
                                      "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll",
                                      "ncclGather", "ncclScatter", "ncclGroupEnd", NULL};
  return name_in(n, names);
}

/* ---------------------------------------------------------------- places */

/* A frame of code the user did not write, though it is in the program: nvcc's launch stubs and
 * the inline functions of the CUDA headers (cuda_runtime.h's cudaLaunchKernel<T>). */
static int generated(const rd_frame *f) {
  return (f->function && (!strncmp(f->function, "__device_stub", 13) || strstr(f->function, "__device_stub_"))) ||
         (f->file && strstr(f->file, "/include/"));
}

static char *place_of(rd_trace *t, uint32_t stack);

/* Once per stack of a trace (the blocking calls of a trace ask for it thousands of times). */
char *adv_place_of(rd_trace *t, uint32_t stack) {
  if (!stack) return rd_xstrdup("[no stack]");
  const char *known = rd_map_get(&t->places, stack);
  if (!known) {
    char *p = place_of(t, stack);
    rd_map_put(&t->places, stack, p);
    known = p;
  }
  return rd_xstrdup(known);
}

static char *place_of(rd_trace *t, uint32_t stack) {
  char buf[1024];
  const rd_torch *tc = rd_torch_of(t, stack);
  if (tc && tc->user) return rd_xstrdup(tc->user);
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  const rd_frame *best = NULL;
  for (size_t i = 0; i < n && t->exe[0]; i++) {
    const char *m = fr[i].module;
    if (!m || generated(&fr[i])) continue;
    const char *b = strrchr(m, '/');
    b = b ? b + 1 : m;
    if (!strcmp(b, t->exe)) { best = &fr[i]; break; }
  }
  for (size_t i = 0; !best && i < n; i++)
    if (fr[i].function || (fr[i].python && fr[i].file)) best = &fr[i];
  if (!best) return rd_xstrdup("[unknown]");
  if (best->file && best->line) {
    const char *b = strrchr(best->file, '/');
    snprintf(buf, sizeof buf, "%s:%u%s%s%s", b ? b + 1 : best->file, best->line,
             best->function ? " (" : "", best->function ? best->function : "",
             best->function ? ")" : "");
  } else {
    char nb[256];
    snprintf(buf, sizeof buf, "%s", rd_frame_name(best, nb, sizeof nb));
    if (best->module && best->has_modoff) {
      const char *b = strrchr(best->module, '/');
      size_t l = strlen(buf);
      snprintf(buf + l, sizeof buf - l, " (%s+0x%" PRIx64 ")", b ? b + 1 : best->module,
               best->modoff);
    }
  }
  return rd_xstrdup(buf);
}

void adv_tally_add(tally *y, const char *k, uint64_t w) {
  for (size_t i = 0; i < y->n; i++)
    if (!strcmp(y->k[i], k)) { y->w[i] += w; return; }
  y->k = rd_xrealloc(y->k, (y->n + 1) * sizeof *y->k);
  y->w = rd_xrealloc(y->w, (y->n + 1) * sizeof *y->w);
  y->k[y->n] = rd_xstrdup(k);
  y->w[y->n++] = w;
}
size_t adv_tally_top(const tally *y) {
  size_t b = 0;
  for (size_t i = 1; i < y->n; i++)
    if (y->w[i] > y->w[b]) b = i;
  return b;
}
void adv_tally_free(tally *y) {
  for (size_t i = 0; i < y->n; i++) free(y->k[i]);
  free(y->k);
  free(y->w);
  memset(y, 0, sizeof *y);
}

void adv_add_fn(char **fns, const char *name) {
  if (!*fns) { *fns = rd_xstrdup(name); return; }
  size_t l = strlen(name);
  for (const char *p = *fns; (p = strstr(p, name)); p += l)
    if ((p == *fns || p[-1] == ',') && (p[l] == ',' || !p[l])) return;
  size_t m = strlen(*fns);
  *fns = rd_xrealloc(*fns, m + l + 2);
  (*fns)[m] = ',';
  memcpy(*fns + m + 1, name, l + 1);
}

afinding *adv_finding(rd_advise *x, size_t base, const rd_finding_class *cls, char *place,
                      const rd_trace *t, uint64_t nsteps, uint64_t step_ns) {
  for (size_t k = base; k < x->nf; k++)
    if (x->f[k].cls == cls && !strcmp(x->f[k].place, place)) { free(place); return &x->f[k]; }
  PUSH(x->f, x->nf, x->capf, 16);
  afinding *f = &x->f[x->nf++];
  memset(f, 0, sizeof *f);
  f->cls = cls;
  f->place = place;
  f->trace = rd_xstrdup(t->path);
  f->nsteps = nsteps;
  f->step_ns = step_ns;
  f->steps_from = x->steps_from;
  return f;
}

int adv_by_tid_start(const void *a, const void *b, void *ctx) {
  const xcall *v = ctx;
  const xcall *p = &v[*(const uint32_t *)a], *q = &v[*(const uint32_t *)b];
  if (p->tid != q->tid) return p->tid < q->tid ? -1 : 1;
  if (p->start != q->start) return p->start < q->start ? -1 : 1;
  return (int)p->depth - (int)q->depth;
}

/* o[0..n) in adv_by_tid_start's order, equal ones kept in their order (as glibc's qsort_r, a
 * merge sort, keeps them): two stable radix sorts, by start and depth, then by thread. A
 * hundred thousand calls took a million comparator calls through qsort_r. */
void adv_sort_tid_start(uint32_t *o, size_t n, const xcall *xc) {
  if (n < 2) return;
  uint64_t lo = UINT64_MAX, hi = 0;
  uint32_t maxdepth = 0;
  for (size_t i = 0; i < n; i++) {
    const xcall *c = &xc[o[i]];
    if (c->start < lo) lo = c->start;
    if (c->start > hi) hi = c->start;
    if (c->depth > maxdepth) maxdepth = c->depth;
  }
  if (maxdepth > 0xffff || (hi - lo) >> 47) { /* no room for both in one key */
    qsort_r(o, n, sizeof *o, adv_by_tid_start, (void *)xc);
    return;
  }
  rd_pair *v = rd_xmalloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = (rd_pair){(xc[o[i]].start - lo) << 16 | xc[o[i]].depth, o[i]};
  rd_sort_pairs(v, n);
  for (size_t i = 0; i < n; i++) v[i].key = xc[v[i].val].tid;
  rd_sort_pairs(v, n);
  for (size_t i = 0; i < n; i++) o[i] = (uint32_t)v[i].val;
  free(v);
}

const Dlh__DeviceInfo *adv_device(const rd_advise *x, uint32_t id) {
  for (size_t i = 0; i < x->ndev; i++)
    if (x->dev[i].d.id == id) return &x->dev[i].d;
  return NULL;
}

const xcall *adv_launcher(const rd_advise *x, const gop *o) {
  uint32_t i;
  if (!o->corr || !rd_m_get(&x->corr_ix, o->corr, &i)) return NULL;
  return &x->xc[x->xc[i].top];
}

const char *adv_fname(const rd_trace *t, uint32_t fn) {
  const rd_func *f = rd_trace_func(t, fn);
  return f && f->name ? f->name : "?";
}

void adv_detail(afinding *f, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(f->detail);
  f->detail = rd_xstrdup(buf);
}

void adv_finding_free(afinding *f) {
  free(f->place);
  free(f->trace);
  free(f->fns);
  free(f->detail);
}
