// advise_gpu.cu — planted GPU-side causes for tests/advise/: `advise_gpu MODE`, MODE one of
//   launch     1,000 tiny kernels per step, one by one, each after ~10 us of host work (what a
//              framework spends per operator; launch-bound, at PLANT-LAUNCH)
//   fused      the same host work, then all of the step's work as one kernel (tuned launch)
//   occupancy  kernels whose shared memory per block leaves one small block per SM
//              (low-occupancy, at PLANT-OCCUPANCY)
//   occupied   the same work in full blocks without the shared memory (tuned occupancy)
//   sgemm      float32 GEMMs on a handle in the default math mode (no-tensor-cores, PLANT-SGEMM)
//   tf32       the same GEMMs with CUBLAS_TF32_TENSOR_OP_MATH (tuned)
//   memory     92 % of the device's memory allocated, then the loop (memory-near-capacity,
//              at PLANT-MEMORY)
//   headroom   the same loop with 50 % allocated (tuned)
//   comm       on two devices, the step's compute, then an all-reduce of its gradients on the
//              same stream: the collective runs alone on the GPU (comm-not-overlapped, at
//              PLANT-COMM)
//   overlap    the all-reduce on a stream of its own, beside the compute (the previous step's
//              gradients, as DDP's buckets do) (tuned)
// Every mode runs STEPS steps, each ending in one cudaStreamSynchronize (comm and overlap: a
// cudaDeviceSynchronize per device). comm and overlap need two devices (SIMCUDA_DEVICES=2 on the
// simulator): one process drives both ranks of the clique (ncclCommInitAll, grouped calls).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define STEPS 10

__global__ void tiny(float *d, int i) { d[threadIdx.x] += (float)i; }
__global__ void many(float *d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += 1.0f;
}
__global__ void staged(float *d, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? d[i] : 0.0f;
  __syncthreads();
  if (i < n) d[i] = buf[threadIdx.x] * 2.0f;
}

/* ~10 us of host work (a framework's per-operator overhead) */
static double host_work(int i) {
  volatile double a = i;
  for (int k = 0; k < 3000; k++) a = a * 1.0000001 + 0.5;
  return a;
}

/* comm and overlap: two devices, a clique of two ranks in this process */
static ncclComm_t nc[2];
static cudaStream_t cs[2], ns[2];
static float *grad[2], *act[2];
static const size_t ngrad = 16 << 20; /* 64 MiB of float32 gradients per device */

static int comm_setup(void) {
  if (ncclCommInitAll(nc, 2, NULL) != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll failed (SIMCUDA_DEVICES=2 on the simulator)\n");
    return 1;
  }
  for (int g = 0; g < 2; g++) {
    cudaSetDevice(g);
    if (cudaMalloc(&grad[g], ngrad * 4) != cudaSuccess || cudaMalloc(&act[g], 64 << 20) != cudaSuccess) {
      fprintf(stderr, "cudaMalloc failed\n");
      return 1;
    }
    cudaStreamCreateWithFlags(&cs[g], cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&ns[g], cudaStreamNonBlocking);
  }
  cudaSetDevice(0);
  return 0;
}

/* One step: compute on both devices (a dozen long kernels, queued at once) and the all-reduce
 * of the gradients: after the compute on its stream (comm), or beside it on a stream of its own
 * (overlap: the previous step's gradients, issued once the compute is queued). */
__attribute__((noinline)) static void comm_step(int overlap) {
  for (int g = 0; g < 2; g++) {
    cudaSetDevice(g);
    for (int i = 0; i < 12; i++) many<<<40960, 256, 0, cs[g]>>>(act[g], 40960 * 256);
  }
  ncclGroupStart();
  for (int g = 0; g < 2; g++)
    ncclAllReduce(grad[g], grad[g], ngrad, ncclFloat, ncclSum, nc[g], overlap ? ns[g] : cs[g]);
  ncclGroupEnd(); /* PLANT-COMM: a group's collectives are launched here */
  for (int g = 0; g < 2; g++) cudaSetDevice(g), cudaDeviceSynchronize();
  cudaSetDevice(0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fused";
  float *d = NULL;
  if (cudaMalloc(&d, 64 << 20) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  void *big = NULL;
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  if (!strcmp(mode, "memory")) cudaMalloc(&big, total_b / 100 * 92); /* PLANT-MEMORY */
  if (!strcmp(mode, "headroom")) cudaMalloc(&big, total_b / 2);
  cudaFuncSetAttribute(staged, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10);
  cublasHandle_t h = NULL;
  int gemm = !strcmp(mode, "sgemm") || !strcmp(mode, "tf32");
  if (gemm) {
    cublasCreate(&h);
    if (!strcmp(mode, "tf32")) cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
  }
  int comm = !strcmp(mode, "comm"), overlap = !strcmp(mode, "overlap");
  if ((comm || overlap) && comm_setup() != 0) return 1;
  const float one = 1.0f, zero = 0.0f;
  const int n = 4096; /* 12 ms of float32 GEMMs a step: GPU-bound even on a loaded machine */
  for (int s = 0; s < STEPS; s++) {
    if (!strcmp(mode, "launch"))
      for (int i = 0; i < 1000; i++) {
        host_work(i);
        tiny<<<1, 32>>>(d, i); /* PLANT-LAUNCH */
      }
    if (!strcmp(mode, "fused"))
      for (int i = 0; i < 1000; i++) host_work(i);
    if (!strcmp(mode, "fused") || !strcmp(mode, "memory") || !strcmp(mode, "headroom"))
      many<<<1000, 32>>>(d, 32000);
    if (!strcmp(mode, "occupancy"))
      for (int i = 0; i < 20; i++)
        staged<<<132 * 40, 128, 200 << 10>>>(d, 132 * 40 * 128); /* PLANT-OCCUPANCY */
    if (!strcmp(mode, "occupied"))
      for (int i = 0; i < 20; i++) staged<<<132 * 10, 512, 512 * sizeof(float)>>>(d, 132 * 40 * 128);
    if (gemm)
      for (int i = 0; i < 4; i++)
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, d, n, d, n, &zero, d, n); /* PLANT-SGEMM */
    if (comm || overlap) comm_step(overlap);
    else cudaStreamSynchronize(0);
  }
  for (int g = 0; g < 2 && (comm || overlap); g++)
    ncclCommDestroy(nc[g]), cudaFree(grad[g]), cudaFree(act[g]);
  if (h) cublasDestroy(h);
  if (big) cudaFree(big);
  cudaFree(d);
  printf("%s done\n", mode);
  return 0;
}
