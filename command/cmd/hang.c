/* hang.c — `dlhook hang DIR`: why a job hangs, from the flight recorder's dumps of its ranks
 * (DLHOOK_MODE=flight writes <trace>.flight.dlh in every process of the job when one of them
 * sees a call in flight for DLHOOK_HANG_S, dies, or is told to dump).
 *
 * Each dump's FlightDump says, for every NCCL communicator the process used, the sequence
 * number of the last operation it issued (seq counts a communicator's operations and is the
 * same for the same collective on every rank: NCCL requires every rank to issue them in one
 * order). A collective completes only when every rank has issued it, so everything up to the
 * smallest last seq of the ranks can have completed; the ranks at a higher seq wait in the
 * collective after that smallest one, which the ranks at the smallest never entered. Those are
 * the ranks the job waits for: where they are is their threads' last host samples (on-CPU: the
 * native and Python stack; waiting: the Python frames and the system call), and whether a
 * recorded CUDA or library call of theirs is in flight. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rd.h"
#include "rd_opts.h"
#include "rd_scan.h"

enum { OPT_JSON = RD_KEY(0), OPT_FRAMES };
static const rd_option options[] = {
    {"json", OPT_JSON, NULL, "one JSON object instead of the text report", NULL, 0},
    {"frames", OPT_FRAMES, "N", "stack frames shown per thread (default 8)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_hang_spec = {
    .name = "hang",
    .synopsis = "[--json] [--frames N] DIR|DUMP...",
    .summary = "which rank a hung job waits for, and where it is (flight recorder dumps)",
    .about = "Reads the flight recorder's dumps of a job (the *.flight*.dlh files in DIR, or the "
             "dump files given) and says, on one screen, for each NCCL communicator: each rank's "
             "last issued collective (seq, the same number on every rank for the same "
             "collective) and whether a recorded call of it is in flight; the collective the "
             "others wait in; the ranks that never entered it; and where those ranks are: each "
             "thread's stack (native and Python) at its last host sample, and the system call it "
             "waits in.\n\n"
             "Collectives up to the smallest last seq of the ranks can have completed (each one "
             "completes once every rank has issued it); a rank at a higher seq waits in the one "
             "after it. A process that dumped more than once counts with its last dump. The "
             "dumps come from DLHOOK_MODE=flight (dlhook record --flight-recorder): when one "
             "process sees a call in flight for DLHOOK_HANG_S seconds, every process that "
             "records into the same directory dumps.",
    .examples = " dlhook record --flight-recorder --hang=600 -o dumps -- torchrun ... train.py\n"
                " dlhook hang dumps\n"
                " dlhook hang --json dumps/*.flight*.dlh",
    .exit_status = "0 when the dumps were read (whether or not a rank was found missing), 1 "
                   "when none could be read, 2 on a usage error.",
    .options = options,
};

/* ---------------------------------------------------------------- what each dump says */

typedef struct hcomm {
  uint64_t hash, seq, ops;       /* seq: of the last operation issued (returned) */
  int rank, nranks;
  char *op;                      /* its last operation's name */
  uint32_t tid;                  /* the thread that issued it */
  const char *inflight;          /* an NCCL call of that thread in flight (blocking): its name */
} hcomm;

typedef struct hthread {
  uint32_t tid, depth, state, kind;
  int in_call;
  uint64_t since_ns, sample_ns, cpu_ns;
  uint32_t stack, cpu_stack;
  char *last_call;
  char name[32];
} hthread;

typedef struct hproc {
  char *path;
  rd_trace t;                    /* open until the end: its stacks are read at output time */
  int have_flight;
  uint32_t pid, reason, dump_seq;
  int rank;
  uint64_t time_ns, first_ns;
  char *detail;
  hcomm *comms;
  size_t ncomms;
  hthread *threads;
  size_t nthreads;
  int dropped;                   /* superseded by a later dump of the same process */
} hproc;

/* The name of operation seq of a communicator, from the NCCL calls in the dumps' windows. */
typedef struct opname { uint64_t hash, seq; char *name; } opname;
static opname *ops;
static size_t nops, capops;

