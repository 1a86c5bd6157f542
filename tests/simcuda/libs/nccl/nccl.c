/* Simulated libnccl.so.2.
 *
 * Communicators: ranks of one clique meet in POSIX shared memory named from the unique id
 * (/dev/shm/dlhook-simnccl-<hash>); ncclCommInitRank waits until all nranks have joined (or, in
 * a group, until ncclGroupEnd); the last one to join unlinks the name. ncclCommInitAll makes a
 * clique of several "devices" in one process.
 *
 * Data: collectives and send/recv move the real data for small sizes (a rank's input up to
 * SLOT_DATA bytes; a message up to the p2p mailbox size; and only up to the size that
 * SIMCUDA_NUMERICS lets the libraries compute, see simcore.h): each rank copies its input into its
 * slot of the shared memory and returns at once (like a real NCCL call, which only enqueues); the
 * last rank to arrive computes every rank's output and writes it into the other processes'
 * receive buffers with process_vm_writev (memcpy within a process). Where that is not permitted
 * (checked at init; or with SIMNCCL_BLOCKING=1 set), ranks instead wait in the call until all
 * have arrived and copy their own output. Larger operations only cost simulated time.
 *
 * Timing: each group (a lone call is a group of one) launches one kernel per communicator for
 * its collectives, with a rendezvous (key = hash of the unique id, seq = the communicator's
 * launch counter) so it ends only when the last rank has started it; send/recv ops launch one
 * SendRecv kernel, which meets its peer in a pair rendezvous when it is a lone send or recv. Cost: ring algorithm, bytes on the wire /
 * 370 GB/s bus bandwidth + a protocol latency (docs/simulator.md).
 *
 * Every call is a strong pnccl* with a weak ncclX alias (NCCL_ALIAS), as in the real library;
 * functions not implemented here are generated stubs (nccl_stubs.c). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <nccl.h>
#include "../../simcore.h"
#include "simprof.h"
/* exported whatever -fvisibility the build uses; the .map file chooses */
#pragma GCC visibility push(default)

#define NCCL_ALIAS(name) extern __typeof(p##name) name __attribute__((weak, alias("p" #name)));

#define MAXR 256
#define NSLOT 16 /* collectives in flight per communicator (a group of 9 all-reduces must not wait) */
#define SLOT_DATA (4u << 20)
#define P2P_NSLOT 2
#define COMM_MAGIC 0x4e43434cu
#define WAIT_LIMIT_NS (600ull * 1000000000ull)
#define BUSBW 370e9 /* bytes/s: NVLink 4 all-reduce bus bandwidth of nccl-tests on H100 */

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_REDUCE, OP_ALLTOALL,
       OP_GATHER, OP_SCATTER, OP_SEND, OP_RECV };
static const char *op_names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                 "Reduce", "AlltoAll", "Gather", "Scatter", "Send", "Recv"};

struct coll_slot {
  uint32_t gen;     /* completed uses: serves seq gen*NSLOT + index */
  uint32_t arrived;
  uint32_t ready;   /* blocking mode: gen+1 once all have arrived */
  uint32_t departed;
  struct { int32_t pid; uint64_t recv; } r[MAXR];
};
struct p2p_slot {
  uint32_t gen, arrived; /* arrived: bit 0 sender, bit 1 receiver */
  uint64_t bytes;
  int32_t recv_pid;
  uint64_t recv_addr;
};
struct shm_hdr {
  uint32_t nranks;
  uint32_t joined, probed, pvw_fail, closed;
  uint32_t p2p_data;
  int32_t pid[MAXR];
  uint64_t probe_addr[MAXR];
  struct coll_slot slots[NSLOT];
  /* then: p2p_slot[nranks*nranks*P2P_NSLOT], coll data, p2p data */
};

struct ncclComm {
  unsigned magic;
  struct shm_hdr *hdr;
  size_t shm_size;
  int rank, nranks, dev, blocking;
  uint64_t key;
  uint64_t coll_seq, launch_seq;
  uint64_t *send_seq, *recv_seq, *pair_launch; /* per peer */
  uint64_t splits;
  int init_done;
  int suspended; /* ncclCommSuspend (NCCL 2.30) until ncclCommResume */
  char name[64];
  void *prof_ctx;     /* the profiler plugin's context (profiler.c) */
  int prof_mask;      /* the events it asked for */
  uint64_t prof_seq;  /* collectives so far: their Coll events' seqNumber */
};

static volatile uint64_t probe_word = 0x5349414d4e43434cull;
static char last_error[256];

static ncclResult_t fail(ncclResult_t r, const char *fmt, const char *arg) {
  snprintf(last_error, sizeof last_error, fmt, arg ? arg : "");
  return r;
}

