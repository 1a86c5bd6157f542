/* writer.c — the writer thread: drains every thread's ring, converts ticks to the trace clock,
 * hands events to the format library (format/) and writes a zstd frame at least every
 * DLHOOK_FLUSH_MS, and whenever a frame reaches about FRAME_TARGET compressed bytes (a cut
 * file loses at most one small frame). Also the final drain at exit or on a fatal signal.
 *
 * The program's files are never touched: the trace fd is moved above the program's range
 * (F_DUPFD_CLOEXEC near the fd limit) and checked (fstat dev/ino) before every write, so a
 * program that closes every fd or dup2()s over it loses nothing of its own (dlhook reopens its
 * file, or stops recording with one warning); the writer is woken through a futex, not a pipe.
 * Every write happens on the writer thread, which blocks all signals: a file size limit
 * (RLIMIT_FSIZE) gives EFBIG there, never SIGXFSZ to the program. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dlh_batch.h"
#include "dlh_format.h"
#include "dlh_format_int.h"
#include "dlh_hooks.h"
#include "dlh_internal.h"
#include "dlh_sleep.h"

/* ---------------------------------------------------------------- writer state */

static dlh_encoder *W;
static dlh_anchor first;             /* the trace's first anchor (its start) */
static int attached;                 /* the trace is one of dlhook attach (ProcessInfo) */
static char **not_hooked;            /* ... and what it could not hook */
static size_t n_not_hooked;
static int out_fd = -1;
static pthread_t writer_tid;
static dev_t out_dev;                /* what out_fd must still be before each write */
static ino_t out_ino;
static _Atomic int stop_req;         /* 1: final drain requested */
static _Atomic int finished;         /* the writer has written its trailer */
static _Atomic uint64_t flush_req, flush_done;
static int stop_reason, stop_signal;
static pid_t writer_pid;             /* the process this writer belongs to */
static uint64_t records, dropped_total;
static uint64_t samples_total;      /* host samples written (SampleBatch) */
static const dlh_sample_ops *sampler; /* host sampling (sample.c), as runtime.c wired it */

void dlh_writer_sampling(const dlh_sample_ops *ops) { sampler = ops; }
static uint64_t calls, folded;       /* calls recorded (folded repeats included), repeats folded */
static uint64_t ring_waits, ring_wait_ns; /* threads' waits for this writer (RingWaitBatch) */
static int write_failed;
/* Flight mode (DLHOOK_MODE=flight, flight.c): frames go to the in-memory ring; dump_fd is the
 * dump being written (the sink then writes the last frame there); oom_seen: a call returned
 * cudaErrorMemoryAllocation (a dump once). */
static int flight, dump_fd = -1, oom_seen;
static uint32_t oom_fn;

static void put(Dlh__Packet *p) {
  if (dlh_enc_packet(W, p) != 0) { /* allocation failure: packet lost */ }
}

/* The ClockAnchor packet of a (p points to c). */
static void anchor_packet(dlh_anchor a, Dlh__ClockAnchorKind kind, Dlh__Packet *p,
                          Dlh__ClockAnchor *c) {
  dlh__packet__init(p);
  dlh__clock_anchor__init(c);
  c->has_trace_ns = c->has_realtime_ns = c->has_ticks = c->has_kind = 1;
  c->trace_ns = a.ns;
  c->realtime_ns = a.rt + (uint64_t)dlh_cfg.realtime_skew_ns;
  c->ticks = a.tk;
  c->kind = kind;
  p->data_case = DLH__PACKET__DATA_ANCHOR;
  p->anchor = c;
}

static void write_anchor(dlh_anchor a, Dlh__ClockAnchorKind kind) {
  Dlh__Packet p;
  Dlh__ClockAnchor c;
  anchor_packet(a, kind, &p, &c);
  put(&p);
}

static void write_process_info(uint64_t start_ns) {
  char host[256] = "", exe[4096] = "", cmd[8192];
  gethostname(host, sizeof host - 1);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  char *argv[256];
  size_t argc = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t len = read(fd, cmd, sizeof cmd - 1);
    close(fd);
    if (len > 0) {
      cmd[len] = 0;
      for (char *s = cmd; s < cmd + len && argc < 256; s += strlen(s) + 1) argv[argc++] = s;
    }
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = pi.has_ppid = pi.has_rank = pi.has_local_rank = pi.has_world_size = 1;
  pi.has_format_version = pi.has_start_ns = 1;
  pi.pid = (uint32_t)getpid();
  pi.ppid = (uint32_t)getppid();
  pi.host = host;
  pi.exe = exe;
  pi.n_cmdline = argc;
  pi.cmdline = argv;
  pi.rank = dlh_cfg.rank;
  pi.local_rank = dlh_cfg.local_rank;
  pi.world_size = dlh_cfg.world_size;
  pi.dlhook_version = (char *)DLHOOK_VERSION;
  pi.format_version = DLH_FORMAT_VERSION;
  pi.stacks_mode = (char *)dlh_stacks_mode_name();
  pi.start_ns = start_ns;
  if (dlh_cfg.sample_hz && dlh_cfg.sample != 2) {
    pi.has_sample_hz = 1;
    pi.sample_hz = dlh_cfg.sample_hz;
  }
  if (attached) { /* dlhook attach: attached, what could not be hooked */
    pi.has_attached = 1;
    pi.attached = 1;
    pi.n_not_hooked = n_not_hooked;
    pi.not_hooked = not_hooked;
  }
  p.data_case = DLH__PACKET__DATA_PROCESS;
  p.process = &pi;
  put(&p);
}


static void write_thread(struct dlh_thread *t) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__ThreadInfo ti = DLH__THREAD_INFO__INIT;
  char name[17];
  memcpy(name, t->os.name, 16);
  name[16] = 0;
  ti.has_tid = 1;
  ti.tid = t->os.tid;
  ti.name = name;
  p.data_case = DLH__PACKET__DATA_THREAD;
  p.thread = &ti;
  put(&p);
  t->writer.announced = 1;
}

/* The parts of the memory budget that the writer thread measures: its own buffers, the stack
 * tables and the symbol indexes. */
static void measure_memory(void) {
  dlh_mem_set(DLH_MEM_WRITER, dlh_enc_mem(W) + dlh_defs_mem());
  dlh_mem_set(DLH_MEM_STACKS, dlh_stacks_table_bytes());
  dlh_mem_set(DLH_MEM_SYMBOLS, dlh_stacks_index_bytes());
}

/* CPU time of dlhook's own threads and of the whole process, for the counters. The writer's
 * is read on its clock by thread id (the last counters may be written by the exiting thread);
 * a thread gone keeps its last figure. */
static void own_cpu(Dlh__Counters *c) {
  static uint64_t writer_cpu;
  static pid_t writer_was;
  pid_t wt = __atomic_load_n(&dlh_writer_tid, __ATOMIC_RELAXED);
  if (wt != writer_was) writer_cpu = 0; /* a new writer (a fork child's) */
  writer_was = wt;
  /* another process's thread (a fork child before its writer starts) reads as 0 */
  uint64_t v = wt > 0 ? dlh_cpu_ns(dlh_thread_clock((uint32_t)wt)) : 0;
  if (v > writer_cpu) writer_cpu = v;
  c->has_writer_cpu_ns = c->has_sampler_cpu_ns = c->has_symbols_cpu_ns = 1;
  c->has_process_cpu_ns = 1;
  c->writer_cpu_ns = writer_cpu;
  c->sampler_cpu_ns = sampler && sampler->thread_cpu_ns ? sampler->thread_cpu_ns() : 0;
  c->symbols_cpu_ns = dlh_stacks_symbolizer_cpu_ns();
  c->process_cpu_ns = dlh_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static void write_counters(int final) {
  uint64_t drop = 0;
  uint32_t nthreads = 0;
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    drop += atomic_load_explicit(&t->shared.dropped, memory_order_relaxed);
    nthreads++;
  }
  uint64_t calls_drop = drop, gpu_drop = dlh_cupti_dropped();
  drop += gpu_drop;
  dropped_total = drop;
  Dlh__Packet p = DLH__PACKET__INIT;
  /* the last Counters come just before the trailer too: the totals of the whole run (host
   * samples have no place in the trailer) */
  {
    Dlh__Counters c = DLH__COUNTERS__INIT;
    c.has_records = c.has_dropped = c.has_threads = 1;
    c.records = records;
    c.dropped = drop;
    c.threads = nthreads;
    c.has_calls = c.has_mem_bytes = 1;
    c.calls = calls;
    c.mem_bytes = dlh_mem_total();
    c.has_samples = c.has_samples_lost = 1;
    c.samples = samples_total;
    c.samples_lost = sampler ? sampler->lost() : 0;
    c.has_ring_waits = c.has_ring_wait_ns = c.has_calls_dropped = c.has_gpu_dropped = 1;
    c.ring_waits = ring_waits;
    c.ring_wait_ns = ring_wait_ns;
    c.calls_dropped = calls_drop;
    c.gpu_dropped = gpu_drop;
    uint64_t ct = sampler ? sampler->cost_ticks() : 0;
    if (ct) {
      c.has_sample_cost_ns = 1;
      c.sample_cost_ns = dlh_tick_dur_ns(dlh_clock_last().tk, ct);
    }
    own_cpu(&c);
    p.data_case = DLH__PACKET__DATA_COUNTERS;
    p.counters = &c;
    put(&p);
  }
  if (final) {
    Dlh__Trailer tr = DLH__TRAILER__INIT;
    tr.has_records = tr.has_dropped = tr.has_end_ns = tr.has_exit_reason = tr.has_signal = 1;
    tr.records = records;
    tr.dropped = drop;
    tr.end_ns = dlh_mono_ns();
    tr.exit_reason = (uint32_t)stop_reason;
    tr.signal = (uint32_t)stop_signal;
    uint64_t resolved = 0, nosym = 0, pend = 0;
    dlh_stacks_symbol_counts(&resolved, &nosym, &pend);
    tr.has_pcs_unsymbolized = tr.has_pcs_no_symbol = tr.has_stacks_lost = 1;
    tr.has_symbol_index_bytes = 1;
    tr.pcs_unsymbolized = pend;
    tr.pcs_no_symbol = nosym;
    tr.stacks_lost = dlh_stacks_lost();
    tr.symbol_index_bytes = dlh_stacks_index_bytes();
    tr.has_calls = tr.has_folded = 1;
    tr.calls = calls;
    tr.folded = folded;
    measure_memory();
    dlh_mem_report(&tr);
    p.data_case = DLH__PACKET__DATA_TRAILER;
    p.trailer = &tr;
    put(&p);
  }
}