static void note_op(uint64_t hash, uint64_t seq, const char *name) {
  for (size_t i = nops; i-- > 0;)
    if (ops[i].hash == hash && ops[i].seq == seq) return;
  if (nops == capops) {
    capops = capops ? capops * 2 : 256;
    ops = rd_xrealloc(ops, capops * sizeof *ops);
  }
  ops[nops++] = (opname){hash, seq, rd_xstrdup(name)};
}

static const char *op_name(uint64_t hash, uint64_t seq) {
  for (size_t i = 0; i < nops; i++)
    if (ops[i].hash == hash && ops[i].seq == seq) return ops[i].name;
  return NULL;
}

static const char *const reasons[] = {"dlhook ctl dump", "signal", "exit status", "hang",
                                      "out of GPU memory", "job request"};
static const char *reason_name(uint32_t r) { return r < 6 ? reasons[r] : "unknown"; }

static void take_flight(hproc *h, const rd_trace *t, const Dlh__FlightDump *d) {
  for (size_t i = 0; i < h->ncomms; i++) free(h->comms[i].op);
  for (size_t i = 0; i < h->nthreads; i++) free(h->threads[i].last_call);
  free(h->comms);
  free(h->threads);
  free(h->detail);
  h->have_flight = 1;
  h->reason = d->reason;
  h->dump_seq = d->dump_seq;
  h->time_ns = d->time_ns;
  h->first_ns = d->first_ns;
  h->detail = rd_xstrdup(d->detail ? d->detail : "");
  h->ncomms = d->n_comms;
  h->comms = rd_xmalloc((d->n_comms + 1) * sizeof *h->comms);
  for (size_t i = 0; i < d->n_comms; i++) {
    const Dlh__FlightComm *c = d->comms[i];
    const char *name = rd_func_name(t, c->fn);
    h->comms[i] = (hcomm){c->comm_hash, c->seq, c->ops, c->rank, c->nranks,
                          rd_xstrdup(name ? name : "?"), c->tid, NULL};
    note_op(c->comm_hash, c->seq, name ? name : "?");
  }
  h->nthreads = d->n_threads;
  h->threads = rd_xmalloc((d->n_threads + 1) * sizeof *h->threads);
  for (size_t i = 0; i < d->n_threads; i++) {
    const Dlh__FlightThread *x = d->threads[i];
    hthread *o = &h->threads[i];
    memset(o, 0, sizeof *o);
    o->tid = x->tid;
    o->depth = x->depth;
    o->in_call = x->has_in_call_since_ns;
    o->since_ns = x->in_call_since_ns;
    o->sample_ns = x->has_sample_ns ? x->sample_ns : 0;
    o->kind = x->sample_kind;
    o->stack = x->stack;
    o->state = x->state;
    o->cpu_ns = x->has_cpu_sample_ns ? x->cpu_sample_ns : 0;
    o->cpu_stack = x->cpu_stack;
    const char *lc = x->has_last_fn ? rd_func_name(t, x->last_fn) : NULL;
    o->last_call = lc ? rd_xstrdup(lc) : NULL;
  }
}

/* NCCL calls of an ApiBatch: the name of each (communicator, seq) they show. */
static void take_nccl(const rd_trace *t, const Dlh__ApiBatch *b) {
  dlh_api_iter it;
  dlh_api_event ev;
  dlh_api_iter_init(&it, b);
  while (dlh_api_iter_next(&it, &ev)) {
    const char *name = rd_func_name(t, ev.fn);
    if (!name || strncmp(name, "nccl", 4)) continue;
    uint64_t hash, seq;
    if (rd_arg(t, &ev, "comm_hash", &hash) && rd_arg(t, &ev, "seq", &seq) && hash)
      note_op(hash, seq, name);
  }
}

