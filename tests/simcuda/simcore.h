/* simcore.h — private interface of the simulated driver (tests/simcuda/, the libcuda.so.1
 * stand-in). The stand-in runtime (libcudart.so.13) and libraries (libcublas.so.13,
 * libcublasLt.so.13, libcudnn.so.9, libnccl.so.2) and the CUPTI stand-in (libcupti.so.13)
 * are built on it. Nothing here is part of a real CUDA API; profilers never see these symbols
 * (they are exported from libcuda.so.1 under the version node SIMCUDA_PRIVATE).
 *
 * Model: one simulated GPU timeline per device, tied to the host clock (CLOCK_MONOTONIC ns).
 * An operation enqueued on a stream starts at max(enqueue time + launch latency, end of the
 * previous op on that stream, events it waits for) and lasts a deterministic time from the cost
 * model: max(floor_ns, flops / peak_flops(dtype), bytes / bandwidth(kind)). A collective op ends
 * only when every rank of its rendezvous has started it: end = max(start of all ranks) + cost.
 * Synchronising calls really wait (sleep) until the simulated end time has passed on the host
 * clock. Tools see every op as CUPTI does: API callbacks and activity records with correlation
 * ids, through the libcupti.so.13 stand-in.
 */
#ifndef SIMCORE_H
#define SIMCORE_H
#include <stddef.h>
#include <stdint.h>

#define SIMCU_API __attribute__((visibility("default")))

/* Host clock used by the whole simulation: CLOCK_MONOTONIC in ns. */
SIMCU_API uint64_t simcu_now_ns(void);

/* Data type classes for the cost model's peak FLOP/s. */
enum { SIMCU_DT_FP32 = 0, SIMCU_DT_FP64, SIMCU_DT_FP16, SIMCU_DT_BF16, SIMCU_DT_TF32,
       SIMCU_DT_FP8, SIMCU_DT_INT8 };

/* Optional cross-process rendezvous of a collective (NCCL stand-in). All ranks with the same
 * key and seq meet; key identifies the communicator (same on every rank), seq counts its
 * operations. For point-to-point, nranks = 2 and key mixes the pair. */
typedef struct simcu_rendezvous {
  uint64_t key;
  uint64_t seq;
  int rank;
  int nranks;
} simcu_rendezvous;

typedef struct simcu_kernel {
  const char *name;            /* mangled kernel name, as CUPTI reports it */
  unsigned grid[3], block[3];
  size_t dyn_smem, static_smem;
  unsigned regs;               /* registers per thread (0 = model chooses) */
  double flops, bytes;         /* work for the cost model */
  int dtype;                   /* SIMCU_DT_* */
  uint64_t floor_ns;           /* minimum duration (0 = default floor) */
  const simcu_rendezvous *rv;  /* NULL unless a collective */
  void (*host_fn)(void *arg);  /* optional: computes the real result on the CPU */
  void *host_arg;
  size_t host_arg_size;        /* > 0: host_arg is a self-contained job of this size, copied at
                                * launch and computed off the caller's path, in submission
                                * order; 0: host_fn runs inline in the launching thread */
  uint64_t issued_ns;          /* 0 = now; else the host time the work was issued when the
                                * library was held up on the host before launching it (a
                                * collective's data exchange): the kernel is ready from then */
} simcu_kernel;

/* Enqueues a kernel on `stream` (a cudaStream_t / CUstream, NULL = legacy default stream) as a
 * library does it: tools see a driver API call cuLaunchKernel (CUPTI driver-domain callbacks with
 * a fresh correlation id, made in the calling thread, inside whatever external correlation is
 * pushed) and a CONCURRENT_KERNEL activity record carrying that correlation id.
 * Returns 0 (CUDA_SUCCESS) or a CUresult error. */
SIMCU_API int simcu_launch_kernel(void *stream, const simcu_kernel *k);

/* simcu_launch_kernel, and *ref (when given) a reference to the launched work, NULL when the
 * stream was capturing (NCCL's stand-in reads its kernels' times for its profiler plugin's
 * KernelCh events). simcu_op_times: 1 and the work's start and end on the simulated GPU (host
 * clock ns) once they are known (a collective's once every rank started it), else 0.
 * simcu_op_release gives the reference back. */
SIMCU_API int simcu_launch_kernel_ref(void *stream, const simcu_kernel *k, void **ref);
SIMCU_API int simcu_op_times(void *ref, uint64_t *start, uint64_t *end);
SIMCU_API void simcu_op_release(void *ref);

/* Waits until every result computation queued so far (simcu_kernel.host_arg_size) is done.
 * The driver calls it before anything observes device memory; a library that reads device
 * memory on the host itself (a collective's data exchange) calls it first. */
SIMCU_API void simcu_compute_drain(void);

/* Whether a library computes the real result of a call doing `flops` of work: SIMCUDA_NUMERICS
 * "small" (the default: up to 64 K flops, enough for numerical tests), "all" (up to the library's
 * own limits) or "0"/"off" (never; also SIMCUDA_HOST_COMPUTE=0). Above the limit a call only
 * occupies the simulated timeline, as its cost model says. */
SIMCU_API int simcu_numerics(double flops);

/* Device properties of the simulated device `dev` (H100-like by default). */
SIMCU_API int simcu_device_count(void);
SIMCU_API const char *simcu_device_name(int dev);

#endif
