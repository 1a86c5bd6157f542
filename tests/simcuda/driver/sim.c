/* sim.c — the simulation state of the simulated driver: devices, contexts, streams, events,
 * memory, the GPU timeline with its cost model, cross-process rendezvous, stream capture and
 * graphs, and the glue to the tool (the CUPTI stand-in). One mutex guards all of it; waits
 * (synchronize calls) sleep outside it.
 */
#include "simdrv.h"
#include <cuda.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t simd_mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&simd_mu)
#define UNLOCK() pthread_mutex_unlock(&simd_mu)

/* ---------------------------------------------------------------- clock */
SIMCU_API uint64_t simcu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps until host time t. The thread's timer slack is set to 1 ns first (once per thread):
 * with the default 50 µs every synchronize would wake tens of microseconds late, where a GPU's
 * synchronize returns within a few. */
static void sleep_until(uint64_t t) {
  static __thread int slack_set;
  if (!slack_set) { prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); slack_set = 1; }
  struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

/* ---------------------------------------------------------------- types */
struct op {
  simi_op_info i;
  uint64_t ready, dur;
  struct op **deps;
  int ndeps;
  int resolved, refs, queued;
  int has_rv, rv_posted;
  uint64_t rv_since;
  simcu_rendezvous rv;
  struct op *qnext;
  void (*host_fn)(void *);     /* host function node (cudaLaunchHostFunc) */
  int hpending;                /* host function not run yet: end unknown */
  void *host_arg;
};

#define QUEUE_DEPTH 1024 /* kernel launches a context holds pending before a launch blocks */
struct simi_ctx {
  int dev;
  uint32_t id;
  struct simi_stream *legacy;
  struct simi_stream *streams; /* all streams of the context */
  struct op *pend[QUEUE_DEPTH]; /* the last launches (referenced), oldest at pend_i when full */
  unsigned pend_n, pend_i;
};

struct gnode;
struct simi_graph { uint32_t id; struct gnode *nodes; int n, cap; int capturing; };
struct simi_exec { uint32_t id; struct simi_graph *g; };

struct simi_stream {
  uint32_t id;
  struct simi_ctx *ctx;
  unsigned flags;
  int prio;
  int legacy, per_thread;
  struct op *last;
  struct simi_stream *next;
  struct simi_graph *capture;  /* non-NULL while capturing */
  unsigned long long capture_id;
  struct simi_stream *capture_origin;
};

struct simi_event {
  uint32_t id;
  unsigned flags;
  struct op *op;
  struct simi_graph *capture;
};

/* one captured operation */
struct gnode {
  simi_op_info i;
  uint64_t dur;
  int has_rv;
  simcu_rendezvous rv;
  uint64_t issued;             /* host time the work was issued (0 = at enqueue) */
  void (*host_fn)(void *);
  void *host_arg;
  int host_pending;            /* a host function's marker: ends when the function returned */
  void *dst; const void *src; size_t bytes; /* copies: replayed at launch */
  int is_memset; int value;
};

/* ---------------------------------------------------------------- state */
#define MAXDEV 16
static int ndev = 1;
static struct simi_ctx *prim[MAXDEV];
static uint32_t next_stream_id = 13, next_ctx_id = 1, next_event_id = 1, next_graph_id = 1;
static uint32_t next_corr_id = 1;
static const simi_tool *tool;
static void (*sync_sink)(const simi_sync_rec *);
static struct op *q_head, *q_tail;
/* the queue of library results computed off the callers' path (see "library results") */
struct cjob { void (*fn)(void *); struct cjob *next; max_align_t arg[]; };
static pthread_mutex_t cq_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cq_cv = PTHREAD_COND_INITIALIZER, cq_done = PTHREAD_COND_INITIALIZER;
static struct cjob *cq_head, *cq_tail;
static uint64_t cq_queued, cq_finished;
static int cq_thread;

struct tls {
  int dev;                     /* -1: not set */
  struct simi_ctx *ctx;
  struct simi_stream *ptds[MAXDEV];
  simi_api *api;
};
static __thread struct tls T = { .dev = -1 };

#define LAUNCH_LAT_NS 3000ull
#define FLOOR_NS 2000ull

/* ---------------------------------------------------------------- init */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_devices(void) {
  const char *e = getenv("SIMCUDA_DEVICES");
  /* SIMCUDA_DEVICES=0: a machine with the driver but no GPU (every call fails) */
  if (e && *e >= '0' && *e <= '9') ndev = atoi(e) > MAXDEV ? MAXDEV : atoi(e);
}

static void emit_resource(int cbid, void *ctx, void *stream);
/* At exit the driver tears the contexts down, as the real one does: tools see
 * CONTEXT_DESTROY_STARTING (and typically flush there). Runs before the tool's own atexit
 * handlers, which were registered earlier (in InitializeInjection or before). */
static void write_report(void);
void simi_poll(int force);
static void teardown(void) {
  for (int d = 0; d < MAXDEV; d++)
    if (prim[d]) emit_resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, prim[d], NULL);
  simi_poll(1);
  write_report();
}
static int inj_state;   /* 0 none, 1 running/done */
SIMCU_API void simi_init(void) {
  if (__atomic_load_n(&inj_state, __ATOMIC_ACQUIRE)) return;
  pthread_once(&once, init_devices);
  if (__atomic_exchange_n(&inj_state, 1, __ATOMIC_ACQ_REL)) return;
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (path && *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      fprintf(stderr, "simcuda: cannot load CUDA_INJECTION64_PATH=%s: %s\n", path, dlerror());
      atexit(teardown);
      return;
    }
    int (*fn)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    if (fn) fn();
    else fprintf(stderr, "simcuda: %s has no InitializeInjection\n", path);
  }
  atexit(teardown);
}

SIMCU_API int simcu_device_count(void) { pthread_once(&once, init_devices); return ndev; }
SIMCU_API const char *simcu_device_name(int dev) {
  (void)dev;
  return "NVIDIA H100 80GB HBM3 (simulated)";
}

/* ---------------------------------------------------------------- tool glue */
SIMCU_API void simi_set_tool(const simi_tool *t) { LOCK(); tool = t; UNLOCK(); }
SIMCU_API void simi_set_sync_sink(void (*fn)(const simi_sync_rec *)) { sync_sink = fn; }

SIMCU_API void simi_api_enter(simi_api *a) {
  a->corr = __atomic_fetch_add(&next_corr_id, 1, __ATOMIC_RELAXED);
  a->ctx = simi_current_ctx();
  a->outer = T.api;
  T.api = a;
  const simi_tool *t = tool;
  if (t && t->api) t->api(a, 0);
}
SIMCU_API void simi_api_exit(simi_api *a, void *retval) {
  a->retp = retval;
  const simi_tool *t = tool;
  if (t && t->api) t->api(a, 1);
  T.api = a->outer;
}
SIMCU_API uint32_t simi_current_corr(void) { return T.api ? T.api->corr : 0; }

static void emit_resource(int cbid, void *ctx, void *stream) {
  const simi_tool *t = tool;
  if (t && t->resource) t->resource(cbid, ctx, stream);
}
SIMCU_API void simi_emit_sync_record(int type, uint64_t start, uint64_t end, uint32_t corr,
                                     void *ctx, void *stream, uint32_t event_id) {
  if (!sync_sink) return;
  simi_sync_rec r = { type, start, end, corr, ctx ? ((struct simi_ctx *)ctx)->id : 0,
                      stream ? ((struct simi_stream *)stream)->id : 0, event_id };
  sync_sink(&r);
}
static void emit_sync_cb(int cbid, void *ctx, void *stream) {
  const simi_tool *t = tool;
  if (t && t->sync) t->sync(cbid, ctx, stream);
}

/* ---------------------------------------------------------------- contexts */
static struct simi_stream *new_stream(struct simi_ctx *c, unsigned flags, int prio, int legacy) {
  struct simi_stream *s = calloc(1, sizeof *s);
  s->id = legacy ? 7 : next_stream_id++;
  s->ctx = c; s->flags = flags; s->prio = prio; s->legacy = legacy;
  s->next = c->streams; c->streams = s;
  return s;
}