static int read_dump(hproc *h) {
  if (rd_trace_begin(&h->t, h->path, 1) < 0) return -1;
  const Dlh__Packet *p;
  int rc;
  while ((rc = rd_trace_next(&h->t, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_FLIGHT) take_flight(h, &h->t, p->flight);
    else if (p->data_case == DLH__PACKET__DATA_API) take_nccl(&h->t, p->api);
  }
  if (rc < 0)
    rd_error("hang: %s: damaged dump: %s", h->path,
             dlh_reader_error(h->t.r) ? dlh_reader_error(h->t.r) : "read error");
  h->pid = h->t.pid;
  h->rank = h->t.rank;
  return 0;
}

/* Thread names: the ThreadInfo packets, read in a second look (they precede the FlightDump). */
static void thread_names(hproc *h) {
  rd_trace t2;
  if (rd_trace_begin(&t2, h->path, 0) < 0) return;
  const Dlh__Packet *p;
  while (rd_trace_next(&t2, &p) == 1)
    if (p->data_case == DLH__PACKET__DATA_THREAD && p->thread->name)
      for (size_t i = 0; i < h->nthreads; i++)
        if (h->threads[i].tid == p->thread->tid)
          snprintf(h->threads[i].name, sizeof h->threads[i].name, "%s", p->thread->name);
  rd_trace_close(&t2);
}

/* ---------------------------------------------------------------- where a thread is */

/* The frame that says where a stack is: the innermost Python frame of the user's code, else
 * the innermost Python frame, else the innermost native frame with a source line, else the
 * innermost one with a name. NULL when the stack has no frames. */
static const rd_frame *where(const rd_trace *t, uint32_t stack) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, stack, &fr);
  if (!n) return NULL;
  for (size_t i = 0; i < n; i++)
    if (fr[i].python && fr[i].file && rd_torch_user_file(fr[i].file)) return &fr[i];
  for (size_t i = 0; i < n; i++)
    if (fr[i].python) return &fr[i];
  for (size_t i = 0; i < n; i++)
    if (fr[i].file && fr[i].line) return &fr[i];
  for (size_t i = 0; i < n; i++)
    if (fr[i].function) return &fr[i];
  return &fr[0];
}

static void frame_text(const rd_frame *f, char *buf, size_t cap) {
  char nb[64];
  const char *fn = rd_frame_name(f, nb, sizeof nb);
  if (f->file && f->line) snprintf(buf, cap, "%s (%s:%u)", fn, f->file, f->line);
  else if (f->module) snprintf(buf, cap, "%s (%s)", fn, f->module);
  else snprintf(buf, cap, "%s", fn);
}

/* The recorded call a thread is in, from its on-CPU sample taken inside the call: the outermost
 * frame named like a CUDA, cuBLAS, cuDNN or NCCL function. NULL when unknown. */
static const char *inflight_api(const rd_trace *t, const hthread *x) {
  if (!x->in_call || !x->cpu_ns || x->cpu_ns < x->since_ns) return NULL;
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, x->cpu_stack, &fr);
  for (size_t i = n; i-- > 0;) {
    const char *f = fr[i].function;
    if (!f || fr[i].python) continue;
    if (!strncmp(f, "cuda", 4) || !strncmp(f, "nccl", 4) || !strncmp(f, "pnccl", 5) ||
        !strncmp(f, "cublas", 6) || !strncmp(f, "cudnn", 5) ||
        (f[0] == 'c' && f[1] == 'u' && f[2] >= 'A' && f[2] <= 'Z'))
      return f[0] == 'p' ? f + 1 : f;
  }
  return NULL;
}

/* The seq a rank has entered on a communicator: its last issued one, one more while a
 * (blocking) NCCL call of the thread that issues them is in flight. */
static uint64_t entered(const hcomm *c) { return c->seq + (c->inflight ? 1 : 0); }

/* The stack to show for a thread: its last on-CPU sample when that is the newer or the only
 * one with native frames, else its last sample. */
static uint32_t shown_stack(const hthread *x, uint64_t *at) {
  if (x->cpu_ns && (!x->stack || x->cpu_ns >= x->sample_ns || x->kind == 1)) {
    if (!x->stack || x->cpu_ns >= x->sample_ns) { *at = x->cpu_ns; return x->cpu_stack; }
  }
  *at = x->sample_ns;
  return x->stack ? x->stack : x->cpu_stack;
}

/* ---------------------------------------------------------------- the report */

typedef struct rankrow { hproc *h; const hcomm *c; } rankrow;

static int by_rank(const void *a, const void *b) {
  const rankrow *x = a, *y = b;
  return (x->c->rank > y->c->rank) - (x->c->rank < y->c->rank);
}