static void frame_count(uint64_t n); /* frames: below */


/* The API event of a FOLD record: `count` repeats of the thread's last API record. */
static void fold_event(struct dlh_thread *t, uint64_t *w, dlh_api_event *ev) {
  uint64_t last_end, dur_sum;
  uint64_t count = dlh_fold_take(w, &last_end, &dur_sum);
  memset(ev, 0, sizeof *ev);
  ev->fn = t->writer.last_fn;
  ev->nargs = t->writer.last_nargs;
  ev->args = t->writer.last_args;
  ev->ret = t->writer.last_ret;
  ev->stack = t->writer.last_stack;
  ev->depth = t->writer.last_depth;
  ev->start_ns = dlh_tick_ns_fast(w[1]);
  uint64_t end = dlh_tick_ns_fast(last_end);
  ev->span_ns = end > ev->start_ns ? end - ev->start_ns : 0;
  ev->dur_ns = dlh_tick_dur_ns(w[1], dur_sum);
  if (ev->dur_ns > ev->span_ns) ev->dur_ns = ev->span_ns;
  ev->count = count;
}

/* The segment of the last conversion (dlh_tick_seg) for a loop that converts inline (drain):
 * a tick tk with tk - *lo < *span is ns + tick_seg_scale(tk - *lo, mult) ns, a duration of d
 * such ticks from there tick_seg_scale(d, mult) (what dlh_tick_ns and dlh_tick_dur_ns give);
 * *span is 0 when there is no segment (then every tick goes to dlh_tick_ns, which makes one).
 * The values stay right while no anchor is added, also when a conversion moves the segment. */
static inline void tick_seg(uint64_t *lo, uint64_t *span, uint64_t *ns, uint64_t *mult) {
  const struct dlh_tick_seg *g = &dlh_tick_seg;
  *lo = g->lo; *ns = g->ns; *mult = g->mult;
  *span = g->gen == dlh_clock_nanch && g->mult ? g->hi - g->lo : 0;
#if !defined(__x86_64__)
  *span = 0;
#endif
}
static inline uint64_t tick_seg_scale(uint64_t ticks, uint64_t mult) {
  return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

/* The repeated call of the FOLD records that follow: the thread's last API record (at w). */
static void take_last(struct dlh_thread *t, const uint64_t *w) {
  uint64_t h = w[0];
  unsigned c = (dlh_rec_flags(h) & DLH_REC_F_CORR) ? 1 : 0;
  uint32_t na = dlh_rec_nargs(h);
  if (na > DLH_MAX_ARGS) na = DLH_MAX_ARGS;
  t->writer.has_last = 1;
  t->writer.last_fn = dlh_rec_fn(h);
  t->writer.last_nargs = na;
  t->writer.last_depth = dlh_rec_depth(h);
  t->writer.last_stack = dlh_rec_stack(w[3]);
  t->writer.last_ret = dlh_rec_ret(w[3]);
  memcpy(t->writer.last_args, w + DLH_REC_HDR_WORDS + c, na * sizeof *w);
}

/* An API record the fast path of drain() did not take (a tick outside the segment, a link, the
 * batch's first event or a column to grow): as an event, through dlh_enc_api. */
static __attribute__((noinline)) void api_slow(struct dlh_thread *t, const uint64_t *w,
                                               uint64_t corr, uint32_t stack) {
  uint64_t h = w[0];
  unsigned c = (dlh_rec_flags(h) & DLH_REC_F_CORR) ? 1 : 0;
  dlh_api_event ev;
  memset(&ev, 0, sizeof ev);
  ev.start_ns = dlh_tick_ns_fast(w[1]);
  ev.dur_ns = dlh_tick_dur_ns(w[1], w[2]);
  ev.fn = dlh_rec_fn(h);
  ev.ret = dlh_rec_ret(w[3]);
  ev.stack = stack;
  ev.corr = corr;
  ev.depth = dlh_rec_depth(h);
  ev.nargs = dlh_rec_nargs(h);
  if (ev.nargs > DLH_MAX_ARGS) ev.nargs = DLH_MAX_ARGS;
  ev.args = w + DLH_REC_HDR_WORDS + c;
  dlh_enc_api(W, t->os.tid, &ev);
}

/* The API record at *tail (no correlation id, its ticks in the segment, its function noted and
 * its stack defined) and the records after it that differ from it only in their ticks and args
 * (dlh_run in dlh_batch.h), straight into the batch's columns: at most lim records, up to head.
 * Moves *tail past them and returns their number (0: the batch cannot take a run now). */
static __attribute__((noinline)) uint64_t drain_run(dlh_tbatch *b, const uint64_t *buf,
                                                     uint64_t mask, uint64_t *tailp,
                                                     uint64_t head, uint64_t lim, uint64_t s_lo,
                                                     uint64_t s_span, uint64_t s_ns,
                                                     uint64_t s_mult) {
  uint64_t tail = *tailp;
  const uint64_t *w = buf + (tail & mask);
  const uint64_t h0 = w[0], w30 = w[3], nw = dlh_rec_nwords(h0);
  const uint32_t na = dlh_rec_nargs(h0);
  dlh_run r;
  const uint32_t stack = dlh_rec_stack(w30), depth = dlh_rec_depth(h0);
  if (dlh_run_open(b, &r, dlh_rec_fn(h0), na, stack, depth) != 0) return 0;
  uint64_t max = r.max < lim ? r.max : lim, k = 0, ls = r.last_start;
  /* the records are nw words each: at most max of them, not past head */
  const uint64_t end = head - tail > max * nw ? tail + max * nw : head;
  uint8_t *ps = r.start, *pd = r.dur, *pa = r.args;
  const uint64_t *prev = r.base; /* the args_delta base: the args of the event before */
  for (;;) {
    uint64_t x = w[1] - s_lo, d = w[2];
    if (x >= s_span || x + d >= s_span) break;
    uint64_t start = s_ns + tick_seg_scale(x, s_mult);
    ps += dlh_put_varint_col(ps, dlh_zigzag((int64_t)(start - ls)));
    ls = start;
    pd += dlh_put_varint_col(pd, tick_seg_scale(d, s_mult));
    const uint64_t *a = w + DLH_REC_HDR_WORDS;
    for (uint32_t i = 0; i < na; i++)
      pa += dlh_put_varint_col(pa, dlh_zigzag((int64_t)(a[i] - prev[i])));
    prev = a;
    k++;
    tail += nw;
    if (tail >= end) break;
    uint64_t pos = tail & mask;
    w = buf + pos;
    __builtin_prefetch(buf + ((pos + 64) & mask)); /* see drain() */
    if (w[0] != h0 || w[3] != w30) break;
  }
  if (!k) return 0;
  r.start = ps;
  r.dur = pd;
  r.args = pa;
  r.last_start = ls;
  dlh_run_close(b, &r, k, dlh_rec_fn(h0), dlh_rec_ret(w30), na, stack, depth, prev);
  *tailp = tail;
  return k;
}

/* Drains one ring. Returns the number of records taken.
 *
 * One pass from the records into the thread's batch columns (dlh_batch.h): an API record whose
 * ticks fall in the tick segment of the last conversion (nearly all: see seg) is converted here,
 * with no event struct: a run of records like it by drain_run, else one by dlh_tbatch_put; the
 * rest (the batch's first event, a column to grow or start, a tick outside the segment) goes
 * through api_slow and dlh_enc_api. The last API record's fields, which a FOLD record
 * repeats, are taken once: before a FOLD record and at the end of the pass (the record stays in
 * the ring until the tail moves). */
/* ---------------------------------------------------------------- host samples
 * SAMPLE records come from two rings per thread (its own: on-CPU samples; the sampler thread's:
 * wait samples); they are gathered per sampled thread over a pass and written as one
 * SampleBatch each, in time order, at the end of the pass. */
typedef struct srec { uint64_t t, w; uint32_t kind, stack, state, api_fn; } srec;
typedef struct sbatch { uint32_t tid; int named; size_t n, cap; srec *r; } sbatch;
static sbatch *sbs;
static size_t nsbs, capsbs;

static sbatch *sample_batch(uint32_t tid) {
  for (size_t i = 0; i < nsbs; i++)
    if (sbs[i].tid == tid) return &sbs[i];
  if (nsbs == capsbs) {
    size_t cap = capsbs ? capsbs * 2 : 16;
    sbatch *n = realloc(sbs, cap * sizeof *n);
    if (!n) return NULL;
    sbs = n;
    capsbs = cap;
  }
  sbatch *b = &sbs[nsbs++];
  memset(b, 0, sizeof *b);
  b->tid = tid;
  return b;
}

static void sample_take(const uint64_t *w) {
  uint32_t tid = (uint32_t)(w[3] >> 32), stack = (uint32_t)w[3];
  sbatch *b = sample_batch(tid);
  if (!b) return;
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    srec *r = realloc(b->r, cap * sizeof *r);
    if (!r) return;
    b->r = r;
    b->cap = cap;
  }
  if (stack) dlh_stacks_define(W, stack); /* StackDef & co. before the batch using it */
  b->r[b->n++] = (srec){dlh_tick_ns_fast(w[1]), w[2], dlh_rec_flags(w[0]), stack,
                        (uint32_t)w[4], (uint32_t)(w[4] >> 32)};
  if (flight) dlh_flight_sample(tid, b->r[b->n - 1].t, dlh_rec_flags(w[0]), stack, (uint32_t)w[4]);
}