static void backoff(unsigned *it) {
  if (++*it < 64) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
/* Waits until cond holds; returns -1 after WAIT_LIMIT_NS. */
#define WAIT_UNTIL(cond)                                                                     \
  ({                                                                                         \
    unsigned it_ = 0;                                                                        \
    uint64_t t0_ = now_ns();                                                                 \
    int r_ = 0;                                                                              \
    while (!(cond)) {                                                                        \
      if ((it_ & 1023) == 1023 && now_ns() - t0_ > WAIT_LIMIT_NS) {                          \
        r_ = -1;                                                                             \
        break;                                                                               \
      }                                                                                      \
      backoff(&it_);                                                                         \
    }                                                                                        \
    r_;                                                                                      \
  })

static uint64_t hash_bytes(const void *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return h;
}

/* ---- layout of the shared memory ---- */
static size_t p2p_data_size(int n) { return n <= 16 ? (1u << 20) : (64u << 10); }
static struct p2p_slot *p2p_slot_of(struct ncclComm *c, int src, int dst, uint64_t q) {
  struct p2p_slot *s = (struct p2p_slot *)(c->hdr + 1);
  return &s[((size_t)src * c->nranks + dst) * P2P_NSLOT + q % P2P_NSLOT];
}
static size_t coll_data_off(int n) {
  size_t o = sizeof(struct shm_hdr) + sizeof(struct p2p_slot) * (size_t)n * n * P2P_NSLOT;
  return (o + 4095) & ~(size_t)4095;
}
static char *coll_data(struct ncclComm *c, uint64_t seq, int rank) {
  return (char *)c->hdr + coll_data_off(c->nranks) +
         ((seq % NSLOT) * (size_t)c->nranks + (size_t)rank) * SLOT_DATA;
}
static char *p2p_data(struct ncclComm *c, int src, int dst, uint64_t q) {
  size_t o = coll_data_off(c->nranks) + (size_t)NSLOT * c->nranks * SLOT_DATA;
  return (char *)c->hdr + o +
         (((size_t)src * c->nranks + dst) * P2P_NSLOT + q % P2P_NSLOT) * c->hdr->p2p_data;
}
static size_t shm_size_of(int n) {
  return coll_data_off(n) + (size_t)NSLOT * n * SLOT_DATA +
         (size_t)n * n * P2P_NSLOT * p2p_data_size(n);
}

/* ---- data types and reductions ---- */
static size_t dt_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  default: return 0;
  }
}
static const char *dt_name(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: return "i8";
  case ncclUint8: return "u8";
  case ncclInt32: return "i32";
  case ncclUint32: return "u32";
  case ncclInt64: return "i64";
  case ncclUint64: return "u64";
  case ncclFloat16: return "f16";
  case ncclFloat32: return "f32";
  case ncclFloat64: return "f64";
  case ncclBfloat16: return "bf16";
  case ncclFloat8e4m3: return "f8e4m3";
  case ncclFloat8e5m2: return "f8e5m2";
  default: return "u8";
  }
}
static int dt_class(ncclDataType_t t) {
  switch (t) {
  case ncclFloat64: return SIMCU_DT_FP64;
  case ncclFloat16: return SIMCU_DT_FP16;
  case ncclBfloat16: return SIMCU_DT_BF16;
  case ncclFloat8e4m3: case ncclFloat8e5m2: return SIMCU_DT_FP8;
  case ncclInt8: case ncclUint8: return SIMCU_DT_INT8;
  default: return SIMCU_DT_FP32;
  }
}
static double ld(const void *p, ncclDataType_t t, size_t i) {
  switch (t) {
  case ncclInt8: return ((const int8_t *)p)[i];
  case ncclUint8: return ((const uint8_t *)p)[i];
  case ncclInt32: return ((const int32_t *)p)[i];
  case ncclUint32: return ((const uint32_t *)p)[i];
  case ncclInt64: return (double)((const int64_t *)p)[i];
  case ncclUint64: return (double)((const uint64_t *)p)[i];
  case ncclFloat16: return (double)((const _Float16 *)p)[i];
  case ncclFloat32: return ((const float *)p)[i];
  case ncclFloat64: return ((const double *)p)[i];
  case ncclBfloat16: {
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  default: return ((const uint8_t *)p)[i];
  }
}
static void st(void *p, ncclDataType_t t, size_t i, double v) {
  switch (t) {
  case ncclInt8: ((int8_t *)p)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case ncclInt32: ((int32_t *)p)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)p)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  case ncclFloat16: ((_Float16 *)p)[i] = (_Float16)v; break;
  case ncclFloat32: ((float *)p)[i] = (float)v; break;
  case ncclFloat64: ((double *)p)[i] = v; break;
  case ncclBfloat16: {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    break;
  }
  default: ((uint8_t *)p)[i] = (uint8_t)v;
  }
}
static const char *redop_name(ncclRedOp_t op) {
  switch (op) {
  case ncclSum: return "Sum";
  case ncclProd: return "Prod";
  case ncclMax: return "MinMax";
  case ncclMin: return "MinMax";
  case ncclAvg: return "PreMulSum";
  default: return "Sum";
  }
}
/* out[i] = reduce over ranks j of in_j[off + i] */
static void reduce_into(struct ncclComm *c, uint64_t seq, size_t off, size_t count,
                        ncclDataType_t t, ncclRedOp_t op, void *out) {
  for (size_t i = 0; i < count; i++) {
    double acc = ld(coll_data(c, seq, 0), t, off + i);
    for (int j = 1; j < c->nranks; j++) {
      double v = ld(coll_data(c, seq, j), t, off + i);
      switch (op) {
      case ncclProd: acc *= v; break;
      case ncclMax: if (v > acc) acc = v; break;
      case ncclMin: if (v < acc) acc = v; break;
      default: acc += v;
      }
    }
    if (op == ncclAvg) acc /= c->nranks;
    st(out, t, i, acc);
  }
}

