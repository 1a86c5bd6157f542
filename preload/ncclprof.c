/* ncclprof.c — libdlhook.so is NCCL's profiler plugin (docs/nccl-profiler.md; the interface:
 * common/dlh_ncclprof.h). NCCL 2.23+ dlopens the library NCCL_PROFILER_PLUGIN names and calls
 * the functions of its ncclProfiler_v5 (or ncclProfiler_v4) struct for every communicator,
 * group, collective, send/receive, proxy operation and step, and kernel channel. The constructor
 * points NCCL_PROFILER_PLUGIN at libdlhook.so itself (NCCL reads it at its first communicator's
 * init, later); when the user named another plugin, dlhook stands aside (one warning once the
 * process records, nothing of NCCL's plugin events in the trace).
 *
 * Hot path: each call NCCL makes stores one record in the calling thread's ring, like every
 * other event (no lock, no malloc): an event's handle is its id (a per-process counter, never
 * dereferenced), a communicator's context a slot of a static table. The writer thread turns
 * each record into an NcclEvent (format/dlhook.proto) and the reader pairs them by id.
 *
 * NCCL record (ring.h kind DLH_REC_NCCL): header fn = phase | type << 8; word 1: ticks; word 2:
 * the event id; then by phase
 *   STOP   nothing more
 *   STATE  word 3: the state; word 4: its value (KernelChStop: the GPU's timer; a proxy step:
 *          the bytes transferred; proxy control: the appended operations)
 *   START  word 3: parent id; word 4: the communicator's id; word 5: rank | nranks << 32; then
 *          COLL   6 seq, 7 count, 8 root | nchannels << 32 | nwarps << 40, 9-10 func,
 *                 11-12 datatype, 13-14 algorithm, 15 protocol (text, NUL-padded)
 *          P2P    6 count, 7 peer | nchannels << 32, 9-10 func, 11-12 datatype
 *          PROXY_OP 6 channel | is_send << 8, 7 peer | nsteps << 32, 8 chunk size
 *          PROXY_STEP 6 step
 *          KERNEL_CH  6 channel, 7 the GPU's timer at the channel's start
 *          COMM (init) 6-9 the communicator's name */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dlh_format.h"
#include "dlh_internal.h"
#include "dlh_ncclprof.h"

#define NCCL_COMM_EV 1024 /* NcclEventType NCCL_COMM: not one of NCCL's bits */
enum { PH_START = 0, PH_STATE = 1, PH_STOP = 2 };
#define MAX_COMMS 4096
#define REC_MAX 16

struct comm_slot { uint64_t id; int rank, nranks; };
static struct comm_slot comms[MAX_COMMS];
static _Atomic uint32_t ncomms;
static _Atomic uint64_t next_id = 1;
static int event_mask = -1;  /* DLHOOK_NCCL_EVENTS; -1: not read yet */
static int stood_aside;       /* NCCL_PROFILER_PLUGIN names another plugin */
static char other_plugin[256];
static pid_t my_pid;

/* ---------------------------------------------------------------- setting */

static const struct { const char *name; int bit; } kinds[] = {
    {"Group", DLH_NCCLP_GROUP},         {"Coll", DLH_NCCLP_COLL},
    {"P2p", DLH_NCCLP_P2P},             {"ProxyOp", DLH_NCCLP_PROXY_OP},
    {"ProxyStep", DLH_NCCLP_PROXY_STEP}, {"ProxyCtrl", DLH_NCCLP_PROXY_CTRL},
    {"KernelCh", DLH_NCCLP_KERNEL_CH},  {"Net", DLH_NCCLP_NET_PLUGIN},
    {"NetPlugin", DLH_NCCLP_NET_PLUGIN}};
#define DEFAULT_EVENTS (DLH_NCCLP_COLL | DLH_NCCLP_P2P | DLH_NCCLP_PROXY_OP | DLH_NCCLP_KERNEL_CH)

