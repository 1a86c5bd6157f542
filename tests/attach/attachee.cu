// attachee.cu — the program `dlhook attach` is tested on (tests/attach/). It knows nothing of
// dlhook. Step s (1..N) makes, in this order, on the main thread:
//   cudaMemset(d, s, 256)                the step's mark: its `value` argument is s
//   k_step<<<2, 64>>>(d)                 one kernel
//   cublasSgemm_v2 (16x16x16)            one cuBLAS call (seen only through the GOT/PLT hooks)
//   cudaMemcpy(h, d, 256, D2H)
//   cudaStreamSynchronize(0)
// then sleeps --step-ms. With --log FILE it appends "s t_ns" per step (CLOCK_MONOTONIC at the
// mark): the program's own record of what it did and when. After the N steps it waits (no CUDA
// call) until --hold FILE exists, then prints a checksum of all results and exits with --exit.
// With --plugin PATH --plugin-at S it opens PATH (tests/attach/plugin.c) with dlopen before step S
// and logs "plugin S t_ns"; from then on each step also calls its plugin_step() (one cuBLAS call
// made from that library) right after the GEMM, and after the last step its plugin_end(); it also
// looks up cublasGetPointerMode_v2 with dlsym on libcublas's handle then and calls it each step.
// Linked with -z now (full RELRO: its GOT is read-only once started).
// The main thread sleeps in nanosleep and a second thread waits in read() on a pipe for the whole
// run: a system call that dlhook's injection interrupts must resume as if nothing happened (a
// line "interrupted" in the output otherwise).
// The output depends only on N: a run with dlhook attached must print exactly the same.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__global__ void k_step(float *p) { p[threadIdx.x] = p[threadIdx.x] * 0.5f + 1.0f; }

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int pipefd[2];

static void *reader(void *arg) {
  (void)arg;
  char c;
  ssize_t n = read(pipefd[0], &c, 1);
  if (n != 1) printf("attachee: read interrupted (%zd, errno %d)\n", n, errno);
  return NULL;
}

int main(int argc, char **argv) {
  int steps = 100, step_ms = 10, code = 0;
  const char *log = NULL, *hold = NULL, *plugin = NULL;
  int plugin_at = 0;
  int (*plugin_step)(void *) = NULL, (*plugin_end)(void *) = NULL;
  cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t *) = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--step-ms")) step_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--log")) log = argv[i + 1];
    else if (!strcmp(argv[i], "--hold")) hold = argv[i + 1];
    else if (!strcmp(argv[i], "--exit")) code = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--plugin")) plugin = argv[i + 1];
    else if (!strcmp(argv[i], "--plugin-at")) plugin_at = atoi(argv[i + 1]);
    else { fprintf(stderr, "attachee: unknown option %s\n", argv[i]); return 2; }
  }
  float *d = NULL, *a = NULL, *b = NULL, *c = NULL, h[64];
  if (cudaMalloc(&d, 256) || cudaMalloc(&a, 1024) || cudaMalloc(&b, 1024) || cudaMalloc(&c, 1024)) {
    fprintf(stderr, "attachee: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(a, 0, 1024);
  cudaMemset(b, 0, 1024);
  cublasHandle_t hb;
  if (cublasCreate(&hb) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "attachee: cublasCreate failed\n");
    return 1;
  }
  pthread_t rt;
  if (pipe(pipefd) != 0 || pthread_create(&rt, NULL, reader, NULL) != 0) return 1;
  FILE *lf = log ? fopen(log, "w") : NULL;
  double sum = 0;
  const float one = 1.0f, zero = 0.0f;
  for (int s = 1; s <= steps; s++) {
    if (plugin && s == plugin_at) {
      void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
      plugin_step = h ? (int (*)(void *))dlsym(h, "plugin_step") : NULL;
      plugin_end = h ? (int (*)(void *))dlsym(h, "plugin_end") : NULL;
      if (!plugin_step || !plugin_end) { fprintf(stderr, "attachee: %s: %s\n", plugin, dlerror()); return 1; }
      /* and a cuBLAS function looked up by handle, called from then on */
      void *hl = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
      get_pointer_mode = hl ? (cublasStatus_t (*)(cublasHandle_t, cublasPointerMode_t *))dlsym(
                                  hl, "cublasGetPointerMode_v2")
                            : NULL;
      if (!get_pointer_mode) { fprintf(stderr, "attachee: no cublasGetPointerMode_v2\n"); return 1; }
      if (lf) { fprintf(lf, "plugin %d %llu\n", s, now_ns()); fflush(lf); }
    }
    unsigned long long t = now_ns();
    cudaMemset(d, s, 256);
    k_step<<<2, 64>>>(d);
    cublasSgemm_v2(hb, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, a, 16, b, 16, &zero, c, 16);
    if (plugin_step) plugin_step(hb);
    cublasPointerMode_t pm;
    if (get_pointer_mode) get_pointer_mode(hb, &pm);
    cudaMemcpy(h, d, 256, cudaMemcpyDeviceToHost);
    cudaStreamSynchronize(0);
    for (int i = 0; i < 64; i++) sum += h[i] == h[i] ? 1.0 : 0.0;
    if (lf) { fprintf(lf, "%d %llu\n", s, t); fflush(lf); }
    struct timespec ts = {step_ms / 1000, (long)(step_ms % 1000) * 1000000L};
    if (step_ms && nanosleep(&ts, NULL) != 0) printf("attachee: sleep interrupted (errno %d)\n", errno);
  }
  if (lf) fclose(lf);
  for (int i = 0; hold && i < 60000 && access(hold, F_OK) != 0; i++) usleep(10000);
  if (plugin_end) printf("attachee: plugin math mode %d\n", plugin_end(hb));
  if (write(pipefd[1], "x", 1) != 1) return 1;
  pthread_join(rt, NULL);
  cublasDestroy(hb);
  printf("attachee: %d steps, checksum %.0f\n", steps, sum);
  return code;
}