SIMCU_API void *simi_primary_ctx(int dev) {
  simi_init();
  if (dev < 0 || dev >= ndev) return NULL;
  int created = 0;
  LOCK();
  if (!prim[dev]) {
    struct simi_ctx *c = calloc(1, sizeof *c);
    c->dev = dev; c->id = next_ctx_id++;
    c->legacy = new_stream(c, 0, 0, 1);
    prim[dev] = c;
    created = 1;
  }
  struct simi_ctx *c = prim[dev];
  UNLOCK();
  if (created) emit_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, c, NULL);
  return c;
}
SIMCU_API void *simi_current_ctx(void) {
  if (T.ctx) return T.ctx;
  return prim[T.dev < 0 ? 0 : T.dev];
}
static struct simi_ctx *cur_ctx(void) {
  if (T.ctx) return T.ctx;
  if (!ndev) return NULL;
  T.ctx = simi_primary_ctx(T.dev < 0 ? 0 : T.dev);
  return T.ctx;
}
SIMCU_API void simi_set_current_ctx(void *ctx) {
  T.ctx = ctx;
  if (ctx) T.dev = ((struct simi_ctx *)ctx)->dev;
}
SIMCU_API int simi_get_device(void) { return T.dev < 0 ? 0 : T.dev; }
SIMCU_API int simi_set_device(int dev) {
  simi_init();
  if (dev < 0 || dev >= ndev) return 101; /* invalid device */
  T.dev = dev;
  T.ctx = simi_primary_ctx(dev);
  return 0;
}
SIMCU_API uint32_t simi_ctx_id(void *ctx) { return ctx ? ((struct simi_ctx *)ctx)->id : 0; }
SIMCU_API int simi_ctx_device(void *ctx) { return ctx ? ((struct simi_ctx *)ctx)->dev : 0; }

/* ---------------------------------------------------------------- devices */
SIMCU_API size_t simi_dev_total_mem(int dev) { (void)dev; return 85520809984ull; }
SIMCU_API void simi_dev_uuid(int dev, unsigned char uuid[16]) {
  for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0x5a ^ (i * 37) ^ dev);
}
SIMCU_API int simi_dev_attr(int attr, int dev, int *v) {
  simi_init();
  if (dev < 0 || dev >= ndev) return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 5; break;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0x18 + dev * 0x10; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
  case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: case CU_DEVICE_ATTRIBUTE_INTEGRATED:
  case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
    *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: *v = dev; break;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *v = 82837504; break;
  case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *v = 134213632; break;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
  default: *v = 0; break;
  }
  return 0;
}

/* ---------------------------------------------------------------- rendezvous */
#define RV_SLOTS 256
#define RV_MAXR 64
struct rv_slot { uint64_t seq1; uint32_t nposted, pad; uint64_t start[RV_MAXR]; };
struct rv_shm { int lock; int pad; uint64_t attached; struct rv_slot slots[RV_SLOTS]; };
struct rv_map { uint64_t key; struct rv_shm *m; uint64_t my_attached; };
static struct rv_map rvmaps[64];
static int nrvmaps;

static void shm_lock(struct rv_shm *m) { while (__atomic_exchange_n(&m->lock, 1, __ATOMIC_ACQUIRE)) usleep(1); }
static void shm_unlock(struct rv_shm *m) { __atomic_store_n(&m->lock, 0, __ATOMIC_RELEASE); }

static struct rv_shm *rv_get(const simcu_rendezvous *rv) {
  struct rv_map *mp = NULL;
  for (int i = 0; i < nrvmaps; i++)
    if (rvmaps[i].key == rv->key) { mp = &rvmaps[i]; break; }
  char name[64];
  snprintf(name, sizeof name, "/simcuda-%016llx", (unsigned long long)rv->key);
  if (!mp) {
    if (nrvmaps == 64) return NULL;
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0) return NULL;
    if (ftruncate(fd, sizeof(struct rv_shm)) != 0) { close(fd); return NULL; }
    void *p = mmap(NULL, sizeof(struct rv_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    mp = &rvmaps[nrvmaps++];
    mp->key = rv->key; mp->m = p; mp->my_attached = 0;
  }
  if (rv->rank < RV_MAXR && !(mp->my_attached & (1ull << rv->rank))) {
    /* every rank attaches once; the last one removes the name (mappings stay valid) */
    mp->my_attached |= 1ull << rv->rank;
    shm_lock(mp->m);
    mp->m->attached |= 1ull << rv->rank;
    int all = rv->nranks <= RV_MAXR && __builtin_popcountll(mp->m->attached) >= rv->nranks;
    shm_unlock(mp->m);
    if (all) shm_unlink(name);
  }
  return mp->m;
}

static void rv_post(const simcu_rendezvous *rv, uint64_t start) {
  struct rv_shm *m = rv_get(rv);
  if (!m || rv->rank >= RV_MAXR) return;
  struct rv_slot *s = &m->slots[rv->seq % RV_SLOTS];
  shm_lock(m);
  if (s->seq1 != rv->seq + 1) { memset(s, 0, sizeof *s); s->seq1 = rv->seq + 1; }
  if (!s->start[rv->rank]) { s->start[rv->rank] = start ? start : 1; s->nposted++; }
  shm_unlock(m);
}

/* 1 and *mx = latest start when every rank has posted */
static int rv_check(const simcu_rendezvous *rv, uint64_t *mx) {
  if (rv->nranks <= 1) return 1;
  struct rv_shm *m = rv_get(rv);
  if (!m || rv->nranks > RV_MAXR) return 1;
  struct rv_slot *s = &m->slots[rv->seq % RV_SLOTS];
  int ok = 0;
  shm_lock(m);
  if (s->seq1 == rv->seq + 1 && (int)s->nposted >= rv->nranks) {
    ok = 1;
    for (int r = 0; r < rv->nranks; r++) if (s->start[r] > *mx) *mx = s->start[r];
  }
  shm_unlock(m);
  return ok;
}

/* ---------------------------------------------------------------- ops */
static void op_unref(struct op *o) {
  if (o && --o->refs == 0) {
    for (int i = 0; i < o->ndeps; i++) op_unref(o->deps[i]);
    free(o->deps);
    free(o);
  }
}
static void op_add_dep(struct op *o, struct op *d) {
  if (!d || (d->resolved && d->i.end <= o->ready)) return;
  o->deps = realloc(o->deps, (o->ndeps + 1) * sizeof *o->deps);
  o->deps[o->ndeps++] = d;
  d->refs++;
}

#define RV_TIMEOUT_NS 60000000000ull
/* Computes start/end if every dependency is known; 1 when resolved. Under the lock. */
static int resolve(struct op *o) {
  if (o->resolved) return 1;
  if (o->hpending) return 0;
  uint64_t st = o->ready;
  for (int i = 0; i < o->ndeps; i++) {
    if (!resolve(o->deps[i])) return 0;
    if (o->deps[i]->i.end > st) st = o->deps[i]->i.end;
  }
  if (o->has_rv) {
    if (!o->rv_posted) { rv_post(&o->rv, st); o->rv_posted = 1; o->rv_since = simcu_now_ns(); }
    uint64_t mx = st;
    if (!rv_check(&o->rv, &mx)) {
      if (simcu_now_ns() - o->rv_since < RV_TIMEOUT_NS) return 0;
      fprintf(stderr, "simcuda: rendezvous key %llx seq %llu: ranks missing after 60 s; going on\n",
              (unsigned long long)o->rv.key, (unsigned long long)o->rv.seq);
    }
    o->i.start = st;
    o->i.end = mx + o->dur;
  } else {
    o->i.start = st;
    o->i.end = st + o->dur;
  }
  o->resolved = 1;
  for (int i = 0; i < o->ndeps; i++) op_unref(o->deps[i]);
  free(o->deps); o->deps = NULL; o->ndeps = 0;
  return 1;
}

/* Enqueues an op built from `g` on stream s (already resolved, not capturing). Under the lock. */
static struct op *enqueue(struct simi_stream *s, const struct gnode *g) {
  uint64_t now = simcu_now_ns();
  struct op *o = calloc(1, sizeof *o);
  o->i = g->i;
  o->refs = 0; /* references: the stream's last op, the report queue, callers that grab() */
  o->dur = g->dur;
  int marker = g->i.kind == SIMI_OP_MARKER || g->i.kind == SIMI_OP_EVENT;
  uint64_t issued = g->issued && g->issued < now ? g->issued : now;
  o->ready = issued + (marker ? 0 : LAUNCH_LAT_NS);
  o->i.queued = now;
  o->i.submitted = now + LAUNCH_LAT_NS / 2;
  o->i.dev = s->ctx->dev;
  o->i.ctx_id = s->ctx->id;
  o->i.stream_id = s->id;
  if (!o->i.corr) o->i.corr = simi_current_corr();
  o->has_rv = g->has_rv;
  o->rv = g->rv;
  o->host_fn = g->host_fn; o->host_arg = g->host_arg;
  o->hpending = g->host_pending;
  op_add_dep(o, s->last);
  if (s->legacy) {
    for (struct simi_stream *t = s->ctx->streams; t; t = t->next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING)) op_add_dep(o, t->last);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
    op_add_dep(o, s->ctx->legacy->last);
  }
  if (s->last) op_unref(s->last);
  s->last = o; o->refs++;
  resolve(o);
  if (tool && g->i.kind != SIMI_OP_MARKER) { o->queued = 1; o->refs++; if (q_tail) q_tail->qnext = o; else q_head = o; q_tail = o; }
  return o;
}

