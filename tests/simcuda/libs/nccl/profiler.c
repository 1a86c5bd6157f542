/* profiler.c — the simulated NCCL loads and calls a profiler plugin as NCCL 2.23+ does
 * (simprof.h; NCCL's plugins/profiler/README.md): the library NCCL_PROFILER_PLUGIN names ("none"
 * disables it; a name that is neither a path nor lib*.so also tries libnccl-profiler-NAME.so;
 * unset: libnccl-profiler.so), the versioned symbol ncclProfiler_v5 with ncclProfiler_v4 as the
 * fallback, init per communicator with the event mask it returns honoured, startEvent /
 * recordEventState / stopEvent for the events, finalize at the communicator's end. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../../simcore.h"
#include "simprof.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const dlh_ncclp_v5 *v5;
static const dlh_ncclp_v4 *v4;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)flags;
  if (!getenv("SIMNCCL_TRACE") || level > 3) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[simnccl profiler %s:%d] ", file ? file : "", line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void *open_lib(const char *name) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  size_t n = strlen(name);
  if (strchr(name, '/') || (!strncmp(name, "lib", 3) && n >= 3 && !strcmp(name + n - 3, ".so")))
    return NULL;
  char alt[512];
  snprintf(alt, sizeof alt, "libnccl-profiler-%s.so", name);
  return dlopen(alt, RTLD_NOW | RTLD_LOCAL);
}

static void flush_at_exit(void);
static void forget_in_child(void);

static void load(void) {
  const char *name = getenv("NCCL_PROFILER_PLUGIN");
  if (name && !strcasecmp(name, "none")) return;
  void *h = open_lib(name && *name ? name : "libnccl-profiler.so");
  if (!h) return;
  if ((v5 = dlsym(h, "ncclProfiler_v5")) == NULL && (v4 = dlsym(h, "ncclProfiler_v4")) == NULL) {
    dlclose(h);
    return;
  }
  logger(3, 0, "profiler.c", __LINE__, "loaded profiler plugin %s (%s)",
         v5 ? v5->name : v4->name, v5 ? "v5" : "v4");
  atexit(flush_at_exit);
  pthread_atfork(NULL, NULL, forget_in_child);
}

void simprof_comm_init(uint64_t comm_id, const char *name, int nranks, int rank, void **ctx,
                       int *mask) {
  *ctx = NULL;
  *mask = 0;
  pthread_once(&load_once, load);
  int m = 0, r = -1;
  void *c = NULL;
  if (v5) r = v5->init(&c, comm_id, &m, name ? name : "", 1, nranks, rank, logger);
  else if (v4) r = v4->init(&c, &m, name ? name : "", comm_id, 1, nranks, rank, logger);
  if (r != 0) return; /* the plugin declined this communicator */
  *ctx = c;
  *mask = (m & 0xffff) | 1 << 30; /* bit 30: initialised (finalize is due, even with mask 0) */
}

void *simprof_start(void *ctx, int mask, dlh_ncclp_descr_v5 *d) {
  if (!(mask & (int)d->type) || !(mask & 1 << 30)) return NULL;
  void *h = NULL;
  if (v5) {
    v5->start_event(ctx, &h, d);
  } else if (v4 && d->type < 256) {
    dlh_ncclp_descr_v4 e;
    memset(&e, 0, sizeof e);
    e.type = (uint8_t)d->type;
    e.parent = d->parent;
    e.rank = d->rank;
    if (d->type == DLH_NCCLP_COLL) e.coll = d->coll.c;
    else if (d->type == DLH_NCCLP_P2P) e.p2p = d->p2p.p;
    else memcpy(&e.proxy_op, &d->proxy_op, sizeof e - offsetof(dlh_ncclp_descr_v4, proxy_op));
    v4->start_event(ctx, &h, &e);
  }
  return h;
}

void simprof_stop(void *h) {
  if (!h) return;
  if (v5) v5->stop_event(h);
  else if (v4) v4->stop_event(h);
}

static void record(void *h, int state, dlh_ncclp_state_args *a) {
  if (!h) return;
  if (v5) v5->record_state(h, state, a);
  else if (v4) v4->record_state(h, state, a);
}

/* ---------------------------------------------------------------- the proxy thread */

