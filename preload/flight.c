/* flight.c — the flight recorder (DLHOOK_MODE=flight): the trace kept in memory as a bounded
 * ring of finished zstd frames, and what decides when it is written out.
 *
 * Frames. The writer's encoder runs in sink mode (dlh_format.h): every frame it finishes comes
 * here instead of going to a file. Definition frames (process, threads, functions, strings,
 * stacks, modules, symbols, Python frames, devices, the first clock anchor) are kept for good:
 * they grow with what the program is (its code, its threads), not with time. Event frames
 * (API and GPU batches, samples, periodic anchors, counters) go into a ring that keeps the
 * frames of the last DLHOOK_FLIGHT_S seconds and, whatever the time, no more compressed bytes
 * (definitions included) than the memory budget DLHOOK_MEM_MB leaves after the rest of dlhook,
 * at most half of it (at least 1 MiB): the oldest event frame is dropped first, the newest is
 * always kept. A dump is the file header, every
 * definition frame, the event frames in order, and a last frame written straight to the file
 * (FlightDump, the END anchor, counters, trailer): a trace like any other, which every command
 * reads.
 *
 * Hang watchdog (writer thread, every 100 ms, nothing on the hot path): a thread inside a
 * recorded call has hot.depth > 0; a call that ends always leaves a trace in the thread's ring
 * (a record the writer takes, counted in writer.taken; a repeat folded into the FOLD record: its
 * count moves; a full ring: dropped moves). A thread seen with depth > 0 and none of the three
 * moving for DLHOOK_HANG_S has had one call in flight for at least that long. (The ring's head
 * is no sign: host samples taken inside the call are stored there too.)
 *
 * Job-wide dumps: a process that dumps for a reason of its own (hang, signal, exit status,
 * ctl, out of memory) writes DIR/.dlhook-dump-request (DIR: the directory of its trace name,
 * which every rank of a job shares when they record into one directory) with a generation
 * number one above the one there; every flight-mode writer stats that file every 100 ms and
 * dumps once when the generation grows past the one it saw at its start. No service, no port,
 * no launcher support: any launcher, any number of hosts on a shared file system.
 *
 * Everything here runs on the writer thread, except dlh_flight_exit_status and
 * dlh_flight_request (async-signal-safe: atomics). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlh_format.h"
#include "dlh_format_int.h"
#include "dlh_internal.h"

/* ---------------------------------------------------------------- frames */

typedef struct fframe {
  uint8_t *p;
  size_t len;
  uint64_t t0, t1; /* trace clock: the frame holds what was drained between t0 and t1 */
} fframe;

static fframe *kept;              /* definition frames, in order */
static size_t nkept, capkept;
static uint64_t kept_bytes;
static fframe *ring;              /* event frames: ring[(first + i) % rcap], i < rn */
static size_t rcap, rfirst, rn;
static uint64_t ring_bytes, evicted, last_t1;
static int hold; /* a dump is being made: the window counts back from its trigger, not from now */

void dlh_flight_hold(int on) { hold = on; }

static uint64_t held(void) {
  return kept_bytes + ring_bytes + capkept * sizeof *kept + rcap * sizeof *ring;
}

/* What the frames may hold: what the memory budget leaves after everything else dlhook holds
 * (rings, threads, the writer's buffers, stack and symbol tables), at most half of the budget,
 * at least 1 MiB. */
static uint64_t cap_bytes(void) {
  uint64_t total = dlh_mem_total(), mine = held();
  uint64_t others = total > mine ? total - mine : 0;
  uint64_t c = dlh_cfg.mem_limit > others ? dlh_cfg.mem_limit - others : 0;
  if (c > dlh_cfg.mem_limit / 2) c = dlh_cfg.mem_limit / 2;
  return c < (1u << 20) ? 1u << 20 : c;
}

static void measure(void) { dlh_mem_set(DLH_MEM_FLIGHT, held()); }

static void evict_one(void) {
  fframe *f = &ring[rfirst];
  ring_bytes -= f->len;
  free(f->p);
  f->p = NULL;
  rfirst = (rfirst + 1) % rcap;
  rn--;
  evicted++;
}