/* ---- writing into another rank's memory ---- */
static int put(int pid, uint64_t addr, const void *src, size_t n) {
  if (!n || !addr) return 0;
  if (pid == getpid()) {
    memmove((void *)(uintptr_t)addr, src, n);
    return 0;
  }
  struct iovec l = {(void *)src, n}, r = {(void *)(uintptr_t)addr, n};
  return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* ---- pending operations (groups) ---- */
struct op {
  struct ncclComm *comm;
  int kind;
  const void *send;
  void *recv;
  size_t count;
  ncclDataType_t dt;
  ncclRedOp_t redop;
  int root; /* root, or peer for send/recv */
  cudaStream_t stream;
};
static __thread int group_depth;
static __thread struct op *pend;
static __thread int npend, cappend;
static __thread struct ncclComm **pend_init;
static __thread int npend_init, cappend_init;
static __thread ncclResult_t group_error;

static size_t in_bytes(const struct op *o, int rank) {
  size_t es = dt_size(o->dt), n = (size_t)o->comm->nranks;
  switch (o->kind) {
  case OP_REDUCESCATTER: case OP_ALLTOALL: return n * o->count * es;
  case OP_BROADCAST: return rank == o->root ? o->count * es : 0;
  case OP_SCATTER: return rank == o->root ? n * o->count * es : 0;
  default: return o->count * es;
  }
}
static size_t out_bytes(const struct op *o, int rank) {
  size_t es = dt_size(o->dt), n = (size_t)o->comm->nranks;
  switch (o->kind) {
  case OP_ALLGATHER: case OP_ALLTOALL: return n * o->count * es;
  case OP_REDUCE: return rank == o->root ? o->count * es : 0;
  case OP_GATHER: return rank == o->root ? n * o->count * es : 0;
  default: return o->count * es;
  }
}
/* Bytes a rank moves over the links (ring algorithm). */
static double wire_bytes(const struct op *o) {
  double n = o->comm->nranks, es = (double)dt_size(o->dt), s = (double)o->count * es;
  switch (o->kind) {
  case OP_ALLREDUCE: return s * 2 * (n - 1) / n;
  case OP_ALLGATHER: case OP_REDUCESCATTER: case OP_ALLTOALL: case OP_GATHER: case OP_SCATTER:
    return s * (n - 1);
  default: return s;
  }
}

/* Rank r's output of collective seq, computed from every rank's input in the slot. */
static void coll_output(struct ncclComm *c, const struct op *o, uint64_t seq, int r, char *out) {
  size_t es = dt_size(o->dt), cnt = o->count;
  int n = c->nranks;
  switch (o->kind) {
  case OP_ALLREDUCE: reduce_into(c, seq, 0, cnt, o->dt, o->redop, out); break;
  case OP_REDUCE: if (r == o->root) reduce_into(c, seq, 0, cnt, o->dt, o->redop, out); break;
  case OP_REDUCESCATTER: reduce_into(c, seq, (size_t)r * cnt, cnt, o->dt, o->redop, out); break;
  case OP_ALLGATHER:
    for (int j = 0; j < n; j++) memcpy(out + (size_t)j * cnt * es, coll_data(c, seq, j), cnt * es);
    break;
  case OP_GATHER:
    if (r == o->root)
      for (int j = 0; j < n; j++) memcpy(out + (size_t)j * cnt * es, coll_data(c, seq, j), cnt * es);
    break;
  case OP_BROADCAST: memcpy(out, coll_data(c, seq, o->root), cnt * es); break;
  case OP_SCATTER: memcpy(out, coll_data(c, seq, o->root) + (size_t)r * cnt * es, cnt * es); break;
  case OP_ALLTOALL:
    for (int j = 0; j < n; j++)
      memcpy(out + (size_t)j * cnt * es, coll_data(c, seq, j) + (size_t)r * cnt * es, cnt * es);
    break;
  }
}

/* wait: return only when this rank's output is in place (ncclCommSplit's exchange) */
static ncclResult_t coll_exchange(struct op *o, int wait) {
  struct ncclComm *c = o->comm;
  int n = c->nranks;
  size_t maxin = o->kind == OP_REDUCESCATTER || o->kind == OP_ALLTOALL || o->kind == OP_SCATTER
                     ? (size_t)n * o->count * dt_size(o->dt)
                     : o->count * dt_size(o->dt);
  size_t maxout = o->kind == OP_ALLGATHER || o->kind == OP_ALLTOALL || o->kind == OP_GATHER
                      ? (size_t)n * o->count * dt_size(o->dt)
                      : o->count * dt_size(o->dt);
  /* timing only: too large for the slots, or past the size whose data is moved (SIMCUDA_NUMERICS:
   * moving it costs the host what a GPU's NCCL does not) */
  if (n > MAXR || maxin > SLOT_DATA || !dt_size(o->dt) || !simcu_numerics((double)maxin))
    return ncclSuccess;
  simcu_compute_drain(); /* the input may be a library call's result still being computed */
  if (n == 1) {
    char *tmp = malloc(maxout ? maxout : 1);
    if (in_bytes(o, 0)) memcpy(coll_data(c, 0, 0), o->send, in_bytes(o, 0));
    coll_output(c, o, 0, 0, tmp);
    if (out_bytes(o, 0)) memmove(o->recv, tmp, out_bytes(o, 0));
    free(tmp);
    return ncclSuccess;
  }
  uint64_t seq = c->coll_seq++;
  struct coll_slot *s = &c->hdr->slots[seq % NSLOT];
  uint32_t gen = (uint32_t)(seq / NSLOT);
  if (WAIT_UNTIL(LOAD(&s->gen) == gen))
    return fail(ncclSystemError, "simulated NCCL: timed out waiting for a free slot%s", NULL);
  if (in_bytes(o, c->rank)) memcpy(coll_data(c, seq, c->rank), o->send, in_bytes(o, c->rank));
  s->r[c->rank].pid = getpid();
  s->r[c->rank].recv = (uint64_t)(uintptr_t)o->recv;
  uint32_t a = __atomic_add_fetch(&s->arrived, 1, __ATOMIC_ACQ_REL);
  char *tmp = malloc(maxout ? maxout : 1);
  ncclResult_t res = ncclSuccess;
  if (!c->hdr->pvw_fail) {
    if (a == (uint32_t)n) {
      for (int r = 0; r < n; r++) {
        coll_output(c, o, seq, r, tmp);
        if (put(s->r[r].pid, s->r[r].recv, tmp, out_bytes(o, r)))
          res = fail(ncclSystemError, "simulated NCCL: process_vm_writev failed%s", NULL);
      }
      STORE(&s->arrived, 0);
      STORE(&s->gen, gen + 1);
    } else if (wait && WAIT_UNTIL(LOAD(&s->gen) != gen)) {
      res = fail(ncclSystemError, "simulated NCCL: timed out waiting for the other ranks%s", NULL);
    }
  } else {
    if (a == (uint32_t)n) STORE(&s->ready, gen + 1);
    else if (WAIT_UNTIL(LOAD(&s->ready) == gen + 1))
      res = fail(ncclSystemError, "simulated NCCL: timed out waiting for the other ranks%s", NULL);
    if (res == ncclSuccess) {
      coll_output(c, o, seq, c->rank, tmp);
      if (out_bytes(o, c->rank)) memmove(o->recv, tmp, out_bytes(o, c->rank));
      if (__atomic_add_fetch(&s->departed, 1, __ATOMIC_ACQ_REL) == (uint32_t)n) {
        STORE(&s->departed, 0);
        STORE(&s->arrived, 0);
        STORE(&s->gen, gen + 1);
      }
    }
  }
  free(tmp);
  return res;
}

/* wait: a receive whose kernel has no rendezvous (a group of several p2p ops) waits here until
 * its data has arrived, so that a stream synchronize after it sees the data. */
static ncclResult_t p2p_exchange(struct op *o, int wait) {
  struct ncclComm *c = o->comm;
  size_t bytes = o->count * dt_size(o->dt);
  int peer = o->root;
  int is_send = o->kind == OP_SEND;
  int src = is_send ? c->rank : peer, dst = is_send ? peer : c->rank;
  uint64_t q = is_send ? c->send_seq[peer]++ : c->recv_seq[peer]++;
  if (bytes > c->hdr->p2p_data || c->nranks > MAXR || !simcu_numerics((double)bytes))
    return ncclSuccess; /* timing only */
  if (src == dst) return ncclSuccess; /* self send/recv: matched locally below */
  simcu_compute_drain();
  struct p2p_slot *s = p2p_slot_of(c, src, dst, q);
  uint32_t gen = (uint32_t)(q / P2P_NSLOT);
  if (WAIT_UNTIL(LOAD(&s->gen) == gen))
    return fail(ncclSystemError, "simulated NCCL: timed out waiting for a free p2p slot%s", NULL);
  char *data = p2p_data(c, src, dst, q);
  uint32_t old;
  if (is_send) {
    memcpy(data, o->send, bytes);
    s->bytes = bytes;
    old = __atomic_fetch_or(&s->arrived, 1, __ATOMIC_ACQ_REL);
  } else {
    s->recv_pid = getpid();
    s->recv_addr = (uint64_t)(uintptr_t)o->recv;
    old = __atomic_fetch_or(&s->arrived, 2, __ATOMIC_ACQ_REL);
  }
  int complete = (old | (is_send ? 1 : 2)) == 3;
  if (!is_send && !complete && wait && !c->hdr->pvw_fail) {
    if (WAIT_UNTIL(LOAD(&s->gen) != gen))
      return fail(ncclSystemError, "simulated NCCL: timed out waiting for the sender%s", NULL);
    return ncclSuccess;
  }
  if (c->hdr->pvw_fail) { /* only the receiver completes, waiting for the sender */
    if (is_send) return ncclSuccess;
    if (WAIT_UNTIL(LOAD(&s->arrived) & 1))
      return fail(ncclSystemError, "simulated NCCL: timed out waiting for the sender%s", NULL);
    complete = 1;
  }
  if (!complete) return ncclSuccess;
  ncclResult_t res = ncclSuccess;
  size_t nb = s->bytes < bytes ? s->bytes : bytes;
  if (is_send) {
    if (put(s->recv_pid, s->recv_addr, data, nb))
      res = fail(ncclSystemError, "simulated NCCL: process_vm_writev failed%s", NULL);
  } else {
    memcpy(o->recv, data, nb);
  }
  STORE(&s->arrived, 0);
  STORE(&s->gen, gen + 1);
  return res;
}

/* ---- kernels ---- */
static const char *proto_of(double bytes) {
  return bytes < 65536 ? "LL" : bytes < 4194304 ? "LL128" : "SIMPLE";
}
static double latency_ns(const char *proto, int nranks) {
  double base = proto[2] == '1' ? 8000 : proto[1] == 'L' ? 5000 : 12000;
  return base + 300.0 * (nranks - 1);
}

static uint64_t group_issued; /* host time ncclGroupEnd (or the ungrouped call) was entered */

static unsigned channels_of(double wire) { return wire > (1 << 24) ? 32 : wire > (1 << 20) ? 16 : 2; }
static unsigned warps_of(const char *proto) { return (proto[0] == 'S' ? 544 : 640) / 32; }

/* Test knob SIMNCCL_SLOW_NET=RANK:US: rank RANK's links are slow. Each of its kernels that
 * meets other ranks takes US microseconds more once they have all started (its transfers, and
 * its proxy operations, end that much after the other ranks'), as a rank with a degraded NIC or
 * link does; its GPU is then that much later for its next work. */
static uint64_t slow_net_ns(const struct ncclComm *c) {
  static int parsed, rank = -1;
  static unsigned long long us;
  if (!parsed) {
    const char *e = getenv("SIMNCCL_SLOW_NET");
    if (e && sscanf(e, "%d:%llu", &rank, &us) != 2) rank = -1;
    parsed = 1;
  }
  return c->nranks > 1 && c->rank == rank ? (uint64_t)us * 1000 : 0;
}

static ncclResult_t launch(struct ncclComm *c, cudaStream_t stream, const char *name,
                           double wire, double mem_bytes, double flops, int dtype,
                           const char *proto, const simcu_rendezvous *rv, void **ref) {
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = name;
  k.issued_ns = group_issued; /* the data exchange before the launch is not GPU time */
  k.grid[0] = channels_of(wire);
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = warps_of(proto) * 32;
  k.block[1] = k.block[2] = 1;
  k.static_smem = 8720;
  k.regs = 96;
  k.flops = flops;
  k.bytes = mem_bytes;
  k.dtype = dtype;
  k.floor_ns = (uint64_t)(latency_ns(proto, c->nranks) + wire / BUSBW * 1e9);
  if (rv) k.floor_ns += slow_net_ns(c);
  k.rv = rv;
  if (getenv("SIMNCCL_TRACE"))
    fprintf(stderr, "[simnccl pid %d rank %d/%d] %s stream %p rv %016llx seq %llu rank %d/%d\n",
            (int)getpid(), c->rank, c->nranks, name, (void *)stream,
            rv ? (unsigned long long)rv->key : 0ull, rv ? (unsigned long long)rv->seq : 0ull,
            rv ? rv->rank : -1, rv ? rv->nranks : 0);
  int r = simcu_launch_kernel_ref(stream, &k, ref);
  return r ? fail(ncclUnhandledCudaError, "simulated NCCL: kernel launch failed%s", NULL)
           : ncclSuccess;
}

/* ---- the profiler plugin's Group, Coll and P2p events (profiler.c) ---- */
static const char *dt_nccl_name(ncclDataType_t t) {
  static const char *const n[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
                                  "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64",
                                  "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return (int)t >= 0 && (size_t)t < sizeof n / sizeof *n ? n[t] : "ncclUint8";
}
static void *prof_group(struct ncclComm *c) {
  dlh_ncclp_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = DLH_NCCLP_GROUP;
  d.rank = c->rank;
  return simprof_start(c->prof_ctx, c->prof_mask, &d);
}
/* The op's Coll (seqNumber: the communicator's collectives so far) or P2p event, and what its
 * kernel's proxy moves. */
static void prof_task(struct ncclComm *c, void *group, const struct op *o, unsigned nch,
                      const char *proto, struct simprof_task *t) {
  dlh_ncclp_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.parent = group;
  d.rank = c->rank;
  int n = c->nranks;
  t->bytes = wire_bytes(o);
  if (o->kind < OP_SEND) {
    d.type = DLH_NCCLP_COLL;
    d.coll.c.seq = c->prof_seq++;
    d.coll.c.func = op_names[o->kind];
    d.coll.c.send_buff = o->send;
    d.coll.c.recv_buff = o->recv;
    d.coll.c.count = o->count;
    d.coll.c.root = o->root;
    d.coll.c.datatype = dt_nccl_name(o->dt);
    d.coll.c.nchannels = (uint8_t)nch;
    d.coll.c.nwarps = (uint8_t)warps_of(proto);
    d.coll.c.algo = "RING";
    d.coll.c.proto = proto;
    d.coll.parent_group = group;
    t->peer_send = n > 1 ? (c->rank + 1) % n : -1;
    t->peer_recv = n > 1 ? (c->rank + n - 1) % n : -1;
  } else {
    d.type = DLH_NCCLP_P2P;
    d.p2p.p.func = op_names[o->kind];
    d.p2p.p.buff = o->kind == OP_SEND ? (void *)o->send : o->recv;
    d.p2p.p.datatype = dt_nccl_name(o->dt);
    d.p2p.p.count = o->count;
    d.p2p.p.peer = o->root;
    d.p2p.p.nchannels = (uint8_t)nch;
    d.p2p.parent_group = group;
    t->peer_send = o->kind == OP_SEND && o->root != c->rank ? o->root : -1;
    t->peer_recv = o->kind == OP_RECV && o->root != c->rank ? o->root : -1;
  }
  t->handle = simprof_start(c->prof_ctx, c->prof_mask, &d);
}
/* Starts the events of the ops of c of the kernel's kind (p2p or not); returns how many. */
static int prof_tasks(struct ncclComm *c, void *group, struct op *ops, int nops, int p2p,
                      unsigned nch, const char *proto, struct simprof_task **out) {
  int n = 0;
  *out = NULL;
  if (!c->prof_mask) { /* no plugin: the sequence numbers still count */
    for (int i = 0; i < nops; i++)
      if (ops[i].comm == c && ops[i].kind < OP_SEND && !p2p) c->prof_seq++;
    return 0;
  }
  for (int i = 0; i < nops; i++) n += ops[i].comm == c && (ops[i].kind >= OP_SEND) == p2p;
  if (!n || !(*out = calloc((size_t)n, sizeof **out))) return 0;
  n = 0;
  for (int i = 0; i < nops; i++)
    if (ops[i].comm == c && (ops[i].kind >= OP_SEND) == p2p)
      prof_task(c, group, &ops[i], nch, proto, &(*out)[n++]);
  return n;
}
static void prof_launched(struct ncclComm *c, void *ref, struct simprof_task *t, int n,
                          unsigned nch, const char *proto) {
  for (int i = 0; i < n; i++) simprof_stop(t[i].handle); /* enqueued: NCCL stops them here */
  if (c->prof_mask) simprof_kernel(c->prof_ctx, c->prof_mask, c->rank, ref, t, n, (int)nch, proto);
  else if (ref) simcu_op_release(ref);
  free(t);
}

static ncclResult_t launch_comm_ops(struct ncclComm *c, struct op *ops, int nops) {
  ncclResult_t res = ncclSuccess;
  void *group = c->prof_mask ? prof_group(c) : NULL;
  struct simprof_task *tasks;
  void *ref = NULL;
  int ntasks;
  /* collectives of this communicator: one kernel */
  double wire = 0, mem = 0, flops = 0;
  struct op *first = NULL;
  for (int i = 0; i < nops; i++) {
    if (ops[i].comm != c || ops[i].kind >= OP_SEND) continue;
    if (!first) first = &ops[i];
    wire += wire_bytes(&ops[i]);
    mem += (double)in_bytes(&ops[i], c->rank) + (double)out_bytes(&ops[i], c->rank);
    if (ops[i].kind == OP_ALLREDUCE || ops[i].kind == OP_REDUCE || ops[i].kind == OP_REDUCESCATTER)
      flops += (double)ops[i].count * (c->nranks - 1);
  }
  if (first) {
    char name[160];
    const char *proto = proto_of(wire);
    int red = first->kind == OP_ALLREDUCE || first->kind == OP_REDUCE ||
              first->kind == OP_REDUCESCATTER;
    if (red)
      snprintf(name, sizeof name, "ncclDevKernel_%s_%s_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
               op_names[first->kind], redop_name(first->redop), dt_name(first->dt), proto);
    else if (first->kind == OP_ALLTOALL || first->kind == OP_GATHER || first->kind == OP_SCATTER)
      snprintf(name, sizeof name, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
    else
      snprintf(name, sizeof name, "ncclDevKernel_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
               op_names[first->kind], proto);
    simcu_rendezvous rv = {c->key, c->launch_seq++, c->rank, c->nranks};
    ntasks = prof_tasks(c, group, ops, nops, 0, channels_of(wire), proto, &tasks);
    res = launch(c, first->stream, name, wire, mem, flops, dt_class(first->dt), proto,
                 c->nranks > 1 ? &rv : NULL, c->prof_mask ? &ref : NULL);
    prof_launched(c, ref, tasks, ntasks, channels_of(wire), proto);
  }
  /* send/recv: one SendRecv kernel for all of this communicator's p2p ops in the group. A
   * lone send or recv (a group of one) meets its peer in a pair rendezvous; a group of several
   * has no rendezvous, since one kernel can wait for only one rendezvous and a per-peer choice
   * could deadlock rings (each rank's kernels are serialized on its stream). */
  int np2p = 0;
  double w = 0;
  struct op *p2 = NULL;
  for (int i = 0; i < nops; i++)
    if (ops[i].comm == c && ops[i].kind >= OP_SEND) {
      if (!p2) p2 = &ops[i];
      np2p++;
      w += wire_bytes(&ops[i]);
    }
  if (p2 && res == ncclSuccess) {
    int peer = p2->root;
    int lo = c->rank < peer ? c->rank : peer, hi = c->rank < peer ? peer : c->rank;
    simcu_rendezvous rv = {c->key ^ (0x9e3779b97f4a7c15ull * (uint64_t)(lo * MAXR + hi + 1)), 0,
                           c->rank == lo ? 0 : 1, 2};
    int pair = np2p == 1 && peer != c->rank;
    if (pair) rv.seq = c->pair_launch[peer]++;
    ref = NULL;
    ntasks = prof_tasks(c, group, ops, nops, 1, channels_of(w), proto_of(w), &tasks);
    res = launch(c, p2->stream, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", w,
                 2 * w, 0, dt_class(p2->dt), proto_of(w), pair ? &rv : NULL,
                 c->prof_mask ? &ref : NULL);
    prof_launched(c, ref, tasks, ntasks, channels_of(w), proto_of(w));
  }
  simprof_stop(group);
  return res;
}

static ncclResult_t finish_inits(void);

static ncclResult_t run_ops(struct op *ops, int nops) {
  ncclResult_t res = ncclSuccess, r;
  group_issued = simcu_now_ns();
  /* When the data exchange has to wait inside the call (the blocking fallback, where
   * process_vm_writev is not permitted), the kernels are launched first: each rank's kernel then
   * starts on its stream when this rank arrives, as a real NCCL kernel starts and waits for its
   * peers. Otherwise the data goes first: the last rank writes every output before its kernel
   * (whose start completes the rendezvous) can let the others' synchronisations return. */
  int kernels_first = 0;
  for (int i = 0; i < nops; i++)
    if (ops[i].comm->hdr->pvw_fail) kernels_first = 1;
  if (kernels_first) {
    for (int i = 0; i < nops; i++) {
      int seen = 0;
      for (int j = 0; j < i; j++)
        if (ops[j].comm == ops[i].comm) seen = 1;
      if (!seen && (r = launch_comm_ops(ops[i].comm, ops, nops)) != ncclSuccess) res = r;
    }
  }
  /* data: sends, then collectives, then receives (so the blocking fallback cannot deadlock) */
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < nops; i++) {
      int k = ops[i].kind;
      if ((pass == 0 && k == OP_SEND) || (pass == 1 && k < OP_SEND) || (pass == 2 && k == OP_RECV)) {
        int np2p = 0;
        for (int j = 0; j < nops && k >= OP_SEND; j++)
          np2p += ops[j].comm == ops[i].comm && ops[j].kind >= OP_SEND;
        r = k >= OP_SEND ? p2p_exchange(&ops[i], np2p > 1) : coll_exchange(&ops[i], 0);
        if (r != ncclSuccess) res = r;
      }
    }
  /* self send/recv pairs within the group */
  for (int i = 0; i < nops; i++)
    if (ops[i].kind == OP_SEND && ops[i].root == ops[i].comm->rank)
      for (int j = 0; j < nops; j++)
        if (ops[j].kind == OP_RECV && ops[j].comm == ops[i].comm && ops[j].root == ops[j].comm->rank) {
          memmove(ops[j].recv, ops[i].send, ops[i].count * dt_size(ops[i].dt));
          ops[j].root = -2 - ops[j].root; /* consumed */
          ops[i].root = -2 - ops[i].root;
          break;
        }
  for (int i = 0; i < nops; i++)
    if (ops[i].root <= -2) ops[i].root = -2 - ops[i].root;
  if (!kernels_first) {
    for (int i = 0; i < nops; i++) {
      int seen = 0;
      for (int j = 0; j < i; j++)
        if (ops[j].comm == ops[i].comm) seen = 1;
      if (!seen && (r = launch_comm_ops(ops[i].comm, ops, nops)) != ncclSuccess) res = r;
    }
  }
  return res;
}

static ncclResult_t enqueue(struct ncclComm *c, int kind, const void *send, void *recv,
                            size_t count, ncclDataType_t dt, ncclRedOp_t redop, int root,
                            cudaStream_t stream) {
  if (!c || c->magic != COMM_MAGIC)
    return fail(ncclInvalidArgument, "simulated NCCL: invalid communicator%s", NULL);
  if (c->suspended)
    return fail(ncclInvalidUsage, "simulated NCCL: communicator is suspended%s", NULL);
  if ((int)dt < 0 || dt >= ncclNumTypes)
    return fail(ncclInvalidArgument, "simulated NCCL: invalid data type%s", NULL);
  int needs_root = kind == OP_BROADCAST || kind == OP_REDUCE || kind == OP_GATHER ||
                   kind == OP_SCATTER || kind >= OP_SEND;
  if (needs_root && (root < 0 || root >= c->nranks))
    return fail(ncclInvalidArgument, "simulated NCCL: invalid root/peer%s", NULL);
  if ((int)redop < 0 || redop >= ncclNumOps)
    return fail(ncclInvalidArgument, "simulated NCCL: invalid reduction%s", NULL);
  struct op chk = {c, kind, send, recv, count, dt, redop, root, stream};
  if (count && ((kind != OP_RECV && !send && in_bytes(&chk, c->rank)) ||
                (kind != OP_SEND && !recv && out_bytes(&chk, c->rank))))
    return fail(ncclInvalidArgument, "simulated NCCL: NULL buffer%s", NULL);
  struct op o = {c, kind, send, recv, count, dt, redop, root, stream};
  if (group_depth > 0) {
    if (npend == cappend) {
      cappend = cappend ? 2 * cappend : 16;
      pend = realloc(pend, sizeof *pend * (size_t)cappend);
    }
    pend[npend++] = o;
    return ncclSuccess;
  }
  return run_ops(&o, 1);
}

/* ---- public API ---- */
ncclResult_t pncclGetVersion(int *version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetVersion)

ncclResult_t pncclGetUniqueId(ncclUniqueId *id) {
  if (!id) return ncclInvalidArgument;
  memset(id, 0, sizeof *id);
  size_t got = 0;
  while (got < sizeof id->internal) {
    ssize_t r = getrandom(id->internal + got, sizeof id->internal - got, 0);
    if (r <= 0) {
      uint64_t x = now_ns() ^ ((uint64_t)getpid() << 32);
      for (; got < sizeof id->internal; got++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        id->internal[got] = (char)(x >> 56);
      }
      break;
    }
    got += (size_t)r;
  }
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetUniqueId)

static int current_device(void) {
  int (*get)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDevice");
  int d = 0;
  if (get && get(&d) != 0) d = 0;
  return d;
}

static struct shm_hdr *open_clique(const ncclUniqueId *id, int nranks, size_t *size,
                                   char *name, size_t nlen) {
  snprintf(name, nlen, "/dlhook-simnccl-%016llx",
           (unsigned long long)hash_bytes(id->internal, sizeof id->internal));
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0) return NULL;
  *size = shm_size_of(nranks);
  struct stat sb;
  if (fstat(fd, &sb) == 0 && (size_t)sb.st_size < *size && ftruncate(fd, (off_t)*size) != 0) {
    close(fd);
    return NULL;
  }
  void *p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

static ncclResult_t join(struct ncclComm **out, int nranks, const ncclUniqueId *id, int rank,
                         int dev, int blocking) {
  if (!out || nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "simulated NCCL: invalid nranks/rank%s", NULL);
  struct ncclComm *c = calloc(1, sizeof *c);
  c->hdr = open_clique(id, nranks, &c->shm_size, c->name, sizeof c->name);
  if (!c->hdr) {
    free(c);
    return fail(ncclSystemError, "simulated NCCL: cannot create shared memory: %s",
                strerror(errno));
  }
  c->magic = COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->dev = dev;
  c->blocking = blocking;
  c->key = hash_bytes(id->internal, sizeof id->internal) | 1;
  c->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
  c->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
  c->pair_launch = calloc((size_t)nranks, sizeof(uint64_t));
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* lets the other ranks write to us */
  struct shm_hdr *h = c->hdr;
  __atomic_compare_exchange_n(&h->nranks, &(uint32_t){0}, (uint32_t)nranks, 0,
                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  __atomic_compare_exchange_n(&h->p2p_data, &(uint32_t){0}, (uint32_t)p2p_data_size(nranks), 0,
                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  if (LOAD(&h->nranks) != (uint32_t)nranks) {
    munmap(h, c->shm_size);
    free(c);
    return fail(ncclInvalidUsage, "simulated NCCL: ranks disagree on nranks%s", NULL);
  }
  h->pid[rank] = getpid();
  h->probe_addr[rank] = (uint64_t)(uintptr_t)&probe_word;
  if (__atomic_add_fetch(&h->joined, 1, __ATOMIC_ACQ_REL) == (uint32_t)nranks)
    shm_unlink(c->name);
  *out = c;
  return ncclSuccess;
}

/* phase 1: all joined; probe that we can read every other rank's memory */
static ncclResult_t init_phase1(struct ncclComm *c) {
  struct shm_hdr *h = c->hdr;
  if (WAIT_UNTIL(LOAD(&h->joined) >= (uint32_t)c->nranks))
    return fail(ncclSystemError, "simulated NCCL: timed out waiting for all ranks to join%s", NULL);
  int others = 0;
  for (int r = 0; r < c->nranks; r++) others |= h->pid[r] != getpid();
  if (others && getenv("SIMNCCL_BLOCKING")) STORE(&h->pvw_fail, 1); /* test knob: the fallback */
  for (int r = 0; r < c->nranks; r++) {
    if (h->pid[r] == getpid()) continue;
    uint64_t v = 0;
    struct iovec l = {&v, sizeof v}, rm = {(void *)(uintptr_t)h->probe_addr[r], sizeof v};
    if (process_vm_readv(h->pid[r], &l, 1, &rm, 1, 0) != (ssize_t)sizeof v || v != probe_word)
      STORE(&h->pvw_fail, 1);
  }
  __atomic_add_fetch(&h->probed, 1, __ATOMIC_ACQ_REL);
  return ncclSuccess;
}
static ncclResult_t init_phase2(struct ncclComm *c) {
  if (WAIT_UNTIL(LOAD(&c->hdr->probed) >= (uint32_t)c->nranks))
    return fail(ncclSystemError, "simulated NCCL: timed out during init%s", NULL);
  simprof_comm_init(c->key, "", c->nranks, c->rank, &c->prof_ctx, &c->prof_mask);
  c->init_done = 1;
  return ncclSuccess;
}

static ncclResult_t finish_inits(void) {
  ncclResult_t res = ncclSuccess, r;
  for (int i = 0; i < npend_init; i++)
    if ((r = init_phase1(pend_init[i])) != ncclSuccess) res = r;
  for (int i = 0; i < npend_init && res == ncclSuccess; i++)
    if ((r = init_phase2(pend_init[i])) != ncclSuccess) res = r;
  npend_init = 0;
  return res;
}

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                              int blocking, int dev) {
  struct ncclComm *c = NULL;
  ncclResult_t r = join(&c, nranks, &id, rank, dev < 0 ? current_device() : dev, blocking);
  if (r != ncclSuccess) return r;
  *comm = c;
  if (group_depth > 0) {
    if (npend_init == cappend_init) {
      cappend_init = cappend_init ? 2 * cappend_init : 8;
      pend_init = realloc(pend_init, sizeof *pend_init * (size_t)cappend_init);
    }
    pend_init[npend_init++] = c;
    return ncclSuccess;
  }
  if ((r = init_phase1(c)) != ncclSuccess) return r;
  return init_phase2(c);
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  return init_rank(comm, nranks, id, rank, 1, -1);
}
NCCL_ALIAS(ncclCommInitRank)

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t *config) {
  return init_rank(comm, nranks, id, rank,
                   config && config->blocking != NCCL_CONFIG_UNDEF_INT ? config->blocking : 1, -1);
}
NCCL_ALIAS(ncclCommInitRankConfig)

ncclResult_t pncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                       ncclUniqueId *ids, ncclConfig_t *config) {
  if (nId < 1 || !ids) return ncclInvalidArgument;
  return pncclCommInitRankConfig(comm, nranks, ids[0], rank, config);
}
NCCL_ALIAS(ncclCommInitRankScalable)

ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  if (!comms || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < ndev && r == ncclSuccess; i++)
    r = join(&comms[i], ndev, &id, i, devlist ? devlist[i] : i, 1);
  for (int i = 0; i < ndev && r == ncclSuccess; i++) r = init_phase1(comms[i]);
  for (int i = 0; i < ndev && r == ncclSuccess; i++) r = init_phase2(comms[i]);
  return r;
}
NCCL_ALIAS(ncclCommInitAll)

