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
} rd_nccl_op;

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

/* `dlhook dump`: one JSON line per event ("type":"nccl"); pid of the trace, off its offset. */
void rd_ncclev_dump(FILE *f, const Dlh__NcclEventBatch *b, uint32_t pid, int64_t off);

#endif