/* Waits (sleeping) until op o has ended on the simulated GPU. Takes a reference, drops it. */
static void wait_op(struct op *o) {
  if (!o) return;
  for (;;) {
    LOCK();
    int r = resolve(o);
    uint64_t end = o->i.end;
    UNLOCK();
    if (r) { sleep_until(end); break; }
    usleep(50);
  }
}

/* Waits (polling) until op o's start is known: every op it depends on has its time, so any
 * collective it follows has met its other ranks and delivered its data. A copy that reads device
 * memory does this before copying: the data is moved at enqueue, and must not be read before a
 * collective on the GPU before it has written it (PyTorch copies a collective's output after an
 * event wait). Takes a reference, drops it. */
static void wait_resolved(struct op *o) {
  if (!o) return;
  for (;;) {
    LOCK();
    int r = resolve(o);
    UNLOCK();
    if (r) break;
    usleep(50);
  }
}
static int reads_device(int kind) { return kind == 2 || kind == 3 || kind == 4; }

/* Serialises reporting: a poll returns only after the ops it (or a concurrent poll) took
 * have reached the tool, so a flush right after sees them all. Recursive: the tool may flush
 * from inside its buffer callbacks. */
static pthread_mutex_t report_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
/* fork: the child starts with fresh locks (another thread may have held them) */
static void atfork_prepare(void) { simcu_compute_drain(); }
static void atfork_child(void) {
  pthread_mutex_init(&simd_mu, NULL);
  pthread_mutex_init(&cq_mu, NULL);
  cq_thread = 0; /* the compute thread is not in the child; its queue was drained */
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&report_mu, &a);
  pthread_mutexattr_destroy(&a);
}
__attribute__((constructor)) static void sim_ctor(void) { pthread_atfork(atfork_prepare, NULL, atfork_child); }

/* The simulator's own accounting of the GPU work it reported (SIMCUDA_REPORT=FILE writes it
 * as JSON at exit), so tests can compare a profiler's totals with what really ran. */
static struct {
  uint64_t kernels, kernel_ns, memsets, memset_bytes, memset_ns;
  uint64_t copies[16], copy_bytes[16], copy_ns[16];
} sim_acct;
static void account(const simi_op_info *o) {
  uint64_t d = o->end > o->start ? o->end - o->start : 0;
  if (o->kind == SIMI_OP_KERNEL) {
    sim_acct.kernels++;
    sim_acct.kernel_ns += d;
  } else if (o->kind == SIMI_OP_MEMSET) {
    sim_acct.memsets++;
    sim_acct.memset_bytes += o->bytes;
    sim_acct.memset_ns += d;
  } else if (o->kind == SIMI_OP_MEMCPY) {
    int k = o->copy_kind >= 0 && o->copy_kind < 16 ? o->copy_kind : 0;
    sim_acct.copies[k]++;
    sim_acct.copy_bytes[k] += o->bytes;
    sim_acct.copy_ns[k] += d;
  }
}
static void write_report(void) {
  const char *path = getenv("SIMCUDA_REPORT");
  if (!path || !*path) return;
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "{\"kernels\":%llu,\"kernel_ns\":%llu,\"memset\":{\"count\":%llu,\"bytes\":%llu,"
             "\"total_ns\":%llu},\"memcpy\":{",
          (unsigned long long)sim_acct.kernels, (unsigned long long)sim_acct.kernel_ns,
          (unsigned long long)sim_acct.memsets, (unsigned long long)sim_acct.memset_bytes,
          (unsigned long long)sim_acct.memset_ns);
  int first = 1;
  for (int k = 0; k < 16; k++)
    if (sim_acct.copies[k]) {
      fprintf(f, "%s\"%d\":{\"count\":%llu,\"bytes\":%llu,\"total_ns\":%llu}", first ? "" : ",", k,
              (unsigned long long)sim_acct.copies[k], (unsigned long long)sim_acct.copy_bytes[k],
              (unsigned long long)sim_acct.copy_ns[k]);
      first = 0;
    }
  fputs("}}\n", f);
  fclose(f);
}

SIMCU_API void simi_poll(int force) {
  simi_op_info batch[64];
  pthread_mutex_lock(&report_mu);
  for (;;) {
    int n = 0;
    uint64_t now = simcu_now_ns();
    LOCK();
    struct op **pp = &q_head, *prev = NULL;
    while (*pp && n < 64) {
      struct op *o = *pp;
      if (resolve(o) && (force || o->i.end <= now)) {
        batch[n++] = o->i;
        *pp = o->qnext;
        if (q_tail == o) q_tail = prev;
        op_unref(o);
      } else { prev = o; pp = &o->qnext; }
    }
    const simi_tool *t = tool;
    UNLOCK();
    for (int i = 0; i < n; i++) account(&batch[i]);
    for (int i = 0; i < n; i++) if (t && t->op_done) t->op_done(&batch[i]);
    if (n < 64) break;
  }
  pthread_mutex_unlock(&report_mu);
}

/* ---------------------------------------------------------------- streams */
SIMCU_API void *simi_stream_resolve(void *h, int ptds) {
  struct simi_ctx *c = cur_ctx();
  if (!c) return NULL;
  if (h == CU_STREAM_LEGACY || (!h && !ptds)) return c->legacy;
  if (h == CU_STREAM_PER_THREAD || !h) {
    int d = c->dev;
    if (!T.ptds[d]) { LOCK(); T.ptds[d] = new_stream(c, 0, 0, 0); T.ptds[d]->per_thread = 1; UNLOCK(); }
    return T.ptds[d];
  }
  return h;
}
SIMCU_API uint32_t simi_stream_id(void *h) { struct simi_stream *s = simi_stream_resolve(h, 0); return s ? s->id : 0; }
SIMCU_API void *simi_stream_ctx(void *h) { struct simi_stream *s = simi_stream_resolve(h, 0); return s ? s->ctx : NULL; }