/* Collective: ranks exchange (color, key) through the parent, then each color's members make
 * a new clique whose id derives from the parent's key, the split count and the color. */
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                            ncclConfig_t *config) {
  if (!comm || comm->magic != COMM_MAGIC || !newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
    return fail(ncclInvalidArgument, "simulated NCCL: ncclCommSplit: invalid argument%s", NULL);
  int n = comm->nranks;
  int32_t mine[2] = {color, key};
  int32_t *all = calloc((size_t)n * 2, sizeof *all);
  struct op o = {comm, OP_ALLGATHER, mine, all, 2, ncclInt32, ncclSum, 0, NULL};
  ncclResult_t r = coll_exchange(&o, 1);
  uint64_t splitno = comm->splits++;
  *newcomm = NULL;
  if (r != ncclSuccess || color == NCCL_SPLIT_NOCOLOR) {
    free(all);
    return r;
  }
  int members = 0, newrank = 0;
  for (int j = 0; j < n; j++) {
    if (all[2 * j] != color) continue;
    members++;
    if (all[2 * j + 1] < key || (all[2 * j + 1] == key && j < comm->rank)) newrank++;
  }
  free(all);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  uint64_t words[4] = {comm->key, splitno, (uint64_t)(uint32_t)color, 0x53504c4954ull};
  memcpy(id.internal, words, sizeof words);
  return init_rank(newcomm, members, id, newrank,
                   config && config->blocking != NCCL_CONFIG_UNDEF_INT ? config->blocking : 1,
                   comm->dev);
}
NCCL_ALIAS(ncclCommSplit)

static ncclResult_t close_comm(ncclComm_t c) {
  if (!c || c->magic != COMM_MAGIC) return ncclInvalidArgument;
  for (int i = 0; i < npend_init; i++)
    if (pend_init[i] == c) pend_init[i] = pend_init[--npend_init];
  c->magic = 0;
  if (c->init_done) simprof_comm_fini(c->prof_ctx, c->prof_mask);
  if (__atomic_add_fetch(&c->hdr->closed, 1, __ATOMIC_ACQ_REL) == 1 &&
      LOAD(&c->hdr->joined) < LOAD(&c->hdr->nranks))
    shm_unlink(c->name); /* aborted before everyone joined */
  munmap(c->hdr, c->shm_size);
  free(c->send_seq);
  free(c->recv_seq);
  free(c->pair_launch);
  free(c);
  return ncclSuccess;
}
ncclResult_t pncclCommDestroy(ncclComm_t c) { return close_comm(c); }
NCCL_ALIAS(ncclCommDestroy)
ncclResult_t pncclCommAbort(ncclComm_t c) { return close_comm(c); }
NCCL_ALIAS(ncclCommAbort)
ncclResult_t pncclCommFinalize(ncclComm_t c) {
  return c && c->magic == COMM_MAGIC ? ncclSuccess : ncclInvalidArgument;
}
NCCL_ALIAS(ncclCommFinalize)
ncclResult_t pncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err) {
  if (!c || c->magic != COMM_MAGIC || !err) return ncclInvalidArgument;
  *err = c->init_done ? ncclSuccess : ncclInProgress;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommGetAsyncError)
