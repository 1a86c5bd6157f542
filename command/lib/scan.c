/* scan.c — the streaming scan of a trace that every exporter and analysis uses (time window,
 * merge offsets, progress on stderr), the u64 -> u32 map and argument lookup of its users. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "dlh_fmt.h"
#include "rd_scan.h"

static uint64_t rd_events_scanned; /* for the progress line */

/* Per-trace clock offsets set by `dlhook merge` (ns added to every time of that trace). */
static char **off_paths;
static const int64_t *off_vals;
static size_t off_n;
void rd_set_offsets(char **paths, const int64_t *offsets, size_t n) {
  off_paths = paths;
  off_vals = offsets;
  off_n = n;
}
int64_t rd_offset_of(const char *path) {
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

/* Progress on a terminal: one line on stderr, rewritten twice a second, erased when a pass
 * ends; only when stderr is a terminal (nothing in a log or a pipe) and the work has taken
 * DLHOOK_PROGRESS_AFTER seconds (default 1). The plan (rd_progress_plan) is the command's list
 * of traces: the line says which of them is being read, the events read and their rate, and
 * the time left: the labelled passes' time so far, scaled by the bytes they have still to read
 * (the plan's bytes times the passes a trace has needed so far: a format that reads each
 * trace twice learns it on the first) against those they read. */
static struct {
  int tty;              /* stderr is a terminal: -1 not asked yet */
  double t0, last, after;
  double busy, pass_t0; /* time in labelled passes that ended; the start of this one */
  char *const *files;   /* the plan (the caller's array) */
  size_t n;
  uint64_t total, done; /* the plan's bytes; bytes of the labelled passes that ended */
  const char *cur;      /* the trace of the last labelled pass, and its passes so far */
  unsigned cur_passes, passes;
  int shown;            /* a line is on the terminal */
  const char *drawn;    /* the trace the line was last drawn for */
} prog = {-1, 0, 0, 1.0, 0, 0, NULL, 0, 0, 0, NULL, 0, 1, 0, NULL};

/* 1234567 as "1.23 M": the line stays short. */
static const char *fmt_count(char *buf, size_t cap, uint64_t n) {
  if (n < 10000) snprintf(buf, cap, "%" PRIu64, n);
  else if (n < 1000000) snprintf(buf, cap, "%.1f k", (double)n / 1e3);
  else snprintf(buf, cap, "%.2f M", (double)n / 1e6);
  return buf;
}

static int progress_on(void) {
  if (prog.tty < 0) {
    prog.tty = isatty(STDERR_FILENO) == 1;
    const char *pa = getenv("DLHOOK_PROGRESS_AFTER"); /* seconds before it shows (tests) */
    if (pa) prog.after = atof(pa);
  }
  return prog.tty;
}

void rd_progress_plan(char *const *files, size_t n) {
  prog.t0 = now_s();
  prog.files = files;
  prog.n = n;
  prog.total = prog.done = 0;
  prog.busy = 0;
  prog.cur = NULL;
  prog.passes = 1;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(files[i], &st) == 0) prog.total += (uint64_t)st.st_size;
  }
}

static void progress_begin(const char *path, uint64_t size) {
  prog.pass_t0 = now_s();
  if (!prog.t0) prog.t0 = prog.pass_t0; /* no plan: this trace alone */
  if (!prog.n) prog.total = size;
  if (prog.cur && !strcmp(prog.cur, path)) {
    if (++prog.cur_passes > prog.passes) prog.passes = prog.cur_passes;
  } else {
    prog.cur = path;
    prog.cur_passes = 1;
  }
}

static void progress_tick(const char *what, const char *path, uint64_t at) {
  double t = now_s(), el = t - prog.t0;
  /* twice a second, and at once for a trace not shown yet (traces read ahead in threads can
   * take less than half a second each) */
  if (el < prog.after || (t - prog.last < 0.5 && prog.drawn == path)) return;
  prog.last = t;
  prog.drawn = path;
  prog.shown = 1;
  size_t i = 0;
  while (i < prog.n && strcmp(prog.files[i], path)) i++;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char trace[96], ev[32], rate[32], left[48] = "";
  if (i < prog.n) snprintf(trace, sizeof trace, "trace %zu/%zu %.40s", i + 1, prog.n, base);
  else snprintf(trace, sizeof trace, "%.40s", base);
  uint64_t done = prog.done + at, all = prog.total * prog.passes;
  double busy = prog.busy + (t - prog.pass_t0);
  /* a rate worth extrapolating: half a second of reading, or a whole pass */
  if (done > 0 && all > done && (busy >= 0.5 || prog.done > 0)) {
    double s = busy * (double)(all - done) / (double)done;
    if (s < 120) snprintf(left, sizeof left, ", %.0f s left", s);
    else snprintf(left, sizeof left, ", %.0f min left", s / 60);
  }
  fmt_count(ev, sizeof ev, rd_events_scanned);
  fmt_count(rate, sizeof rate, el > 0 ? (uint64_t)((double)rd_events_scanned / el) : 0);
  fprintf(stderr, "\r\033[Kdlhook: %s: %s, %s events, %s events/s%s", what, trace, ev, rate, left);
}