static int srec_cmp(const void *a, const void *b) {
  uint64_t x = ((const srec *)a)->t, y = ((const srec *)b)->t;
  return x < y ? -1 : x > y;
}

/* A thread seen only by the sampler (it never made a call, nor took an on-CPU sample yet): its
 * ThreadInfo, with the name the system has for it, before its first batch. */
static void sample_thread_name(sbatch *b) {
  b->named = 1;
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    int st = atomic_load(&t->shared.state);
    if (st != DLH_T_ACTIVE && st != DLH_T_EXITED) continue; /* retired, or being reused */
    if (t->os.tid == b->tid && t->writer.announced) return;
  }
  char path[64], name[32] = "";
  snprintf(path, sizeof path, "/proc/self/task/%u/comm", b->tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  if (n <= 0) return;
  name[n] = 0;
  if (name[n - 1] == '\n') name[n - 1] = 0;
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__ThreadInfo ti = DLH__THREAD_INFO__INIT;
  ti.has_tid = 1;
  ti.tid = b->tid;
  ti.name = name;
  p.data_case = DLH__PACKET__DATA_THREAD;
  p.thread = &ti;
  put(&p);
}

static void samples_flush(void) {
  for (size_t i = 0; i < nsbs; i++) {
    sbatch *b = &sbs[i];
    if (!b->n) continue;
    if (!b->named) sample_thread_name(b);
    size_t n = b->n;
    qsort(b->r, n, sizeof *b->r, srec_cmp);
    int64_t *dt = malloc(n * sizeof *dt);
    uint64_t *wt = malloc(n * sizeof *wt);
    uint32_t *kd = malloc(n * sizeof *kd), *st = malloc(n * sizeof *st),
             *sy = malloc(n * sizeof *sy), *af = malloc(n * sizeof *af);
    if (dt && wt && kd && st && sy && af) {
      int any_state = 0, any_fn = 0;
      uint64_t prev = b->r[0].t;
      for (size_t k = 0; k < n; k++) {
        dt[k] = (int64_t)(b->r[k].t - prev);
        prev = b->r[k].t;
        wt[k] = b->r[k].w;
        kd[k] = b->r[k].kind;
        st[k] = b->r[k].stack;
        sy[k] = b->r[k].state;
        af[k] = b->r[k].api_fn;
        any_state |= sy[k] != 0;
        any_fn |= af[k] != 0;
      }
      Dlh__Packet p = DLH__PACKET__INIT;
      Dlh__SampleBatch sb = DLH__SAMPLE_BATCH__INIT;
      sb.has_tid = sb.has_base_ns = 1;
      sb.tid = b->tid;
      sb.base_ns = b->r[0].t;
      sb.n_time_delta = sb.n_kind = sb.n_weight_ns = sb.n_stack = n;
      sb.time_delta = dt;
      sb.kind = kd;
      sb.weight_ns = wt;
      sb.stack = st;
      if (any_state) {
        sb.n_state = n;
        sb.state = sy;
      }
      if (any_fn) { /* samples that came inside dlhook's store of a call (ring.c) */
        sb.n_api_fn = n;
        sb.api_fn = af;
      }
      p.data_case = DLH__PACKET__DATA_SAMPLES;
      p.samples = &sb;
      put(&p);
      samples_total += n;
      frame_count(n);
    }
    free(dt);
    free(wt);
    free(kd);
    free(st);
    free(sy);
    free(af);
    b->n = 0;
  }
}

/* Flight mode: an API record of NCCL (its communicator's last operation, flight.c) or one that
 * returned 2 (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY: a dump). */
static __attribute__((noinline)) void flight_api(struct dlh_thread *t, const uint64_t *w,
                                                 uint64_t h, uint64_t w3) {
  uint32_t fn = dlh_rec_fn(h), dom = fn >> 16, na = dlh_rec_nargs(h);
  if (na > DLH_MAX_ARGS) na = DLH_MAX_ARGS;
  unsigned c = (dlh_rec_flags(h) & DLH_REC_F_CORR) ? 1 : 0;
  if (dom == DLH_DOMAIN_NCCL)
    dlh_flight_nccl(fn, w + DLH_REC_HDR_WORDS + c, na, dlh_tick_ns(w[1] + w[2]), t->os.tid,
                    dlh_rec_stack(w3));
  else if ((dom == DLH_DOMAIN_CUDART || dom == DLH_DOMAIN_DRIVER) && dlh_rec_ret(w3) == 2 &&
           !oom_seen) {
    oom_seen = 1;
    oom_fn = fn;
  }
}

/* ---------------------------------------------------------------- waits for the writer
 * WAIT records (ring.c: a thread whose ring was full waited for this thread) are folded per
 * thread over a visit of its ring, and written at the end of the pass as one RingWaitBatch
 * with an event per thread that waited. */
typedef struct wrec { uint32_t tid; uint64_t start, span, wait, count; } wrec;
static wrec *wrecs;
static size_t nwrecs, capwrecs;

static void wait_take(struct dlh_thread *t, uint64_t t0, uint64_t t1, uint64_t n, uint64_t sum) {
  if (!n) return;
  if (!t->writer.waits) t->writer.wait_t0 = t0;
  t->writer.wait_t1 = t1;
  t->writer.waits += n;
  t->writer.wait_sum += sum;
}

/* The waits of the thread's visit as an event of this pass's batch. */
static void waits_add(struct dlh_thread *t) {
  uint64_t t0 = t->writer.wait_t0, t1 = t->writer.wait_t1 > t0 ? t->writer.wait_t1 : t0;
  uint64_t n = t->writer.waits, sum = t->writer.wait_sum;
  t->writer.waits = t->writer.wait_sum = 0;
  if (nwrecs == capwrecs) {
    size_t cap = capwrecs ? capwrecs * 2 : 64;
    wrec *r = realloc(wrecs, cap * sizeof *r);
    if (!r) return;
    wrecs = r;
    capwrecs = cap;
  }
  uint64_t start = dlh_tick_ns(t0), span = dlh_tick_dur_ns(t0, t1 - t0);
  uint64_t wait = dlh_tick_dur_ns(t0, sum);
  if (wait > span) span = wait; /* the sum of the waits within their span, whatever the clock */
  wrecs[nwrecs++] = (wrec){t->os.tid, start, span, wait, n};
  ring_waits += n;
  ring_wait_ns += wait;
}

/* Waits a thread could not put in its ring yet (its wait ran out: no room for the record), taken
 * from the thread itself when it has exited or the trace ends. */
static void waits_pending(struct dlh_thread *t) {
  uint64_t n = atomic_load_explicit(&t->self.waits, memory_order_acquire);
  if (!n) return;
  wait_take(t, atomic_load_explicit(&t->self.wait_t0, memory_order_relaxed),
            atomic_load_explicit(&t->self.wait_t1, memory_order_relaxed), n,
            atomic_load_explicit(&t->self.wait_sum, memory_order_relaxed));
  atomic_store_explicit(&t->self.waits, 0, memory_order_relaxed);
  waits_add(t);
}

static void waits_flush(void) {
  if (!nwrecs) return;
  size_t n = nwrecs;
  uint32_t *tid = malloc(n * sizeof *tid);
  uint64_t *v = malloc(4 * n * sizeof *v);
  if (tid && v) {
    for (size_t i = 0; i < n; i++) {
      tid[i] = wrecs[i].tid;
      v[i] = wrecs[i].start;
      v[n + i] = wrecs[i].span;
      v[2 * n + i] = wrecs[i].wait;
      v[3 * n + i] = wrecs[i].count;
    }
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__RingWaitBatch b = DLH__RING_WAIT_BATCH__INIT;
    b.n_tid = b.n_start_ns = b.n_span_ns = b.n_wait_ns = b.n_count = n;
    b.tid = tid;
    b.start_ns = v;
    b.span_ns = v + n;
    b.wait_ns = v + 2 * n;
    b.count = v + 3 * n;
    p.data_case = DLH__PACKET__DATA_RING_WAITS;
    p.ring_waits = &b;
    put(&p);
    frame_count(n);
  }
  free(tid);
  free(v);
  nwrecs = 0;
}