ncclResult_t pncclCommCount(const ncclComm_t c, int *count) {
  if (!c || c->magic != COMM_MAGIC || !count) return ncclInvalidArgument;
  *count = c->nranks;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommCount)
ncclResult_t pncclCommCuDevice(const ncclComm_t c, int *dev) {
  if (!c || c->magic != COMM_MAGIC || !dev) return ncclInvalidArgument;
  *dev = c->dev;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommCuDevice)
ncclResult_t pncclCommUserRank(const ncclComm_t c, int *rank) {
  if (!c || c->magic != COMM_MAGIC || !rank) return ncclInvalidArgument;
  *rank = c->rank;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommUserRank)

const char *pncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}
NCCL_ALIAS(ncclGetErrorString)
const char *pncclGetLastError(ncclComm_t comm) { return last_error; }
NCCL_ALIAS(ncclGetLastError)

ncclResult_t pncclMemAlloc(void **ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  if (posix_memalign(ptr, 4096, size ? size : 1)) return ncclSystemError;
  memset(*ptr, 0, size);
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemAlloc)
ncclResult_t pncclMemFree(void *ptr) {
  free(ptr);
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemFree)

ncclResult_t pncclGroupStart(void) {
  if (group_depth == 0) group_error = ncclSuccess;
  group_depth++;
  return ncclSuccess;
}
NCCL_ALIAS(ncclGroupStart)
ncclResult_t pncclGroupEnd(void) {
  if (group_depth <= 0) return fail(ncclInvalidUsage, "simulated NCCL: ncclGroupEnd without ncclGroupStart%s", NULL);
  if (--group_depth > 0) return ncclSuccess;
  ncclResult_t r = finish_inits();
  if (r == ncclSuccess && npend) r = run_ops(pend, npend);
  npend = 0;
  return r != ncclSuccess ? r : group_error;
}
NCCL_ALIAS(ncclGroupEnd)