SIMCU_API int simi_stream_create(void **out, unsigned flags, int prio) {
  struct simi_ctx *c = cur_ctx();
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (prio > 0) prio = 0;
  if (prio < -5) prio = -5;
  LOCK();
  struct simi_stream *s = new_stream(c, flags, prio, 0);
  UNLOCK();
  *out = s;
  emit_resource(CUPTI_CBID_RESOURCE_STREAM_CREATED, c, s);
  return 0;
}
SIMCU_API int simi_stream_destroy(void *h) {
  struct simi_stream *s = h;
  if (!s || (void *)s == (void *)CU_STREAM_LEGACY || (void *)s == (void *)CU_STREAM_PER_THREAD || s->legacy) return CUDA_ERROR_INVALID_HANDLE;
  emit_resource(CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING, s->ctx, s);
  LOCK();
  for (struct simi_stream **pp = &s->ctx->streams; *pp; pp = &(*pp)->next)
    if (*pp == s) { *pp = s->next; break; }
  /* the stream's work still completes; the legacy stream must still order after it */
  if (s->last) {
    struct simi_stream *l = s->ctx->legacy;
    struct gnode g = { .i = { .kind = SIMI_OP_MARKER } };
    struct op *keep = s->last;
    s->last = NULL;
    struct op *m = enqueue(l, &g);
    op_add_dep(m, keep);
    m->resolved = 0;
    resolve(m);
    op_unref(keep);
  }
  UNLOCK();
  free(s);
  return 0;
}
SIMCU_API int simi_stream_info(void *h, unsigned *flags, int *prio) {
  struct simi_stream *s = simi_stream_resolve(h, 0);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (flags) *flags = s->flags;
  if (prio) *prio = s->prio;
  return 0;
}

static struct op *grab(struct op *o) { if (o) o->refs++; return o; }
static void drop(struct op *o) { if (o) { LOCK(); op_unref(o); UNLOCK(); } }

SIMCU_API int simi_stream_sync(void *h) {
  struct simi_stream *s = simi_stream_resolve(h, 0);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  struct op *o = grab(s->last);
  if (s->legacy) { /* waits for the blocking streams too */
    struct gnode g = { .i = { .kind = SIMI_OP_MARKER } };
    if (o) op_unref(o);
    o = grab(enqueue(s, &g));
  }
  UNLOCK();
  wait_op(o);
  drop(o);
  simcu_compute_drain();
  emit_sync_cb(CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED, s->ctx, s);
  simi_poll(0);
  return 0;
}
SIMCU_API int simi_stream_query(void *h) {
  struct simi_stream *s = simi_stream_resolve(h, 0);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  int done = !s->last || (resolve(s->last) && s->last->i.end <= simcu_now_ns());
  UNLOCK();
  if (done) simcu_compute_drain();
  return done ? 0 : CUDA_ERROR_NOT_READY;
}
SIMCU_API int simi_device_sync(void) {
  struct simi_ctx *c = cur_ctx();
  for (;;) {
    LOCK();
    struct op *o = NULL;
    uint64_t now = simcu_now_ns();
    for (struct simi_stream *s = c->streams; s; s = s->next)
      if (s->last && !(resolve(s->last) && s->last->i.end <= now)) { o = grab(s->last); break; }
    UNLOCK();
    if (!o) break;
    wait_op(o);
    drop(o);
  }
  simcu_compute_drain();
  emit_sync_cb(CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, c, NULL);
  simi_poll(0);
  return 0;
}

/* cudaFree, cudaFreeHost and their driver twins synchronize the device implicitly (the CUDA
 * programming guide's "implicit synchronization"; why torch.cuda.empty_cache() in a loop costs
 * a GPU pipeline bubble): wait until the work of the current context has ended. Work still
 * waiting for other ranks (a collective's rendezvous) is not waited for, so a free can never
 * hang on a rank that has gone. */
SIMCU_API void simi_free_sync(void) {
  struct simi_ctx *c = cur_ctx();
  uint64_t end = 0;
  LOCK();
  for (struct simi_stream *s = c->streams; s; s = s->next)
    if (s->last && resolve(s->last) && s->last->i.end > end) end = s->last->i.end;
  UNLOCK();
  if (end > simcu_now_ns()) sleep_until(end);
}

/* ---------------------------------------------------------------- events */
SIMCU_API int simi_event_create(void **out, unsigned flags) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  struct simi_event *e = calloc(1, sizeof *e);
  LOCK(); e->id = next_event_id++; UNLOCK();
  e->flags = flags;
  *out = e;
  return 0;
}
SIMCU_API int simi_event_destroy(void *h) {
  struct simi_event *e = h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  drop(e->op);
  free(e);
  return 0;
}
SIMCU_API uint32_t simi_event_id(void *h) { return h ? ((struct simi_event *)h)->id : 0; }

static void capture_add(struct simi_stream *s, const struct gnode *g);
SIMCU_API int simi_event_record(void *h, void *stream) {
  struct simi_event *e = h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  LOCK();
  if (s->capture) { e->capture = s->capture; UNLOCK(); return 0; }
  e->capture = NULL;
  struct gnode g = { .i = { .kind = SIMI_OP_EVENT, .event_id = e->id } };
  struct op *o = enqueue(s, &g);
  if (e->op) op_unref(e->op);
  e->op = grab(o);
  UNLOCK();
  return 0;
}
SIMCU_API int simi_event_sync(void *h) {
  struct simi_event *e = h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  LOCK(); struct op *o = grab(e->op); UNLOCK();
  wait_op(o);
  drop(o);
  simcu_compute_drain();
  simi_poll(0);
  return 0;
}
SIMCU_API int simi_event_query(void *h) {
  struct simi_event *e = h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  int done = !e->op || (resolve(e->op) && e->op->i.end <= simcu_now_ns());
  UNLOCK();
  if (done) simcu_compute_drain();
  return done ? 0 : CUDA_ERROR_NOT_READY;
}
SIMCU_API int simi_event_elapsed(float *ms, void *ha, void *hb) {
  struct simi_event *a = ha, *b = hb;
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->op || !b->op) return CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  int ok = resolve(a->op) && resolve(b->op);
  uint64_t now = simcu_now_ns();
  if (ok && (a->op->i.end > now || b->op->i.end > now)) ok = 0;
  if (ok) *ms = (float)((double)((int64_t)(b->op->i.end - a->op->i.end)) / 1e6);
  UNLOCK();
  return ok ? 0 : CUDA_ERROR_NOT_READY;
}
/* graphs being captured now (an event recorded during a capture may outlive it) */
#define MAXCAP 64
static struct simi_graph *live_caps[MAXCAP];
static int capture_live(struct simi_graph *g) {
  for (int i = 0; i < MAXCAP; i++) if (live_caps[i] == g) return 1;
  return 0;
}
static void capture_track(struct simi_graph *g, int on) {
  for (int i = 0; i < MAXCAP; i++)
    if (live_caps[i] == (on ? NULL : g)) { live_caps[i] = on ? g : NULL; return; }
}
SIMCU_API int simi_stream_wait_event(void *stream, void *h) {
  struct simi_event *e = h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  LOCK();
  if (e->capture && !s->capture && capture_live(e->capture)) { /* joins the capture (fork) */
    s->capture = e->capture;
    s->capture_id = e->capture->id;
    UNLOCK();
    return 0;
  }
  if (s->capture) { UNLOCK(); return 0; }
  if (e->op) {
    struct op *m = calloc(1, sizeof *m);
    /* marker on s that also waits for the event */
    m->i.kind = SIMI_OP_MARKER; m->refs = 1; m->ready = simcu_now_ns();
    m->i.ctx_id = s->ctx->id; m->i.stream_id = s->id;
    op_add_dep(m, s->last);
    op_add_dep(m, e->op);
    if (s->last) op_unref(s->last);
    s->last = m;
    resolve(m);
  }
  UNLOCK();
  return 0;
}

/* Host functions run on one driver thread, in order, once their stream reaches them; the
 * stream's later work waits until the function returned. */