/* The producer told that the writer moved the tail, if it waits for room (ring.c: wait_room). */
static void wake_waiter(struct dlh_thread *t) {
  atomic_fetch_add_explicit(&dlh_writer_progress, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst); /* the tail store before the look at `waiting` */
  if (atomic_load_explicit(&t->shared.waiting, memory_order_relaxed)) {
    atomic_fetch_add(&t->shared.drained, 1);
    syscall(SYS_futex, (uint32_t *)&t->shared.drained, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  }
}

/* Gives the producer the words read so far in the middle of a pass (a large ring takes a while:
 * a thread waiting for room, or filling the other half, gets it now). Nothing of this pass
 * points into those words afterwards: the last API record is copied out first (take_last). */
static void drain_progress(struct dlh_thread *t, const uint64_t **last, uint64_t tail) {
  if (*last) {
    take_last(t, *last);
    *last = NULL;
  }
  atomic_store_explicit(&t->shared.tail, tail, memory_order_release);
  wake_waiter(t);
}

/* The records of a ring other than API calls, GROW and FOLD (drain): links, NVTX and NCCL
 * records, host samples, waits for room. Returns 1 when w (kind, nw words) was one of them and
 * is taken, 0 otherwise. */
static int drain_aux(struct dlh_thread *t, uint64_t *w, unsigned kind, uint64_t nw) {
  if (kind == DLH_REC_LINK && nw == DLH_REC_LINK_WORDS) {
    if (t->writer.nlinks < DLH_MAX_LINKS) t->writer.links[t->writer.nlinks++] = w[1];
    return 1;
  }
  if ((kind == DLH_REC_NVTX && nw >= 4) || kind == DLH_REC_NCCL) {
    (kind == DLH_REC_NCCL ? dlh_ncclprof_convert : dlh_nvtx_convert)(W, t, w, nw);
    return 1;
  }
  if (kind == DLH_REC_SAMPLE && nw == DLH_REC_SAMPLE_WORDS) {
    sample_take(w);
    return 1;
  }
  if (kind == DLH_REC_WAIT && nw == DLH_REC_WAIT_WORDS) {
    wait_take(t, w[1], w[2], w[3], w[4]);
    return 1;
  }
  return 0;
}

#define DRAIN_QUOTA (1u << 15) /* words: 256 KiB, about 6,000 records */
static int drain_more;         /* a ring was left with records (the quota): no sleep */

static uint64_t drain(struct dlh_thread *t) {
  uint64_t *buf = t->writer.buf; /* the ring being read: GROW records move it (ring.h) */
  if (!buf) return 0;
  uint64_t head = atomic_load_explicit(&t->shared.head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&t->shared.tail, memory_order_relaxed);
  uint64_t cap = t->writer.cap, n = 0;
  if (tail == head) goto out;
  uint64_t uncounted = 0; /* events not yet given to frame_count: it runs every 4096 */
  if (!t->writer.announced && !t->os.internal) write_thread(t);
  dlh_tbatch *b = dlh_enc_tbatch(W, t->os.tid); /* NULL (no memory): every record slow */
  uint64_t s_lo, s_span, s_ns, s_mult;
  tick_seg(&s_lo, &s_span, &s_ns, &s_mult);
  const uint64_t *last = NULL; /* the last API record of this pass */
  uint64_t noted = ~0ull;      /* the function whose FunctionDesc was checked last */
  uint64_t given = tail;       /* the tail the producer knows (drain_progress) */
  /* At most DRAIN_QUOTA words of a ring in one visit: a pass goes round every ring in a few
   * milliseconds, however large the rings, so a thread waiting for room (ring.c: wait_room)
   * is not kept waiting behind another thread's ring. The final drain and a requested flush
   * take everything. */
  uint64_t stop = atomic_load(&stop_req) || atomic_load(&flush_req) != atomic_load(&flush_done)
                      ? head : tail + DRAIN_QUOTA;
  while (tail < head && tail < stop) {
    if (DLH_UNLIKELY(tail - given >= cap / 8)) {
      drain_progress(t, &last, tail);
      given = tail;
    }
    uint64_t pos = tail & (cap - 1), *w = buf + pos;
    /* the lines the producer wrote on another core, fetched ahead of their use */
    __builtin_prefetch(buf + ((pos + 64) & (cap - 1)));
    uint64_t h = w[0], nw = dlh_rec_nwords(h);
    unsigned kind = dlh_rec_kind(h);
    if (DLH_LIKELY(kind == DLH_REC_API && nw >= DLH_REC_HDR_WORDS)) {
      uint32_t fn = dlh_rec_fn(h);
      if (DLH_UNLIKELY(fn != noted)) {
        dlh_def_fn(W, fn);
        if (sampler) sampler->on_call(fn); /* the first CUDA call starts host sampling */
        noted = fn;
      }
      last = w;
      uint64_t w3 = w[3], x = w[1] - s_lo, d = w[2];
      uint32_t stack = dlh_rec_stack(w3), depth = dlh_rec_depth(h), na = dlh_rec_nargs(h);
      if (na > DLH_MAX_ARGS) na = DLH_MAX_ARGS;
      /* flight mode: NCCL operations (each communicator's last) and out-of-memory errors; a
       * run that drain_run takes shares this record's function and return value */
      if (DLH_UNLIKELY(flight) && ((fn >> 16) == DLH_DOMAIN_NCCL || (uint32_t)w3 == 2))
        flight_api(t, w, h, w3);
      /* the common record: no correlation id (and no links waiting for a depth 0 call) */
      if (DLH_LIKELY(!dlh_rec_flags(h) && (depth || !t->writer.nlinks) && b && x < s_span &&
                     x + d < s_span)) {
        if (stack) dlh_stacks_define(W, stack); /* StackDef & co. before the batch using it */
        const uint64_t *nx = buf + ((tail + nw) & (cap - 1)); /* a run: the next is alike */
        uint64_t k = tail + nw < head && nx[0] == h && nx[3] == w3
                         ? drain_run(b, buf, cap - 1, &tail, head, 4096 - uncounted, s_lo,
                                     s_span, s_ns, s_mult)
                         : 0;
        if (k) { /* this record and the ones like it that follow */
          last = buf + ((tail - nw) & (cap - 1));
          if (DLH_UNLIKELY(flight) && (fn >> 16) == DLH_DOMAIN_NCCL) flight_api(t, last, h, w3);
          n += k;
          calls += k;
          uncounted += k;
          if (DLH_UNLIKELY(uncounted == 4096)) { frame_count(uncounted); uncounted = 0; }
          continue;
        }
        if (dlh_tbatch_put(b, s_ns + tick_seg_scale(x, s_mult), tick_seg_scale(d, s_mult), fn,
                           dlh_rec_ret(w3), 0, stack, depth, na, w + DLH_REC_HDR_WORDS) != 0) {
          api_slow(t, w, 0, stack);
          b = dlh_enc_tbatch(W, t->os.tid);
          tick_seg(&s_lo, &s_span, &s_ns, &s_mult);
        }
        goto taken;
      }
      unsigned c = (dlh_rec_flags(h) & DLH_REC_F_CORR) ? 1 : 0;
      uint64_t corr = c ? w[DLH_REC_HDR_WORDS] : 0;
      if (stack) dlh_stacks_define(W, stack); /* StackDef & co. before the batch using it */
      if (depth == 0 && t->writer.nlinks) { /* the outermost call owns the GPU work inside it */
        if (!corr) corr = t->writer.links[0];
        for (uint32_t i = 0; i < t->writer.nlinks; i++) dlh_corr_map(t->writer.links[i], corr);
        t->writer.nlinks = 0;
      }
      if (dlh_capture_filtering && corr) dlh_capture_keep_corr(corr);
      if (DLH_UNLIKELY(!b || x >= s_span || x + d >= s_span ||
                       dlh_tbatch_put(b, s_ns + tick_seg_scale(x, s_mult),
                                      tick_seg_scale(d, s_mult), fn, dlh_rec_ret(w3), corr,
                                      stack, depth, na, w + DLH_REC_HDR_WORDS + c) != 0)) {
        api_slow(t, w, corr, stack);
        b = dlh_enc_tbatch(W, t->os.tid);
        tick_seg(&s_lo, &s_span, &s_ns, &s_mult); /* a conversion may have moved it */
      }
    taken:
      tail += nw;
      n++;
      calls++;
      if (DLH_UNLIKELY(++uncounted == 4096)) { frame_count(uncounted); uncounted = 0; }
      continue;
    }
    if (drain_aux(t, w, kind, nw)) {
      tail += nw;
      continue;
    }
    if (kind == DLH_REC_GROW && nw == DLH_REC_GROW_WORDS) {
      /* the thread moved to a larger ring: what this pass keeps of the old one is copied out
       * (take_last) before it is freed; the producer no longer points into it */
      if (last) { take_last(t, last); last = NULL; }
      uint64_t *nb = (uint64_t *)(uintptr_t)w[1], ncap = w[2];
      tail += nw;
      dlh_ring_free(buf, cap);
      t->writer.buf = buf = nb;
      t->writer.cap = cap = ncap;
      continue;
    }
    if (kind == DLH_REC_FOLD && nw == DLH_REC_FOLD_WORDS) {
      tail += nw;
      if (last) { take_last(t, last); last = NULL; }
      if (!t->writer.has_last) continue; /* its call was in an earlier trace (dlhook attach) */
      dlh_api_event ev;
      fold_event(t, w, &ev);
      calls += ev.count;
      folded += ev.count;
      dlh_enc_api(W, t->os.tid, &ev);
      tick_seg(&s_lo, &s_span, &s_ns, &s_mult);
      n++;
      if (DLH_UNLIKELY(++uncounted == 4096)) { frame_count(uncounted); uncounted = 0; }
      continue;
    }
    tail += cap - pos; /* PAD (or a damaged record): on at word 0 */
  }
  if (last) take_last(t, last);
  if (t->writer.waits) waits_add(t);
  t->writer.taken += n;
  frame_count(uncounted);
  if (tail < head) drain_more = 1;
  if (tail > head) tail = head; /* a damaged record never moves the tail past the head */
  atomic_store_explicit(&t->shared.tail, tail, memory_order_release);
  wake_waiter(t);
out:
  atomic_store_explicit(&t->shared.wake_sent, 0, memory_order_relaxed);
  return n;
}

static uint64_t drain_all(void) {
  atomic_fetch_add_explicit(&dlh_writer_progress, 1, memory_order_relaxed); /* a pass: alive */
  if (!atomic_load_explicit(&dlh_writer_cpu_clock_set, memory_order_relaxed) &&
      pthread_getcpuclockid(pthread_self(), &dlh_writer_cpu_clock) == 0) {
    __atomic_store_n(&dlh_writer_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
    atomic_store_explicit(&dlh_writer_cpu_clock_set, 1, memory_order_release); /* wait_room */
  }
  dlh_clock_add(dlh_clock_take());
  uint64_t n = 0;
  /* threads waiting for room first (ring.c: wait_room), then every ring */
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next)
    if (atomic_load_explicit(&t->shared.waiting, memory_order_relaxed) &&
        atomic_load(&t->shared.state) == DLH_T_ACTIVE)
      n += drain(t);
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    int st = atomic_load(&t->shared.state);
    if (st != DLH_T_ACTIVE && st != DLH_T_EXITED) continue; /* retired, or being reused */
    n += drain(t);
    if (st == DLH_T_EXITED || atomic_load(&stop_req)) waits_pending(t);
    if (st == DLH_T_EXITED && atomic_load(&t->shared.head) == atomic_load(&t->shared.tail)) {
      dlh_enc_thread_end(W, t->os.tid); /* its batch out, its columns freed */
      dlh_ring_release(t);
    }
  }
  records += n;
  samples_flush();
  waits_flush();
  dlh_capture_emit(W); /* capture window marks */
  uint64_t g = (uint64_t)dlh_cupti_drain(W);
  frame_count(g);
  return n + g;
}