/* DLHOOK_NCCL_EVENTS: names separated by commas ("all", "none"); an unknown name warns once. */
static int parse_events(const char *s) {
  if (!s || !*s) return DEFAULT_EVENTS;
  int m = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
    if (!strcasecmp(w, "all")) { m |= 0xff; continue; }
    if (!strcasecmp(w, "none") || !strcmp(w, "0")) continue;
    size_t i = 0;
    for (; i < sizeof kinds / sizeof *kinds; i++)
      if (!strcasecmp(w, kinds[i].name)) break;
    if (i < sizeof kinds / sizeof *kinds) m |= kinds[i].bit;
    else dlh_warn("DLHOOK_NCCL_EVENTS: unknown event type '%s' ignored (Group, Coll, P2p, ProxyOp, "
                  "ProxyStep, ProxyCtrl, KernelCh, Net, all, none)", w);
  }
  return m;
}

/* Constructor: NCCL_PROFILER_PLUGIN → libdlhook.so, unless the user set it (or no events). */
void dlh_ncclprof_setup(void) {
  my_pid = getpid();
  event_mask = parse_events(dlh_cfg.nccl_events);
  if (!event_mask) return;
  const char *cur = getenv("NCCL_PROFILER_PLUGIN");
  Dl_info info;
  if (!dladdr((void *)dlh_ncclprof_setup, &info) || !info.dli_fname) return;
  if (!cur || !*cur) {
    setenv("NCCL_PROFILER_PLUGIN", info.dli_fname, 1);
    return;
  }
  /* ours already (inherited from a parent under dlhook)? */
  void *self = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  void *other = strchr(cur, '/') ? dlopen(cur, RTLD_NOLOAD | RTLD_LAZY) : NULL;
  int ours = self && other && self == other;
  if (self) dlclose(self);
  if (other) dlclose(other);
  if (ours) return;
  if (!strcasecmp(cur, "none")) return; /* the user turned NCCL's plugins off */
  stood_aside = 1;
  snprintf(other_plugin, sizeof other_plugin, "%s", cur);
}

/* The process records (runtime.c, its first recorded call): the warning of a plugin that is not
 * ours comes now, once, and only from processes that record (not from every shell). */
void dlh_ncclprof_started(void) {
  static int warned;
  if (!stood_aside || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  dlh_warn("NCCL_PROFILER_PLUGIN names another profiler plugin (%s): NCCL keeps it, and the "
           "trace has no NCCL profiler events (algorithm, protocol, channels, kernel channel times)",
           other_plugin);
}

/* ---------------------------------------------------------------- hot path */

static uint64_t *begin(uint32_t phase, uint32_t type, uint64_t id, uint64_t n) {
  if (!dlh_recording || __atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED)) return NULL;
  struct dlh_thread *t = dlh_self;
  if (!t) t = dlh_thread_attach();
  if (!t || t->hot.blocked) return NULL;
  uint64_t *w = dlh_ring_reserve(t, n);
  if (!w) return NULL;
  w[0] = dlh_rec_header(phase | type << 8, 0, 0, DLH_REC_NCCL, 0, n);
  w[1] = dlh_ticks();
  w[2] = id;
  return w;
}
static void end(uint64_t n) { dlh_ring_publish(dlh_self, n); }

/* Copies up to 8*words - 1 bytes of s, NUL-padded, into w. */
static void text(uint64_t *w, int words, const char *s) {
  memset(w, 0, (size_t)words * 8);
  if (s) memcpy(w, s, strnlen(s, (size_t)words * 8 - 1));
}

