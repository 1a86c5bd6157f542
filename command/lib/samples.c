/* samples.c — the host samples of traces (SampleBatch) for `dlhook stats` and `dlhook report`
 * (rd_samples in rd.h), and the names of the system calls a wait sample was blocked in.
 *
 * An on-CPU sample stands for the CPU time its thread used since the thread's previous on-CPU
 * sample, a wait sample for the wall time since the thread's previous wait sample (its
 * weight_ns). Per trace the samples are summed by (kind, stack, state, api_fn) while the trace
 * streams past, so memory grows with the distinct stacks, not with the samples; the stacks are
 * resolved after the pass, when every definition is known. Then:
 *   by thread  on-CPU and wait time and samples of each thread (its ThreadInfo name);
 *   by line    the innermost frame of the user's own Python code (rd_torch_user_file), else the
 *              innermost Python frame: function, file and line; else (native-only stacks) the
 *              innermost native function, with its module as file and line 0;
 *   by op      on-CPU samples only: the innermost aten operator or autograd node of the stack
 *              (torch.c; wait stacks have no native frames);
 *   by wait    what the waiting threads were in: the CUDA call in flight, else the system call.
 * share is the row's part of all sampled host time (on-CPU plus wait), from 0 to 1. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_fmt.h"
#include "rd_scan.h"

/* ---------------------------------------------------------------- system calls */

/* x86-64 numbers (asm/unistd_64.h) of the calls a thread is seen blocked in. */
static const struct { uint32_t nr; const char *name; } syscalls[] = {
    {0, "read"},          {1, "write"},         {7, "poll"},           {16, "ioctl"},
    {17, "pread64"},      {18, "pwrite64"},     {19, "readv"},         {20, "writev"},
    {23, "select"},       {24, "sched_yield"},  {34, "pause"},         {35, "nanosleep"},
    {40, "sendfile"},     {42, "connect"},      {43, "accept"},        {44, "sendto"},
    {45, "recvfrom"},     {46, "sendmsg"},      {47, "recvmsg"},       {61, "wait4"},
    {65, "semop"},        {69, "msgsnd"},       {70, "msgrcv"},        {73, "flock"},
    {74, "fsync"},        {75, "fdatasync"},    {128, "rt_sigtimedwait"}, {130, "rt_sigsuspend"},
    {202, "futex"},       {208, "io_getevents"}, {220, "semtimedop"},  {230, "clock_nanosleep"},
    {232, "epoll_wait"},  {247, "waitid"},      {257, "openat"},       {270, "pselect6"},
    {271, "ppoll"},       {275, "splice"},      {281, "epoll_pwait"},  {288, "accept4"},
    {426, "io_uring_enter"}, {441, "epoll_pwait2"}, {449, "futex_waitv"},
};

const char *rd_syscall_name(uint32_t nr) {
  for (size_t i = 0; i < sizeof syscalls / sizeof *syscalls; i++)
    if (syscalls[i].nr == nr) return syscalls[i].name;
  return NULL;
}

const char *rd_wait_state_label(uint32_t state, char *buf, size_t n) {
  if (!state) snprintf(buf, n, "[wait]");
  else if (rd_syscall_name(state - 1)) snprintf(buf, n, "[wait: %s]", rd_syscall_name(state - 1));
  else snprintf(buf, n, "[wait: syscall %u]", state - 1);
  return buf;
}

const char *rd_wait_label(const rd_trace *t, const rd_sample *s, char *buf, size_t n) {
  if (s->api_fn) {
    snprintf(buf, n, "[in %s]", rd_func_name(t, s->api_fn));
    return buf;
  }
  return rd_wait_state_label(s->state, buf, n);
}

/* ---------------------------------------------------------------- tables */

/* A row of a table keyed by a string (the line, operator or wait tables). */
typedef struct srow {
  char *key;            /* what tells rows apart (the line table: function, file, line) */
  char *function, *file;
  uint32_t line;
  uint64_t ns[2], n[2]; /* [RD_SAMPLE_CPU], [RD_SAMPLE_WAIT] */
} srow;