static void progress_end(uint64_t size) {
  prog.done += size;
  prog.busy += now_s() - prog.pass_t0;
  if (prog.shown) fputs("\r\033[K", stderr); /* the line erased: what follows starts clean */
  prog.shown = 0;
}

unsigned rd_kernel_flags(const char *k) {
  unsigned f = RD_KF_KNOWN;
  if (!k) return f;
  if (strstr(k, "nccl") || strstr(k, "Nccl") || strstr(k, "NCCL")) f |= RD_KF_COMM;
  if (!strncmp(k, "nccl", 4) || strstr(k, "ncclDevKernel") || strstr(k, "ncclKernel")) f |= RD_KF_NCCL;
  if (!strncmp(k, "ncclDevKernel", 13) || !strncmp(k, "ncclKernel", 10) || strstr(k, "ncclDevKernel"))
    f |= RD_KF_NCCL_DEV;
  return f;
}

/* The demangled name of kernel name `id` and its RD_KF_* flags (kept per trace, for both
 * passes). */
static const char *kernel_name(rd_trace *t, uint32_t id, unsigned *flags) {
  char *k = rd_map_get(&t->knames, id);
  if (k) {
    *flags = (unsigned)(uintptr_t)rd_map_get(&t->kflags, id);
    return k;
  }
  const char *raw = rd_trace_string(t, id);
  *flags = rd_kernel_flags(NULL);
  if (!raw) return NULL;
  k = rd_demangle(raw);
  if (!k) k = rd_xstrdup(raw);
  rd_map_put(&t->knames, id, k);
  *flags = rd_kernel_flags(k);
  rd_map_put(&t->kflags, id, (void *)(uintptr_t)*flags);
  return k;
}

uint64_t rd_event_limit(const rd_opts *o, uint64_t size) {
  if (!o->events_limited) return UINT64_MAX;
  if (o->have_max_events) return o->max_events ? o->max_events : UINT64_MAX;
  uint64_t base = RD_EVENTS_BASE / (unsigned)o->events_limited,
           per = RD_EVENTS_PER_BYTE / (unsigned)o->events_limited;
  uint64_t by_size = size > UINT64_MAX / per ? UINT64_MAX : size * per;
  return by_size > base ? by_size : base;
}

uint64_t rd_default_event_limit(const char *path, int level) {
  struct stat st;
  rd_opts o;
  memset(&o, 0, sizeof o);
  o.events_limited = level;
  return rd_event_limit(&o, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);
}

int rd_parse_max_events(const char *cmd, const char *v, rd_opts *o) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (!*v || *v == '-' || *end || errno)
    return rd_usage_error(cmd, "bad --max-events '%s' (a number of events; 0: no limit)", v);
  o->have_max_events = 1;
  o->max_events = n;
  return RD_OK;
}

/* The limit was reached: the rest of the pass has no events. */
static void over_limit(rd_trace *t, uint64_t limit, uint64_t at) {
  t->events_over = 1;
  t->events_limit = limit;
  t->events_over_at = at;
  rd_trace_skip(t, RD_EVENT_CASES);
}

/* The columns come from a file nobody vouches for: time_delta gives the count, every other
 * column must be as long or empty (= 0 for all). */
void rd_sample_iter_init(rd_sample_iter *it, const Dlh__SampleBatch *b) {
  memset(it, 0, sizeof *it);
  it->b = b;
  size_t n = b->n_time_delta;
  const size_t len[] = {b->n_kind, b->n_weight_ns, b->n_stack, b->n_state, b->n_api_fn};
  it->cut = n;
  for (size_t k = 0; k < sizeof len / sizeof *len; k++)
    if (len[k] && len[k] != n) {
      it->bad = 1;
      if (len[k] < it->cut) it->cut = len[k];
    }
  it->t = b->base_ns;
}