static void json_thread(FILE *f, hproc *h, const hthread *x, int nframes) {
  fprintf(f, "{\"tid\":%u,\"name\":", x->tid);
  rd_json_str(f, x->name);
  fprintf(f, ",\"in_call\":%s", x->in_call || x->depth ? "true" : "false");
  if (x->in_call) fprintf(f, ",\"in_call_s\":%.3f", (double)(h->time_ns - x->since_ns) / 1e9);
  const char *api = inflight_api(&h->t, x);
  if (api) { fputs(",\"in_call_fn\":", f); rd_json_str(f, api); }
  if (x->last_call) { fputs(",\"last_call\":", f); rd_json_str(f, x->last_call); }
  char wb[64];
  fputs(",\"wait\":", f);
  rd_json_str(f, x->sample_ns && x->kind == 1 ? rd_wait_state_label(x->state, wb, sizeof wb) : "");
  uint64_t at = 0;
  uint32_t st = shown_stack(x, &at);
  const rd_frame *w = where(&h->t, st);
  fputs(",\"where\":", f);
  if (w) {
    char nb[64];
    fputs("{\"function\":", f);
    rd_json_str(f, rd_frame_name(w, nb, sizeof nb));
    fputs(",\"file\":", f);
    rd_json_str(f, w->file ? w->file : "");
    fprintf(f, ",\"line\":%u,\"python\":%s}", w->line, w->python ? "true" : "false");
  } else {
    fputs("null", f);
  }
  if (at) fprintf(f, ",\"sample_age_s\":%.3f", h->time_ns > at ? (double)(h->time_ns - at) / 1e9 : 0.0);
  fputs(",\"stack\":[", f);
  const rd_frame *fr;
  size_t n = rd_stack_frames(&h->t, st, &fr);
  for (size_t i = 0; i < n && (int)i < nframes; i++) {
    char buf[1024];
    frame_text(&fr[i], buf, sizeof buf);
    if (i) putc(',', f);
    rd_json_str(f, buf);
  }
  fputs("]}", f);
}

static void text_thread(FILE *f, hproc *h, const hthread *x, int nframes) {
  char wb[64];
  fprintf(f, "  thread %u%s%s%s: ", x->tid, x->name[0] ? " (" : "", x->name, x->name[0] ? ")" : "");
  const char *api = inflight_api(&h->t, x);
  if (x->in_call)
    fprintf(f, "%s%s in flight for %.1f s", api ? "in " : "a recorded call", api ? api : "",
            (double)(h->time_ns - x->since_ns) / 1e9);
  else if (x->depth)
    fputs("inside a recorded call", f);
  else
    fputs("not in a CUDA or library call", f);
  if (x->last_call) fprintf(f, "; last call returned: %s", x->last_call);
  if (x->sample_ns && x->kind == 1) fprintf(f, "; %s", rd_wait_state_label(x->state, wb, sizeof wb));
  fputc('\n', f);
  uint64_t at = 0;
  uint32_t st = shown_stack(x, &at);
  const rd_frame *fr;
  size_t n = rd_stack_frames(&h->t, st, &fr);
  if (!n) {
    fputs("    (no stack sampled)\n", f);
    return;
  }
  const rd_frame *w = where(&h->t, st);
  char buf[1024];
  frame_text(w, buf, sizeof buf);
  fprintf(f, "    at %s  [sampled %.2f s before the dump]\n", buf,
          h->time_ns > at ? (double)(h->time_ns - at) / 1e9 : 0.0);
  for (size_t i = 0; i < n && (int)i < nframes; i++) {
    frame_text(&fr[i], buf, sizeof buf);
    fprintf(f, "      %s%s\n", &fr[i] == w ? "> " : "  ", buf);
  }
}

/* The threads worth showing of a process: those with a sample or in a call, the main thread
 * first; dlhook's own threads are never among them (FlightDump leaves them out). */
static void show_threads(FILE *f, hproc *h, int json, int nframes) {
  int first = 1;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < h->nthreads; i++) {
      const hthread *x = &h->threads[i];
      if ((pass == 0) != (x->tid == h->pid)) continue;
      if (!x->sample_ns && !x->cpu_ns && !x->depth) continue;
      if (json) {
        if (!first) putc(',', f);
        json_thread(f, h, x, nframes);
      } else {
        text_thread(f, h, x, nframes);
      }
      first = 0;
    }
}

static int is_dump_name(const char *name) {
  size_t n = strlen(name);
  return n > 4 && !strcmp(name + n - 4, ".dlh") && strstr(name, ".flight");
}