struct hjob { struct op *o; void (*fn)(void *); void *arg; struct hjob *next; };
static struct hjob *hq_head, *hq_tail;
static pthread_cond_t hq_cv = PTHREAD_COND_INITIALIZER;
static int hq_thread;
static void *host_worker(void *unused) {
  for (;;) {
    LOCK();
    while (!hq_head) pthread_cond_wait(&hq_cv, &simd_mu);
    struct hjob *j = hq_head;
    hq_head = j->next;
    if (!hq_head) hq_tail = NULL;
    UNLOCK();
    for (;;) { /* until what the function waits for has ended */
      LOCK();
      uint64_t st = j->o->ready;
      int ok = 1;
      for (int i = 0; i < j->o->ndeps && ok; i++) {
        ok = resolve(j->o->deps[i]);
        if (ok && j->o->deps[i]->i.end > st) st = j->o->deps[i]->i.end;
      }
      UNLOCK();
      if (ok) { sleep_until(st); break; }
      usleep(50);
    }
    simcu_compute_drain();
    j->fn(j->arg);
    LOCK();
    j->o->hpending = 0;
    j->o->ready = simcu_now_ns();
    resolve(j->o);
    op_unref(j->o);
    UNLOCK();
    free(j);
  }
  return NULL;
}
/* under the lock */
static void host_job(struct op *o, void (*fn)(void *), void *arg) {
  struct hjob *j = calloc(1, sizeof *j);
  j->o = grab(o); j->fn = fn; j->arg = arg;
  if (hq_tail) hq_tail->next = j; else hq_head = j;
  hq_tail = j;
  pthread_cond_signal(&hq_cv);
  if (!hq_thread) {
    hq_thread = 1;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_create(&t, &at, host_worker, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
  }
}
SIMCU_API int simi_launch_host_func(void *stream, void (*fn)(void *), void *arg) {
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  LOCK();
  if (s->capture) {
    struct gnode g = { .i = { .kind = SIMI_OP_MARKER }, .host_fn = fn, .host_arg = arg };
    capture_add(s, &g);
    UNLOCK();
    return 0;
  }
  struct gnode g = { .i = { .kind = SIMI_OP_MARKER }, .host_pending = 1 };
  host_job(enqueue(s, &g), fn, arg);
  UNLOCK();
  return 0;
}

/* ---------------------------------------------------------------- library results */
/* A library kernel that computes its real result (simcu_kernel.host_fn, with host_arg_size set)
 * does so on one compute thread, in submission order, never in the caller's thread: the call
 * returns after its host-side cost, as on a GPU. The result is finished before anything can
 * observe it: every copy, memset, free, synchronize, query that reports completion, collective
 * data exchange and inline computation drains the queue first (simcu_compute_drain). The
 * simulated timeline is not affected: the kernel's time is the cost model's. */

static void *compute_worker(void *unused) {
  (void)unused;
  for (;;) {
    pthread_mutex_lock(&cq_mu);
    while (!cq_head) pthread_cond_wait(&cq_cv, &cq_mu);
    struct cjob *j = cq_head;
    cq_head = j->next;
    if (!cq_head) cq_tail = NULL;
    pthread_mutex_unlock(&cq_mu);
    j->fn(j->arg);
    free(j);
    pthread_mutex_lock(&cq_mu);
    __atomic_store_n(&cq_finished, cq_finished + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&cq_done);
    pthread_mutex_unlock(&cq_mu);
  }
  return NULL;
}

/* Queues fn on a copy of the `size` bytes at arg. Returns 0, or -1 when no thread can run it
 * (the caller then computes inline). */
static int compute_submit(void (*fn)(void *), const void *arg, size_t size) {
  struct cjob *j = malloc(sizeof *j + size);
  if (!j) return -1;
  j->fn = fn;
  j->next = NULL;
  memcpy(j->arg, arg, size);
  pthread_mutex_lock(&cq_mu);
  if (!cq_thread) {
    pthread_t t;
    pthread_attr_t at;
    sigset_t all, old;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&t, &at, compute_worker, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc) { pthread_mutex_unlock(&cq_mu); free(j); return -1; }
    cq_thread = 1;
  }
  if (cq_tail) cq_tail->next = j; else cq_head = j;
  cq_tail = j;
  __atomic_store_n(&cq_queued, cq_queued + 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&cq_cv);
  pthread_mutex_unlock(&cq_mu);
  return 0;
}

SIMCU_API void simcu_compute_drain(void) {
  if (__atomic_load_n(&cq_finished, __ATOMIC_ACQUIRE) == __atomic_load_n(&cq_queued, __ATOMIC_ACQUIRE))
    return;
  pthread_mutex_lock(&cq_mu);
  uint64_t target = cq_queued;
  while (cq_finished < target) pthread_cond_wait(&cq_done, &cq_mu);
  pthread_mutex_unlock(&cq_mu);
}

/* SIMCUDA_NUMERICS: "small" (default) computes the results of library calls whose work is at
 * most SMALL_FLOPS, "all" every size the library can compute, "0"/"off" none
 * (SIMCUDA_HOST_COMPUTE=0, the older name, means off). */
#define SMALL_FLOPS 65536.0
SIMCU_API int simcu_numerics(double flops) {
  static int mode = -1; /* 0 off, 1 small, 2 all */
  if (mode < 0) {
    const char *e = getenv("SIMCUDA_NUMERICS"), *h = getenv("SIMCUDA_HOST_COMPUTE");
    int m = 1;
    if (e && (!strcmp(e, "all") || !strcmp(e, "1"))) m = 2;
    else if (e && (!strcmp(e, "0") || !strcmp(e, "off"))) m = 0;
    else if (!e && h && !strcmp(h, "0")) m = 0;
    mode = m;
  }
  return mode == 2 || (mode == 1 && flops <= SMALL_FLOPS);
}

/* ---------------------------------------------------------------- memory */
struct alloc { uintptr_t base; size_t size; int kind, dev; size_t mapped; /* mmap length, 0: malloc */ };
static struct alloc *allocs;
static size_t nallocs, capallocs, dev_used, populated;
#define MAP_MIN ((size_t)1 << 20)          /* from 1 MiB on: mmap */
#define POPULATE_MAX ((size_t)256 << 20)   /* pinned allocations up to this size are populated */
#define POPULATE_TOTAL ((size_t)2 << 30)   /* up to this much in all; beyond, pages come lazily */

static size_t alloc_find(uintptr_t p) { /* index of the last base <= p, or nallocs */
  size_t lo = 0, hi = nallocs;
  while (lo < hi) { size_t mid = (lo + hi) / 2; if (allocs[mid].base <= p) lo = mid + 1; else hi = mid; }
  return lo ? lo - 1 : nallocs;
}
static void release(void *m, size_t mapped) {
  if (!mapped) { free(m); return; }
  if (!(mapped & 1)) { LOCK(); populated -= mapped; UNLOCK(); }
  munmap(m, mapped & ~(size_t)1);
}
SIMCU_API int simi_mem_alloc(void **p, size_t size, int kind) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  void *m = NULL;
  size_t sz = size ? size : 1;
  if (sz > simi_dev_total_mem(0)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t mapped = 0;
  if (sz >= MAP_MIN) {
    /* pinned memory is backed at allocation time, as the real one (within limits), so that
     * copies from it do not pay for page faults; device memory gets its pages lazily */
    mapped = (sz + 4095) & ~(size_t)4095;
    LOCK();
    int pop = kind == SIMI_MEM_PINNED && mapped <= POPULATE_MAX && populated + mapped <= POPULATE_TOTAL;
    if (pop) populated += mapped;
    UNLOCK();
    m = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (pop ? MAP_POPULATE : 0), -1, 0);
    if (m == MAP_FAILED) {
      if (pop) { LOCK(); populated -= mapped; UNLOCK(); }
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!pop) mapped |= 1; /* not counted in `populated` */
  } else {
    if (posix_memalign(&m, 256, sz) != 0 || !m) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(m, 0, sz < 4096 ? sz : 0);
  }
  LOCK();
  if (kind == SIMI_MEM_DEVICE && dev_used + sz > simi_dev_total_mem(0)) {
    UNLOCK();
    release(m, mapped);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (nallocs == capallocs) { capallocs = capallocs ? capallocs * 2 : 256; allocs = realloc(allocs, capallocs * sizeof *allocs); }
  size_t i = alloc_find((uintptr_t)m);
  i = (i == nallocs) ? 0 : i + 1;
  memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof *allocs);
  allocs[i] = (struct alloc){ (uintptr_t)m, sz, kind, simi_get_device(), mapped };
  nallocs++;
  if (kind == SIMI_MEM_DEVICE) dev_used += sz;
  UNLOCK();
  *p = m;
  return 0;
}
SIMCU_API int simi_mem_free(void *p, int kind) {
  if (!p) return 0;
  simcu_compute_drain(); /* no queued computation may touch freed memory */
  LOCK();
  size_t i = alloc_find((uintptr_t)p);
  if (i == nallocs || allocs[i].base != (uintptr_t)p || (kind && allocs[i].kind != kind)) {
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (allocs[i].kind == SIMI_MEM_DEVICE) dev_used -= allocs[i].size;
  size_t mapped = allocs[i].mapped;
  memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof *allocs);
  nallocs--;
  UNLOCK();
  release(p, mapped);
  return 0;
}
SIMCU_API int simi_mem_kind(const void *p, void **base, size_t *size, int *dev) {
  LOCK();
  size_t i = alloc_find((uintptr_t)p);
  int k = SIMI_MEM_PAGEABLE;
  if (i < nallocs && (uintptr_t)p < allocs[i].base + allocs[i].size) {
    k = allocs[i].kind;
    if (base) *base = (void *)allocs[i].base;
    if (size) *size = allocs[i].size;
    if (dev) *dev = allocs[i].dev;
  }
  UNLOCK();
  return k;
}
SIMCU_API void simi_mem_info(size_t *free_b, size_t *total_b) {
  LOCK();
  if (total_b) *total_b = simi_dev_total_mem(0);
  if (free_b) *free_b = simi_dev_total_mem(0) - dev_used;
  UNLOCK();
}