struct kern {
  void *ctx, *ref;
  int mask, rank, ntasks, nch, phase; /* phase 0: not started; 1: channels open */
  uint64_t chunk;
  struct simprof_task *tasks;
  void **open;                      /* per task and channel: KernelCh, ProxyOp send, recv */
  struct kern *next;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER; /* a kernel was added */
static struct kern *head, **tailp = &head;
static int thread_started, busy;

static void *proxy_op(struct kern *k, const struct simprof_task *t, void *parent, int ch,
                      int send, uint64_t start) {
  int peer = send ? t->peer_send : t->peer_recv;
  if (peer < 0) return NULL;
  double per = t->bytes / k->nch;
  int nsteps = (int)(per / (double)k->chunk) + 1;
  if (nsteps > 8) nsteps = 8;
  dlh_ncclp_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = DLH_NCCLP_PROXY_OP;
  d.parent = parent;
  d.rank = k->rank;
  d.proxy_op.pid = getpid();
  d.proxy_op.channel = (uint8_t)ch;
  d.proxy_op.peer = peer;
  d.proxy_op.nsteps = nsteps;
  d.proxy_op.chunk_size = (int)k->chunk;
  d.proxy_op.is_send = send;
  void *op = simprof_start(k->ctx, k->mask, &d);
  record(op, DLH_NCCLP_PROXY_OP_IN_PROGRESS, NULL);
  for (int s = 0; s < nsteps && (k->mask & DLH_NCCLP_PROXY_STEP); s++) {
    memset(&d, 0, sizeof d);
    d.type = DLH_NCCLP_PROXY_STEP;
    d.parent = op;
    d.rank = k->rank;
    d.proxy_step.step = s;
    void *st = simprof_start(k->ctx, k->mask, &d);
    dlh_ncclp_state_args a;
    memset(&a, 0, sizeof a);
    a.proxy_step.trans_size = (size_t)(per / nsteps);
    record(st, send ? DLH_NCCLP_STEP_SEND_GPU_WAIT : DLH_NCCLP_STEP_RECV_WAIT, &a);
    record(st, send ? DLH_NCCLP_STEP_SEND_WAIT : DLH_NCCLP_STEP_RECV_FLUSH_WAIT, &a);
    if (!send) record(st, DLH_NCCLP_STEP_RECV_GPU_WAIT, &a);
    simprof_stop(st);
  }
  (void)start;
  return op;
}

/* Reports what is due of k: 1 when it is done. */
static int advance(struct kern *k, uint64_t now) {
  uint64_t start, end;
  if (!simcu_op_times(k->ref, &start, &end)) return 0;
  if (k->phase == 0) {
    if (start > now) return 0;
    for (int i = 0; i < k->ntasks; i++)
      for (int c = 0; c < k->nch; c++) {
        void **o = &k->open[(i * k->nch + c) * 3];
        dlh_ncclp_descr_v5 d;
        memset(&d, 0, sizeof d);
        d.type = DLH_NCCLP_KERNEL_CH;
        d.parent = k->tasks[i].handle;
        d.rank = k->rank;
        d.kernel_ch.channel = (uint8_t)c;
        d.kernel_ch.ptimer = start;
        o[0] = simprof_start(k->ctx, k->mask, &d);
        if (k->mask & DLH_NCCLP_PROXY_OP) {
          o[1] = proxy_op(k, &k->tasks[i], k->tasks[i].handle, c, 1, start);
          o[2] = proxy_op(k, &k->tasks[i], k->tasks[i].handle, c, 0, start);
        }
      }
    k->phase = 1;
  }
  if (end > now) return 0;
  for (int i = 0; i < k->ntasks * k->nch; i++) {
    void **o = &k->open[i * 3];
    dlh_ncclp_state_args a;
    memset(&a, 0, sizeof a);
    a.kernel_ch.ptimer = end;
    record(o[0], DLH_NCCLP_KERNEL_CH_STOP, &a);
    simprof_stop(o[0]);
    simprof_stop(o[1]);
    simprof_stop(o[2]);
  }
  return 1;
}

static void kern_free(struct kern *k) {
  simcu_op_release(k->ref);
  free(k->tasks);
  free(k->open);
  free(k);
}

/* One pass over the pending kernels, in launch order; the lock is held only to unlink, so a
 * plugin call never runs under it (busy tells simprof_comm_fini a pass is under way). */
static void pass(int force) {
  pthread_mutex_lock(&mu);
  while (busy) pthread_cond_wait(&idle_cv, &mu); /* one pass at a time (the exit's flush) */
  struct kern *list = head;
  head = NULL;
  tailp = &head;
  busy = 1;
  pthread_mutex_unlock(&mu);
  struct kern *keep = NULL, **kt = &keep;
  uint64_t now = force ? UINT64_MAX : simcu_now_ns();
  int waiting = 0; /* kernels end in launch order: past the first that has not, look no more */
  while (list) {
    struct kern *k = list;
    list = k->next;
    k->next = NULL;
    if (!waiting && advance(k, now)) kern_free(k);
    else { *kt = k; kt = &k->next; waiting = 1; }
  }
  pthread_mutex_lock(&mu);
  if (keep) { *kt = head; head = keep; if (!*kt) tailp = kt; }
  busy = 0;
  pthread_cond_broadcast(&idle_cv);
  pthread_mutex_unlock(&mu);
}

static void *proxy_main(void *unused) {
  (void)unused;
  for (;;) {
    /* nothing pending: asleep until a kernel comes (a thread that wakes 10,000 times a second
     * for nothing takes a CPU from the ranks on a small machine); pending ones are looked at
     * every 100 us, their times being the simulated GPU's */
    pthread_mutex_lock(&mu);
    while (!head) pthread_cond_wait(&work_cv, &mu);
    pthread_mutex_unlock(&mu);
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    pass(0);
  }
  return NULL;
}

static void flush_at_exit(void) { pass(1); }
/* a forked child has no proxy thread and reports none of its parent's kernels */
static void forget_in_child(void) {
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&idle_cv, NULL);
  pthread_cond_init(&work_cv, NULL);
  head = NULL;
  tailp = &head;
  thread_started = busy = 0;
}