ncclResult_t pncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
                            ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_ALLREDUCE, s, r, count, dt, op, 0, st);
}
NCCL_ALIAS(ncclAllReduce)
ncclResult_t pncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt,
                            ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_ALLGATHER, s, r, count, dt, ncclSum, 0, st);
}
NCCL_ALIAS(ncclAllGather)
ncclResult_t pncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt,
                                ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_REDUCESCATTER, s, r, count, dt, op, 0, st);
}
NCCL_ALIAS(ncclReduceScatter)
ncclResult_t pncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                            ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_BROADCAST, s, r, count, dt, ncclSum, root, st);
}
NCCL_ALIAS(ncclBroadcast)
ncclResult_t pncclBcast(void *buf, size_t count, ncclDataType_t dt, int root, ncclComm_t c,
                        cudaStream_t st) {
  return enqueue(c, OP_BROADCAST, buf, buf, count, dt, ncclSum, root, st);
}
NCCL_ALIAS(ncclBcast)
ncclResult_t pncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                         int root, ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_REDUCE, s, r, count, dt, op, root, st);
}
NCCL_ALIAS(ncclReduce)
ncclResult_t pncclAlltoAll(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t c,
                           cudaStream_t st) {
  return enqueue(c, OP_ALLTOALL, s, r, count, dt, ncclSum, 0, st);
}
NCCL_ALIAS(ncclAlltoAll)
ncclResult_t pncclGather(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                         ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_GATHER, s, r, count, dt, ncclSum, root, st);
}
NCCL_ALIAS(ncclGather)
ncclResult_t pncclScatter(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                          ncclComm_t c, cudaStream_t st) {
  return enqueue(c, OP_SCATTER, s, r, count, dt, ncclSum, root, st);
}
NCCL_ALIAS(ncclScatter)
ncclResult_t pncclSend(const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                       cudaStream_t st) {
  return enqueue(c, OP_SEND, s, NULL, count, dt, ncclSum, peer, st);
}
NCCL_ALIAS(ncclSend)
ncclResult_t pncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                       cudaStream_t st) {
  return enqueue(c, OP_RECV, NULL, r, count, dt, ncclSum, peer, st);
}
NCCL_ALIAS(ncclRecv)