typedef struct stab {
  srow *v;
  size_t n, cap;
  rd_u64map ix;         /* hash of key -> index (a collision falls back to a scan) */
} stab;

static srow *stab_row(stab *tb, const char *key, int *added) {
  uint64_t h = rd_hash_str(key);
  uint32_t i;
  *added = 0;
  if (rd_m_get(&tb->ix, h, &i)) {
    if (!strcmp(tb->v[i].key, key)) return &tb->v[i];
    for (size_t k = 0; k < tb->n; k++)
      if (!strcmp(tb->v[k].key, key)) return &tb->v[k];
  }
  if (tb->n == tb->cap) {
    tb->cap = tb->cap ? tb->cap * 2 : 64;
    tb->v = rd_xrealloc(tb->v, tb->cap * sizeof *tb->v);
  }
  srow *r = &tb->v[tb->n];
  memset(r, 0, sizeof *r);
  r->key = rd_xstrdup(key);
  if (!rd_m_get(&tb->ix, h, &i)) rd_m_put(&tb->ix, h, (uint32_t)tb->n);
  tb->n++;
  *added = 1;
  return r;
}

static void stab_free(stab *tb) {
  for (size_t i = 0; i < tb->n; i++) {
    free(tb->v[i].key);
    free(tb->v[i].function);
    free(tb->v[i].file);
  }
  free(tb->v);
  rd_m_free(&tb->ix);
  memset(tb, 0, sizeof *tb);
}

/* One thread of one trace. */
typedef struct sthread {
  uint32_t pid, tid;
  char *name;
  uint64_t ns[2], n[2];
} sthread;

/* The samples of the current trace with one (kind, stack, state, api_fn). */
typedef struct sgroup {
  uint32_t kind, stack, state, api_fn;
  uint64_t ns, n;
} sgroup;

struct rd_samples {
  /* totals over the traces */
  uint64_t ns[2], n[2], lost, written, cost_ns;
  uint32_t hz;
  int traces;           /* traces with samples */
  sthread *th;
  size_t nth, capth;
  stab lines, ops, waits;
  /* the trace of the current pass */
  rd_map tix;           /* tid -> index + 1 into th */
  rd_map tnames;        /* tid -> ThreadInfo name (malloc'd) */
  sgroup *g;
  size_t ng, capg;
  rd_u64map gix;        /* hash of the group's fields -> index */
  uint64_t trace_n;     /* samples of the current trace */
};

rd_samples *rd_samples_new(void) {
  rd_samples *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

static uint64_t group_hash(uint32_t kind, uint32_t stack, uint32_t state, uint32_t api_fn) {
  return rd_hash64(((uint64_t)stack << 32 | api_fn) ^ rd_hash64((uint64_t)state << 8 | kind));
}

static sgroup *group_of(rd_samples *x, const rd_sample *s) {
  uint64_t h = group_hash(s->kind, s->stack, s->state, s->api_fn);
  uint32_t i;
  if (rd_m_get(&x->gix, h, &i)) {
    sgroup *g = &x->g[i];
    if (g->kind == s->kind && g->stack == s->stack && g->state == s->state && g->api_fn == s->api_fn)
      return g;
    for (size_t k = 0; k < x->ng; k++) { /* a collision (rare) */
      g = &x->g[k];
      if (g->kind == s->kind && g->stack == s->stack && g->state == s->state && g->api_fn == s->api_fn)
        return g;
    }
  }
  if (x->ng == x->capg) {
    x->capg = x->capg ? x->capg * 2 : 256;
    x->g = rd_xrealloc(x->g, x->capg * sizeof *x->g);
  }
  sgroup *g = &x->g[x->ng];
  *g = (sgroup){s->kind, s->stack, s->state, s->api_fn, 0, 0};
  if (!rd_m_get(&x->gix, h, &i)) rd_m_put(&x->gix, h, (uint32_t)x->ng);
  x->ng++;
  return g;
}

static sthread *thread_of(rd_samples *x, const rd_trace *t, uint32_t tid) {
  uintptr_t v = (uintptr_t)rd_map_get(&x->tix, tid);
  if (v) return &x->th[v - 1];
  if (x->nth == x->capth) {
    x->capth = x->capth ? x->capth * 2 : 16;
    x->th = rd_xrealloc(x->th, x->capth * sizeof *x->th);
  }
  sthread *h = &x->th[x->nth++];
  memset(h, 0, sizeof *h);
  h->pid = t->pid;
  h->tid = tid;
  rd_map_put(&x->tix, tid, (void *)(uintptr_t)x->nth);
  return h;
}

static void on_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  rd_samples *x = ctx;
  (void)t;
  if (p->data_case == DLH__PACKET__DATA_THREAD && p->thread->name)
    free(rd_map_put(&x->tnames, p->thread->tid, rd_xstrdup(p->thread->name)));
}