static void add_path(char ***paths, size_t *n, size_t *cap, char *p) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *paths = rd_xrealloc(*paths, *cap * sizeof **paths);
  }
  (*paths)[(*n)++] = p;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The options and operands of `dlhook hang`: --json, --frames, and the dumps (a directory's
 * *.flight*.dlh in name order, or files). Returns -1 when all is well, else the exit status. */
typedef struct hang_opts {
  int json, nframes;
  char **paths;
  size_t npaths, cap;
} hang_opts;

/* Adds the dumps of directory dir to o's paths; returns -1, or RD_BAD_INPUT after a message. */
static int add_dir(hang_opts *o, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    rd_error("hang: cannot read directory %s", dir);
    return RD_BAD_INPUT;
  }
  struct dirent *e;
  size_t before = o->npaths;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && is_dump_name(e->d_name)) {
      size_t l = strlen(dir) + strlen(e->d_name) + 2;
      char *p = rd_xmalloc(l);
      snprintf(p, l, "%s/%s", dir, e->d_name);
      add_path(&o->paths, &o->npaths, &o->cap, p);
    }
  closedir(d);
  rd_qsort(o->paths + before, o->npaths - before, sizeof *o->paths, cmp_str);
  if (o->npaths == before) {
    rd_error("hang: no flight recorder dump (*.flight*.dlh) in %s", dir);
    return RD_BAD_INPUT;
  }
  return -1;
}