int rd_sample_iter_next(rd_sample_iter *it, rd_sample *x) {
  const Dlh__SampleBatch *b = it->b;
  if (it->i >= it->cut) return 0;
  size_t i = it->i++;
  it->t += (uint64_t)b->time_delta[i];
  x->tid = b->tid;
  x->time = it->t;
  x->kind = b->n_kind ? b->kind[i] : RD_SAMPLE_CPU;
  x->weight = b->n_weight_ns ? b->weight_ns[i] : 0;
  x->stack = b->n_stack ? b->stack[i] : 0;
  x->state = b->n_state ? b->state[i] : 0;
  x->api_fn = b->n_api_fn ? b->api_fn[i] : 0;
  return 1;
}

/* The samples of a SampleBatch to s (window and offset applied; kinds this reader does not
 * know passed over). Returns 1 when the batch is damaged (what was readable was delivered). */
static int stream_samples(rd_trace *t, const Dlh__SampleBatch *b, int64_t off, uint64_t lo,
                          uint64_t hi, rd_sink *s, uint64_t *n, uint64_t limit) {
  rd_sample_iter it;
  rd_sample x;
  rd_sample_iter_init(&it, b);
  while (rd_sample_iter_next(&it, &x)) {
    rd_events_scanned++;
    x.time += (uint64_t)off;
    if (x.kind != RD_SAMPLE_CPU && x.kind != RD_SAMPLE_WAIT) continue;
    int in = x.time < hi && x.time >= lo;
    if (in && *n == limit) {
      over_limit(t, limit, x.time);
      return 0;
    }
    *n += in;
    if (!s->unwindowed && !in) continue;
    if (s->sample) s->sample(s->ctx, t, &x);
  }
  return it.bad;
}

/* Streams the rest of t's current pass to s (window, offsets, kernel names), decoding only
 * through format/'s iterators (and rd_sample_iter above for host samples). Returns RD_OK or
 * RD_BAD_INPUT. */