/* ---------------------------------------------------------------- the trace fd */

static void sleep_ms(unsigned ms) { dlh_sleep_ns((uint64_t)ms * 1000000u); }

static int same_file(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino;
}

/* Moves fd (our trace file, just opened at a low number) above the program's range: the
 * program's own numbers (low ones, and whatever it dup2()s to) stay free. Near the soft fd
 * limit, but at most around 1024 (a huge limit must not grow the fd table). Another thread of
 * the program may dup2() over the low number at any moment: the low number is closed only while
 * it still is our file, and the copy is checked. Returns the fd to use, or -1. */
static int fd_up(int fd) {
  int floor = dlh_fd_floor();
  if (floor < 0 || fd >= floor) return same_file(fd) ? fd : -1;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
  if (hi < 0) return same_file(fd) ? fd : -1;
  if (!same_file(hi)) { /* the low number was the program's already: hi is a copy of its file */
    close(hi);
    return -1;
  }
  if (same_file(fd)) close(fd);
  return hi;
}

static int open_output(void); /* below */

/* The trace file was unlinked while the program runs (its directory removed, a cleanup of
 * /tmp): whatever is written to it from now on is lost with it. It is made again at its path
 * (the directory too, the one level dlhook makes at start-up), every byte written so far copied
 * over from the open file (/proc/self/fd), and the trace goes on there: the trace at the path is
 * whole. One warning says so, or that it could not be done (the trace is then lost with the
 * file; the program goes on). A file moved away keeps its name elsewhere: it is written on. */
static int revive_warned, revive_failed; /* one warning; a failure is not tried again */

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void revive(void) {
  if (revive_failed) return;
  char dir[sizeof dlh_cfg.output], self[64], buf[1 << 16];
  snprintf(dir, sizeof dir, "%s", dlh_cfg.output);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (dlh_output_mkdir(dir, 0755) != 0 && errno != EEXIST) { /* open_output says why */ }
  }
  snprintf(self, sizeof self, "/proc/self/fd/%d", out_fd);
  int in = open(self, O_RDONLY | O_CLOEXEC), old_fd = out_fd, ok = 0, e = 0;
  dev_t old_dev = out_dev;
  ino_t old_ino = out_ino;
  int fd = in >= 0 ? open_output() : -1;
  if (fd >= 0) {
    ok = 1;
    for (;;) {
      ssize_t n = read(in, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { ok = n == 0; break; }
      if (write_all(fd, buf, (size_t)n) != 0) { ok = 0; break; }
    }
    if (!ok) {
      e = errno;
      if (same_file(fd)) { unlink(dlh_cfg.output); close(fd); }
    }
  } else {
    e = errno;
  }
  if (in >= 0) close(in);
  if (!ok) { /* on with the unlinked file */
    out_dev = old_dev;
    out_ino = old_ino;
    if (!revive_warned)
      dlh_warn("the trace file %s was removed while the program runs and cannot be made again "
               "(%s); the trace is lost with it, the program goes on", dlh_cfg.output, strerror(e));
    revive_warned = revive_failed = 1;
    return;
  }
  struct stat st;
  if (fstat(old_fd, &st) == 0 && st.st_dev == old_dev && st.st_ino == old_ino) close(old_fd);
  out_fd = fd;
  if (W) dlh_enc_set_fd(W, out_fd);
  if (!revive_warned)
    dlh_warn("the trace file was removed while the program runs; it was written again at %s "
             "with everything recorded so far, and recording goes on", dlh_cfg.output);
  revive_warned = 1;
}

/* Before each write: is out_fd still our trace file? A program that closed every fd (closefrom,
 * close_range) or dup2()ed its own file over ours must not get trace bytes. Then the trace is
 * reopened by name (the same file: dev and ino checked) at a fresh high fd; else recording stops
 * with one warning. A trace file that was unlinked is made again (revive). Returns 0 when out_fd
 * may be written. */