static int hang_options(hang_opts *o, int argc, char **argv) {
  int k;
  rd_getopt g;
  rd_getopt_init(&g, &cmd_hang_spec, argc, argv);
  while ((k = rd_getopt_next(&g)) > 0) {
    if (k == OPT_JSON) o->json = 1;
    else if (k == OPT_FRAMES) {
      char *e;
      long v = strtol(g.arg, &e, 10);
      if (!*g.arg || *e || v < 0 || v > 256) return rd_usage_error("hang", "--frames: expected 0 to 256");
      o->nframes = (int)v;
    } else if (k == RD_OPERAND) {
      struct stat st;
      if (stat(g.arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        int rc = add_dir(o, g.arg);
        if (rc >= 0) return rc;
      } else {
        add_path(&o->paths, &o->npaths, &o->cap, rd_xstrdup(g.arg));
      }
    }
  }
  if (k < 0) return g.status;
  if (!o->npaths) return rd_usage_error("hang", "a directory of dumps (or dump files) is needed");
  return -1;
}

/* Reads the dumps of paths[0..npaths) that are flight recorder dumps into a new array (*nh of
 * them; the others are left out with a message), and marks all but the last dump of each
 * process dropped. */
static hproc *read_dumps(char **paths, size_t npaths, size_t *nh_out) {
  hproc *hs = rd_xmalloc(npaths * sizeof *hs);
  size_t nh = 0;
  for (size_t i = 0; i < npaths; i++) {
    hproc *h = &hs[nh];
    memset(h, 0, sizeof *h);
    h->path = paths[i];
    if (read_dump(h) < 0) continue;
    if (!h->have_flight) {
      rd_error("hang: %s is not a flight recorder dump (no FlightDump); left out", h->path);
      rd_trace_close(&h->t);
      continue;
    }
    thread_names(h);
    for (size_t c = 0; c < h->ncomms; c++) /* a blocking NCCL call in flight on it */
      for (size_t i = 0; i < h->nthreads; i++) {
        const char *api = h->threads[i].tid == h->comms[c].tid ? inflight_api(&h->t, &h->threads[i]) : NULL;
        if (api && !strncmp(api, "nccl", 4) && strncmp(api, "ncclGroup", 9)) h->comms[c].inflight = api;
      }
    nh++;
  }
  /* one dump per process: its last */
  for (size_t i = 0; i < nh; i++)
    for (size_t j = 0; j < nh; j++)
      if (i != j && !hs[j].dropped && hs[i].pid == hs[j].pid &&
          !strcmp(hs[i].t.host, hs[j].t.host) &&
          (hs[i].time_ns < hs[j].time_ns || (hs[i].time_ns == hs[j].time_ns && i < j)))
        hs[i].dropped = 1;
  *nh_out = nh;
  return hs;
}

/* The communicators of the dumps kept, in the order first seen (*nhash of them, malloc'd). */
static uint64_t *comm_hashes(const hproc *hs, size_t nh, size_t *nhash_out) {
  uint64_t *hashes = NULL;
  size_t nhash = 0;
  for (size_t i = 0; i < nh; i++)
    for (size_t c = 0; !hs[i].dropped && c < hs[i].ncomms; c++) {
      size_t j = 0;
      while (j < nhash && hashes[j] != hs[i].comms[c].hash) j++;
      if (j == nhash) {
        hashes = rd_xrealloc(hashes, (nhash + 1) * sizeof *hashes);
        hashes[nhash++] = hs[i].comms[c].hash;
      }
    }
  *nhash_out = nhash;
  return hashes;
}

/* The head of the report: the dumps (JSON, up to the "comms" array) or one line on the first. */
static void show_head(FILE *f, const hproc *hs, size_t nh, const hproc *first, int json) {
  size_t nlive = 0;
  for (size_t i = 0; i < nh; i++) nlive += !hs[i].dropped;
  if (json) {
    fputs("{\"dumps\":[", f);
    int fst = 1;
    for (size_t i = 0; i < nh; i++) {
      if (hs[i].dropped) continue;
      fprintf(f, "%s{\"file\":", fst ? "" : ",");
      rd_json_str(f, hs[i].path);
      fprintf(f, ",\"pid\":%u,\"rank\":%d,\"host\":", hs[i].pid, hs[i].rank);
      rd_json_str(f, hs[i].t.host);
      fputs(",\"reason\":", f);
      rd_json_str(f, reason_name(hs[i].reason));
      fputs(",\"detail\":", f);
      rd_json_str(f, hs[i].detail);
      fprintf(f, ",\"window_s\":%.3f}", hs[i].first_ns && hs[i].time_ns > hs[i].first_ns ? (double)(hs[i].time_ns - hs[i].first_ns) / 1e9 : 0.0);
      fst = 0;
    }
    fputs("],\"first\":", f);
    rd_json_str(f, first->path);
    fputs(",\"comms\":[", f);
  } else {
    fprintf(f, "%zu dump%s; first: rank %d (pid %u, %s): %s\n", nlive, nlive == 1 ? "" : "s",
            first->rank, first->pid, reason_name(first->reason), first->detail);
  }
}

/* The processes the job waits for (indexes into the dumps), each once. */
typedef struct hmissing {
  int *idx;
  size_t n;
} hmissing;

static void add_missing(hmissing *m, int idx) {
  size_t k = 0;
  while (k < m->n && m->idx[k] != idx) k++;
  if (k == m->n) {
    m->idx = rd_xrealloc(m->idx, (m->n + 1) * sizeof *m->idx);
    m->idx[m->n++] = idx;
  }
}

/* One rank's row of a communicator: its last seq and op, what it has pending, what it does now.
 * lo and hi: the smallest and largest seq entered on the communicator. */
static void show_rank(FILE *f, const rankrow *row, size_t r, uint64_t lo, uint64_t hi, int json) {
  hproc *h = row->h;
  uint64_t wait_seq = lo + 1;
  const hthread *mt = NULL; /* the thread in a call, else the main thread */
  for (size_t i = 0; i < h->nthreads; i++)
    if (h->threads[i].in_call && (!mt || h->threads[i].since_ns < mt->since_ns)) mt = &h->threads[i];
  char now[96];
  const char *api = mt ? inflight_api(&h->t, mt) : NULL;
  if (mt) snprintf(now, sizeof now, "in %s for %.1f s (thread %u)", api ? api : "a call",
                   (double)(h->time_ns - mt->since_ns) / 1e9, mt->tid);
  else snprintf(now, sizeof now, "not in a CUDA or library call");
  int miss = hi > lo && entered(row->c) < wait_seq;
  uint64_t ent = entered(row->c);
  char pend[48] = "-";
  if (ent > lo && ent == lo + 1) snprintf(pend, sizeof pend, "%" PRIu64, ent);
  else if (ent > lo) snprintf(pend, sizeof pend, "%" PRIu64 "-%" PRIu64, lo + 1, ent);
  if (row->c->inflight) snprintf(now, sizeof now, "in %s for %.1f s", row->c->inflight,
                                 mt ? (double)(h->time_ns - mt->since_ns) / 1e9 : 0.0);
  if (json) {
    fprintf(f, "%s{\"rank\":%d,\"pid\":%u,\"last_seq\":%" PRIu64 ",\"last_op\":", r ? "," : "",
            row->c->rank, h->pid, row->c->seq);
    rd_json_str(f, row->c->op);
    fprintf(f, ",\"entered_seq\":%" PRIu64 ",\"in_call\":%s,\"entered_waiting\":%s", ent,
            mt ? "true" : "false", hi > lo ? (miss ? "false" : "true") : "true");
    if (ent > lo) fprintf(f, ",\"pending\":[%" PRIu64 ",%" PRIu64 "]", lo + 1, ent);
    if (row->c->inflight) { fputs(",\"nccl_in_flight\":", f); rd_json_str(f, row->c->inflight); }
    putc('}', f);
  } else {
    fprintf(f, "  %-5d %-8u %-9" PRIu64 " %-22s %-11s %s", row->c->rank, h->pid,
            row->c->seq, row->c->op, pend, now);
    if (miss) fprintf(f, "  <- never entered seq %" PRIu64, wait_seq);
    fputc('\n', f);
  }
}

/* The communicator hash (the ci-th): each rank's row, the collective the others wait in and the
 * ranks that never entered it (added to *missing). */
static void show_comm(FILE *f, hproc *hs, size_t nh, uint64_t hash, size_t ci, int json,
                      hmissing *missing) {
  rankrow *rows = rd_xmalloc(nh * sizeof *rows);
  size_t nr = 0;
  int nranks = 0;
  for (size_t i = 0; i < nh; i++)
    for (size_t c = 0; !hs[i].dropped && c < hs[i].ncomms; c++)
      if (hs[i].comms[c].hash == hash) {
        rows[nr++] = (rankrow){&hs[i], &hs[i].comms[c]};
        if (hs[i].comms[c].nranks > nranks) nranks = hs[i].comms[c].nranks;
      }
  rd_qsort(rows, nr, sizeof *rows, by_rank);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t r = 0; r < nr; r++) {
    if (entered(rows[r].c) < lo) lo = entered(rows[r].c);
    if (entered(rows[r].c) > hi) hi = entered(rows[r].c);
  }
  uint64_t wait_seq = lo + 1;
  const char *wait_op = hi > lo ? op_name(hash, wait_seq) : NULL;
  if (json) {
    fprintf(f, "%s{\"comm_hash\":\"0x%016" PRIx64 "\",\"nranks\":%d,\"completed_at_most\":%" PRIu64,
            ci ? "," : "", hash, nranks, lo);
    if (hi > lo) {
      fprintf(f, ",\"waiting_seq\":%" PRIu64 ",\"waiting_op\":", wait_seq);
      rd_json_str(f, wait_op ? wait_op : "");
    }
    fputs(",\"ranks\":[", f);
  } else {
    fprintf(f, "\ncommunicator 0x%016" PRIx64 " (%d ranks, %zu dumped)\n", hash, nranks, nr);
    fprintf(f, "  %-5s %-8s %-9s %-22s %-11s %s\n", "rank", "pid", "last seq", "last op", "pending", "now");
  }
  for (size_t r = 0; r < nr; r++) {
    show_rank(f, &rows[r], r, lo, hi, json);
    if (hi > lo && entered(rows[r].c) < wait_seq) add_missing(missing, (int)(rows[r].h - hs));
  }
  int nmiss_here = 0;
  for (size_t r = 0; r < nr; r++) nmiss_here += hi > lo && entered(rows[r].c) < wait_seq;
  if (json) {
    fputs("],\"missing_ranks\":[", f);
    int fst = 1;
    for (size_t r = 0; r < nr; r++)
      if (hi > lo && entered(rows[r].c) < wait_seq) { fprintf(f, "%s%d", fst ? "" : ",", rows[r].c->rank); fst = 0; }
    fputs("],\"no_dump\":", f);
    fprintf(f, "%d}", nranks > (int)nr ? nranks - (int)nr : 0);
  } else if (hi > lo) {
    fprintf(f, "  waiting in seq %" PRIu64 " (%s): ", wait_seq, wait_op ? wait_op : "operation not in the dumps' window");
    fputs("rank", f);
    fputs(nmiss_here > 1 ? "s " : " ", f);
    int fst = 1;
    for (size_t r = 0; r < nr; r++)
      if (entered(rows[r].c) < wait_seq) { fprintf(f, "%s%d", fst ? "" : ",", rows[r].c->rank); fst = 0; }
    fprintf(f, " never entered it; the others did (collectives up to seq %" PRIu64 " can have completed)\n", lo);
    if (nranks > (int)nr)
      fprintf(f, "  %d rank%s left no dump (not recording into this directory, or gone)\n",
              nranks - (int)nr, nranks - (int)nr > 1 ? "s" : "");
  } else {
    fprintf(f, "  every rank issued the same collectives (last seq %" PRIu64 ")%s\n", hi,
            nranks > (int)nr ? "; ranks without a dump may be the ones missing" : "");
  }
  free(rows);
}

