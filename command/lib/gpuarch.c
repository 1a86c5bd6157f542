/* gpuarch.c — what a GPU's compute capability allows per SM, and the occupancy a kernel's
 * launch configuration can reach: for the exporters' occupancy fields and dlhook advise. */
#include "rd.h"

/* Per-SM limits of a compute capability (CUDA C Programming Guide, "Technical Specifications
 * per Compute Capability"), for deviceProperties and the occupancy estimate. */
rd_arch rd_arch_of(unsigned major, unsigned minor) {
  if (major >= 10 && major != 12) return (rd_arch){2048, 233472, 232448, 32};
  if (major == 12) return (rd_arch){1536, 102400, 101376, 32};
  if (major == 9) return (rd_arch){2048, 233472, 232448, 32};
  if (major == 8 && minor == 0) return (rd_arch){2048, 167936, 166912, 32};
  if (major == 8 && minor == 7) return (rd_arch){2048, 167936, 166912, 16};
  if (major == 8) return (rd_arch){1536, 102400, 101376, minor == 9 ? 24 : 16};
  if (major == 7 && minor == 5) return (rd_arch){1024, 65536, 65536, 16};
  if (major == 7) return (rd_arch){2048, 98304, 98304, 32};
  return (rd_arch){2048, 65536, 49152, 32};
}

int rd_occupancy(const Dlh__DeviceInfo *d, const uint64_t *v, uint32_t nvals, double *bps,
                 double *wps, double *occ) {
  if (!d || !d->sm_count || nvals < 9) return 0;
  uint64_t blocks = v[0] * v[1] * v[2], tpb = v[3] * v[4] * v[5];
  if (!tpb) return 0;
  /* Kineto's estimates: blocks and warps per SM from the grid; achieved occupancy from the
   * resident blocks the per-SM limits allow (threads, registers, shared memory) */
  rd_arch a = rd_arch_of(d->cc_major, d->cc_minor);
  double wpb = (double)((tpb + 31) / 32);
  *bps = (double)blocks / d->sm_count;
  *wps = *bps * wpb;
  uint64_t fit = a.max_blocks_per_sm, lim;
  if ((lim = a.threads_per_sm / tpb) < fit) fit = lim;
  uint64_t regs = v[6] * tpb; /* registers of a block; a product that overflows is no limit */
  if (v[6] && regs && regs / v[6] == tpb && (lim = 65536 / regs) < fit) fit = lim;
  if (v[7] + v[8] && (lim = a.smem_per_sm / (v[7] + v[8])) < fit) fit = lim;
  double resident = *bps < (double)fit ? *bps : (double)fit;
  *occ = 100.0 * resident * wpb / (a.threads_per_sm / 32.0);
  if (*occ > 100) *occ = 100;
  return 1;
}

