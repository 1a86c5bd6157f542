/* advise_loop.c — planted causes for tests/advise/: `advise_loop MODE`, MODE one of
 *   sync      a synchronous D2H cudaMemcpy every step (sync-in-loop, at PLANT-SYNC)
 *   malloc    cudaMalloc/cudaFree every step (malloc-in-loop, at PLANT-MALLOC)
 *   pageable  an H2D copy from malloc'd (pageable) memory every step (pageable-h2d, PLANT-PAGEABLE)
 *   tuned     the same loop done well: buffers allocated once, pinned host memory, async
 *             copies and one synchronization at the end. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 20
#define BYTES (1u << 20)

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "tuned";
  int sync = !strcmp(mode, "sync"), mal = !strcmp(mode, "malloc"), pag = !strcmp(mode, "pageable");
  void *dev = NULL, *pinned = NULL;
  char *pageable = malloc(BYTES);
  if (!pageable || cudaMalloc(&dev, BYTES) != cudaSuccess || cudaMallocHost(&pinned, BYTES) != cudaSuccess) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  memset(pageable, 1, BYTES);
  for (int i = 0; i < STEPS; i++) {
    if (mal) {
      void *tmp = NULL;
      cudaMalloc(&tmp, BYTES), cudaFree(tmp); /* PLANT-MALLOC */
    }
    if (pag) cudaMemcpyAsync(dev, pageable, BYTES, cudaMemcpyHostToDevice, 0); /* PLANT-PAGEABLE */
    else cudaMemcpyAsync(dev, pinned, BYTES, cudaMemcpyHostToDevice, 0);
    /* GPU work for the step's last copy to wait for: a sync that waits on a queue of tens of
     * microseconds costs about its own call's time, under 1 % of a step on a quick host */
    for (int k = 0; k < 16; k++) cudaMemsetAsync(dev, k, BYTES, 0);
    if (sync) cudaMemcpy(pageable, dev, 64, cudaMemcpyDeviceToHost); /* PLANT-SYNC */
    else cudaMemcpyAsync(pinned, dev, 64, cudaMemcpyDeviceToHost, 0);
  }
  cudaStreamSynchronize(0);
  cudaFreeHost(pinned);
  cudaFree(dev);
  free(pageable);
  printf("%s done\n", mode);
  return 0;
}