static void on_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  rd_samples *x = ctx;
  int k = s->kind == RD_SAMPLE_WAIT;
  sthread *h = thread_of(x, t, s->tid);
  h->ns[k] += s->weight;
  h->n[k]++;
  sgroup *g = group_of(x, s);
  g->ns += s->weight;
  g->n++;
  x->ns[k] += s->weight;
  x->n[k]++;
  x->trace_n++;
}

rd_sink rd_samples_sink(rd_samples *x) {
  rd_sink s = {x, on_packet, NULL, NULL, 0, on_sample};
  return s;
}

void rd_sample_where(const rd_trace *t, uint32_t stack, const char **fn, const char **file,
                     uint32_t *line, char *buf, size_t cap) {
  const rd_frame *fr;
  size_t n = stack ? rd_stack_frames(t, stack, &fr) : 0;
  *fn = "[no stack]";
  *file = NULL;
  *line = 0;
  if (!n) return;
  const rd_frame *py = NULL, *user = NULL;
  for (size_t i = 0; i < n && !user; i++) { /* innermost first */
    if (!fr[i].python) continue;
    if (!py) py = &fr[i];
    if (rd_torch_user_file(fr[i].file)) user = &fr[i];
  }
  const rd_frame *w = user ? user : py ? py : &fr[0];
  if (w->python) {
    *fn = w->function ? w->function : "?";
    *file = w->file;
    *line = w->line;
  } else { /* a native function: one row whatever line it was at, named with its module */
    *fn = rd_frame_name(w, buf, cap);
    *file = w->module;
  }
}

const char *rd_sample_label(const rd_trace *t, const rd_sample *s, char *buf, size_t n) {
  char nb[256], wb[256];
  const char *fn, *file;
  uint32_t line;
  rd_sample_where(t, s->stack, &fn, &file, &line, nb, sizeof nb);
  if (s->kind == RD_SAMPLE_WAIT && !s->stack) rd_wait_label(t, s, buf, n); /* no Python frames */
  else if (s->kind == RD_SAMPLE_WAIT) snprintf(buf, n, "%s %s", fn, rd_wait_label(t, s, wb, sizeof wb));
  else snprintf(buf, n, "%s", fn);
  return buf;
}

static void add_row(srow *r, const sgroup *g) {
  int k = g->kind == RD_SAMPLE_WAIT;
  r->ns[k] += g->ns;
  r->n[k] += g->n;
}