static int comm_init(void **context, uint64_t comm_id, int *mask, const char *name, int nranks,
                     int rank) {
  *mask = 0;
  *context = NULL;
  if (event_mask <= 0 || stood_aside) return 1; /* NCCL disables the plugin for this comm */
  uint32_t i = atomic_fetch_add(&ncomms, 1);
  if (i >= MAX_COMMS) return 1;
  comms[i] = (struct comm_slot){comm_id, rank, nranks};
  *context = &comms[i];
  *mask = event_mask;
  uint64_t *w = begin(PH_START, NCCL_COMM_EV, 0, 10);
  if (w) {
    w[3] = 0;
    w[4] = comm_id;
    w[5] = (uint32_t)rank | (uint64_t)(uint32_t)nranks << 32;
    text(w + 6, 4, name);
    end(10);
  }
  return 0;
}

static int finalize(void *context) {
  struct comm_slot *c = context;
  if (!c) return 0;
  uint64_t *w = begin(PH_STOP, NCCL_COMM_EV, 0, 6);
  if (w) {
    w[3] = 0;
    w[4] = c->id;
    w[5] = (uint32_t)c->rank | (uint64_t)(uint32_t)c->nranks << 32;
    end(6);
  }
  return 0;
}

/* startEvent of either version: the type's part of the descriptor (coll, p2p, or un: the
 * union of the others). */
static int start(void *context, void **handle, uint64_t type, void *parent, int rank,
                 const struct dlh_ncclp_coll_v4 *coll, const struct dlh_ncclp_p2p_v4 *p2p,
                 const void *un) {
  *handle = NULL;
  struct comm_slot *c = context;
  if (!c || !(type & 0xff)) return 0;
  uint64_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
  uint64_t n = type == DLH_NCCLP_COLL ? 16 : type == DLH_NCCLP_P2P ? 13
             : type == DLH_NCCLP_PROXY_OP ? 9 : 8;
  uint64_t *w = begin(PH_START, (uint32_t)type, id, n);
  if (!w) return 0;
  w[3] = (uintptr_t)parent;
  w[4] = c->id;
  w[5] = (uint32_t)rank | (uint64_t)(uint32_t)c->nranks << 32;
  w[6] = w[7] = 0;
  switch (type) {
  case DLH_NCCLP_COLL:
    w[6] = coll->seq;
    w[7] = coll->count;
    w[8] = (uint32_t)coll->root | (uint64_t)coll->nchannels << 32 | (uint64_t)coll->nwarps << 40;
    text(w + 9, 2, coll->func);
    text(w + 11, 2, coll->datatype);
    text(w + 13, 2, coll->algo);
    text(w + 15, 1, coll->proto);
    break;
  case DLH_NCCLP_P2P:
    w[6] = p2p->count;
    w[7] = (uint32_t)p2p->peer | (uint64_t)p2p->nchannels << 32;
    w[8] = 0;
    text(w + 9, 2, p2p->func);
    text(w + 11, 2, p2p->datatype);
    break;
  case DLH_NCCLP_PROXY_OP: {
    const struct dlh_ncclp_proxy_op *o = un;
    if (o->pid != my_pid) w[3] = 0; /* PXN: the parent is another process's handle */
    w[6] = o->channel | (uint64_t)(o->is_send ? 1 : 0) << 8;
    w[7] = (uint32_t)o->peer | (uint64_t)(uint32_t)o->nsteps << 32;
    w[8] = (uint32_t)o->chunk_size;
    break;
  }
  case DLH_NCCLP_PROXY_STEP:
    w[6] = (uint32_t)((const int *)un)[0];
    break;
  case DLH_NCCLP_KERNEL_CH: {
    const struct dlh_ncclp_kernel_ch *k = un;
    w[6] = k->channel;
    w[7] = k->ptimer;
    break;
  }
  default:
    break;
  }
  end(n);
  *handle = (void *)(uintptr_t)id;
  return 0;
}

static int stop_event(void *handle) {
  uint64_t id = (uintptr_t)handle;
  if (!id) return 0;
  uint64_t *w = begin(PH_STOP, 0, id, 3);
  if (w) end(3);
  return 0;
}