int dlh_flight_add(const uint8_t *frame, size_t len, int is_kept, uint64_t now) {
  uint8_t *p = malloc(len);
  if (!p) return -1;
  memcpy(p, frame, len);
  if (is_kept) {
    if (nkept == capkept) {
      size_t c = capkept ? capkept * 2 : 64;
      fframe *n = realloc(kept, c * sizeof *n);
      if (!n) { free(p); return -1; }
      kept = n;
      capkept = c;
    }
    kept[nkept++] = (fframe){p, len, now, now};
    kept_bytes += len;
    measure();
    return 0;
  }
  if (rn == rcap) { /* grow, keeping the order */
    size_t c = rcap ? rcap * 2 : 256;
    fframe *n = malloc(c * sizeof *n);
    if (!n) { free(p); return -1; }
    for (size_t i = 0; i < rn; i++) n[i] = ring[(rfirst + i) % rcap];
    free(ring);
    ring = n;
    rcap = c;
    rfirst = 0;
  }
  ring[(rfirst + rn) % rcap] = (fframe){p, len, last_t1 ? last_t1 : now, now};
  rn++;
  ring_bytes += len;
  last_t1 = now;
  /* the last DLHOOK_FLIGHT_S seconds (the frame that reaches past the start stays), within the
   * byte cap; the newest frame always stays */
  uint64_t window = dlh_cfg.flight_ns, cap = cap_bytes();
  while (rn > 1) {
    const fframe *o = &ring[rfirst];
    if (!hold && now > window && o->t1 < now - window) { evict_one(); continue; }
    if (held() > cap) { evict_one(); continue; }
    break;
  }
  measure();
  return 0;
}

void dlh_flight_stats(dlh_flight_info *fi) {
  fi->frames = (uint32_t)rn;
  fi->evicted = evicted;
  fi->ring_bytes = ring_bytes;
  fi->defs_bytes = kept_bytes;
  fi->first_ns = rn ? ring[rfirst].t0 : 0;
  fi->newest_bytes = rn ? ring[(rfirst + rn - 1) % rcap].len : 0;
}

int dlh_flight_write_defs(int fd) {
  if (dlh_enc_write_header(fd) != 0) return -1;
  for (size_t i = 0; i < nkept; i++)
    if (dlh_write_all(fd, kept[i].p, kept[i].len) != 0) return -1;
  return 0;
}

