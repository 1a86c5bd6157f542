/* dlh_ncclprof.h — NCCL's profiler plugin interface (versions 4 and 5), written from the layout
 * NVIDIA documents in NCCL's plugins/profiler/README.md and its profiler_v4.h / profiler_v5.h.
 * Shared by libdlhook.so (preload/ncclprof.c: dlhook is such a plugin) and the simulated NCCL
 * (tests/simcuda/libs/nccl/profiler.c: it loads one the way NCCL does). The names are ours; the
 * sizes, orders and meanings of the fields are NCCL's, so that a real NCCL can call dlhook and
 * the simulated NCCL can call a real plugin.
 *
 * How NCCL finds a plugin: NCCL_PROFILER_PLUGIN names a library (a path, a file name, or NAME
 * for libnccl-profiler-NAME.so; "none" disables it; unset: libnccl-profiler.so). NCCL dlopens it
 * and looks up the data symbol ncclProfiler_v6, then ncclProfiler_v5, ncclProfiler_v4, ... and
 * uses the first it finds. init is called for each communicator; a non-zero result disables
 * the plugin for it. Every other function should return 0 (ncclSuccess). */
#ifndef DLH_NCCLPROF_H
#define DLH_NCCLPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Event types: the bits of the activation mask init returns, and eDescr->type. */
enum {
  DLH_NCCLP_GROUP = 1 << 0,       /* ncclProfileGroup: a group of operations (a lone call is one) */
  DLH_NCCLP_COLL = 1 << 1,        /* ncclProfileColl: a collective as NCCL runs it */
  DLH_NCCLP_P2P = 1 << 2,         /* ncclProfileP2p: a send or receive */
  DLH_NCCLP_PROXY_OP = 1 << 3,    /* ncclProfileProxyOp: the proxy's work for one channel */
  DLH_NCCLP_PROXY_STEP = 1 << 4,  /* ncclProfileProxyStep: one network transfer of it */
  DLH_NCCLP_PROXY_CTRL = 1 << 5,  /* ncclProfileProxyCtrl: the proxy thread's own states */
  DLH_NCCLP_KERNEL_CH = 1 << 6,   /* ncclProfileKernelCh: one channel of the kernel, GPU times */
  DLH_NCCLP_NET_PLUGIN = 1 << 7,  /* ncclProfileNetPlugin: events of the network plugin */
  DLH_NCCLP_GROUP_API = 1 << 8,   /* v5: ncclProfileGroupApi */
  DLH_NCCLP_COLL_API = 1 << 9,    /* v5: ncclProfileCollApi */
  DLH_NCCLP_P2P_API = 1 << 10,    /* v5: ncclProfileP2pApi */
  DLH_NCCLP_KERNEL_LAUNCH = 1 << 11, /* v5: ncclProfileKernelLaunch */
};

/* States given to recordEventState (ncclProfilerEventState_t). */
enum {
  DLH_NCCLP_PROXY_OP_IN_PROGRESS = 19,
  DLH_NCCLP_STEP_SEND_GPU_WAIT = 8,
  DLH_NCCLP_STEP_SEND_PEER_WAIT = 20,
  DLH_NCCLP_STEP_SEND_WAIT = 9,
  DLH_NCCLP_STEP_RECV_WAIT = 10,
  DLH_NCCLP_STEP_RECV_FLUSH_WAIT = 11,
  DLH_NCCLP_STEP_RECV_GPU_WAIT = 12,
  DLH_NCCLP_CTRL_IDLE = 13,
  DLH_NCCLP_CTRL_ACTIVE = 14,
  DLH_NCCLP_CTRL_SLEEP = 15,
  DLH_NCCLP_CTRL_WAKEUP = 16,
  DLH_NCCLP_CTRL_APPEND = 17,
  DLH_NCCLP_CTRL_APPEND_END = 18,
  DLH_NCCLP_NET_UPDATE = 21,
  DLH_NCCLP_KERNEL_CH_STOP = 22,
  DLH_NCCLP_GROUP_START_API_STOP = 23,
  DLH_NCCLP_GROUP_END_API_START = 24,
};

/* NCCL's debug logger (ncclDebugLogger_t): level, subsystem flags, function, line, format. */
typedef void (*dlh_nccl_logger)(int level, unsigned long flags, const char *file, int line,
                                const char *fmt, ...);

/* The per-type parts of an event descriptor. Versions 4 and 5 share these; the union starts
 * at the same offset in both (after type, parentObj and rank). */
