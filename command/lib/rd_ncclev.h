/* rd_ncclev.h — NCCL's profiler plugin events of a trace (ncclev.c; dlhook.proto NcclEvent,
 * docs/nccl-profiler.md): each collective and send/receive as NCCL ran it (sequence number,
 * algorithm, protocol, channels), with its kernel channels' GPU times and its proxy's work, and
 * the tables `dlhook stats` prints from them. */
#ifndef DLH_RD_NCCLEV_H
#define DLH_RD_NCCLEV_H

#include <stdint.h>
#include <stdio.h>

#include "rd.h"

/* One Coll or P2p event with what its children said. Times: the trace's clock (no merge
 * offset: a caller on a merged timeline adds rd_offset_of). */
typedef struct rd_nccl_op {
  uint64_t id;
  uint32_t type;                      /* DLH__NCCL_EVENT_TYPE__NCCL_COLL or __NCCL_P2P */
  uint32_t tid;                       /* the thread that enqueued it */
  uint64_t comm;                      /* the communicator's id */
  int32_t rank;
  uint32_t nranks;                    /* 0: unknown */
  uint64_t seq;                       /* Coll: seqNumber (the same on every rank) */
  char func[24], dtype[24], algo[24], proto[16];
  uint64_t count;
  int32_t peer;                       /* Coll: root; P2p: peer */
  uint32_t channels, warps;
  uint64_t start_ns, stop_ns;         /* startEvent, stopEvent (enqueued) on the host */
  uint64_t gpu_start_ns, gpu_end_ns;  /* KernelCh: earliest channel start, latest end; 0: none */
  uint32_t kch;                       /* KernelCh events */
  uint32_t proxy_ops, proxy_steps;
  uint64_t proxy_start_ns, proxy_end_ns; /* ProxyOp: first start, last stop; 0: none */
  uint64_t proxy_bytes;               /* ProxyStep: bytes transferred */
  uint64_t bytes;                     /* the size as nccl-tests counts it (rd_nccl_bytes) */
  uint32_t kernel_ops;                /* operations of the thread that shared its kernel's span
                                       * (a group's), itself included; 0: no GPU times */
  uint64_t kernel_bytes;              /* their bytes together */
  uint64_t call_start_ns, call_end_ns; /* the API call that enqueued it (rd_nccl_call); 0: none */
} rd_nccl_op;

/* A KernelCh or ProxyOp event of an operation: a channel's run on the GPU, or a send or receive
 * of NCCL's proxy thread. Times: the trace's clock, as rd_nccl_op's. */
typedef struct rd_nccl_part {
  uint32_t op;                        /* its operation: an index into rd_nccl_ops */
  uint16_t type;                      /* DLH__NCCL_EVENT_TYPE__NCCL_KERNEL_CH or __NCCL_PROXY_OP */
  uint16_t channel;
  int32_t peer;                       /* ProxyOp: the rank it sends to or receives from */
  uint32_t steps;                     /* ProxyOp: network steps */
  uint8_t is_send;                    /* ProxyOp */
  uint64_t start_ns, end_ns;          /* KernelCh: GPU start and KernelChStop; ProxyOp: host
                                       * startEvent and stopEvent; end 0: never said */
} rd_nccl_part;

/* trace.c: an NcclEventBatch read in the first pass */
void rd_ncclev_define(rd_trace *t, const Dlh__NcclEventBatch *b);
void rd_ncclev_free(rd_trace *t);
/* The trace's operations, by thread then in the order NCCL started them (built at the first
 * call); count. */
size_t rd_nccl_ops(const rd_trace *t, const rd_nccl_op **ops);
/* The next `want` operations of thread tid, for a reader that goes through the thread's NCCL
 * calls in order: an ungrouped collective or send/receive enqueues one, an outermost
 * ncclGroupEnd those of its group. The first, and *n of them in a row; NULL when none. The
 * order, not the time, pairs them: a thread that moved to another CPU may see its clock jump. */
const rd_nccl_op *rd_nccl_take(const rd_trace *t, uint32_t tid, size_t want, size_t *n);
/* The trace's KernelCh and ProxyOp events whose operation is known, by start time; count. */
size_t rd_nccl_parts(const rd_trace *t, const rd_nccl_part **parts);
/* For a reader that goes through each thread's API calls in order (one reader per trace: it
 * shares rd_nccl_take's place): an NCCL call of function f gives the operations it enqueued its
 * start and end (rd_nccl_op call_start_ns, call_end_ns), as rd_nccl_take pairs them. */
void rd_nccl_call(const rd_trace *t, uint32_t tid, const rd_func *f, const dlh_api_event *ev);
/* nccl-tests' busbw factor of a collective over n ranks (AllReduce 2(n-1)/n, ...) */
double rd_nccl_busbw_factor(const char *func, uint32_t nranks);
/* Bytes of count elements of an NCCL datatype name ("ncclFloat32"); 0 when unknown. */
size_t rd_nccl_dtype_size(const char *dtype);

/* `dlhook stats`: the collectives as NCCL ran them, over traces. */
typedef struct rd_ncclstats rd_ncclstats;
rd_ncclstats *rd_ncclstats_new(void);
void rd_ncclstats_trace(rd_ncclstats *s, const rd_trace *t);
/* `,"nccl_ops":[...],"nccl_seqs":[...]` (leading comma), nothing when there were none */
void rd_ncclstats_json(const rd_ncclstats *s, FILE *f);
void rd_ncclstats_table(const rd_ncclstats *s, FILE *f);
void rd_ncclstats_free(rd_ncclstats *s);

/* Per rank, over the collectives every rank had with GPU times (advise's straggler-rank and
 * slow-network-rank): at each, the rank that started its kernel last held the others up by
 * `caused` (its start minus the one before it); it was slow to arrive when it also enqueued
 * last. After the last start, a rank whose kernel ended later than the other ranks' (the median
 * of theirs) ran its transfer that much longer: `net_excess`, the network's share. */
typedef struct rd_nccl_blame {
  uint32_t trace;            /* the trace: its place in the order of rd_ncclstats_trace calls */
  int32_t rank;              /* its rank (the trace's, else its first communicator's) */
  size_t last_n;             /* collectives whose kernel it started last */
  size_t late_enqueue_n;     /* ... of them, it also enqueued last (slow to arrive) */
  double caused_ns;          /* the others' wait for it at those */
  size_t net_n;              /* collectives where its transfer ran the longest (> 1 us more) */
  double net_excess_ns;      /* its transfers' time beyond the other ranks', summed */
  double proxy_ns;           /* its proxy operations' time (first start to last stop), summed */
  double xfer_ns;            /* its transfers' time after the last start, summed */
} rd_nccl_blame;
/* Fills *out (free it) with one entry per trace, in trace order; the number of collectives
 * counted in *ncoll (those of one kernel, a group's, count once); returns the number of traces
 * (0: fewer than 2, or no collective every rank had). keep(ctx, trace, enqueue_ns) chooses the
 * collectives (NULL: all): every rank's enqueue time, in its trace's clock, must be kept. */
size_t rd_ncclstats_blame(const rd_ncclstats *s, int (*keep)(void *ctx, uint32_t trace, uint64_t t),
                          void *ctx, rd_nccl_blame **out, size_t *ncoll);

/* `dlhook dump`: one JSON line per event ("type":"nccl"); pid of the trace, off its offset. */
void rd_ncclev_dump(FILE *f, const Dlh__NcclEventBatch *b, uint32_t pid, int64_t off);

#endif