static int stream(rd_trace *t, const rd_opts *o, const char *what, rd_sink *s) {
  struct stat st;
  uint64_t size = stat(t->path, &st) == 0 ? (uint64_t)st.st_size : 0;
  int show = !o->quiet && what && progress_on(); /* a labelled pass, on a terminal */
  if (show) progress_begin(t->path, size);
  uint64_t lo = 0, hi = UINT64_MAX;
  const Dlh__Packet *p;
  int rc, bad = 0;
  uint64_t tick = 0;
  const int64_t off = rd_offset_of(t->path); /* dlhook merge: this trace on the common timeline */
  /* the window is relative to the process's start, known from the first pass (or, in the
   * first, from the ProcessInfo that opens the file) */
  int have_base = t->have_process && t->have_start;
  uint64_t base = t->start_ns + (uint64_t)off;
  /* events inside the window so far, and the limit (rd_event_limit): both passes stop at the
   * same event */
  uint64_t n = 0, limit = rd_event_limit(o, size);
  t->events_over = 0;
  /* the definitions only the first pass reads (rd.h, defs_clean): not even decoded again */
  if (t->pass == 2 && t->defs_clean) rd_trace_skip(t, RD_DEF_CASES);
  while ((rc = rd_trace_next(t, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_STRING && rd_map_get(&t->knames, p->string->id)) {
      const char *raw = p->string->value ? p->string->value : ""; /* redefined */
      char *k = rd_demangle(raw);
      if (!k) k = rd_xstrdup(raw);
      free(rd_map_put(&t->knames, p->string->id, k));
      rd_map_put(&t->kflags, p->string->id, (void *)(uintptr_t)rd_kernel_flags(k));
    }
    if (!have_base && t->have_process && t->have_start) {
      base = t->start_ns + (uint64_t)off;
      have_base = 1;
    }
    if (o->have_window) {
      lo = base + o->win_start;
      hi = o->win_end == UINT64_MAX ? UINT64_MAX : base + o->win_end;
    }
    t->win_lo = lo;
    t->win_hi = hi;
    if (t->events_over && (p->data_case == DLH__PACKET__DATA_API || p->data_case == DLH__PACKET__DATA_GPU ||
                           p->data_case == DLH__PACKET__DATA_SAMPLES)) {
      /* a batch decoded before the limit was reached (the reader's look-ahead): passed over */
    } else if (p->data_case == DLH__PACKET__DATA_API) {
      dlh_api_iter it;
      dlh_api_event ev;
      uint32_t tid = p->api->tid;
      dlh_api_iter_init(&it, p->api);
      while (dlh_api_iter_next(&it, &ev)) {
        rd_events_scanned++;
        ev.start_ns += (uint64_t)off;
        /* a folded event covers its span (first call's start to last call's end) */
        int in = !(ev.start_ns >= hi || ev.start_ns + dlh_api_span(&ev) < lo);
        if (in && n == limit) {
          over_limit(t, limit, ev.start_ns);
          break;
        }
        n += in;
        if (!s->unwindowed && !in) continue;
        if (s->api) s->api(s->ctx, t, tid, &ev);
      }
      if (it.bad && !t->events_over) bad = 1;
    } else if (p->data_case == DLH__PACKET__DATA_GPU) {
      dlh_gpu_iter it;
      dlh_gpu_event ev;
      dlh_gpu_iter_init(&it, p->gpu);
      while (dlh_gpu_iter_next(&it, &ev)) {
        rd_gpu g;
        g.kind = ev.kind;
        g.start = g.kind == RD_EXTCORR ? ev.start_ns : ev.start_ns + (uint64_t)off;
        g.dur = ev.dur_ns;
        g.corr = ev.corr;
        g.stream = ev.stream;
        g.name = ev.name;
        g.kflags = RD_KF_KNOWN;
        g.kname = ev.name ? kernel_name(t, ev.name, &g.kflags) : NULL;
        g.context = ev.context;
        g.device = ev.device;
        g.nvals = ev.nvals;
        g.vals = ev.vals;
        g.graph = ev.graph;
        g.graph_node = ev.graph_node;
        g.launch_corr = 0;
        if (ev.graph_node && t->graphs) { /* replayed: the work of the call that made its node */
          const rd_graph_node *made = rd_graph_node_made(t, ev.graph_node);
          if (made) {
            g.launch_corr = g.corr;
            g.corr = made->corr;
          }
        }
        rd_events_scanned++;
        int in = g.kind == RD_EXTCORR || !(g.start >= hi || g.start + g.dur < lo);
        if (in && n == limit) {
          over_limit(t, limit, g.start);
          break;
        }
        n += in;
        if (!s->unwindowed && !in) continue;
        if (s->gpu) s->gpu(s->ctx, t, &g);
      }
      if (it.bad && !t->events_over) bad = 1;
    } else if (p->data_case == DLH__PACKET__DATA_SAMPLES) {
      if (stream_samples(t, p->samples, off, lo, hi, s, &n, limit)) bad = 1;
    } else if (s->packet) {
      s->packet(s->ctx, t, p);
    }
    if (show && ++tick % 64 == 0) progress_tick(what, t->path, dlh_reader_offset(t->r));
  }
  if (show) progress_end(size);
  if (bad && (t->pass == 2 || t->only) && !t->quiet_damage)
    rd_error("%s: inconsistent event batch (skipped its remaining events)", t->path);
  if (t->events_over && (t->pass == 2 || t->only) && !t->quiet_damage) {
    char sz[32];
    uint64_t at = t->events_over_at - (t->have_start ? t->start_ns + (uint64_t)off : 0);
    if (o->have_max_events)
      rd_error("%s: more events than --max-events %" PRIu64 ": the output holds the first %" PRIu64
               " (up to %.6f s into the trace); --max-events 0 for all of them",
               t->path, limit, limit, (double)at / 1e9);
    else
      rd_error("%s: more than %" PRIu64 " events (API calls, GPU records, host samples) in a file of %s: "
               "over this output's limit (%llu Mi events, or %llu per byte of the file when more); "
               "the output holds the first %" PRIu64 " (up to %.6f s into the trace); --max-events N "
               "sets another limit (0: none)%s",
               t->path, limit, dlh_fmt_bytes(sz, sizeof sz, size),
               (RD_EVENTS_BASE >> 20) / (unsigned)o->events_limited,
               RD_EVENTS_PER_BYTE / (unsigned)o->events_limited, limit, (double)at / 1e9,
               o->have_window || !o->format ? "" : ", --window a part of the trace");
  }
  return rc < 0 || bad || t->events_over ? RD_BAD_INPUT : RD_OK;
}

int rd_open(rd_trace *t, const char *path, const rd_opts *o, rd_sink *pre) {
  if (rd_trace_begin(t, path, pre != NULL) < 0) return RD_BAD_INPUT;
  int rc = RD_OK;
  if (pre) {
    rc = stream(t, o, NULL, pre);
  } else {
    const Dlh__Packet *p;
    while (rd_trace_next(t, &p) == 1) {}
  }
  rd_trace_rewind(t);
  return rc;
}

int rd_read_once(rd_trace *t, const char *path, const rd_opts *o, const char *what, rd_sink *s) {
  if (rd_trace_begin(t, path, 1) < 0) return RD_BAD_INPUT;
  t->only = 1;
  int rc = stream(t, o, what, s);
  rd_trace_end_first(t);
  return rc;
}

int rd_read_again(rd_trace *t, const rd_opts *o, const char *what, rd_sink *s) {
  if (!t->only || t->r || t->opens != 1) {
    rd_error("%s: internal: rd_read_again without rd_read_once", t->path);
    return RD_BAD_INPUT;
  }
  t->only = 0;
  t->pass = 2;
  t->defs_read = 1;
  t->quiet_damage = 1; /* the first pass said it */
  return stream(t, o, what, s);
}

int rd_pass(rd_trace *t, const rd_opts *o, const char *what, rd_sink *s) {
  if (t->pass != 2 || t->r) { /* a second pass over the same open trace would be a third read */
    rd_error("%s: internal: rd_pass without rd_open", t->path);
    return RD_BAD_INPUT;
  }
  return stream(t, o, what, s);
}

int rd_scan(const char *path, const rd_opts *o, const char *what, rd_sink *s) {
  rd_trace t;
  if (rd_open(&t, path, o, NULL) != RD_OK && t.opens == 0) return RD_BAD_INPUT;
  int rc = rd_pass(&t, o, what, s);
  rd_trace_close(&t);
  return rc;
}

/* ---------------------------------------------------------------- several consumers */

static void tee_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  rd_tee *x = ctx;
  for (size_t i = 0; i < x->n; i++)
    if (x->s[i] && x->s[i]->packet) x->s[i]->packet(x->s[i]->ctx, t, p);
}
static void tee_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  rd_tee *x = ctx;
  int in = !(ev->start_ns >= t->win_hi || ev->start_ns + dlh_api_span(ev) < t->win_lo);
  for (size_t i = 0; i < x->n; i++)
    if (x->s[i] && x->s[i]->api && (in || x->s[i]->unwindowed)) x->s[i]->api(x->s[i]->ctx, t, tid, ev);
}
static void tee_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  rd_tee *x = ctx;
  int in = g->kind == RD_EXTCORR || !(g->start >= t->win_hi || g->start + g->dur < t->win_lo);
  for (size_t i = 0; i < x->n; i++)
    if (x->s[i] && x->s[i]->gpu && (in || x->s[i]->unwindowed)) x->s[i]->gpu(x->s[i]->ctx, t, g);
}