static int record_state(void *handle, int state, dlh_ncclp_state_args *a) {
  uint64_t id = (uintptr_t)handle;
  if (!id) return 0;
  uint64_t v = 0;
  if (a) {
    if (state == DLH_NCCLP_KERNEL_CH_STOP) v = a->kernel_ch.ptimer;
    else if (state >= DLH_NCCLP_CTRL_IDLE && state <= DLH_NCCLP_CTRL_APPEND_END)
      v = (uint64_t)(int64_t)a->proxy_ctrl.appended_proxy_ops;
    else if ((state >= DLH_NCCLP_STEP_SEND_GPU_WAIT && state <= DLH_NCCLP_STEP_RECV_GPU_WAIT) ||
             state == DLH_NCCLP_STEP_SEND_PEER_WAIT)
      v = a->proxy_step.trans_size;
  }
  uint64_t *w = begin(PH_STATE, 0, id, 5);
  if (!w) return 0;
  w[3] = (uint32_t)state;
  w[4] = v;
  end(5);
  return 0;
}

/* ---------------------------------------------------------------- the two versions */

static int init5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                 int nranks, int rank, dlh_nccl_logger logfn) {
  (void)nnodes;
  (void)logfn;
  return comm_init(context, comm_id, mask, name, nranks, rank);
}
static int start5(void *context, void **handle, dlh_ncclp_descr_v5 *d) {
  if (!handle) return 0;
  if (!d) { *handle = NULL; return 0; }
  void *parent = d->parent;
  if (d->type == DLH_NCCLP_COLL && !parent) parent = d->coll.parent_group;
  if (d->type == DLH_NCCLP_P2P && !parent) parent = d->p2p.parent_group;
  return start(context, handle, d->type, parent, d->rank, &d->coll.c, &d->p2p.p, &d->proxy_op);
}
static int init4(void **context, int *mask, const char *name, uint64_t comm_hash, int nnodes,
                 int nranks, int rank, dlh_nccl_logger logfn) {
  (void)nnodes;
  (void)logfn;
  return comm_init(context, comm_hash, mask, name, nranks, rank);
}
static int start4(void *context, void **handle, dlh_ncclp_descr_v4 *d) {
  if (!handle) return 0;
  if (!d) { *handle = NULL; return 0; }
  return start(context, handle, d->type, d->parent, d->rank, &d->coll, &d->p2p, &d->proxy_op);
}

__attribute__((visibility("default"))) const dlh_ncclp_v5 ncclProfiler_v5 = {
    "dlhook", init5, start5, stop_event, record_state, finalize};
__attribute__((visibility("default"))) const dlh_ncclp_v4 ncclProfiler_v4 = {
    "dlhook", init4, start4, stop_event, record_state, finalize};

/* ---------------------------------------------------------------- writer side */

static char *text_of(const uint64_t *w, int words, char *buf) {
  memcpy(buf, w, (size_t)words * 8);
  buf[words * 8 - 1] = 0;
  return buf;
}

/* The GPU's timer (globaltimer: about CLOCK_REALTIME on a GPU; the simulator's is the host's
 * CLOCK_MONOTONIC) in the trace clock: whichever of the two clocks it is nearer to at the time
 * NCCL reported it. */
static uint64_t gpu_to_trace(uint64_t raw, uint64_t host_ns) {
  if (!raw) return 0;
  dlh_anchor a = dlh_clock_last();
  int64_t rt_off = (int64_t)(a.rt - a.ns);
  uint64_t host_rt = host_ns + (uint64_t)rt_off;
  uint64_t d_mono = raw > host_ns ? raw - host_ns : host_ns - raw;
  uint64_t d_rt = raw > host_rt ? raw - host_rt : host_rt - raw;
  return d_mono <= d_rt ? raw : raw - (uint64_t)rt_off;
}

