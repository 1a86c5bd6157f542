/* NCCL: 4 ranks in separate processes (forked before any CUDA call, id from ncclGetUniqueId in
 * the parent): AllReduce sums across processes, AllGather, ReduceScatter, Broadcast, Reduce,
 * send/recv ring in a group; a slow rank (sleeps 200 ms before its AllReduce) makes the others'
 * cudaStreamSynchronize wait until about then while their ncclAllReduce call returns at once;
 * a lone ncclRecv waits for a slow ncclSend; ncclCommSplit.
 * Then ncclCommInitAll over 2 devices in one process with a grouped AllReduce. */
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <nccl.h>
#include "simtest.h"

#define NR 4
#define COUNT 1000

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define NOK(call)                                                                            \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    CHECK(r_ == ncclSuccess, "%s: %s", #call, ncclGetErrorString(r_));                       \
  } while (0)

static float val(int rank, int i) { return (float)(rank + 1) * 0.5f + (float)(i % 17); }

static int rank_main(int rank, ncclUniqueId id) {
  int cupti = simtest_cupti_start();
  int ndev = 1;
  cudaGetDeviceCount(&ndev);
  cudaSetDevice(rank % (ndev > 0 ? ndev : 1));
  ncclComm_t comm;
  NOK(ncclCommInitRank(&comm, NR, id, rank));
  int n = 0, me = -1;
  NOK(ncclCommCount(comm, &n));
  NOK(ncclCommUserRank(comm, &me));
  CHECK(n == NR && me == rank, "count %d rank %d", n, me);
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  float *h = malloc(sizeof(float) * COUNT * NR), *hr = malloc(sizeof(float) * COUNT * NR);
  float *dsend, *drecv;
  cudaMalloc((void **)&dsend, sizeof(float) * COUNT * NR);
  { /* buffer registration, as PyTorch's allocator does for its segments */
    void *reg = NULL;
    NOK(ncclCommRegister(comm, dsend, sizeof(float) * COUNT * NR, &reg));
    CHECK(reg != NULL, "ncclCommRegister gave no handle");
    NOK(ncclCommDeregister(comm, reg));
  }
  cudaMalloc((void **)&drecv, sizeof(float) * COUNT * NR);
  for (int i = 0; i < COUNT * NR; i++) h[i] = val(rank, i);
  cudaMemcpy(dsend, h, sizeof(float) * COUNT * NR, cudaMemcpyHostToDevice);

  /* AllReduce (sum), twice, the second in place */
  NOK(ncclAllReduce(dsend, drecv, COUNT, ncclFloat, ncclSum, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < NR; r++) want += val(r, i);
    if (fabsf(hr[i] - want) > 1e-3f) {
      CHECK(0, "rank %d AllReduce[%d] = %g want %g", rank, i, hr[i], want);
      break;
    }
  }
  NOK(ncclAllReduce(drecv, drecv, COUNT, ncclFloat, ncclMax, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < NR; r++) want += val(r, i);
    if (fabsf(hr[i] - want) > 1e-3f) {
      CHECK(0, "rank %d in-place AllReduce[%d] = %g want %g", rank, i, hr[i], want);
      break;
    }
  }
  /* AllGather */
  NOK(ncclAllGather(dsend, drecv, COUNT, ncclFloat, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT * NR, cudaMemcpyDeviceToHost);
  for (int r = 0; r < NR; r++)
    for (int i = 0; i < COUNT; i++)
      if (hr[r * COUNT + i] != val(r, i)) {
        CHECK(0, "rank %d AllGather[%d][%d] = %g", rank, r, i, hr[r * COUNT + i]);
        r = NR;
        break;
      }
  /* ReduceScatter: rank gets the sum of chunk `rank` */
  NOK(ncclReduceScatter(dsend, drecv, COUNT, ncclFloat, ncclSum, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  for (int i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < NR; r++) want += val(r, rank * COUNT + i);
    if (fabsf(hr[i] - want) > 1e-3f) {
      CHECK(0, "rank %d ReduceScatter[%d] = %g want %g", rank, i, hr[i], want);
      break;
    }
  }
  /* Broadcast from 2, Reduce to 1 */
  NOK(ncclBroadcast(dsend, drecv, COUNT, ncclFloat, 2, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  CHECK(hr[0] == val(2, 0) && hr[COUNT - 1] == val(2, COUNT - 1), "rank %d Broadcast %g", rank, hr[0]);
  cudaMemset(drecv, 0, sizeof(float) * COUNT);
  NOK(ncclReduce(dsend, drecv, COUNT, ncclFloat, ncclSum, 1, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  if (rank == 1) {
    float want = 0;
    for (int r = 0; r < NR; r++) want += val(r, 5);
    CHECK(fabsf(hr[5] - want) < 1e-3f, "Reduce at root %g want %g", hr[5], want);
  } else {
    CHECK(hr[5] == 0, "Reduce wrote a non-root rank");
  }
  /* send/recv ring in a group */
  NOK(ncclGroupStart());
  NOK(ncclSend(dsend, COUNT, ncclFloat, (rank + 1) % NR, comm, s));
  NOK(ncclRecv(drecv, COUNT, ncclFloat, (rank + NR - 1) % NR, comm, s));
  NOK(ncclGroupEnd());
  OK(cudaStreamSynchronize(s));
  cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
  CHECK(hr[7] == val((rank + NR - 1) % NR, 7), "rank %d recv %g", rank, hr[7]);

  /* slow rank: rank NR-1 sleeps 200 ms before its AllReduce. The bounds leave room for a loaded
   * machine: an enqueue that blocked would take the whole 200 ms, one preempted takes far less */
  NOK(ncclAllReduce(dsend, drecv, COUNT, ncclFloat, ncclSum, comm, s));
  OK(cudaStreamSynchronize(s));
  double t0 = now_ms();
  if (rank == NR - 1) usleep(200000);
  double c0 = now_ms();
  NOK(ncclAllReduce(dsend, drecv, COUNT, ncclFloat, ncclSum, comm, s));
  double call_ms = now_ms() - c0;
  OK(cudaStreamSynchronize(s));
  double total = now_ms() - t0;
  if (!getenv("SIMTEST_NO_TIMING")) {
    if (!getenv("SIMNCCL_BLOCKING"))
      CHECK(call_ms < 100, "rank %d: ncclAllReduce call took %.1f ms (should only enqueue)", rank, call_ms);
    if (rank != NR - 1)
      CHECK(total > 100 && total < 10000, "rank %d: sync returned after %.1f ms, want ~200", rank, total);
  }
  /* lone send/recv with a slow sender: the receiver's stream waits for it */
  if (rank == 0) {
    usleep(200000);
    NOK(ncclSend(dsend, COUNT, ncclFloat, 1, comm, s));
    OK(cudaStreamSynchronize(s));
  } else if (rank == 1) {
    double r0 = now_ms();
    NOK(ncclRecv(drecv, COUNT, ncclFloat, 0, comm, s));
    OK(cudaStreamSynchronize(s));
    double waited = now_ms() - r0;
    cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
    CHECK(hr[3] == val(0, 3), "lone recv got %g", hr[3]);
    if (!getenv("SIMTEST_NO_TIMING"))
      CHECK(waited > 100 && waited < 10000, "recv from a slow sender returned after %.1f ms", waited);
  }
  /* a large AllReduce only costs simulated time (64 MiB) */
  void *big;
  cudaMalloc(&big, 64u << 20);
  NOK(ncclAllReduce(big, big, (64u << 20) / 4, ncclFloat, ncclSum, comm, s));
  OK(cudaStreamSynchronize(s));
  cudaFree(big);

  /* ncclCommSplit by parity, keys reversing the order; AllReduce on the sub-communicator */
  ncclComm_t sub = NULL;
  NOK(ncclCommSplit(comm, rank % 2, -rank, &sub, NULL));
  if (sub) {
    int sn = 0, sr = -1;
    NOK(ncclCommCount(sub, &sn));
    NOK(ncclCommUserRank(sub, &sr));
    CHECK(sn == 2 && sr == (rank >= 2 ? 0 : 1), "rank %d: split gave %d ranks, rank %d", rank, sn, sr);
    NOK(ncclAllReduce(dsend, drecv, COUNT, ncclFloat, ncclSum, sub, s));
    OK(cudaStreamSynchronize(s));
    cudaMemcpy(hr, drecv, sizeof(float) * COUNT, cudaMemcpyDeviceToHost);
    float want = val(rank % 2, 11) + val(rank % 2 + 2, 11);
    CHECK(fabsf(hr[11] - want) < 1e-3f, "rank %d: split AllReduce %g want %g", rank, hr[11], want);
    NOK(ncclCommDestroy(sub));
  } else {
    CHECK(0, "rank %d: ncclCommSplit gave no communicator", rank);
  }
  if (cupti) /* collectives appear as kernel activity records */
    CHECK(simtest_cupti_count("ncclDevKernel_AllReduce") >= 5 && simtest_cupti_count("ncclDevKernel_SendRecv") >= 1,
          "rank %d: %d AllReduce, %d SendRecv kernel records", rank,
          simtest_cupti_count("ncclDevKernel_AllReduce"), simtest_cupti_count("ncclDevKernel_SendRecv"));
  NOK(ncclCommDestroy(comm));
  cudaFree(dsend);
  cudaFree(drecv);
  free(h);
  free(hr);
  return simtest_failures ? 1 : 0;
}

int main(int argc, char **argv) {
  /* Probe the device in a child: no CUDA call in the parent before the ranks are forked. */
  pid_t p = fork();
  if (p == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
  }
  int st = 0;
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) simtest_init(argc, argv); /* re-exec or skip */

  int v = 0;
  NOK(ncclGetVersion(&v));
  CHECK(v >= 22000, "version %d", v);
  ncclUniqueId id;
  NOK(ncclGetUniqueId(&id));
  pid_t kids[NR];
  for (int r = 0; r < NR; r++) {
    kids[r] = fork();
    if (kids[r] == 0) _exit(rank_main(r, id));
  }
  for (int r = 0; r < NR; r++) {
    waitpid(kids[r], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d exited with status %d", r, st);
  }

  /* one process, two devices */
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  if (ndev >= 2) {
    ncclComm_t comms[2];
    int devs[2] = {0, 1};
    NOK(ncclCommInitAll(comms, 2, devs));
    cudaStream_t s[2];
    float *buf[2];
    for (int d = 0; d < 2; d++) {
      cudaSetDevice(d);
      cudaStreamCreate(&s[d]);
      cudaMalloc((void **)&buf[d], sizeof(float) * COUNT);
      float *h = malloc(sizeof(float) * COUNT);
      for (int i = 0; i < COUNT; i++) h[i] = val(d, i);
      cudaMemcpy(buf[d], h, sizeof(float) * COUNT, cudaMemcpyHostToDevice);
      free(h);
    }
    NOK(ncclGroupStart());
    for (int d = 0; d < 2; d++) NOK(ncclAllReduce(buf[d], buf[d], COUNT, ncclFloat, ncclSum, comms[d], s[d]));
    NOK(ncclGroupEnd());
    for (int d = 0; d < 2; d++) {
      cudaSetDevice(d);
      OK(cudaStreamSynchronize(s[d]));
      float h[3];
      cudaMemcpy(h, buf[d], sizeof h, cudaMemcpyDeviceToHost);
      CHECK(fabsf(h[2] - (val(0, 2) + val(1, 2))) < 1e-4f, "InitAll dev %d: %g", d, h[2]);
      int dev = -1;
      NOK(ncclCommCuDevice(comms[d], &dev));
      CHECK(dev == d, "CuDevice %d", dev);
      NOK(ncclCommDestroy(comms[d]));
      cudaFree(buf[d]);
    }
  }
  return simtest_done("t_sim_lib_nccl");
}