/* The end of the report: where each process the job waits for is (its threads), or, with no
 * communicator, every process. */
static void show_tail(FILE *f, hproc *hs, size_t nh, size_t nhash, const hmissing *missing,
                      int json, int nframes) {
  if (json) fputs("],\"missing\":[", f);
  for (size_t m = 0; m < missing->n; m++) {
    hproc *h = &hs[missing->idx[m]];
    if (json) {
      fprintf(f, "%s{\"rank\":%d,\"pid\":%u,\"file\":", m ? "," : "", h->rank, h->pid);
      rd_json_str(f, h->path);
      fputs(",\"threads\":[", f);
      show_threads(f, h, 1, nframes);
      fputs("]}", f);
    } else {
      fprintf(f, "\nrank %d (pid %u, %s) is where the job waits:\n", h->rank, h->pid, h->path);
      show_threads(f, h, 0, nframes);
    }
  }
  if (json) {
    fputs("]}\n", f);
  } else if (!nhash) {
    fputs("\nno NCCL communicator in the dumps; the processes are:\n", f);
    for (size_t i = 0; i < nh; i++) {
      if (hs[i].dropped) continue;
      fprintf(f, "\nrank %d (pid %u, %s: %s):\n", hs[i].rank, hs[i].pid, reason_name(hs[i].reason), hs[i].detail);
      show_threads(f, &hs[i], 0, nframes);
    }
  }
}

