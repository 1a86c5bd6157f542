/* t_sim_rendezvous.c — a collective op (simcore.h rendezvous) across 3 forked processes ends
 * only after the last rank started it: end = max(start of all ranks) + cost, the same on every
 * rank; launching does not block the host (a later synchronize waits); the shared-memory
 * segment is gone afterwards. Then 4 ranks run 3 collectives back to back without syncing in
 * between (later ones wait on earlier unresolved ones). Kernel times come from CUPTI records.
 */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include "simcore.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR 3
#define COST_NS 50000ull
struct res { uint64_t start, end, launch_ns, sync_ns, sync_done; int ok; };
static struct res me;

static void CUPTIAPI req(uint8_t **b, size_t *sz, size_t *mx) { *sz = 1 << 16; *b = aligned_alloc(8, *sz); *mx = 0; }
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      if (strcmp(k->name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0) { me.start = k->start; me.end = k->end; me.ok = 1; }
    }
  free(b);
}

static void rank_main(int rank, uint64_t key, int fd) {
  usleep((useconds_t)(rank * 100000)); /* ranks arrive 100 ms apart */
  cuptiActivityRegisterCallbacks(req, done);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  void *d;
  cudaMalloc(&d, 1024);
  simcu_rendezvous rv = { key, 0, rank, NR };
  simcu_kernel k;
  memset(&k, 0, sizeof k);
  k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  k.grid[0] = 32; k.block[0] = 512;
  k.bytes = 1024;
  k.floor_ns = COST_NS;
  k.rv = &rv;
  uint64_t t0 = simcu_now_ns();
  int r = simcu_launch_kernel(NULL, &k);
  uint64_t t1 = simcu_now_ns();
  cudaDeviceSynchronize();
  uint64_t t2 = simcu_now_ns();
  cuptiActivityFlushAll(0);
  me.launch_ns = t1 - t0;
  me.sync_ns = t2 - t1;
  me.sync_done = t2;
  if (r != 0) me.ok = 0;
  if (write(fd, &me, sizeof me) != sizeof me) _exit(2);
  _exit(0);
}

/* ---- 4 ranks x 3 collectives, no sync in between */
#define NR2 4
#define NOPS 3
struct res2 { uint64_t start[NOPS], end[NOPS]; int n; };
static struct res2 me2;
static void CUPTIAPI done2(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && me2.n < NOPS) {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      me2.start[me2.n] = k->start; me2.end[me2.n] = k->end; me2.n++;
    }
  free(b);
}
static void rank2_main(int rank, uint64_t key, int fd) {
  cuptiActivityRegisterCallbacks(req, done2);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  for (int i = 0; i < NOPS; i++) {
    usleep((useconds_t)(((rank + i) % NR2) * 5000)); /* a different rank is last each time */
    simcu_rendezvous rv = { key, (uint64_t)i, rank, NR2 };
    simcu_kernel k;
    memset(&k, 0, sizeof k);
    k.name = "ncclDevKernel_AllGather_RING_LL";
    k.grid[0] = 8; k.block[0] = 256;
    k.floor_ns = COST_NS;
    k.rv = &rv;
    simcu_launch_kernel(NULL, &k);
  }
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(0);
  if (write(fd, &me2, sizeof me2) != sizeof me2) _exit(2);
  _exit(0);
}
static int chain_test(void) {
  uint64_t key = 0x3c4a0000ull ^ ((uint64_t)getpid() << 24) ^ (simcu_now_ns() * 7);
  int fds[NR2][2], fails = 0;
  for (int r = 0; r < NR2; r++) {
    if (pipe(fds[r])) return 1;
    if (fork() == 0) rank2_main(r, key, fds[r][1]);
  }
  struct res2 res[NR2];
  for (int r = 0; r < NR2; r++)
    if (read(fds[r][0], &res[r], sizeof res[r]) != sizeof res[r] || res[r].n != NOPS) { printf("FAIL chain rank %d\n", r); return 1; }
  while (wait(NULL) > 0) {}
  for (int i = 0; i < NOPS; i++) {
    uint64_t mx = 0;
    for (int r = 0; r < NR2; r++) if (res[r].start[i] > mx) mx = res[r].start[i];
    for (int r = 0; r < NR2; r++) {
      if (res[r].end[i] != mx + COST_NS) { printf("FAIL chain op %d rank %d: end %llu, expected %llu\n", i, r,
                                                  (unsigned long long)res[r].end[i], (unsigned long long)(mx + COST_NS)); fails++; }
      if (i && res[r].start[i] < res[r].end[i - 1]) { printf("FAIL chain op %d rank %d starts before op %d ended\n", i, r, i - 1); fails++; }
    }
  }
  printf("chain: %d ranks x %d collectives: %s\n", NR2, NOPS, fails ? "FAILED" : "ok");
  return fails;
}

int main(void) {
  uint64_t key = 0x7e570000ull ^ ((uint64_t)getpid() << 20) ^ (uint64_t)simcu_now_ns();
  int fds[NR][2];
  for (int r = 0; r < NR; r++) {
    if (pipe(fds[r])) return 1;
    pid_t p = fork();
    if (p == 0) rank_main(r, key, fds[r][1]);
  }
  struct res res[NR];
  int fails = 0;
  for (int r = 0; r < NR; r++) {
    if (read(fds[r][0], &res[r], sizeof res[r]) != sizeof res[r]) { printf("rank %d: no result\n", r); return 1; }
  }
  while (wait(NULL) > 0) {}
  uint64_t maxstart = 0;
  for (int r = 0; r < NR; r++) if (res[r].start > maxstart) maxstart = res[r].start;
  for (int r = 0; r < NR; r++) {
    printf("rank %d: ok %d start %llu end %llu (end - last start %.1f us) launch %.1f us sync %.1f ms\n", r, res[r].ok,
           (unsigned long long)res[r].start, (unsigned long long)res[r].end, (res[r].end - maxstart) / 1e3,
           res[r].launch_ns / 1e3, res[r].sync_ns / 1e6);
    if (!res[r].ok) { printf("FAIL rank %d: no kernel record\n", r); fails++; continue; }
    if (res[r].end < maxstart + COST_NS) { printf("FAIL rank %d ended before the last rank started\n", r); fails++; }
    if (res[r].end != res[0].end) { printf("FAIL rank %d ends at another time than rank 0\n", r); fails++; }
    /* a launch that waited for the last rank would take (NR-1-r) x 100 ms; one preempted on a
     * loaded machine takes far less: checked where the difference is at least 200 ms */
    if (NR - 1 - r >= 2 && res[r].launch_ns > 100000000) { printf("FAIL rank %d: launch blocked\n", r); fails++; }
  }
  for (int r = 0; r < NR; r++)
    if (res[r].sync_done < res[r].end) { printf("FAIL rank %d: synchronize returned before the collective ended\n", r); fails++; }
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/simcuda-%016llx", (unsigned long long)key);
  if (access(path, F_OK) == 0) { printf("FAIL %s left behind\n", path); unlink(path); fails++; }
  fails += chain_test();
  printf(fails ? "t_sim_rendezvous: FAILED\n" : "t_sim_rendezvous: OK\n");
  return fails ? 1 : 0;
}