static int check_fd(void) {
  struct stat st;
  if (out_fd >= 0 && fstat(out_fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino) {
    struct stat at; /* a file system that shows no links for a file with a name: its path says */
    if (st.st_nlink == 0 && !(lstat(dlh_cfg.output, &at) == 0 && at.st_dev == out_dev &&
                              at.st_ino == out_ino))
      revive();
    return 0;
  }
  /* The old number is the program's now: never closed by us. A program that is busy taking
   * over numbers may take the new one too: a few tries. */
  for (int i = 0; i < 4; i++) {
    int fd = dlh_output_open(dlh_cfg.output, O_WRONLY, 0);
    if (fd < 0) break;
    int up = fd_up(fd); /* a number that is not our file is never closed (it is the program's) */
    if (up >= 0 && lseek(up, 0, SEEK_END) >= 0) {
      out_fd = up;
      if (W) dlh_enc_set_fd(W, out_fd);
      return 0;
    }
    sleep_ms(1);
  }
  if (!write_failed)
    dlh_warn("the program closed or replaced the trace file's descriptor and %s cannot be "
             "reopened; recording stopped, the program goes on", dlh_cfg.output);
  write_failed = 1;
  __atomic_store_n(&dlh_recording, 0, __ATOMIC_RELAXED);
  out_fd = -1;
  return -1;
}

/* ---------------------------------------------------------------- frames */

/* A frame aims at FRAME_TARGET compressed bytes: the number of events it may hold is learnt from
 * the bytes per event of the frames written so far. */
#define FRAME_TARGET (48u << 10)
static uint64_t frame_events, frame_limit = 4096, frame_start_bytes;

static void flush_frame(void) {
  if (write_failed) return;
  int rc;
  if (flight) { /* into the ring (flight.c): nothing to write, nothing to stop */
    dlh_enc_flush(W);
    goto sized;
  }
  if (check_fd() != 0) return;
  rc = dlh_enc_flush(W);
  if (rc != 0 && errno == EBADF && check_fd() == 0) rc = dlh_enc_flush(W); /* closed under us */
  if (rc != 0) {
    write_failed = 1;
    dlh_warn("cannot write the trace %s (%s); recording stopped, the program goes on",
             dlh_cfg.output, strerror(errno));
    __atomic_store_n(&dlh_recording, 0, __ATOMIC_RELAXED);
    return;
  }
sized:;
  uint64_t bytes = dlh_enc_bytes(W) - frame_start_bytes;
  if (frame_events >= 64 && bytes > 0) {
    uint64_t fit = (uint64_t)FRAME_TARGET * frame_events / bytes;
    frame_limit = (frame_limit + fit) / 2;
    if (frame_limit < 256) frame_limit = 256;
    if (frame_limit > (1u << 20)) frame_limit = 1u << 20;
  }
  frame_start_bytes = dlh_enc_bytes(W);
  frame_events = 0;
  /* the writer's buffers only grow, the tables too: measured once a frame, the peaks hold */
  measure_memory();
  /* the columns of threads with no event pending, beyond a 32nd of the budget, given back
   * (hundreds of threads: issue 48); the measure before holds the peak */
  if (dlh_enc_trim(W, dlh_cfg.mem_limit / 32)) measure_memory();
}

/* Counts n events into the current frame; writes it out when it is full, or when its bytes
 * (which the writer holds three times: packets, batch columns, compressed output) reach a
 * sixteenth of the memory budget (DLHOOK_MEM_MB), at least 1 MiB. */
static void frame_count(uint64_t n) {
  uint64_t before = frame_events;
  frame_events += n;
  if (frame_events >= frame_limit) {
    flush_frame();
  } else if ((before >> 10) != (frame_events >> 10)) {
    uint64_t cap = dlh_cfg.mem_limit / 16;
    if (cap < (1u << 20)) cap = 1u << 20;
    if (dlh_enc_pending_bytes(W) > cap) flush_frame();
  }
}

static void flight_finish(void); /* below */
static void finish(void) {
  uint64_t deadline = dlh_mono_ns() + (uint64_t)dlh_cfg.exit_ms * 1000000ull;
  __atomic_store_n(&dlh_recording, 0, __ATOMIC_RELAXED);
  drain_all();
  dlh_anchor a = dlh_clock_take();
  dlh_clock_add(a);
  drain_all();
  /* Every call is in; names of the pcs still queued only as long as DLHOOK_EXIT_MS allows
   * (the rest stays module+offset, for `dlhook symbolize`). */
  size_t left = dlh_stacks_symbolize(W, deadline);
  dlh_stacks_symbolize_stop();
  if (flight) {
    flight_finish();
    atomic_store(&finished, 1);
    return;
  }
  write_anchor(a, DLH__CLOCK_ANCHOR_KIND__END);
  write_counters(1);
  flush_frame();
  if (!write_failed && !dlh_cfg.quiet) {
    if (left)
      dlh_info("wrote %s (%llu calls, %llu dropped; %zu stack addresses left unsymbolized: "
               "`dlhook symbolize` resolves them)", dlh_cfg.output, (unsigned long long)calls,
               (unsigned long long)dropped_total, left);
    else
      dlh_info("wrote %s (%llu calls, %llu dropped)", dlh_cfg.output,
               (unsigned long long)calls, (unsigned long long)dropped_total);
  }
  if (out_fd >= 0 && same_file(out_fd)) close(out_fd);
  out_fd = -1;
  atomic_store(&finished, 1);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t seen, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

/* The start of the trace (header, process info, first anchor), written on the writer thread:
 * a write that fails (RLIMIT_FSIZE, full disk) never signals or stops the program's thread. */
static int flight_sink(void *ctx, const uint8_t *frame, size_t len, int kept); /* below */
static int write_start(void) {
  if (flight) {
    /* definitions (and the START anchor, below) in frames that are never dropped */
    /* Strings are not among them: a program that names every step (ProfilerStep#N) would grow
     * them for ever; a dump writes them all from the intern table (defs.c) instead. */
    uint64_t defs = DLH_CASE_BIT(DLH__PACKET__DATA_PROCESS) | DLH_CASE_BIT(DLH__PACKET__DATA_THREAD) |
                    DLH_CASE_BIT(DLH__PACKET__DATA_FUNCTION) |
                    DLH_CASE_BIT(DLH__PACKET__DATA_STACK) | DLH_CASE_BIT(DLH__PACKET__DATA_MODULE) |
                    DLH_CASE_BIT(DLH__PACKET__DATA_SYMBOL) | DLH_CASE_BIT(DLH__PACKET__DATA_DEVICE) |
                    DLH_CASE_BIT(DLH__PACKET__DATA_PY_FRAME) |
                    /* what later GPU work refers to: CUDA graph nodes (a replay's kernels lead
                     * through them to the capture), Inductor's kernels */
                    DLH_CASE_BIT(DLH__PACKET__DATA_GRAPH_NODES) | DLH_CASE_BIT(DLH__PACKET__DATA_INDUCTOR);
    W = dlh_enc_create_sink(flight_sink, NULL, dlh_cfg.zstd_level, defs);
    if (!W) {
      dlh_warn("cannot set up the flight recorder (%s); the program runs untraced", strerror(errno));
      return -1;
    }
    dlh_flight_start(first.ns);
    frame_start_bytes = 0;
    frame_events = 0;
    write_process_info(first.ns);
    Dlh__Packet p;
    Dlh__ClockAnchor c;
    anchor_packet(first, DLH__CLOCK_ANCHOR_KIND__START, &p, &c);
    dlh_enc_packet_kept(W, &p);
    flush_frame();
    return 0;
  }
  if (check_fd() != 0) return -1;
  W = dlh_enc_create(out_fd, dlh_cfg.zstd_level);
  if (!W) {
    dlh_warn("cannot write the trace file %s (%s); the program runs untraced", dlh_cfg.output,
             strerror(errno));
    return -1;
  }
  frame_start_bytes = dlh_enc_bytes(W);
  frame_events = 0;
  write_process_info(first.ns);
  write_anchor(first, DLH__CLOCK_ANCHOR_KIND__START);
  flush_frame();
  return write_failed ? -1 : 0;
}

/* ---------------------------------------------------------------- flight recorder */

/* The encoder's frames in flight mode: definition frames to flight.c's list, event frames into
 * its ring; while a dump is being written (dump_fd), its last frame goes to the dump file. */
static int flight_sink(void *ctx, const uint8_t *frame, size_t len, int kept) {
  (void)ctx;
  int rc = 0;
  if (kept || dump_fd < 0) rc = dlh_flight_add(frame, len, kept, dlh_mono_ns());
  if (dump_fd >= 0 && dlh_write_all(dump_fd, frame, len) != 0) rc = -1;
  return rc;
}

static const char *const flight_reason_names[] = {"dlhook ctl dump", "signal", "exit status",
                                                  "hang", "out of GPU memory", "job request"};
static int dump_warned, disk_warned;
static uint64_t disk_used; /* bytes of the dumps written (DLHOOK_FLIGHT_DISK_MB) */
static _Atomic unsigned dumps_done; /* dumps written (dlh_writer_dump_wait waits for one) */
static uint64_t job_quiet_until; /* job requests that come in just after a dump are answered */
#define JOB_QUIET_NS (10ull * 1000000000ull)

#define FLIGHT_MAX_THREADS 512
static Dlh__FlightThread fl_threads[FLIGHT_MAX_THREADS];
static Dlh__FlightThread *fl_thread_ptrs[FLIGHT_MAX_THREADS];
static Dlh__FlightComm fl_comms[64];
static Dlh__FlightComm *fl_comm_ptrs[64];

/* Writes the ring out as a trace file: everything drained and named first (the stack addresses
 * for DLHOOK_EXIT_MS at most), then the file header, every definition frame, the event frames,
 * and a last frame with the FlightDump, the END anchor, the counters and the trailer (exit
 * reason 3 while the process goes on). final: the process is ending (stop_reason says how). */
static void flight_dump(int reason, int code, const char *detail, uint32_t gen, uint32_t rpid,
                        int rrank, int final) {
  uint64_t t_dump = dlh_mono_ns();
  /* the frames of the window before the trigger stay, however long draining takes now */
  dlh_flight_hold(1);
  drain_all();
  if (!final) dlh_stacks_symbolize(W, t_dump + (uint64_t)dlh_cfg.exit_ms * 1000000ull);
  write_anchor(dlh_clock_last(), DLH__CLOCK_ANCHOR_KIND__PERIODIC);
  write_counters(0);
  flush_frame();
  dlh_flight_hold(0);
  dlh_flight_info fi;
  dlh_flight_stats(&fi);
  /* DLHOOK_FLIGHT_DISK_MB: the definitions and the tail always, the newest frames that fit */
  uint64_t ring_max = 0;
  if (dlh_cfg.flight_disk) {
    uint64_t fixed = fi.defs_bytes + (64u << 10); /* + the strings and the last frame, about */
    if (disk_used + fixed + fi.newest_bytes > dlh_cfg.flight_disk) { /* not even the newest frame */
      if (!disk_warned)
        dlh_warn("flight recorder: DLHOOK_FLIGHT_DISK_MB (%llu MiB) is used up by the dumps "
                 "written; no more dumps from this process", (unsigned long long)(dlh_cfg.flight_disk >> 20));
      disk_warned = 1;
      return;
    }
    ring_max = dlh_cfg.flight_disk - disk_used - fixed;
  }
  char path[sizeof dlh_cfg.output + 32];
  int fd = dlh_flight_open(path, sizeof path);
  uint32_t nframes = 0;
  uint64_t first_ns = 0;
  int ok = fd >= 0 && dlh_flight_write_defs(fd) == 0;
  if (ok) { /* the strings (kernel names, NVTX messages) from the intern table, then the ring */
    dump_fd = fd;
    dlh_defs_strings_put(W);
    ok = dlh_enc_flush(W) == 0 && dlh_flight_write_ring(fd, ring_max, &nframes, &first_ns) == 0;
    dump_fd = -1;
  }
  if (!ok) {
    if (!dump_warned)
      dlh_warn("flight recorder: cannot write the dump %s (%s); the program goes on",
               fd < 0 ? dlh_cfg.output : path, strerror(errno));
    dump_warned = 1;
    if (fd >= 0) close(fd);
    return;
  }
  dump_fd = fd;
  fi.first_ns = first_ns; /* the disk cap may have left the oldest frames out */
  Dlh__FlightDump d = DLH__FLIGHT_DUMP__INIT;
  d.has_reason = d.has_signal = d.has_time_ns = d.has_window_ns = d.has_first_ns = 1;
  d.has_frames = d.has_frames_evicted = d.has_ring_bytes = d.has_defs_bytes = d.has_dump_seq = 1;
  d.reason = (uint32_t)reason;
  d.signal = (uint32_t)code;
  d.time_ns = t_dump;
  d.window_ns = dlh_cfg.flight_ns;
  d.first_ns = fi.first_ns;
  d.frames = nframes;
  d.frames_evicted = fi.evicted;
  d.ring_bytes = fi.ring_bytes;
  d.defs_bytes = fi.defs_bytes;
  d.dump_seq = dlh_flight_dumps();
  if (gen) {
    d.has_request_gen = d.has_request_pid = d.has_request_rank = 1;
    d.request_gen = gen;
    d.request_pid = rpid;
    d.request_rank = rrank;
  }
  d.detail = (char *)detail;
  d.n_threads = dlh_flight_threads(fl_threads, FLIGHT_MAX_THREADS);
  for (size_t i = 0; i < d.n_threads; i++) fl_thread_ptrs[i] = &fl_threads[i];
  d.threads = fl_thread_ptrs;
  d.n_comms = dlh_flight_comms(fl_comms, 64);
  for (size_t i = 0; i < d.n_comms; i++) fl_comm_ptrs[i] = &fl_comms[i];
  d.comms = fl_comm_ptrs;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_FLIGHT;
  p.flight = &d;
  put(&p);
  write_anchor(dlh_clock_last(), DLH__CLOCK_ANCHOR_KIND__END);
  int sr = stop_reason, ss = stop_signal;
  if (!final) { stop_reason = 3; stop_signal = 0; }
  write_counters(1);
  stop_reason = sr;
  stop_signal = ss;
  int rc = dlh_enc_flush(W);
  dump_fd = -1;
  frame_start_bytes = dlh_enc_bytes(W); /* the dump's frames are not the next frame's size */
  struct stat dst;
  if (fstat(fd, &dst) == 0) disk_used += (uint64_t)dst.st_size;
  if (close(fd) != 0) rc = -1;
  job_quiet_until = dlh_mono_ns() + JOB_QUIET_NS;
  atomic_fetch_add(&dumps_done, 1);
  if (rc != 0 && !dump_warned) {
    dlh_warn("flight recorder: the dump %s may be incomplete (%s)", path, strerror(errno));
    dump_warned = 1;
  }
  if (!dlh_cfg.quiet)
    dlh_info("flight recorder: wrote %s (%s: %s; %u frames, last %.1f s)", path,
             flight_reason_names[reason], detail, nframes,
             fi.first_ns && t_dump > fi.first_ns ? (double)(t_dump - fi.first_ns) / 1e9 : 0.0);
}

/* A dump that this process decided (not another's request): every process of the job is asked
 * to dump too, then this one dumps. */
static void flight_trigger(int reason, int code, const char *detail, int final) {
  uint32_t gen = dlh_flight_announce(reason);
  flight_dump(reason, code, detail, gen, gen ? (uint32_t)getpid() : 0, dlh_cfg.rank, final);
}

/* Writer loop, flight mode: requests (ctl, signals), an out-of-memory error, the hang watchdog
 * and the job's request file (these two every 100 ms). */
static uint64_t flight_next_poll;
static void flight_poll(uint64_t now) {
  char detail[256];
  int code = 0, why = dlh_flight_take_request(&code);
  if (why >= 0) {
    if (why == DLH_FLIGHT_SIGNAL) snprintf(detail, sizeof detail, "signal %d", code);
    else snprintf(detail, sizeof detail, "asked by dlhook ctl");
    flight_trigger(why, code, detail, 0);
    return;
  }
  if (oom_seen == 1) {
    oom_seen = 2;
    const char *name = dlh_fn_name(oom_fn);
    snprintf(detail, sizeof detail, "%s returned an out-of-memory error", name ? name : "a call");
    flight_trigger(DLH_FLIGHT_OOM, 2, detail, 0);
    return;
  }
  if (now < flight_next_poll) return;
  flight_next_poll = now + 100 * 1000000ull;
  uint32_t tid = 0;
  uint64_t since = 0;
  /* the watch runs also without a hang time: the dump says since when a call is in flight */
  if (dlh_flight_watch(now, &tid, &since) && now >= job_quiet_until) {
    snprintf(detail, sizeof detail, "thread %u: a recorded call in flight for %.1f s (DLHOOK_HANG_S=%.1f)",
             tid, (double)(now - since) / 1e9, (double)dlh_cfg.hang_ns / 1e9);
    flight_trigger(DLH_FLIGHT_HANG, 0, detail, 0);
    return;
  }
  uint32_t gen, pid;
  int rank;
  if (dlh_flight_poll_job(&gen, &pid, &rank) && now >= job_quiet_until) {
    if (rank >= 0) snprintf(detail, sizeof detail, "asked by process %u (rank %d), request %u", pid, rank, gen);
    else snprintf(detail, sizeof detail, "asked by process %u, request %u", pid, gen);
    flight_dump(DLH_FLIGHT_JOB, 0, detail, gen, pid, rank, 0);
  }
}

/* The end of a flight-mode trace: a dump when the process dies of a signal or exits with a
 * non-zero status, or when an out-of-memory error is still to be dumped, else nothing is
 * written. */
static void flight_finish(void) {
  int status = dlh_flight_get_exit_status();
  char detail[128];
  if (stop_reason == 1) {
    snprintf(detail, sizeof detail, "signal %d", stop_signal);
    flight_trigger(DLH_FLIGHT_SIGNAL, stop_signal, detail, 1);
  } else if (stop_reason == 0 && status != 0) {
    snprintf(detail, sizeof detail, "exit status %d", status);
    flight_trigger(DLH_FLIGHT_EXIT, status, detail, 1);
  } else if (oom_seen == 1) {
    /* the out-of-memory error was drained only now (a loaded machine: the writer did not run
     * between the call and the exit): its dump is still due */
    oom_seen = 2;
    const char *name = dlh_fn_name(oom_fn);
    snprintf(detail, sizeof detail, "%s returned an out-of-memory error", name ? name : "a call");
    flight_trigger(DLH_FLIGHT_OOM, 2, detail, 1);
  } else if (!dlh_cfg.quiet && !dlh_flight_dumps()) {
    dlh_info("flight recorder: no trigger, nothing written (%llu calls, %llu dropped)",
             (unsigned long long)calls, (unsigned long long)dropped_total);
  }
}

/* The writer's wait after a quiet pass (n records in the last since_ns): long enough for ~64
 * records to gather at the same pace, 20 to 100 ms. A program whose only records are its host
 * samples (200 a second) made the writer pass every 20 ms, and each pass wakes the symbolizer
 * for the new pcs: two wake-ups of ~50 us each on a VM, a third of sampling's whole cost. A ring
 * that fills to half wakes the writer at once (ring.c), a flush or a stop too. */
static int idle_wait_ms(uint64_t n, uint64_t since_ns) {
  uint64_t ms = n ? 64 * since_ns / (n * 1000000ull) : 100;
  return ms < 20 ? 20 : ms > 100 ? 100 : (int)ms;
}

static void *writer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "dlhook-writer"); /* `dlhook attach` never picks it */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the program's threads */
  static struct dlh_thread self_blocked;     /* nothing this thread calls is recorded */
  self_blocked.hot.blocked = 1;
  dlh_self = &self_blocked;
  if (write_start() != 0) {
    __atomic_store_n(&dlh_recording, 0, __ATOMIC_RELAXED);
    if (out_fd >= 0 && same_file(out_fd)) close(out_fd);
    out_fd = -1;
    atomic_store(&finished, 1);
    return NULL;
  }
  uint64_t last_flush = dlh_mono_ns(), since_flush = 0, last_pass = last_flush;
  int interval = 1;
  for (;;) {
    uint32_t seen = atomic_load(&dlh_writer_wake_seq);
    if (!atomic_load(&stop_req) && interval) futex_wait(&dlh_writer_wake_seq, seen, interval);
    if (atomic_load(&stop_req)) break;
    uint64_t req = atomic_load(&flush_req);
    uint64_t n = drain_all();
    since_flush += n;
    uint64_t now = dlh_mono_ns();
    /* Names of the stack addresses, as the symbolizer thread posts them: a frame is never held
     * back for them (they follow in later frames). */
    dlh_stacks_symbolize(W, 0);
    if (req != atomic_load(&flush_done) || since_flush > (1u << 20) ||
        now - last_flush >= (uint64_t)dlh_cfg.flush_ms * 1000000ull) {
      dlh_cupti_flush(0);
      drain_all();
      write_anchor(dlh_clock_last(), DLH__CLOCK_ANCHOR_KIND__PERIODIC);
      write_counters(0);
      flush_frame();
      last_flush = now;
      since_flush = 0;
      atomic_store(&flush_done, req);
    }
    if (flight) flight_poll(now);
    /* the next pass at once while rings are left with records or the last pass was busy, in
     * 1 ms while calls come fast, else in 20 ms: a thread whose ring fills to half wakes the
     * writer anyway (ring.c), and a pass costs a wake-up (tens of us on a VM): a program that
     * only has its host samples taken (200 a second) made the writer wake ~200 times a second */
    interval = drain_more || n >= 4096 ? 0 : n >= 64 ? 1 : idle_wait_ms(n, now - last_pass);
    if (interval > (int)dlh_cfg.flush_ms) interval = (int)dlh_cfg.flush_ms; /* DLHOOK_FLUSH_MS >= 10 */
    last_pass = now;
    drain_more = 0;
  }
  finish();
  return NULL;
}