static void free_dumps(hproc *hs, size_t nh) {
  for (size_t i = 0; i < nh; i++) {
    rd_trace_close(&hs[i].t);
    for (size_t c = 0; c < hs[i].ncomms; c++) free(hs[i].comms[c].op);
    for (size_t c = 0; c < hs[i].nthreads; c++) free(hs[i].threads[c].last_call);
    free(hs[i].comms);
    free(hs[i].threads);
    free(hs[i].detail);
  }
  free(hs);
  for (size_t i = 0; i < nops; i++) free(ops[i].name);
  free(ops);
  ops = NULL;
  nops = capops = 0;
}

int cmd_hang(int argc, char **argv) {
  hang_opts o = {0, 8, NULL, 0, 0};
  int rc = hang_options(&o, argc, argv);
  if (rc >= 0) return rc;

  size_t nh;
  hproc *hs = read_dumps(o.paths, o.npaths, &nh);
  if (!nh) {
    free(hs);
    for (size_t i = 0; i < o.npaths; i++) free(o.paths[i]);
    free(o.paths);
    return RD_BAD_INPUT;
  }
  size_t nhash;
  uint64_t *hashes = comm_hashes(hs, nh, &nhash);
  /* the first dump (what started it) */
  hproc *first = NULL;
  for (size_t i = 0; i < nh; i++)
    if (hs[i].reason != 5 && (!first || hs[i].time_ns < first->time_ns)) first = &hs[i];
  if (!first) first = &hs[0];

  FILE *f = stdout;
  show_head(f, hs, nh, first, o.json);
  hmissing missing = {NULL, 0};
  for (size_t ci = 0; ci < nhash; ci++) show_comm(f, hs, nh, hashes[ci], ci, o.json, &missing);
  show_tail(f, hs, nh, nhash, &missing, o.json, o.nframes);
  free_dumps(hs, nh);
  free(hashes);
  free(missing.idx);
  for (size_t i = 0; i < o.npaths; i++) free(o.paths[i]);
  free(o.paths);
  return RD_OK;
}