struct dlh_ncclp_coll_v4 {
  uint64_t seq;             /* seqNumber: the collective's number in its communicator */
  const char *func;         /* "AllReduce", ... */
  const void *send_buff;
  void *recv_buff;
  size_t count;
  int root;
  const char *datatype;     /* "ncclFloat32", ... */
  uint8_t nchannels;
  uint8_t nwarps;
  const char *algo;         /* "RING", "TREE", "NVLS", ... */
  const char *proto;        /* "LL", "LL128", "SIMPLE" */
};
struct dlh_ncclp_p2p_v4 {
  const char *func;         /* "Send", "Recv" */
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nchannels;
};
struct dlh_ncclp_proxy_op {
  pid_t pid;                /* the process that made the operation (PXN: another one) */
  uint8_t channel;
  int peer;
  int nsteps;
  int chunk_size;
  int is_send;
};
struct dlh_ncclp_kernel_ch {
  uint8_t channel;
  uint64_t ptimer;          /* the kernel's start on this channel, GPU globaltimer ns */
};
struct dlh_ncclp_net {
  int64_t id;
  void *data;
};

/* ncclProfilerEventDescr_v4_t */
typedef struct dlh_ncclp_descr_v4 {
  uint8_t type;             /* one DLH_NCCLP_* bit */
  void *parent;             /* the handle startEvent returned for the parent, or NULL */
  int rank;
  union {
    struct dlh_ncclp_coll_v4 coll;
    struct dlh_ncclp_p2p_v4 p2p;
    struct dlh_ncclp_proxy_op proxy_op;
    struct { int step; } proxy_step;
    struct dlh_ncclp_kernel_ch kernel_ch;
    struct dlh_ncclp_net net;
  };
} dlh_ncclp_descr_v4;

/* ncclProfilerEventDescr_v5_t: type widened to 64 bits, the API events added, and the v4
 * parent group kept at the end of coll and p2p. */
typedef struct dlh_ncclp_descr_v5 {
  uint64_t type;
  void *parent;
  int rank;
  union {
    struct { bool graph_captured; int group_depth; } group_api;
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;
             bool graph_captured; } coll_api;
    struct { const char *func; size_t count; const char *datatype; void *stream;
             bool graph_captured; } p2p_api;
    struct { void *stream; } kernel_launch;
    struct { struct dlh_ncclp_coll_v4 c; void *parent_group; } coll;
    struct { struct dlh_ncclp_p2p_v4 p; void *parent_group; } p2p;
    struct dlh_ncclp_proxy_op proxy_op;
    struct { int step; } proxy_step;
    struct dlh_ncclp_kernel_ch kernel_ch;
    struct dlh_ncclp_net net;
  };
} dlh_ncclp_descr_v5;

/* ncclProfilerEventStateArgs_v4_t / _v5_t (the same union) */
typedef union dlh_ncclp_state_args {
  struct { size_t trans_size; } proxy_step;
  struct { int appended_proxy_ops; } proxy_ctrl;
  struct { void *data; } net;
  struct { uint64_t ptimer; } kernel_ch;   /* KERNEL_CH_STOP: the channel's end, globaltimer */
} dlh_ncclp_state_args;

/* ncclProfiler_v5_t: the data symbol "ncclProfiler_v5" */
typedef struct dlh_ncclp_v5 {
  const char *name;
  int (*init)(void **context, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
              int nranks, int rank, dlh_nccl_logger logfn);
  int (*start_event)(void *context, void **handle, dlh_ncclp_descr_v5 *descr);
  int (*stop_event)(void *handle);
  int (*record_state)(void *handle, int state, dlh_ncclp_state_args *args);
  int (*finalize)(void *context);
} dlh_ncclp_v5;

/* ncclProfiler_v4_t: the data symbol "ncclProfiler_v4" (init's arguments in another order) */
typedef struct dlh_ncclp_v4 {
  const char *name;
  int (*init)(void **context, int *mask, const char *comm_name, uint64_t comm_hash, int nnodes,
              int nranks, int rank, dlh_nccl_logger logfn);
  int (*start_event)(void *context, void **handle, dlh_ncclp_descr_v4 *descr);
  int (*stop_event)(void *handle);
  int (*record_state)(void *handle, int state, dlh_ncclp_state_args *args);
  int (*finalize)(void *context);
} dlh_ncclp_v4;

#endif
