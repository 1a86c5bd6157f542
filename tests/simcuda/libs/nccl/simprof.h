/* simprof.h — the simulated NCCL's side of NCCL's profiler plugin interface (profiler.c).
 *
 * As NCCL does: the first communicator loads the plugin that NCCL_PROFILER_PLUGIN names (or
 * libnccl-profiler.so), takes ncclProfiler_v5 or else ncclProfiler_v4, calls init for every
 * communicator and finalize when it is destroyed. nccl.c starts and stops the Group, Coll and
 * P2p events on the calling thread around each kernel launch; a proxy thread of the simulation
 * reports each kernel's ProxyOp, ProxyStep and KernelCh events once the simulated GPU has run
 * it, with the kernel's GPU times (the simulation's globaltimer is the host's CLOCK_MONOTONIC
 * in ns). Only the event types in the mask that init returned are reported. */
#ifndef SIMPROF_H
#define SIMPROF_H
#include <stdint.h>
#include "../../../../common/dlh_ncclprof.h"

/* init for a new communicator: *ctx and *mask (0, NULL: no plugin, or init failed) */
void simprof_comm_init(uint64_t comm_id, const char *name, int nranks, int rank, void **ctx,
                       int *mask);
/* finalize, once the communicator's kernels have been reported (or 2 s have passed) */
void simprof_comm_fini(void *ctx, int mask);
/* startEvent when d->type is in mask; the handle (NULL: not started) */
void *simprof_start(void *ctx, int mask, dlh_ncclp_descr_v5 *d);
void simprof_stop(void *h);

/* One operation a kernel runs: its Coll or P2p event's handle, and what the proxy moves. */
struct simprof_task {
  void *handle;
  int peer_send, peer_recv;  /* ranks the channels send to and receive from (-1: none) */
  double bytes;              /* bytes on the wire, all channels */
};
/* A launched kernel (ref from simcu_launch_kernel_ref, taken over): its tasks' ProxyOp,
 * ProxyStep and KernelCh events follow on the proxy thread once it has run. */
void simprof_kernel(void *ctx, int mask, int rank, void *ref, const struct simprof_task *tasks,
                    int ntasks, int nchannels, const char *proto);

#endif