void rd_samples_trace_end(rd_samples *x, rd_trace *t) {
  if (x->trace_n) x->traces++;
  if (t->sample_hz && !x->hz) x->hz = t->sample_hz;
  x->lost += rd_trace_samples_lost(t);
  x->cost_ns += rd_trace_sample_cost_ns(t);
  x->written += rd_trace_samples(t);
  for (size_t i = 0; i < x->nth; i++) { /* this trace's threads get their names */
    sthread *h = &x->th[i];
    if (h->name || h->pid != t->pid || rd_map_get(&x->tix, h->tid) != (void *)(uintptr_t)(i + 1)) continue;
    const char *nm = rd_map_get(&x->tnames, h->tid);
    h->name = rd_xstrdup(nm ? nm : "");
  }
  char buf[512];
  for (size_t i = 0; i < x->ng; i++) {
    const sgroup *g = &x->g[i];
    const char *fn, *file;
    uint32_t line;
    int added;
    rd_sample_where(t, g->stack, &fn, &file, &line, buf, sizeof buf);
    if (!g->stack && g->kind == RD_SAMPLE_WAIT) fn = "[no Python frames]"; /* a native thread */
    size_t kl = strlen(fn) + (file ? strlen(file) : 0) + 16;
    char *key = rd_xmalloc(kl); /* names reach 64 KiB: the whole of them tells rows apart */
    snprintf(key, kl, "%s\n%s\n%u", fn, file ? file : "", line);
    srow *r = stab_row(&x->lines, key, &added);
    free(key);
    if (added) {
      r->function = rd_xstrdup(fn);
      r->file = file ? rd_xstrdup(file) : NULL;
      r->line = line;
    }
    add_row(r, g);
    const rd_torch *tc = rd_torch_of(t, g->stack);
    const char *op = NULL;
    if (tc->op >= 0 && (tc->node < 0 || tc->op > tc->node)) op = tc->l[tc->op].name;
    else if (tc->node >= 0) op = rd_torch_node_label(tc, buf, sizeof buf);
    if (g->kind == RD_SAMPLE_CPU) add_row(stab_row(&x->ops, op ? op : "[no operator]", &added), g);
    if (g->kind == RD_SAMPLE_WAIT) {
      rd_sample s = {0};
      s.state = g->state;
      s.api_fn = g->api_fn;
      add_row(stab_row(&x->waits, rd_wait_label(t, &s, buf, sizeof buf), &added), g);
    }
  }
  rd_map_free(&x->tix, NULL);
  rd_map_free(&x->tnames, free);
  free(x->g);
  x->g = NULL;
  x->ng = x->capg = 0;
  rd_m_free(&x->gix);
  x->trace_n = 0;
}

uint64_t rd_samples_count(const rd_samples *x) { return x ? x->n[0] + x->n[1] : 0; }

static uint64_t row_ns(const srow *r) { return r->ns[0] + r->ns[1]; }

static int by_host_ns(const void *a, const void *b) {
  const srow *x = a, *y = b;
  if (row_ns(x) != row_ns(y)) return row_ns(x) < row_ns(y) ? 1 : -1;
  if (x->n[0] + x->n[1] != y->n[0] + y->n[1]) return x->n[0] + x->n[1] < y->n[0] + y->n[1] ? 1 : -1;
  return strcmp(x->key, y->key);
}

