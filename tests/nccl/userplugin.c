/* userplugin.c — a user's own NCCL profiler plugin, for tests/nccl: counts the events it gets
 * by type (and checks that each KernelCh's end is not before its start), and at finalize
 * appends one line per communicator to $USERPLUGIN_OUT:
 *   pid=P rank=R nranks=N group=G coll=C p2p=P proxyop=O proxystep=S kernelch=K badch=B seqmax=Q
 * Built with -DV4 it exports ncclProfiler_v4 only (NCCL's fallback), else ncclProfiler_v5. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dlh_ncclprof.h"

struct ctx { int rank, nranks; long n[8]; long badch; long seqmax; };
struct ev { int type; uint64_t t0; struct ctx *c; };

static int type_ix(uint64_t t) { int i = 0; while (t > 1 && i < 7) { t >>= 1; i++; } return i; }

static int init_common(void **context, int *mask, int nranks, int rank) {
  struct ctx *c = calloc(1, sizeof *c);
  c->rank = rank;
  c->nranks = nranks;
  c->seqmax = -1;
  *context = c;
  *mask = DLH_NCCLP_GROUP | DLH_NCCLP_COLL | DLH_NCCLP_P2P | DLH_NCCLP_PROXY_OP |
          DLH_NCCLP_PROXY_STEP | DLH_NCCLP_KERNEL_CH;
  return 0;
}
static int start_common(void *context, void **handle, uint64_t type, uint64_t seq, uint64_t ptimer) {
  struct ctx *c = context;
  struct ev *e = calloc(1, sizeof *e);
  e->type = (int)type;
  e->c = c;
  e->t0 = ptimer;
  c->n[type_ix(type)]++;
  if (type == DLH_NCCLP_COLL && (long)seq > c->seqmax) c->seqmax = (long)seq;
  *handle = e;
  return 0;
}
static int stop_event(void *handle) { free(handle); return 0; }
static int record_state(void *handle, int state, dlh_ncclp_state_args *a) {
  struct ev *e = handle;
  if (e && state == DLH_NCCLP_KERNEL_CH_STOP && a && a->kernel_ch.ptimer < e->t0) e->c->badch++;
  return 0;
}
static int finalize(void *context) {
  struct ctx *c = context;
  const char *out = getenv("USERPLUGIN_OUT");
  if (out) {
    char line[512];
    int n = snprintf(line, sizeof line,
                     "pid=%d rank=%d nranks=%d group=%ld coll=%ld p2p=%ld proxyop=%ld proxystep=%ld "
                     "kernelch=%ld badch=%ld seqmax=%ld\n", (int)getpid(), c->rank, c->nranks,
                     c->n[0], c->n[1], c->n[2], c->n[3], c->n[4], c->n[6], c->badch, c->seqmax);
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) { if (write(fd, line, (size_t)n) < 0) {} close(fd); }
  }
  free(c);
  return 0;
}

#ifdef V4
static int init4(void **context, int *mask, const char *name, uint64_t hash, int nnodes,
                 int nranks, int rank, dlh_nccl_logger logfn) {
  return init_common(context, mask, nranks, rank);
}
static int start4(void *context, void **handle, dlh_ncclp_descr_v4 *d) {
  return start_common(context, handle, d->type, d->type == DLH_NCCLP_COLL ? d->coll.seq : 0,
                      d->type == DLH_NCCLP_KERNEL_CH ? d->kernel_ch.ptimer : 0);
}
__attribute__((visibility("default"))) dlh_ncclp_v4 ncclProfiler_v4 = {
    "userplugin-v4", init4, start4, stop_event, record_state, finalize};
#else
static int init5(void **context, uint64_t id, int *mask, const char *name, int nnodes,
                 int nranks, int rank, dlh_nccl_logger logfn) {
  return init_common(context, mask, nranks, rank);
}
static int start5(void *context, void **handle, dlh_ncclp_descr_v5 *d) {
  return start_common(context, handle, d->type, d->type == DLH_NCCLP_COLL ? d->coll.c.seq : 0,
                      d->type == DLH_NCCLP_KERNEL_CH ? d->kernel_ch.ptimer : 0);
}
__attribute__((visibility("default"))) dlh_ncclp_v5 ncclProfiler_v5 = {
    "userplugin", init5, start5, stop_event, record_state, finalize};
#endif