/* ---- NCCL 2.30 additions (PyPI nvidia-nccl-cu13, linked by PyTorch); the installed headers
 * may be older, so their prototypes are repeated here. Suspend/resume only gate the
 * communicator (it holds no GPU memory in the simulation); memory statistics are 0. */
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 0)
typedef enum { ncclStatGpuMemSuspend = 0, ncclStatGpuMemSuspended = 1, ncclStatGpuMemPersist = 2,
               ncclStatGpuMemTotal = 3 } ncclCommMemStat_t;
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
#endif
ncclResult_t pncclCommSuspend(ncclComm_t c, int flags) {
  if (!c || c->magic != COMM_MAGIC) return ncclInvalidArgument;
  if (c->suspended) return ncclInvalidUsage;
  c->suspended = 1;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommSuspend)
ncclResult_t pncclCommResume(ncclComm_t c) {
  if (!c || c->magic != COMM_MAGIC) return ncclInvalidArgument;
  if (!c->suspended) return ncclInvalidUsage;
  c->suspended = 0;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommResume)
ncclResult_t pncclCommMemStats(ncclComm_t c, ncclCommMemStat_t stat, uint64_t *value) {
  if (!c || c->magic != COMM_MAGIC || !value) return ncclInvalidArgument;
  switch ((int)stat) {
  case 0: case 2: case 3: *value = 0; return ncclSuccess;
  case 1: *value = (uint64_t)c->suspended; return ncclSuccess;
  default: return ncclInvalidArgument;
  }
}
NCCL_ALIAS(ncclCommMemStats)

/* ---- buffer registration (PyTorch registers its allocator's segments with every
 * communicator): the simulation needs none, the handle only proves the pairing. */
#define REG_MAGIC 0x4e524547u
struct reg { unsigned magic; ncclComm_t comm; void *buff; size_t size; };
ncclResult_t pncclCommRegister(const ncclComm_t c, void *buff, size_t size, void **handle) {
  if (!c || c->magic != COMM_MAGIC || !handle) return ncclInvalidArgument;
  if (!buff && size) return ncclInvalidArgument;
  struct reg *r = calloc(1, sizeof *r);
  if (!r) return ncclSystemError;
  *r = (struct reg){REG_MAGIC, c, buff, size};
  *handle = r;
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommRegister)
ncclResult_t pncclCommDeregister(const ncclComm_t c, void *handle) {
  struct reg *r = handle;
  if (!c || c->magic != COMM_MAGIC || !r || r->magic != REG_MAGIC || r->comm != c)
    return ncclInvalidArgument;
  r->magic = 0;
  free(r);
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommDeregister)