void simprof_kernel(void *ctx, int mask, int rank, void *ref, const struct simprof_task *tasks,
                    int ntasks, int nchannels, const char *proto) {
  int want = DLH_NCCLP_KERNEL_CH | DLH_NCCLP_PROXY_OP | DLH_NCCLP_PROXY_STEP;
  if (!ref || !(mask & want) || !(mask & 1 << 30) || ntasks <= 0) {
    simcu_op_release(ref);
    return;
  }
  struct kern *k = calloc(1, sizeof *k);
  k->tasks = malloc(sizeof *tasks * (size_t)ntasks);
  k->open = calloc((size_t)ntasks * (size_t)nchannels * 3, sizeof *k->open);
  if (!k->tasks || !k->open) { free(k->tasks); free(k->open); free(k); simcu_op_release(ref); return; }
  memcpy(k->tasks, tasks, sizeof *tasks * (size_t)ntasks);
  k->ctx = ctx;
  k->ref = ref;
  k->mask = mask;
  k->rank = rank;
  k->ntasks = ntasks;
  k->nch = nchannels > 0 ? nchannels : 1;
  k->chunk = proto && proto[0] == 'S' ? 524288 : proto && proto[2] == '1' ? 131072 : 16384;
  pthread_mutex_lock(&mu);
  *tailp = k;
  tailp = &k->next;
  pthread_cond_signal(&work_cv);
  if (!thread_started) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, proxy_main, NULL) == 0) thread_started = 1;
    pthread_attr_destroy(&at);
  }
  pthread_mutex_unlock(&mu);
}

void simprof_comm_fini(void *ctx, int mask) {
  if (!(mask & 1 << 30)) return;
  uint64_t t0 = simcu_now_ns();
  for (;;) { /* the proxy thread reports this communicator's kernels first */
    int pending = 0;
    pthread_mutex_lock(&mu);
    for (struct kern *k = head; k; k = k->next) pending |= k->ctx == ctx;
    pending |= busy;
    pthread_mutex_unlock(&mu);
    if (!pending || !thread_started || simcu_now_ns() - t0 > 2000000000ull) break;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&mu); /* what is still pending (ranks gone) is not reported */
  while (busy) pthread_cond_wait(&idle_cv, &mu);
  struct kern **pp = &head, *gone = NULL;
  while (*pp) {
    struct kern *k = *pp;
    if (k->ctx == ctx) { *pp = k->next; k->next = gone; gone = k; }
    else pp = &k->next;
  }
  tailp = pp;
  pthread_mutex_unlock(&mu);
  while (gone) { struct kern *k = gone; gone = k->next; kern_free(k); }
  if (v5) v5->finalize(ctx);
  else if (v4) v4->finalize(ctx);
}