static int open_output(void) {
  for (int i = 0; i < 100; i++) {
    char path[sizeof dlh_cfg.output];
    /* The name is taken (an exec'd image of the same pid, a planted file): name.N.dlh */
    size_t len = strlen(dlh_cfg.output);
    int ext = len > 4 && !strcmp(dlh_cfg.output + len - 4, ".dlh");
    if (i == 0) snprintf(path, sizeof path, "%s", dlh_cfg.output);
    else if ((size_t)snprintf(path, sizeof path, "%.*s.%d%s", (int)(ext ? len - 4 : len),
                              dlh_cfg.output, i, ext ? ".dlh" : "") >= sizeof path)
      break;
    int fd = dlh_output_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      if (i) snprintf(dlh_cfg.output, sizeof dlh_cfg.output, "%s", path);
      struct stat st, at;
      /* the file just created at that name, seen through fd: our identity from now on */
      if (fstat(fd, &st) != 0 || lstat(path, &at) != 0 || st.st_dev != at.st_dev ||
          st.st_ino != at.st_ino) {
        errno = EBUSY;
        return -1; /* fd was taken over by the program in between: not ours to close */
      }
      out_dev = st.st_dev;
      out_ino = st.st_ino;
      int up = fd_up(fd);
      if (up < 0) errno = EBUSY;
      return up;
    }
    if (errno != EEXIST) break;
  }
  return -1;
}