static int cupti_mem_kind(int k) {
  switch (k) {
  case SIMI_MEM_DEVICE: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  case SIMI_MEM_PINNED: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  case SIMI_MEM_MANAGED: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  default: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  }
}

/* Cost of a copy: bytes / bandwidth by direction, floor 2 µs (docs/simulator.md, "cost
 * model": an H100 SXM on PCIe Gen5 x16 and NVLink 4). */
static uint64_t copy_cost(int ck, int host_kind, uint64_t bytes) {
  double bw; /* bytes per ns */
  switch (ck) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    bw = host_kind == SIMI_MEM_PINNED ? 50.0 : 12.0; break;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: bw = 1500.0; break;   /* read + write of HBM3 */
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: bw = 370.0; break;
  default: bw = 10.0; break;
  }
  uint64_t t = (uint64_t)((double)bytes / bw);
  return t < FLOOR_NS ? FLOOR_NS : t;
}

static void fill(void *dst, int value, size_t elem, size_t count) {
  if (elem == 1) memset(dst, value, count);
  else if (elem == 2) for (size_t i = 0; i < count; i++) ((uint16_t *)dst)[i] = (uint16_t)value;
  else for (size_t i = 0; i < count; i++) ((uint32_t *)dst)[i] = (uint32_t)value;
}

#define STAGING_BYTES ((size_t)2 << 20) /* the driver's staging buffers for pageable copies */
#define BIG_DATA ((size_t)1 << 20)
/* Whether a copy or memset of this size moves its data: always, except with SIMCUDA_NUMERICS=off
 * above 1 MiB (timing only: a program then cannot tell, as the simulator does not run its own
 * kernels either, and a large model does not fill the host's memory) */
static int moves_data(size_t bytes) { return bytes <= BIG_DATA || simcu_numerics(1); }

/* An asynchronous memset or device-to-device copy moves its data on the compute thread, in
 * order with the library results, as the GPU would: a large one costs the caller nothing. */
struct data_job { void *dst; const void *src; size_t n; int value, elem; };
static void data_run(void *arg) {
  struct data_job *j = arg;
  if (j->src) memmove(j->dst, j->src, j->n);
  else fill(j->dst, j->value, (size_t)j->elem, j->n);
}
/* Returns 0 when queued (-1: the caller moves the data itself). */
static int data_job(void *dst, const void *src, size_t n, int value, int elem) {
  struct data_job j = { dst, src, n, value, elem };
  return compute_submit(data_run, &j, sizeof j);
}

/* Submits g to s: into the capture graph, or the timeline. Under the lock. */
static struct op *submit(struct simi_stream *s, struct gnode *g) {
  if (s->capture) { capture_add(s, g); return NULL; }
  return enqueue(s, g);
}