static int by_thread_ns(const void *a, const void *b) {
  const sthread *x = a, *y = b;
  uint64_t p = x->ns[0] + x->ns[1], q = y->ns[0] + y->ns[1];
  if (p != q) return p < q ? 1 : -1;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void sort_all(rd_samples *x) {
  if (x->nth) rd_qsort(x->th, x->nth, sizeof *x->th, by_thread_ns);
  stab *tabs[] = {&x->lines, &x->ops, &x->waits};
  for (int i = 0; i < 3; i++) {
    rd_m_free(&tabs[i]->ix); /* the order changes: no more lookups */
    if (tabs[i]->n) rd_qsort(tabs[i]->v, tabs[i]->n, sizeof *tabs[i]->v, by_host_ns);
  }
}

static double share(const rd_samples *x, uint64_t ns) {
  uint64_t all = x->ns[0] + x->ns[1];
  return all ? (double)ns / (double)all : 0;
}

/* Rows of the JSON tables at most. */
#define JSON_ROWS 200

static void json_counts(FILE *f, const uint64_t *ns, const uint64_t *n) {
  fprintf(f, "\"cpu\":%" PRIu64 ",\"wait\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64,
          n[0], n[1], ns[0], ns[1]);
}

static void json_tab(FILE *f, const rd_samples *x, const stab *tb, const char *name, int lines) {
  fprintf(f, ",\n \"%s\":[", name);
  for (size_t i = 0; i < tb->n && i < JSON_ROWS; i++) {
    const srow *r = &tb->v[i];
    fputs(i ? ",\n  {" : "\n  {", f);
    if (lines) {
      fputs("\"function\":", f);
      rd_json_str(f, r->function);
      fputs(",\"file\":", f);
      rd_json_str(f, r->file);
      fprintf(f, ",\"line\":%u,", r->line);
    } else {
      fputs("\"name\":", f);
      rd_json_str(f, r->key);
      putc(',', f);
    }
    json_counts(f, r->ns, r->n);
    fputs(",\"share\":", f);
    rd_json_double(f, share(x, row_ns(r)));
    putc('}', f);
  }
  fputs("]", f);
}

void rd_samples_json(FILE *f, rd_samples *x) {
  sort_all(x);
  fprintf(f, ",\n\"samples\":{\"hz\":%u,", x->hz);
  json_counts(f, x->ns, x->n);
  fprintf(f, ",\"lost\":%" PRIu64 ",\"written\":%" PRIu64 ",\"traces\":%d,\"handler_ns\":%" PRIu64,
          x->lost, x->written, x->traces, x->cost_ns);
  fputs(",\n \"by_thread\":[", f);
  for (size_t i = 0; i < x->nth; i++) {
    const sthread *h = &x->th[i];
    fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"name\":", i ? ",\n  " : "\n  ", h->pid, h->tid);
    rd_json_str(f, h->name ? h->name : "");
    putc(',', f);
    json_counts(f, h->ns, h->n);
    fputs(",\"share\":", f);
    rd_json_double(f, share(x, h->ns[0] + h->ns[1]));
    putc('}', f);
  }
  fputs("]", f);
  json_tab(f, x, &x->lines, "by_line", 1);
  /* operators only when some sample was inside one (a PyTorch trace with native stacks) */
  int any_op = 0;
  for (size_t i = 0; i < x->ops.n; i++) any_op |= strcmp(x->ops.v[i].key, "[no operator]") != 0;
  if (any_op) json_tab(f, x, &x->ops, "by_op", 0);
  else fputs(",\n \"by_op\":[]", f);
  json_tab(f, x, &x->waits, "by_wait", 0);
  fputs("}", f);
}

static void fit(char *dst, size_t width, const char *src) { rd_term_fit(dst, 4 * width + 4, width, src); }

/* Rows of each terminal table at most. */
#define TABLE_ROWS 15