/* The trace could not be started (no writer thread, no definitions): the file holds nothing a
 * reader accepts (`dlhook stats` called it an empty file), so one created here is removed, while
 * its name still is our file, and closed. */
static void discard_output(int created) {
  struct stat st;
  if (out_fd >= 0 && same_file(out_fd)) {
    if (created && lstat(dlh_cfg.output, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino)
      unlink(dlh_cfg.output);
    close(out_fd);
  }
  out_fd = -1;
}

int dlh_writer_start(int fd) {
  first = dlh_clock_restart();
  flight = dlh_cfg.flight && fd < 0; /* dlhook attach (fd given) writes a trace as always */
  out_fd = fd >= 0 ? fd : flight ? -1 : open_output();
  if (flight) goto defs;
  if (out_fd < 0) {
    dlh_warn("cannot create the trace file %s (%s); the program runs untraced", dlh_cfg.output,
             strerror(errno));
    return -1;
  }
  if (fd >= 0) {
    struct stat st;
    if (fstat(out_fd, &st) == 0) { out_dev = st.st_dev; out_ino = st.st_ino; }
  }
defs:
  if (dlh_defs_start() != 0) {
    dlh_warn("cannot set up the trace writer (%s); the program runs untraced", strerror(errno));
    discard_output(fd < 0);
    return -1;
  }
  writer_pid = getpid();
  atomic_store(&stop_req, 0);
  atomic_store(&finished, 0);
  pthread_attr_t attr; /* never joined: it ends by itself after the final drain */
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (dlh_cfg.as_limit) pthread_attr_setstacksize(&attr, 1u << 20); /* a tight RLIMIT_AS */
  /* created with every signal blocked (writer_main keeps them blocked): a signal arriving in
   * between must go to one of the program's threads, never run its handler on ours */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int perr = pthread_create(&writer_tid, &attr, writer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (perr != 0) {
    dlh_warn("cannot start the writer thread (%s); the program runs untraced", strerror(perr));
    discard_output(fd < 0);
    return -1;
  }
  dlh_stacks_start_symbolizer();
  return 0;
}


/* Starts the writer (trace file, thread) once, at the first event. Returns 0 when it runs,
 * -1 when it could not start (it warned once; recording is then off). */
static _Atomic int wstate; /* 0 not started, 1 starting, 2 running, 3 failed */
int dlh_writer_ensure(void) {
  int s = atomic_load(&wstate);
  if (s == 2) return 0;
  if (s == 0 && atomic_compare_exchange_strong(&wstate, &s, 1)) {
    if (dlh_writer_start(-1) == 0) {
      atomic_store(&wstate, 2);
      return 0;
    }
    __atomic_store_n(&dlh_recording, 0, __ATOMIC_RELAXED);
    atomic_store(&wstate, 3);
    return -1;
  }
  while ((s = atomic_load(&wstate)) == 1) sleep_ms(1); /* another thread is starting it */
  return s == 2 ? 0 : -1;
}


/* The sampler thread may be opening the trace right now (a process sampled from start-up
 * starts its trace 20 ms in): an exit or an exec waits for it, else the file stays empty. */
static void sampler_settle(unsigned timeout_ms) {
  for (unsigned i = 0; i < timeout_ms && sampler && sampler->starting && sampler->starting(); i++)
    sleep_ms(1);
}

int dlh_writer_flush_wait(unsigned timeout_ms) {
  sampler_settle(timeout_ms);
  if (flight) return 0; /* the ring is in memory: nothing to write before a fork or an exec */
  if (out_fd < 0 || atomic_load(&finished)) return -1;
  if (getpid() != writer_pid) return -1; /* a vfork child shares our memory: not its writer */
  uint64_t req = atomic_fetch_add(&flush_req, 1) + 1;
  dlh_writer_wake();
  for (unsigned i = 0; i < timeout_ms; i++) {
    if (atomic_load(&flush_done) >= req || atomic_load(&finished)) return 0;
    sleep_ms(1);
  }
  return -1;
}

int dlh_writer_dump_wait(int reason, int code, unsigned timeout_ms) {
  if (!flight || atomic_load(&wstate) != 2 || atomic_load(&finished)) return -1;
  if (getpid() != writer_pid) return -1;
  unsigned before = atomic_load(&dumps_done);
  dlh_flight_request(reason, code);
  for (unsigned i = 0; i < timeout_ms; i++) {
    if (atomic_load(&dumps_done) != before || atomic_load(&finished)) return 0;
    sleep_ms(1);
  }
  return -1;
}

/* Final drain: from atexit, or from a fatal signal's handler (async-signal-safe: it only sets a
 * flag, writes a byte and sleeps until the writer thread is done, for at most 5 s). */
static _Atomic int once; /* dlh_writer_stop ran (reset for a new trace by attach) */
void dlh_writer_stop(int exit_reason, int sig) {
  if (sampler) {
    sampler->stop();
    sampler_settle(2000);
  }
  if (flight ? atomic_load(&wstate) != 2 : out_fd < 0 && !atomic_load(&finished)) return;
  if (atomic_exchange(&once, 1)) {
    for (int i = 0; i < 5000 && !atomic_load(&finished); i++) sleep_ms(1);
    return;
  }
  stop_reason = exit_reason;
  stop_signal = sig;
  atomic_store(&stop_req, 1);
  dlh_writer_wake();
  for (int i = 0; i < 5000 && !atomic_load(&finished); i++) sleep_ms(1);
  if (!atomic_load(&finished)) dlh_warn("the trace writer did not finish in 5 s; the trace may be incomplete");
}

int dlh_writer_is_self(void) {
  return atomic_load(&wstate) == 2 && pthread_equal(pthread_self(), writer_tid);
}

void dlh_writer_after_fork_child(void) {
  /* The parent's writer thread does not exist here; its state must not be touched. */
  W = NULL; /* the parent's writer memory is leaked in the child, never freed twice */
  if (out_fd >= 0 && same_file(out_fd)) close(out_fd); /* the parent's trace fd, inherited */
  out_fd = -1;
  frame_events = 0;
  frame_start_bytes = 0;
  records = dropped_total = calls = folded = 0;
  ring_waits = ring_wait_ns = 0;
  nwrecs = 0;
  write_failed = 0;
  sbs = NULL; /* the parent's sample batches: leaked, never written twice */
  dump_fd = -1;
  oom_seen = 0;
  dlh_flight_after_fork_child();
  nsbs = capsbs = 0;
  samples_total = 0;
  dlh_defs_after_fork_child();
  atomic_store(&flush_req, 0);
  atomic_store(&flush_done, 0);
  dlh_config_after_fork();
  atomic_store(&wstate, 0); /* the child's trace starts with its first recorded call */
  dlh_recording = 1;
}

/* dlhook attach (attach.c), after dlh_writer_stop finished a trace: everything per trace is
 * reset so that the next attach writes a new trace (new file, thread and string tables, stack
 * and module definitions again); the rings and thread structs stay. */
void dlh_writer_attached(char **notes, size_t n) {
  attached = 1;
  not_hooked = notes;
  n_not_hooked = n;
}

void dlh_writer_reset_for_attach(void) {
  if (!atomic_load(&finished)) return; /* the writer did not finish: it keeps its state */
  attached = 0;
  not_hooked = NULL;
  n_not_hooked = 0;
  if (W) dlh_enc_free(W);
  W = NULL;
  out_fd = -1;
  frame_events = 0;
  frame_start_bytes = 0;
  frame_limit = 4096;
  records = dropped_total = calls = folded = 0;
  ring_waits = ring_wait_ns = 0;
  nwrecs = 0;
  write_failed = 0;
  for (size_t i = 0; i < nsbs; i++) sbs[i].n = sbs[i].named = 0;
  samples_total = 0;
  stop_reason = stop_signal = 0;
  dlh_defs_new_trace();
  dlh_trace_gen++; /* a call of the new trace never folds into one of the old */
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    t->writer.announced = 0;
    t->writer.has_last = 0;
    t->writer.nlinks = 0;
    t->writer.nvtx_depth = 0;
    t->writer.waits = t->writer.wait_sum = 0;
    atomic_store(&t->self.waits, 0);
    atomic_store(&t->shared.dropped, 0);
  }
  dlh_cupti_new_trace();
  dlh_stacks_reset_for_attach();
  if (sampler) sampler->reset_for_attach();
  atomic_store(&flush_req, 0);
  atomic_store(&flush_done, 0);
  atomic_store(&stop_req, 0);
  atomic_store(&finished, 0);
  atomic_store(&once, 0);
  atomic_store(&wstate, 0); /* the next trace starts with dlh_writer_ensure */
}