static int memcpy_node(struct gnode *g, void *dst, const void *src, size_t bytes, int kind, int async) {
  int dk = simi_mem_kind(dst, NULL, NULL, NULL), sk = simi_mem_kind(src, NULL, NULL, NULL);
  int ddev = dk == SIMI_MEM_DEVICE || dk == SIMI_MEM_MANAGED, sdev = sk == SIMI_MEM_DEVICE || sk == SIMI_MEM_MANAGED;
  if (kind == 1) sdev = 0, ddev = 1;            /* cudaMemcpyHostToDevice */
  else if (kind == 2) sdev = 1, ddev = 0;
  else if (kind == 3) sdev = ddev = 1;
  else if (kind == 0) sdev = ddev = 0;
  int ck = sdev ? (ddev ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH)
                : (ddev ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
  memset(g, 0, sizeof *g);
  g->i.kind = SIMI_OP_MEMCPY;
  g->i.copy_kind = ck;
  g->i.src_kind = cupti_mem_kind(sdev && sk == SIMI_MEM_PAGEABLE ? SIMI_MEM_DEVICE : sk);
  g->i.dst_kind = cupti_mem_kind(ddev && dk == SIMI_MEM_PAGEABLE ? SIMI_MEM_DEVICE : dk);
  g->i.bytes = bytes;
  g->i.async = async;
  g->dur = copy_cost(ck, sdev ? dk : sk, bytes);
  g->dst = dst; g->src = src; g->bytes = bytes;
  return 0;
}

SIMCU_API int simi_memcpy(void *dst, const void *src, size_t bytes, int kind, void *stream, int async) {
  if (bytes && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
  if (kind < 0 || kind > 4) return CUDA_ERROR_INVALID_VALUE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  struct gnode g;
  memcpy_node(&g, dst, src, bytes, kind, async);
  LOCK();
  int cap = s->capture != NULL;
  struct op *o = grab(submit(s, &g));
  UNLOCK();
  if (!cap && bytes && reads_device(kind)) wait_resolved(o);
  /* an asynchronous copy between device and pinned memory moves its data on the compute
   * thread; one from or to pageable memory in the caller, whom CUDA holds for it too */
  if (!cap && bytes && moves_data(bytes) &&
      !(async && g.i.src_kind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE &&
        g.i.dst_kind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE && !data_job(dst, src, bytes, 0, 1))) {
    simcu_compute_drain();
    memmove(dst, src, bytes);
  }
  /* CUDA's "API synchronization behavior": a copy to pageable memory returns only once it is
   * done, also cudaMemcpyAsync; one from pageable memory once the data is in the driver's
   * staging buffers, which for more than they hold means once the copy has (nearly) ended,
   * in stream order */
  int pageable_d2h = g.i.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                     g.i.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  int pageable_h2d = g.i.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD &&
                     g.i.src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE && bytes > STAGING_BYTES;
  if (!async || (!cap && (pageable_d2h || pageable_h2d)))
    wait_op(o);
  drop(o);
  return 0;
}

SIMCU_API int simi_memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height, int kind, void *stream, int async) {
  if (width > dpitch || width > spitch) return CUDA_ERROR_INVALID_VALUE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  struct gnode g;
  memcpy_node(&g, dst, src, width * height, kind, async);
  g.dst = NULL; g.src = NULL; g.bytes = 0; /* not replayed by graphs */
  LOCK();
  int cap = s->capture != NULL;
  struct op *o = grab(submit(s, &g));
  UNLOCK();
  if (!cap && reads_device(kind)) wait_resolved(o);
  if (!cap) simcu_compute_drain();
  if (!cap)
    for (size_t r = 0; r < height; r++)
      memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  if (!async) wait_op(o);
  drop(o);
  return 0;
}

static void memset_node(struct gnode *g, void *dst, int value, uint64_t bytes, int async) {
  memset(g, 0, sizeof *g);
  g->i.kind = SIMI_OP_MEMSET;
  g->i.bytes = bytes;
  g->i.value = (uint32_t)value;
  g->i.async = async;
  g->i.dst_kind = cupti_mem_kind(simi_mem_kind(dst, NULL, NULL, NULL));
  uint64_t t = (uint64_t)((double)bytes / 3000.0);
  g->dur = t < FLOOR_NS ? FLOOR_NS : t;
  g->is_memset = 1; g->dst = dst; g->value = value;
}

SIMCU_API int simi_memset(void *dst, int value, size_t elem, size_t count, void *stream, int async) {
  if (count && !dst) return CUDA_ERROR_INVALID_VALUE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  struct gnode g;
  memset_node(&g, dst, value, (uint64_t)elem * count, async);
  g.bytes = elem == 1 ? count : 0;
  LOCK();
  int cap = s->capture != NULL;
  struct op *o = grab(submit(s, &g));
  UNLOCK();
  if (!cap && moves_data((size_t)elem * count) &&
      !(async && g.i.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
        !data_job(dst, NULL, count, value, (int)elem))) {
    simcu_compute_drain();
    fill(dst, value, elem, count);
  }
  if (!async) wait_op(o);
  drop(o);
  return 0;
}
SIMCU_API int simi_memset2d(void *dst, size_t pitch, int value, size_t width, size_t height,
                            void *stream, int async) {
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  struct gnode g;
  memset_node(&g, dst, value, (uint64_t)width * height, async);
  g.is_memset = 0;
  LOCK();
  int cap = s->capture != NULL;
  struct op *o = grab(submit(s, &g));
  UNLOCK();
  if (!cap) simcu_compute_drain();
  if (!cap) for (size_t r = 0; r < height; r++) memset((char *)dst + r * pitch, value, width);
  if (!async) wait_op(o);
  drop(o);
  return 0;
}

/* ---------------------------------------------------------------- kernels */
static double peak_flops_per_ns(int dt) {
  switch (dt) {
  case SIMCU_DT_FP64: return 67e3;
  case SIMCU_DT_FP16: case SIMCU_DT_BF16: return 990e3;
  case SIMCU_DT_TF32: return 495e3;
  case SIMCU_DT_FP8: case SIMCU_DT_INT8: return 1979e3;
  default: return 67e3;
  }
}

#define GEMM_EFF 0.7   /* cuBLAS on large GEMMs: about 70 % of the dense tensor-core peak */
#define HBM_EFF 0.85   /* achievable share of the HBM3 peak (STREAM-like copies) */
static void kernel_node(struct gnode *g, const simcu_kernel *k) {
  memset(g, 0, sizeof *g);
  g->i.kind = SIMI_OP_KERNEL;
  /* interned: the record outlives the caller's string */
  g->i.name = simi_func_name(simi_func_get(k->name ? k->name : "kernel", NULL));
  for (int d = 0; d < 3; d++) {
    g->i.grid[d] = k->grid[d] ? k->grid[d] : 1;
    g->i.block[d] = k->block[d] ? k->block[d] : 1;
  }
  g->i.dyn_smem = (unsigned)k->dyn_smem;
  g->i.static_smem = (unsigned)k->static_smem;
  g->i.regs = k->regs ? k->regs : 32;
  double threads = (double)g->i.grid[0] * g->i.grid[1] * g->i.grid[2] * g->i.block[0] * g->i.block[1] * g->i.block[2];
  double t = threads / (132.0 * 2048.0) * 4000.0;           /* 4 µs per full wave */
  {
    /* below half occupancy a GPU hides less latency: such a kernel (by its launch configuration:
     * blocks per SM that threads, registers and shared memory allow on an H100) runs slower in
     * proportion, up to 16x. Kernels with a flops/bytes cost (the libraries') keep that cost. */
    unsigned tpb = g->i.block[0] * g->i.block[1] * g->i.block[2], fit = 32, lim;
    unsigned wpb = (tpb + 31) / 32;
    size_t smem = g->i.dyn_smem + g->i.static_smem;
    if ((lim = 2048 / tpb) < fit) fit = lim;
    if ((lim = 65536 / (g->i.regs * wpb * 32)) < fit) fit = lim;
    if (smem && (lim = (unsigned)(233472 / smem)) < fit) fit = lim;
    double occ = fit ? (double)(fit * wpb) / 64.0 : 1.0 / 64.0;
    if (occ < 0.5) t *= 0.5 / (occ < 0.5 / 16 ? 0.5 / 16 : occ);
  }
  /* library kernels: flops against the achievable share of the peak (GEMM_EFF) times the
   * share of the last wave of thread blocks that is full (wave quantization over 132 SMs);
   * bytes against the achievable HBM3 bandwidth */
  double blocks = (double)g->i.grid[0] * g->i.grid[1] * g->i.grid[2];
  double waves = blocks > 132.0 ? (double)(uint64_t)((blocks + 131.0) / 132.0) : 1.0;
  double wave_eff = blocks >= 132.0 ? blocks / (waves * 132.0) : 1.0;
  double tf = k->flops / (peak_flops_per_ns(k->dtype) * GEMM_EFF * wave_eff);
  double tb = k->bytes / (3350.0 * HBM_EFF);                   /* 3.35 TB/s HBM3 */
  if (k->flops > 0 || k->bytes > 0) t = tf > tb ? tf : tb;
  uint64_t fl = k->floor_ns ? k->floor_ns : FLOOR_NS;
  g->dur = t < (double)fl ? fl : (uint64_t)t;
  if (k->rv) { g->has_rv = 1; g->rv = *k->rv; }
  g->issued = k->issued_ns;
  g->host_fn = k->host_fn; g->host_arg = k->host_arg;
}

/* A GPU holds a bounded number of pending launches: once the host is QUEUE_DEPTH kernels ahead
 * of the device, a launch returns only when the oldest has ended (a GPU-bound program's host
 * runs about a step ahead, not arbitrarily far). Remembers o; returns the launch it displaced
 * (referenced: the caller waits for it and drops it), or NULL. Under the lock. */
static struct op *queue_push(struct simi_ctx *c, struct op *o) {
  struct op *old = NULL;
  if (!o) return NULL;
  o->refs++;
  if (c->pend_n < QUEUE_DEPTH) {
    c->pend[c->pend_n++] = o;
    return NULL;
  }
  old = c->pend[c->pend_i];
  c->pend[c->pend_i] = o;
  c->pend_i = (c->pend_i + 1) % QUEUE_DEPTH;
  if (resolve(old) && old->i.end <= simcu_now_ns()) { op_unref(old); return NULL; }
  return old;
}

SIMCU_API int simi_launch(void *stream, const simcu_kernel *k) { return simi_launch_ref(stream, k, NULL); }

/* simi_launch, and *ref (when given) a reference to the launched op for simcu_op_times (NULL
 * when the stream was capturing). */
SIMCU_API int simi_launch_ref(void *stream, const simcu_kernel *k, void **ref) {
  if (ref) *ref = NULL;
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  for (int d = 0; d < 3; d++)
    if (k->block[d] > 1024 || (d == 2 && k->block[d] > 64)) return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t)(k->block[0] ? k->block[0] : 1) * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1) > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  struct gnode g;
  kernel_node(&g, k);
  LOCK();
  int cap = s->capture != NULL;
  struct op *o = submit(s, &g), *oldest = NULL;
  if (!cap) oldest = queue_push(s->ctx, o);
  if (!cap && ref) *ref = grab(o);
  UNLOCK();
  if (oldest) { /* the launch queue is full: wait for its oldest kernel, as CUDA blocks */
    wait_op(oldest);
    drop(oldest);
  }
  if (!cap && k->host_fn) {
    /* off the caller's path when the library handed over a self-contained job; inline (after
     * what is queued) otherwise */
    if (!k->host_arg_size || compute_submit(k->host_fn, k->host_arg, k->host_arg_size)) {
      simcu_compute_drain();
      k->host_fn(k->host_arg);
    }
  }
  return 0;
}