/* A DLH_REC_NCCL record of thread t at w (nw words) as an NcclEvent packet. */
void dlh_ncclprof_convert(dlh_encoder *enc, struct dlh_thread *t, const uint64_t *w, uint64_t nw) {
  if (nw < 3) return;
  uint32_t fn = dlh_rec_fn(w[0]), phase = fn & 0xff, type = fn >> 8;
  Dlh__NcclEvent e = DLH__NCCL_EVENT__INIT;
  char b1[24], b2[24], b3[24], b4[16], b5[40];
  e.has_phase = 1;
  e.phase = phase;
  e.has_id = 1;
  e.id = w[2];
  e.has_tid = 1;
  e.tid = t->os.tid;
  e.has_ts_ns = 1;
  e.ts_ns = dlh_tick_ns(w[1]);
  if (type) { e.has_type = 1; e.type = type; }
  if (phase == PH_STATE && nw >= 5) {
    e.has_state = 1;
    e.state = (uint32_t)w[3];
    if (e.state == DLH_NCCLP_KERNEL_CH_STOP) {
      e.has_gpu_raw = e.has_gpu_ns = 1;
      e.gpu_raw = w[4];
      e.gpu_ns = gpu_to_trace(w[4], e.ts_ns);
    } else if (w[4]) {
      e.has_value = 1;
      e.value = w[4];
    }
  } else if (nw >= 6 && (phase == PH_START || type == NCCL_COMM_EV)) {
    if (w[3]) { e.has_parent = 1; e.parent = w[3]; }
    e.has_comm = 1;
    e.comm = w[4];
    e.has_rank = 1;
    e.rank = (int32_t)(uint32_t)w[5];
    e.has_nranks = 1;
    e.nranks = (uint32_t)(w[5] >> 32);
    if (type == NCCL_COMM_EV) {
      if (nw >= 10) e.name = text_of(w + 6, 4, b5);
    } else if (type == DLH_NCCLP_COLL && nw >= 16) {
      e.has_seq = e.has_count = e.has_peer = e.has_channels = e.has_warps = 1;
      e.seq = w[6];
      e.count = w[7];
      e.peer = (int32_t)(uint32_t)w[8];
      e.channels = (uint32_t)(w[8] >> 32) & 0xff;
      e.warps = (uint32_t)(w[8] >> 40) & 0xff;
      e.func = text_of(w + 9, 2, b1);
      e.dtype = text_of(w + 11, 2, b2);
      e.algo = text_of(w + 13, 2, b3);
      e.proto = text_of(w + 15, 1, b4);
    } else if (type == DLH_NCCLP_P2P && nw >= 13) {
      e.has_count = e.has_peer = e.has_channels = 1;
      e.count = w[6];
      e.peer = (int32_t)(uint32_t)w[7];
      e.channels = (uint32_t)(w[7] >> 32) & 0xff;
      e.func = text_of(w + 9, 2, b1);
      e.dtype = text_of(w + 11, 2, b2);
    } else if (type == DLH_NCCLP_PROXY_OP && nw >= 9) {
      e.has_channel = e.has_is_send = e.has_peer = e.has_steps = e.has_chunk = 1;
      e.channel = (uint32_t)w[6] & 0xff;
      e.is_send = (w[6] >> 8) & 1;
      e.peer = (int32_t)(uint32_t)w[7];
      e.steps = (uint32_t)(w[7] >> 32);
      e.chunk = w[8];
    } else if (type == DLH_NCCLP_PROXY_STEP && nw >= 7) {
      e.has_steps = 1;
      e.steps = (uint32_t)w[6];
    } else if (type == DLH_NCCLP_KERNEL_CH && nw >= 8) {
      e.has_channel = e.has_gpu_raw = e.has_gpu_ns = 1;
      e.channel = (uint32_t)w[6];
      e.gpu_raw = w[7];
      e.gpu_ns = gpu_to_trace(w[7], e.ts_ns);
    }
  }
  Dlh__NcclEvent *ev = &e;
  Dlh__NcclEventBatch b = DLH__NCCL_EVENT_BATCH__INIT;
  b.n_events = 1;
  b.events = &ev;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_NCCL_EVENTS;
  p.nccl_events = &b;
  dlh_enc_packet(enc, &p);
}
