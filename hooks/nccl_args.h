/* nccl_args.h — the NCCL extractors of hooks/gen/nccl_hooks.c.
 *
 * Communicators: when ncclCommInitRank / InitRankConfig / InitRankScalable / InitAll / Split /
 * Shrink succeed, the new communicator is remembered with (hash, rank, nranks); `comm_hash` is a
 * 64-bit FNV-1a hash of the ncclUniqueId (the same on every rank), or of the parent's hash and
 * the split colour. A communicator that was created before dlhook saw it gets rank and nranks
 * from the real pncclCommUserRank / pncclCommCount and hash 0. Each communicator counts its
 * operations: `seq` (0, 1, ...) is the same for the same collective on every rank.
 * The table is a fixed array: slots are claimed with a compare-and-swap and never move, so the
 * lookup on every collective takes no lock.
 *
 * Groups: ncclGroupStart/End nesting per thread; each operation records its `group` depth
 * (1 inside ncclGroupStart/End: its GPU work then links to ncclGroupEnd). */
#ifndef DLH_NCCL_ARGS_H
#define DLH_NCCL_ARGS_H

#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <nccl.h>
#include "dlh_hook.h"

#define DLH_NCCL_COMMS 1024
struct dlh_nccl_comm {
  void *_Atomic comm;           /* NULL: free; (void *)1: being filled */
  uint64_t hash;
  int rank, nranks;
  uint64_t _Atomic seq;
};
static struct dlh_nccl_comm dlh_nccl_comms[DLH_NCCL_COMMS];
static __thread int dlh_nccl_group;  /* ncclGroupStart/End depth of this thread */

struct dlh_nccl_c { uint64_t hash, seq; int64_t rank, nranks; };

static inline uint64_t dlh_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}
static inline uint64_t dlh_nccl_id_hash(const ncclUniqueId *id) {
  return id ? dlh_fnv(0xcbf29ce484222325ull, id->internal, sizeof id->internal) : 0;
}