static void tee_sample(void *ctx, const rd_trace *t, const rd_sample *sm) {
  rd_tee *x = ctx;
  int in = sm->time >= t->win_lo && sm->time < t->win_hi;
  for (size_t i = 0; i < x->n; i++)
    if (x->s[i] && x->s[i]->sample && (in || x->s[i]->unwindowed)) x->s[i]->sample(x->s[i]->ctx, t, sm);
}

/* The tee takes every event and applies the window for each consumer. */
rd_sink rd_tee_sink(rd_tee *x) {
  if (x->n == 1 && x->s[0]) return *x->s[0]; /* one consumer: no tee in the way */
  return (rd_sink){x, tee_packet, tee_api, tee_gpu, 1, tee_sample};
}

/* ---------------------------------------------------------------- helpers */

/* The index of the first of f's args named one of names ("a|b|c"), -1 when none. */
static int arg_named(const rd_func *f, const char *names) {
  for (size_t i = 0; i < f->nargs; i++) {
    const char *a = f->argname[i];
    size_t al = strlen(a);
    for (const char *n = names; *n;) {
      const char *e = strchr(n, '|');
      size_t nl = e ? (size_t)(e - n) : strlen(n);
      if (nl == al && !strncmp(n, a, nl)) return (int)i;
      n += nl + (e != NULL);
    }
  }
  return -1;
}

int rd_arg_index(const rd_func *f, const char *names) {
  /* the names are string constants of the callers: their address stands for them (a few per
   * function, asked for every call) */
  rd_func *c = (rd_func *)f; /* rd.h: a cache the analyses fill */
  size_t k = (size_t)(((uintptr_t)names * 0x9e3779b97f4a7c15ull) >> 59); /* 32 slots */
  if (c->arg_cache[k].names != names) {
    c->arg_cache[k].names = names;
    c->arg_cache[k].ix = arg_named(f, names);
  }
  return c->arg_cache[k].ix;
}

int rd_arg(const rd_trace *t, const dlh_api_event *ev, const char *names, uint64_t *v) {
  const rd_func *f = rd_trace_func(t, ev->fn);
  int ix = f ? rd_arg_index(f, names) : -1;
  if (ix < 0 || (uint32_t)ix >= ev->nargs) return 0;
  *v = ev->args[ix];
  return 1;
}