/* simcore.h: 1 and op `ref`'s start and end once they are known, else 0 */
SIMCU_API int simcu_op_times(void *ref, uint64_t *start, uint64_t *end) {
  struct op *o = ref;
  if (!o) return 0;
  LOCK();
  int r = resolve(o);
  if (r) { *start = o->i.start; *end = o->i.end; }
  UNLOCK();
  return r;
}
SIMCU_API void simcu_op_release(void *ref) { drop(ref); }

/* ---------------------------------------------------------------- graphs */
static unsigned long long next_capture_id = 1;
/* CUgraphNodeType of a captured operation */
static int node_type(const struct gnode *g) {
  switch (g->i.kind) {
    case SIMI_OP_KERNEL: return CU_GRAPH_NODE_TYPE_KERNEL;
    case SIMI_OP_MEMCPY: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case SIMI_OP_MEMSET: return CU_GRAPH_NODE_TYPE_MEMSET;
    case SIMI_OP_EVENT: return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    default: return g->host_fn ? CU_GRAPH_NODE_TYPE_HOST : CU_GRAPH_NODE_TYPE_EMPTY;
  }
}
/* Appends a node to a graph (under the lock) and tells the tool, as CUPTI's
 * RESOURCE_GRAPHNODE_CREATED does, inside the call that made it. */
static uint64_t graph_add(struct simi_graph *gr, const struct gnode *g) {
  if (gr->n == gr->cap) { gr->cap = gr->cap ? gr->cap * 2 : 16; gr->nodes = realloc(gr->nodes, gr->cap * sizeof *gr->nodes); }
  gr->nodes[gr->n] = *g;
  gr->nodes[gr->n].i.graph_id = gr->id;
  uint64_t id = ((uint64_t)gr->id << 32) | (uint64_t)(gr->n + 1);
  gr->nodes[gr->n].i.graph_node_id = id;
  gr->n++;
  const simi_tool *t = tool;
  if (t && t->graph_node) t->graph_node(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, gr, id, 0, node_type(g));
  return id;
}
static void capture_add(struct simi_stream *s, const struct gnode *g) { graph_add(s->capture, g); }
SIMCU_API uint32_t simi_graph_id(const void *graph) { return graph ? ((const struct simi_graph *)graph)->id : 0; }
SIMCU_API uint32_t simi_graph_exec_id(const void *exec) { return exec ? ((const struct simi_exec *)exec)->id : 0; }
SIMCU_API int simi_graph_nodes(void *graph, void **nodes, size_t *n) {
  struct simi_graph *g = graph;
  if (!g || !n) return CUDA_ERROR_INVALID_VALUE;
  LOCK();
  if (!nodes) *n = (size_t)g->n;
  else {
    if (*n > (size_t)g->n) *n = (size_t)g->n;
    for (size_t i = 0; i < *n; i++) nodes[i] = simi_graph_node_handle(g->nodes[i].i.graph_node_id);
  }
  UNLOCK();
  return 0;
}
SIMCU_API int simi_graph_add_kernel(void *graph, const simcu_kernel *k, void **node) {
  struct simi_graph *gr = graph;
  if (!gr || !k || !node) return CUDA_ERROR_INVALID_VALUE;
  struct gnode g;
  kernel_node(&g, k);
  LOCK();
  uint64_t id = graph_add(gr, &g);
  UNLOCK();
  *node = simi_graph_node_handle(id);
  return 0;
}
SIMCU_API int simi_graph_add_memset(void *graph, void *dst, int value, size_t elem, size_t width,
                                    size_t height, size_t pitch, void **node) {
  struct simi_graph *gr = graph;
  if (!gr || !dst || !node || !elem) return CUDA_ERROR_INVALID_VALUE;
  struct gnode g;
  memset_node(&g, dst, value, (uint64_t)elem * width * (height ? height : 1), 1);
  /* a one-row byte memset is replayed with its data, as a captured cudaMemset */
  g.bytes = elem == 1 && height <= 1 ? width : 0;
  if (!g.bytes) g.is_memset = 0;
  (void)pitch;
  LOCK();
  uint64_t id = graph_add(gr, &g);
  UNLOCK();
  *node = simi_graph_node_handle(id);
  return 0;
}
SIMCU_API int simi_graph_create(void **graph) {
  struct simi_graph *g = calloc(1, sizeof *g);
  LOCK(); g->id = next_graph_id++; UNLOCK();
  *graph = g;
  return 0;
}
SIMCU_API int simi_capture_begin(void *stream, int mode) {
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (!s || s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  void *g;
  simi_graph_create(&g);
  LOCK();
  s->capture = g;
  s->capture_id = next_capture_id++;
  s->capture_origin = s;
  capture_track(g, 1);
  UNLOCK();
  return 0;
}
SIMCU_API int simi_capture_end(void *stream, void **graph) {
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (!s || !s->capture || s->capture_origin != s) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  LOCK();
  struct simi_graph *g = s->capture;
  capture_track(g, 0);
  for (struct simi_stream *t = s->ctx->streams; t; t = t->next)
    if (t->capture == g) { t->capture = NULL; t->capture_origin = NULL; }
  UNLOCK();
  if (graph) *graph = g;
  return 0;
}
SIMCU_API int simi_capture_status(void *stream, int *status, unsigned long long *id) {
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  if (status) *status = s && s->capture ? 1 : 0;
  if (id) *id = s && s->capture ? s->capture_id : 0;
  return 0;
}
SIMCU_API int simi_graph_destroy(void *graph) {
  struct simi_graph *g = graph;
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  free(g->nodes);
  free(g);
  return 0;
}
SIMCU_API int simi_graph_node_count(void *graph, size_t *n) {
  struct simi_graph *g = graph;
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  *n = (size_t)g->n;
  return 0;
}
SIMCU_API int simi_graph_instantiate(void **exec, void *graph) {
  struct simi_graph *g = graph;
  if (!g || !exec) return CUDA_ERROR_INVALID_VALUE;
  struct simi_exec *x = calloc(1, sizeof *x);
  struct simi_graph *copy = calloc(1, sizeof *copy);
  copy->id = g->id; copy->n = copy->cap = g->n;
  copy->nodes = malloc((g->n ? g->n : 1) * sizeof *copy->nodes);
  memcpy(copy->nodes, g->nodes, g->n * sizeof *g->nodes);
  x->g = copy;
  LOCK(); x->id = next_graph_id++; UNLOCK();
  /* the executable graph holds copies of the nodes, with ids of their own (GPU records of a
   * launch carry these), each reported as CUPTI's RESOURCE_GRAPHNODE_CLONED */
  const simi_tool *t = tool;
  for (int n = 0; n < copy->n; n++) {
    copy->nodes[n].i.graph_node_id = ((uint64_t)x->id << 32) | (uint64_t)(n + 1);
    if (t && t->graph_node)
      t->graph_node(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, g, copy->nodes[n].i.graph_node_id,
                    g->nodes[n].i.graph_node_id, node_type(&g->nodes[n]));
  }
  *exec = x;
  return 0;
}
SIMCU_API int simi_graph_exec_destroy(void *exec) {
  struct simi_exec *x = exec;
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  simi_graph_destroy(x->g);
  free(x);
  return 0;
}
SIMCU_API int simi_graph_launch(void *exec, void *stream) {
  struct simi_exec *x = exec;
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  struct simi_stream *s = simi_stream_resolve(stream, 0);
  for (int n = 0; n < x->g->n; n++) {
    struct gnode *g = &x->g->nodes[n];
    LOCK();
    struct op *o;
    if (g->host_fn && g->i.kind == SIMI_OP_MARKER && !s->capture) {
      struct gnode h = *g;
      h.host_pending = 1;
      o = grab(enqueue(s, &h));
      host_job(o, g->host_fn, g->host_arg);
    } else {
      o = grab(submit(s, g));
    }
    UNLOCK();
    if (g->i.kind == SIMI_OP_MEMCPY && g->bytes) memmove(g->dst, g->src, g->bytes);
    if (g->is_memset && g->bytes) memset(g->dst, g->value, g->bytes);
    /* host functions (cudaLaunchHostFunc) run again; a library kernel's host_fn does not:
     * its argument belonged to the captured call and may be gone */
    (void)o;
    drop(o);
  }
  return 0;
}