int dlh_flight_write_ring(int fd, uint64_t max, uint32_t *frames, uint64_t *first_ns) {
  size_t from = 0;
  uint64_t bytes = ring_bytes;
  while (max && from < rn && bytes > max) bytes -= ring[(rfirst + from++) % rcap].len;
  *frames = (uint32_t)(rn - from);
  *first_ns = from < rn ? ring[(rfirst + from) % rcap].t0 : 0;
  for (size_t i = from; i < rn; i++) {
    const fframe *f = &ring[(rfirst + i) % rcap];
    if (dlh_write_all(fd, f->p, f->len) != 0) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- dump files */

static unsigned dumps; /* dumps written by this process */

/* The dump's name: the trace name with ".flight" before ".dlh" (a second dump of the same
 * process ".flight-2.dlh", ...), created O_EXCL. Returns the fd (path in *path) or -1. */
int dlh_flight_open(char *path, size_t cap) {
  const char *out = dlh_cfg.output;
  size_t len = strlen(out);
  int ext = len > 4 && !strcmp(out + len - 4, ".dlh");
  for (unsigned i = dumps + 1; i < dumps + 100; i++) {
    int n = i == 1 ? snprintf(path, cap, "%.*s.flight.dlh", (int)(ext ? len - 4 : len), out)
                   : snprintf(path, cap, "%.*s.flight-%u.dlh", (int)(ext ? len - 4 : len), out, i);
    if (n < 0 || (size_t)n >= cap) break;
    int fd = dlh_output_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      dumps = i;
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

unsigned dlh_flight_dumps(void) { return dumps; }

/* ---------------------------------------------------------------- requests */

static _Atomic int req_reason = -1, req_sig;
static _Atomic int exit_status;

void dlh_flight_request(int reason, int sig) {
  int none = -1;
  if (atomic_compare_exchange_strong(&req_reason, &none, reason)) atomic_store(&req_sig, sig);
  dlh_writer_wake();
}

int dlh_flight_take_request(int *sig) {
  int r = atomic_exchange(&req_reason, -1);
  if (r >= 0) *sig = atomic_load(&req_sig);
  return r;
}

void dlh_flight_exit_status(int status) { atomic_store(&exit_status, status); }
int dlh_flight_get_exit_status(void) { return atomic_load(&exit_status); }

/* The job's request file: DIR/.dlhook-dump-request, "GEN PID RANK REASON\n". */
static char req_path[sizeof dlh_cfg.output];
static uint32_t req_seen;         /* the generation this process has answered (or found) */
static struct timespec req_mtime;
static off_t req_size = -1;

static void request_path(void) {
  if (req_path[0]) return;
  snprintf(req_path, sizeof req_path, "%s", dlh_cfg.output);
  char *slash = strrchr(req_path, '/');
  if (slash) snprintf(slash + 1, sizeof req_path - (size_t)(slash + 1 - req_path), ".dlhook-dump-request");
  else snprintf(req_path, sizeof req_path, ".dlhook-dump-request");
}

static int read_request(uint32_t *gen, uint32_t *pid, int *rank, int *reason) {
  int fd = open(req_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  unsigned g = 0, p = 0;
  int r = -1, why = 0;
  if (sscanf(buf, "%u %u %d %d", &g, &p, &r, &why) < 1) return -1;
  *gen = g;
  *pid = p;
  *rank = r;
  *reason = why;
  return 0;
}

void dlh_flight_start(uint64_t start_ns) {
  last_t1 = start_ns;
  request_path();
  uint32_t gen, pid;
  int rank, why;
  if (read_request(&gen, &pid, &rank, &why) == 0) req_seen = gen; /* an earlier job's: answered */
  struct stat st;
  if (stat(req_path, &st) == 0) { req_mtime = st.st_mtim; req_size = st.st_size; }
}

uint32_t dlh_flight_announce(int reason) {
  request_path();
  uint32_t gen = 0, pid;
  int rank, why;
  if (read_request(&gen, &pid, &rank, &why) != 0) gen = 0;
  if (gen < req_seen) gen = req_seen;
  gen++;
  char tmp[sizeof req_path + 32], line[128];
  snprintf(tmp, sizeof tmp, "%s.%d", req_path, (int)getpid());
  int n = snprintf(line, sizeof line, "%u %d %d %d\n", gen, (int)getpid(), dlh_cfg.rank, reason);
  int fd = dlh_output_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 0;
  int ok = dlh_write_all(fd, line, (size_t)n) == 0;
  close(fd);
  if (!ok || rename(tmp, req_path) != 0) {
    unlink(tmp);
    return 0;
  }
  req_seen = gen;
  struct stat st;
  if (stat(req_path, &st) == 0) { req_mtime = st.st_mtim; req_size = st.st_size; }
  return gen;
}

int dlh_flight_poll_job(uint32_t *gen, uint32_t *pid, int *rank) {
  struct stat st;
  if (stat(req_path, &st) != 0) return 0;
  if (st.st_size == req_size && st.st_mtim.tv_sec == req_mtime.tv_sec &&
      st.st_mtim.tv_nsec == req_mtime.tv_nsec)
    return 0;
  req_mtime = st.st_mtim;
  req_size = st.st_size;
  int why;
  if (read_request(gen, pid, rank, &why) != 0 || *gen <= req_seen) return 0;
  req_seen = *gen;
  return *pid != (uint32_t)getpid();
}

/* ---------------------------------------------------------------- threads */

typedef struct fthread {
  struct dlh_thread *t;
  uint32_t tid;
  uint64_t sig;          /* head, fold count and drops as last seen */
  uint64_t since;        /* depth > 0 and sig unchanged since this time (0: not so) */
  uint64_t seen;         /* the last time the watchdog saw the thread, or it was sampled */
  int flagged;           /* its hang was reported */
  /* its last host sample */
  uint64_t s_ns, c_ns;
  uint32_t s_stack, s_state, s_kind, has_sample, c_stack;
} fthread;
static fthread *fts;
static size_t nfts, capfts;

static fthread *ft_of_tid(uint32_t tid, int create) {
  for (size_t i = 0; i < nfts; i++)
    if (fts[i].tid == tid) return &fts[i];
  if (!create) return NULL;
  if (nfts == capfts) {
    size_t c = capfts ? capfts * 2 : 32;
    fthread *n = realloc(fts, c * sizeof *n);
    if (!n) return NULL;
    fts = n;
    capfts = c;
  }
  fthread *f = &fts[nfts++];
  memset(f, 0, sizeof *f);
  f->tid = tid;
  return f;
}

void dlh_flight_sample(uint32_t tid, uint64_t ns, uint32_t kind, uint32_t stack, uint32_t state) {
  fthread *f = ft_of_tid(tid, 1);
  if (!f || ns < f->s_ns) return;
  f->has_sample = f->has_sample ? f->has_sample : 1;
  if (kind == 0 /* SAMPLE_CPU */) { f->c_ns = ns; f->c_stack = stack; }
  f->s_ns = ns;
  f->seen = ns > f->seen ? ns : f->seen;
  f->s_kind = kind;
  f->s_stack = stack;
  f->s_state = state;
}

/* What shows that a thread's call ended: the API and FOLD records the writer took from its ring
 * (not its head: host samples go into the ring too), its FOLD record's count, its drops. */
static uint64_t activity(struct dlh_thread *t) {
  uint64_t head = t->writer.taken;
  uint64_t drop = atomic_load_explicit(&t->shared.dropped, memory_order_relaxed);
  uint64_t *f = __atomic_load_n(&t->prod.fold_rec, __ATOMIC_RELAXED);
  uint64_t folds = f ? __atomic_load_n(&f[2], __ATOMIC_RELAXED) : 0;
  return head ^ (drop * 0x9e3779b97f4a7c15ull) ^ (folds * 0xc2b2ae3d27d4eb4full) ^
         (uint64_t)(uintptr_t)f;
}

/* Threads neither running nor sampled for a minute are forgotten (a program that makes threads
 * without end must not grow the table). */
#define FORGET_NS (60ull * 1000000000ull)
static void forget_old(uint64_t now) {
  for (size_t i = 0; i < nfts;) {
    if (now > FORGET_NS && fts[i].seen < now - FORGET_NS) fts[i] = fts[--nfts];
    else i++;
  }
}

int dlh_flight_watch(uint64_t now, uint32_t *tid_out, uint64_t *since_out) {
  int hung = 0;
  forget_old(now);
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    int st = atomic_load(&t->shared.state);
    if (st != DLH_T_ACTIVE || t->os.internal || !t->prod.buf) continue;
    fthread *f = ft_of_tid(t->os.tid, 1);
    if (!f) continue;
    if (f->t != t) { f->t = t; f->since = 0; f->flagged = 0; }
    f->seen = now;
    uint32_t depth = __atomic_load_n(&t->hot.depth, __ATOMIC_RELAXED);
    uint64_t sig = activity(t);
    if (!depth || sig != f->sig) {
      f->sig = sig;
      f->since = depth ? now : 0;
      f->flagged = 0;
      continue;
    }
    if (!f->since) f->since = now;
    if (dlh_cfg.hang_ns && !f->flagged && now - f->since >= dlh_cfg.hang_ns) {
      f->flagged = 1;
      if (!hung) {
        *tid_out = t->os.tid;
        *since_out = f->since;
      }
      hung = 1;
    }
  }
  return hung;
}

size_t dlh_flight_threads(Dlh__FlightThread *out, size_t max) {
  size_t n = 0;
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t && n < max; t = t->next) {
    int st = atomic_load(&t->shared.state);
    if ((st != DLH_T_ACTIVE && st != DLH_T_EXITED) || t->os.internal) continue;
    Dlh__FlightThread *o = &out[n++];
    dlh__flight_thread__init(o);
    o->has_tid = o->has_depth = 1;
    o->tid = t->os.tid;
    o->depth = __atomic_load_n(&t->hot.depth, __ATOMIC_RELAXED);
    fthread *f = ft_of_tid(t->os.tid, 0);
    if (o->depth && f && f->since && f->t == t) {
      o->has_in_call_since_ns = 1;
      o->in_call_since_ns = f->since;
    }
    if (f && f->has_sample) {
      o->has_stack = o->has_state = o->has_sample_ns = o->has_sample_kind = 1;
      o->stack = f->s_stack;
      o->state = f->s_state;
      o->sample_ns = f->s_ns;
      o->sample_kind = f->s_kind;
      f->has_sample = 2; /* given */
      if (f->c_ns) {
        o->has_cpu_stack = o->has_cpu_sample_ns = 1;
        o->cpu_stack = f->c_stack;
        o->cpu_sample_ns = f->c_ns;
      }
    }
    if (t->writer.has_last) {
      o->has_last_fn = o->has_last_stack = 1;
      o->last_fn = t->writer.last_fn;
      o->last_stack = t->writer.last_stack;
    }
  }
  /* threads seen only by the sampler (never made a recorded call) */
  for (size_t i = 0; i < nfts && n < max; i++) {
    fthread *f = &fts[i];
    if (f->has_sample != 1) {
      if (f->has_sample == 2) f->has_sample = 1;
      continue;
    }
    Dlh__FlightThread *o = &out[n++];
    dlh__flight_thread__init(o);
    o->has_tid = o->has_stack = o->has_state = o->has_sample_ns = o->has_sample_kind = 1;
    o->tid = f->tid;
    o->stack = f->s_stack;
    o->state = f->s_state;
    o->sample_ns = f->s_ns;
    o->sample_kind = f->s_kind;
    if (f->c_ns) {
      o->has_cpu_stack = o->has_cpu_sample_ns = 1;
      o->cpu_stack = f->c_stack;
      o->cpu_sample_ns = f->c_ns;
    }
  }
  return n;
}

/* ---------------------------------------------------------------- NCCL communicators */

#define NCOMMS 64
typedef struct fcomm {
  uint64_t hash, seq, end_ns, ops;
  int32_t rank, nranks;
  uint32_t fn, tid, stack;
  int used;
} fcomm;
static fcomm comms[NCOMMS];
static struct { uint32_t fn; int hash, seq, rank, nranks; } argix[64]; /* by function */

static int arg_index(const dlh_fn_desc *d, const char *name) {
  for (int i = 0; i < d->nargs; i++)
    if (d->argnames && d->argnames[i] && !strcmp(d->argnames[i], name)) return i;
  return -1;
}

void dlh_flight_nccl(uint32_t fn, const uint64_t *args, uint32_t nargs, uint64_t end_ns,
                     uint32_t tid, uint32_t stack) {
  unsigned slot = (fn * 2654435761u) % 64;
  if (argix[slot].fn != fn + 1) {
    int dom;
    const dlh_fn_desc *d = dlh_fn_lookup(fn, &dom);
    argix[slot].fn = fn + 1;
    argix[slot].hash = d ? arg_index(d, "comm_hash") : -1;
    argix[slot].seq = d ? arg_index(d, "seq") : -1;
    argix[slot].rank = d ? arg_index(d, "rank") : -1;
    argix[slot].nranks = d ? arg_index(d, "nranks") : -1;
  }
  int hi = argix[slot].hash, si = argix[slot].seq;
  if (hi < 0 || si < 0 || (uint32_t)hi >= nargs || (uint32_t)si >= nargs) return;
  uint64_t hash = args[hi];
  fcomm *c = NULL;
  for (int i = 0; i < NCOMMS && !c; i++)
    if (comms[i].used && comms[i].hash == hash) c = &comms[i];
  for (int i = 0; i < NCOMMS && !c; i++)
    if (!comms[i].used) { c = &comms[i]; c->used = 1; c->hash = hash; c->ops = 0; }
  if (!c) return;
  c->seq = args[si];
  c->rank = argix[slot].rank >= 0 && (uint32_t)argix[slot].rank < nargs ? (int32_t)args[argix[slot].rank] : -1;
  c->nranks = argix[slot].nranks >= 0 && (uint32_t)argix[slot].nranks < nargs ? (int32_t)args[argix[slot].nranks] : 0;
  c->fn = fn;
  c->end_ns = end_ns;
  c->tid = tid;
  c->stack = stack;
  c->ops++;
}

size_t dlh_flight_comms(Dlh__FlightComm *out, size_t max) {
  size_t n = 0;
  for (int i = 0; i < NCOMMS && n < max; i++) {
    if (!comms[i].used) continue;
    Dlh__FlightComm *o = &out[n++];
    dlh__flight_comm__init(o);
    o->has_comm_hash = o->has_rank = o->has_nranks = o->has_seq = o->has_fn = 1;
    o->has_end_ns = o->has_tid = o->has_stack = o->has_ops = 1;
    o->comm_hash = comms[i].hash;
    o->rank = comms[i].rank;
    o->nranks = comms[i].nranks;
    o->seq = comms[i].seq;
    o->fn = comms[i].fn;
    o->end_ns = comms[i].end_ns;
    o->tid = comms[i].tid;
    o->stack = comms[i].stack;
    o->ops = comms[i].ops;
  }
  return n;
}

void dlh_flight_after_fork_child(void) {
  /* the parent's frames are its own: leaked in the child, never written twice */
  kept = NULL;
  nkept = capkept = 0;
  kept_bytes = 0;
  ring = NULL;
  rcap = rfirst = rn = 0;
  ring_bytes = evicted = last_t1 = 0;
  fts = NULL;
  nfts = capfts = 0;
  memset(comms, 0, sizeof comms);
  dumps = 0;
  atomic_store(&req_reason, -1);
}