static inline void dlh_nccl_comm_add(ncclComm_t comm, uint64_t hash, int rank, int nranks) {
  if (!comm) return;
  for (int i = 0; i < DLH_NCCL_COMMS; i++) {
    void *cur = __atomic_load_n(&dlh_nccl_comms[i].comm, __ATOMIC_ACQUIRE);
    if (cur == (void *)comm) {      /* a reused address: overwrite */
      dlh_nccl_comms[i].hash = hash;
      dlh_nccl_comms[i].rank = rank;
      dlh_nccl_comms[i].nranks = nranks;
      __atomic_store_n(&dlh_nccl_comms[i].seq, 0, __ATOMIC_RELAXED);
      return;
    }
  }
  for (int i = 0; i < DLH_NCCL_COMMS; i++) {
    void *expect = __atomic_load_n(&dlh_nccl_comms[i].comm, __ATOMIC_ACQUIRE);
    if (expect && expect != (void *)2) continue;  /* free or destroyed slots are claimed */
    if (__atomic_compare_exchange_n(&dlh_nccl_comms[i].comm, &expect, (void *)1, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      dlh_nccl_comms[i].hash = hash;
      dlh_nccl_comms[i].rank = rank;
      dlh_nccl_comms[i].nranks = nranks;
      __atomic_store_n(&dlh_nccl_comms[i].seq, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&dlh_nccl_comms[i].comm, (void *)comm, __ATOMIC_RELEASE);
      return;
    }
  }
}

/* Forgets a destroyed communicator (its slot stays claimed with the address cleared). */
static inline void dlh_nccl_comm_del(ncclComm_t comm) {
  if (!comm) return;
  for (int i = 0; i < DLH_NCCL_COMMS; i++)
    if (__atomic_load_n(&dlh_nccl_comms[i].comm, __ATOMIC_ACQUIRE) == (void *)comm) {
      dlh_nccl_comms[i].hash = 0;
      dlh_nccl_comms[i].rank = -1;
      dlh_nccl_comms[i].nranks = 0;
      __atomic_store_n(&dlh_nccl_comms[i].comm, (void *)2, __ATOMIC_RELEASE);
    }
}

static inline struct dlh_nccl_comm *dlh_nccl_comm_find(ncclComm_t comm) {
  if (!comm) return NULL;
  for (int i = 0; i < DLH_NCCL_COMMS; i++) {
    void *c = __atomic_load_n(&dlh_nccl_comms[i].comm, __ATOMIC_ACQUIRE);
    if (c == (void *)comm) return &dlh_nccl_comms[i];
    if (!c) break;                 /* slots are claimed in order: the rest are free */
  }
  return NULL;
}

/* rank and nranks from the real library (never recorded). */
static inline void dlh_nccl_query(ncclComm_t comm, int *rank, int *nranks) {
  static void *ur, *cc;
  typedef ncclResult_t (*q_fn)(const ncclComm_t, int *);
  q_fn fr = __atomic_load_n((q_fn *)&ur, __ATOMIC_ACQUIRE), fc = __atomic_load_n((q_fn *)&cc, __ATOMIC_ACQUIRE);
  if (!fr) { fr = (q_fn)dlh_resolve("pncclCommUserRank", DLH_LIB_NCCL); __atomic_store_n((q_fn *)&ur, fr, __ATOMIC_RELEASE); }
  if (!fc) { fc = (q_fn)dlh_resolve("pncclCommCount", DLH_LIB_NCCL); __atomic_store_n((q_fn *)&cc, fc, __ATOMIC_RELEASE); }
  *rank = -1;
  *nranks = 0;
  if (!comm) return;
  if (!fr || fr(comm, rank) != ncclSuccess) *rank = -1;
  if (!fc || fc(comm, nranks) != ncclSuccess) *nranks = 0;
}

/* Registers a communicator made from a parent (split, shrink): hash of the parent's hash and
 * `salt`, rank and nranks from the library. */
static inline void dlh_nccl_comm_child(ncclComm_t parent, ncclComm_t child, uint64_t salt) {
  if (!child) return;
  struct dlh_nccl_comm *p = dlh_nccl_comm_find(parent);
  uint64_t h = p ? p->hash : 0;
  h = dlh_fnv(h ^ 0x9e3779b97f4a7c15ull, &salt, sizeof salt);
  int rank, nranks;
  dlh_nccl_query(child, &rank, &nranks);
  dlh_nccl_comm_add(child, h, rank, nranks);
}

static inline void dlh_nccl_comm_all(ncclComm_t *comms, int ndev) {
  if (!comms) return;
  uint64_t salt[2] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)comms};
  uint64_t h = dlh_fnv(0xcbf29ce484222325ull, salt, sizeof salt);
  for (int i = 0; i < ndev; i++) dlh_nccl_comm_add(comms[i], h, i, ndev);
}

/* The communicator of an operation: hash, rank, nranks and this operation's sequence number
 * (counted when `count` is set: the call was accepted). A communicator dlhook did not see being
 * created is asked for its rank and size only when the library accepted it in this call. */
static inline void dlh_nccl_op(struct dlh_nccl_c *o, ncclComm_t comm, int count) {
  struct dlh_nccl_comm *c = dlh_nccl_comm_find(comm);
  if (!c && comm && count) {
    int rank, nranks;
    dlh_nccl_query(comm, &rank, &nranks);
    dlh_nccl_comm_add(comm, 0, rank, nranks);
    c = dlh_nccl_comm_find(comm);
  }
  if (!c) { o->hash = 0; o->seq = 0; o->rank = -1; o->nranks = 0; return; }
  o->hash = c->hash;
  o->rank = c->rank;
  o->nranks = c->nranks;
  o->seq = count ? __atomic_fetch_add(&c->seq, 1, __ATOMIC_RELAXED)
                 : __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
}

static inline uint64_t dlh_nccl_type_size(int t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  default: return 1;                /* fp8 types and anything newer */
  }
}

static inline int dlh_nccl_accepted(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

#endif