static void table_tab(FILE *f, const rd_samples *x, const stab *tb, const char *title, int lines) {
  /* 38 + 30 + 10 + 10 + 6 and the spaces: 98 columns (stats' tables stay within 100) */
  char c1[4 * 40 + 4], c2[4 * 30 + 4], b1[32], b2[32], loc[1024];
  if (lines) fprintf(f, "\n%-38s %-30s %10s %10s %6s\n", title, "File:line", "On-CPU", "Wait", "Share");
  else fprintf(f, "\n%-40s %10s %10s %6s\n", title, "On-CPU", "Wait", "Share");
  for (size_t i = 0; i < tb->n && i < TABLE_ROWS; i++) {
    const srow *r = &tb->v[i];
    fit(c1, lines ? 38 : 40, lines ? r->function : r->key);
    if (lines) {
      if (r->file && r->line) snprintf(loc, sizeof loc, "%s:%u", r->file, r->line);
      else if (r->file) snprintf(loc, sizeof loc, "%s", r->file);
      else snprintf(loc, sizeof loc, "-");
      /* the end of a long path says more than its start */
      size_t l = strlen(loc);
      const char *tail = l > 30 ? loc + l - 30 : loc;
      while (tail > loc && ((unsigned char)*tail & 0xc0) == 0x80) tail++; /* a whole character */
      fit(c2, 30, tail);
      fprintf(f, "%s %s %10s %10s %5.1f%%\n", c1, c2, dlh_fmt_ns(b1, sizeof b1, r->ns[0]),
              dlh_fmt_ns(b2, sizeof b2, r->ns[1]), 100 * share(x, row_ns(r)));
    } else {
      fprintf(f, "%s %10s %10s %5.1f%%\n", c1, dlh_fmt_ns(b1, sizeof b1, r->ns[0]),
              dlh_fmt_ns(b2, sizeof b2, r->ns[1]), 100 * share(x, row_ns(r)));
    }
  }
  if (tb->n > TABLE_ROWS) fprintf(f, "(%zu more: dlhook stats --json)\n", tb->n - TABLE_ROWS);
}

void rd_samples_table(FILE *f, rd_samples *x) {
  if (!x->n[0] && !x->n[1]) {
    if (x->lost) fprintf(f, "\nHost time (samples): none written, %" PRIu64 " lost\n", x->lost);
    return;
  }
  sort_all(x);
  char b1[32], b2[32], nm[4 * 24 + 4];
  fprintf(f, "\nHost time (samples");
  if (x->hz) fprintf(f, " at %u Hz", x->hz);
  fprintf(f, "): %" PRIu64 " on-CPU samples, %s; %" PRIu64 " wait samples, %s; %" PRIu64 " lost\n",
          x->n[0], dlh_fmt_ns(b1, sizeof b1, x->ns[0]), x->n[1], dlh_fmt_ns(b2, sizeof b2, x->ns[1]),
          x->lost);
  fprintf(f, "%-24s %8s %8s %10s %10s %6s\n", "Thread", "pid", "tid", "On-CPU", "Wait", "Share");
  for (size_t i = 0; i < x->nth && i < TABLE_ROWS; i++) {
    const sthread *h = &x->th[i];
    fit(nm, 24, h->name && *h->name ? h->name : "-");
    fprintf(f, "%s %8u %8u %10s %10s %5.1f%%\n", nm, h->pid, h->tid, dlh_fmt_ns(b1, sizeof b1, h->ns[0]),
            dlh_fmt_ns(b2, sizeof b2, h->ns[1]), 100 * share(x, h->ns[0] + h->ns[1]));
  }
  if (x->nth > TABLE_ROWS) fprintf(f, "(%zu more threads: dlhook stats --json)\n", x->nth - TABLE_ROWS);
  table_tab(f, x, &x->lines, "Host time by function", 1);
  int any_op = 0;
  for (size_t i = 0; i < x->ops.n; i++) any_op |= strcmp(x->ops.v[i].key, "[no operator]") != 0;
  if (any_op) table_tab(f, x, &x->ops, "Host time by operator (sampled)", 0);
  if (x->waits.n) table_tab(f, x, &x->waits, "Waiting in", 0);
}

void rd_samples_free(rd_samples *x) {
  if (!x) return;
  for (size_t i = 0; i < x->nth; i++) free(x->th[i].name);
  free(x->th);
  stab_free(&x->lines);
  stab_free(&x->ops);
  stab_free(&x->waits);
  rd_map_free(&x->tix, NULL);
  rd_map_free(&x->tnames, free);
  free(x->g);
  rd_m_free(&x->gix);
  free(x);
}

void rd_samples_cost(const rd_samples *x, uint64_t *lost, uint64_t *cost_ns) {
  *lost = x ? x->lost : 0;
  *cost_ns = x ? x->cost_ns : 0;
}
