// train.cu — a small data-parallel CNN training program, written the way a user writes one.
//
// Model (NCHW, fp32):  x[B,1,16,16] -> conv3x3(1->8) + bias + ReLU
//                                   -> conv3x3 stride 2 (8->8) + bias + ReLU   (cuDNN)
//                                   -> fc 512->64 + bias + ReLU                (cublasSgemm_v2)
//                                   -> fc 64->10 + bias                        (cublasLtMatmul)
//                                   -> softmax cross-entropy                   (own kernel)
// Backward uses cuDNN backward filter/data, cublasSgemm_v2 and cublasGemmEx; gradients are
// averaged across ranks with ncclAllReduce (grouped, on a communication stream ordered with
// events); SGD with momentum is an own kernel. A data-loader thread synthesises each batch
// (deterministic: depends only on seed, rank and step) into pinned memory, double-buffered.
//
// Ranks: `--ranks N` starts N rank processes (fork + exec of this binary, like torchrun) after
// creating the NCCL unique id, which reaches the ranks hex-encoded in TRAIN_NCCL_ID. Under an
// external launcher (RANK/LOCAL_RANK/WORLD_SIZE from torchrun, OMPI_COMM_WORLD_* from mpirun)
// the program runs as one rank; rank 0 publishes the id in a file (TRAIN_NCCL_ID_FILE, default
// /tmp/train-nccl-id-<job id>) that the other ranks poll. With one rank NCCL is still used
// (a single-rank communicator), so the code path is the same for every world size.
//
// Output: rank 0 prints the configuration, one line per step (the loss averaged over all ranks)
// and a closing line on stdout; timings go to stderr, so stdout is identical from run to run.
// Every CUDA, cuBLAS, cuDNN and NCCL status is checked: on error the rank prints what failed
// and exits with status 1.

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

// ---------------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------------

static int g_rank = 0;  // for messages

static void die(const char *file, int line, const char *call, const char *what) {
  fprintf(stderr, "train: rank %d: error: %s failed: %s (%s:%d)\n", g_rank, call, what, file,
          line);
  fflush(stderr);
  exit(1);
}

static void check_cuda(cudaError_t e, const char *call, const char *file, int line) {
  if (e == cudaSuccess) return;
  char msg[512];
  const char *hint = "";
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
      e == cudaErrorInitializationError)
    hint = " [is an NVIDIA driver and GPU present?]";
  snprintf(msg, sizeof msg, "%s: %s%s", cudaGetErrorName(e), cudaGetErrorString(e), hint);
  die(file, line, call, msg);
}

static void check_cublas(cublasStatus_t s, const char *call, const char *file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", cublasGetStatusName(s), cublasGetStatusString(s));
  die(file, line, call, msg);
}

static void check_cudnn(cudnnStatus_t s, const char *call, const char *file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  char msg[256];
  snprintf(msg, sizeof msg, "cuDNN status %d: %s", (int)s, cudnnGetErrorString(s));
  die(file, line, call, msg);
}

static void check_nccl(ncclResult_t r, const char *call, const char *file, int line) {
  if (r == ncclSuccess) return;
  char msg[256];
  snprintf(msg, sizeof msg, "NCCL result %d: %s", (int)r, ncclGetErrorString(r));
  die(file, line, call, msg);
}

#define CUDA_CHECK(x) check_cuda((x), #x, __FILE__, __LINE__)
#define CUBLAS_CHECK(x) check_cublas((x), #x, __FILE__, __LINE__)
#define CUDNN_CHECK(x) check_cudnn((x), #x, __FILE__, __LINE__)
#define NCCL_CHECK(x) check_nccl((x), #x, __FILE__, __LINE__)
#define LAUNCH_CHECK(name) check_cuda(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)

// ---------------------------------------------------------------------------------------------
// Options and ranks
// ---------------------------------------------------------------------------------------------

struct Options {
  int steps = 20;
  int batch = 32;
  int ranks = 1;
  int slow_rank = -1;
  int slow_ms = 0;
  int stall_step = -1;
  int device = -1;
  unsigned long long seed = 1234;
  float lr = 0.05f;
  float momentum = 0.9f;
};

struct RankInfo {
  int rank = 0, local_rank = 0, world = 1;
  const char *launcher = "none";  // "none", "train", "torchrun", "mpirun"
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: train [options]\n"
          "  --steps N        training steps (default 20)\n"
          "  --batch B        samples per rank and step (default 32)\n"
          "  --ranks N        start N rank processes, one per GPU, like torchrun (default 1)\n"
          "  --device D       CUDA device (default LOCAL_RANK %% device count)\n"
          "  --slow-rank R    rank R waits --slow-ms on the host before each all-reduce\n"
          "  --slow-ms MS     milliseconds of that extra work (default 0)\n"
          "  --stall-step S   rank --slow-rank stops at step S in host code, spinning for ever\n"
          "                   (a hung job: the other ranks wait in their next all-reduce)\n"
          "  --seed S         data and weight seed (default 1234)\n"
          "  --lr LR          learning rate (default 0.05)\n"
          "Under torchrun (RANK, LOCAL_RANK, WORLD_SIZE) or mpirun (OMPI_COMM_WORLD_*) it runs as\n"
          "one rank; the NCCL id is passed in TRAIN_NCCL_ID or through the file\n"
          "TRAIN_NCCL_ID_FILE (default /tmp/train-nccl-id-<job id>), written by rank 0.\n");
}

static long parse_int(const char *flag, const char *v, long lo, long hi) {
  char *end = NULL;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "train: %s needs an integer in [%ld, %ld], got '%s'\n", flag, lo, hi,
            v ? v : "");
    exit(2);
  }
  return x;
}

static Options parse_args(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    // --flag=value or --flag value
    char flag[64];
    const char *val = NULL;
    const char *eq = strchr(a, '=');
    if (eq && (size_t)(eq - a) < sizeof flag) {
      memcpy(flag, a, eq - a);
      flag[eq - a] = 0;
      val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
      if (i + 1 < argc) val = argv[i + 1];
    }
    bool consumed_next = !eq;
    if (!strcmp(flag, "--steps")) o.steps = (int)parse_int(flag, val, 0, 10000000);
    else if (!strcmp(flag, "--batch")) o.batch = (int)parse_int(flag, val, 1, 65536);
    else if (!strcmp(flag, "--ranks")) o.ranks = (int)parse_int(flag, val, 1, 1024);
    else if (!strcmp(flag, "--device")) o.device = (int)parse_int(flag, val, 0, 1023);
    else if (!strcmp(flag, "--slow-rank")) o.slow_rank = (int)parse_int(flag, val, 0, 1023);
    else if (!strcmp(flag, "--slow-ms")) o.slow_ms = (int)parse_int(flag, val, 0, 3600000);
    else if (!strcmp(flag, "--stall-step")) o.stall_step = (int)parse_int(flag, val, 0, 10000000);
    else if (!strcmp(flag, "--seed")) o.seed = (unsigned long long)parse_int(flag, val, 0, LONG_MAX);
    else if (!strcmp(flag, "--lr")) {
      char *end = NULL;
      o.lr = val ? strtof(val, &end) : 0.f;
      if (!val || end == val || *end || !(o.lr > 0.f)) {
        fprintf(stderr, "train: --lr needs a positive number\n");
        exit(2);
      }
    } else {
      fprintf(stderr, "train: unknown option '%s'\n", a);
      usage(stderr);
      exit(2);
    }
    if (consumed_next) i++;
  }
  return o;
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  return (int)parse_int(name, v, 0, 1 << 20);
}

// The rank this process plays, from a launcher's environment.
static RankInfo detect_rank(const Options &o) {
  RankInfo r;
  if (getenv("RANK") && getenv("WORLD_SIZE")) {  // torchrun, or our own launcher
    r.rank = env_int("RANK", 0);
    r.world = env_int("WORLD_SIZE", 1);
    r.local_rank = env_int("LOCAL_RANK", r.rank);
    r.launcher = getenv("TRAIN_NCCL_ID") ? "train" : "torchrun";
  } else if (getenv("OMPI_COMM_WORLD_RANK") && getenv("OMPI_COMM_WORLD_SIZE")) {
    r.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    r.world = env_int("OMPI_COMM_WORLD_SIZE", 1);
    r.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", r.rank);
    r.launcher = "mpirun";
  } else {
    r.world = o.ranks;
  }
  if (r.world < 1 || r.rank >= r.world) {
    fprintf(stderr, "train: bad launcher environment: rank %d of world size %d\n", r.rank,
            r.world);
    exit(1);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// NCCL unique id: hex encoding, file rendezvous
// ---------------------------------------------------------------------------------------------

static void id_to_hex(const ncclUniqueId &id, char *out /* 2*NCCL_UNIQUE_ID_BYTES+1 */) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)id.internal;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * NCCL_UNIQUE_ID_BYTES] = 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool id_from_hex(const char *s, ncclUniqueId *id) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) n--;
  if (n != 2 * NCCL_UNIQUE_ID_BYTES) return false;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
    int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    id->internal[i] = (char)(hi << 4 | lo);
  }
  return true;
}

static const char *job_id(void) {
  static const char *vars[] = {"TRAIN_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
                               "OMPI_MCA_ess_base_jobid", "MASTER_PORT"};
  for (const char *v : vars) {
    const char *s = getenv(v);
    if (s && *s) return s;
  }
  static char fallback[32];
  snprintf(fallback, sizeof fallback, "uid%u", (unsigned)getuid());
  return fallback;
}

static void id_file_path(char *path, size_t n) {
  const char *f = getenv("TRAIN_NCCL_ID_FILE");
  if (f && *f) snprintf(path, n, "%s", f);
  else snprintf(path, n, "/tmp/train-nccl-id-%s", job_id());
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Rank 0 writes the id (temp file + rename: readers never see half a file).
static void publish_id_file(const char *path, const ncclUniqueId &id) {
  char hex[2 * NCCL_UNIQUE_ID_BYTES + 2], tmp[PATH_MAX + 32];
  id_to_hex(id, hex);
  strcat(hex, "\n");
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd) != 0 ||
      close(fd) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "train: rank 0: error: cannot write the NCCL id file %s: %s\n", path,
            strerror(errno));
    exit(1);
  }
}

// The other ranks poll for it. A file older than this process (minus a margin for start-up
// skew) is a stale one from an earlier run and is ignored.
static ncclUniqueId wait_id_file(const char *path, double timeout_s) {
  time_t born = time(NULL) - 60;
  double t0 = now_s();
  for (;;) {
    struct stat st;
    if (stat(path, &st) == 0 && st.st_mtime >= born) {
      FILE *f = fopen(path, "r");
      if (f) {
        char buf[2 * NCCL_UNIQUE_ID_BYTES + 16] = {0};
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        ncclUniqueId id;
        if (id_from_hex(buf, &id)) return id;
      }
    }
    if (now_s() - t0 > timeout_s) {
      fprintf(stderr,
              "train: rank %d: error: no NCCL id from rank 0 in %s after %.0f s "
              "(set TRAIN_NCCL_ID_FILE to a path all ranks share)\n",
              g_rank, path, timeout_s);
      exit(1);
    }
    usleep(20000);
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher: --ranks N starts N copies of this program, one per rank, and waits for them
// ---------------------------------------------------------------------------------------------

static pid_t g_children[1024];
static int g_nchildren = 0;

static void forward_signal(int sig) {
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] > 0) kill(g_children[i], sig);
}

static char *xstrdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xstrdup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) {
    perror("train: vasprintf");
    exit(1);
  }
  va_end(ap);
  return s;
}

NOINLINE static int launch_ranks(int nranks, char **argv) {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
  id_to_hex(id, hex);

  extern char **environ;
  int nenv = 0;
  while (environ[nenv]) nenv++;
  static const char *ours[] = {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=",
                               "GROUP_RANK=", "MASTER_ADDR=", "MASTER_PORT=", "TRAIN_NCCL_ID="};

  // Everything the children need is prepared before fork (only async-signal-safe calls between
  // fork and exec: NCCL has threads running in this process now).
  char ***envs = (char ***)calloc(nranks, sizeof(char **));
  for (int r = 0; r < nranks; r++) {
    char **e = (char **)calloc(nenv + 16, sizeof(char *));
    int k = 0;
    for (int i = 0; i < nenv; i++) {
      bool skip = false;
      for (const char *p : ours)
        if (!strncmp(environ[i], p, strlen(p))) skip = true;
      if (!skip) e[k++] = environ[i];
    }
    e[k++] = xstrdup_printf("RANK=%d", r);
    e[k++] = xstrdup_printf("LOCAL_RANK=%d", r);
    e[k++] = xstrdup_printf("WORLD_SIZE=%d", nranks);
    e[k++] = xstrdup_printf("LOCAL_WORLD_SIZE=%d", nranks);
    e[k++] = xstrdup_printf("GROUP_RANK=0");
    e[k++] = xstrdup_printf("MASTER_ADDR=127.0.0.1");
    e[k++] = xstrdup_printf("MASTER_PORT=%d", 29500 + (int)(getpid() % 1000));
    e[k++] = xstrdup_printf("TRAIN_NCCL_ID=%s", hex);
    e[k] = NULL;
    envs[r] = e;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    perror("train: readlink /proc/self/exe");
    return 1;
  }
  self[n] = 0;

  fprintf(stderr, "train: starting %d ranks\n", nranks);
  fflush(stdout);
  fflush(stderr);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  pid_t parent = getpid();
  for (int r = 0; r < nranks; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("train: fork");
      forward_signal(SIGTERM);
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // a rank does not outlive its launcher
      if (getppid() != parent) _exit(1);
      execve(self, argv, envs[r]);
      static const char msg[] = "train: exec of rank process failed\n";
      ssize_t ignored = write(2, msg, sizeof msg - 1);
      (void)ignored;
      _exit(127);
    }
    g_children[g_nchildren++] = pid;
  }

  // Wait for all. When one fails, give the others a moment to finish on their own (they often
  // fail the same way), then stop them: ranks stuck in a collective would wait forever.
  int status_of[1024];
  for (int r = 0; r < nranks; r++) status_of[r] = -1;
  int left = nranks, failed = 0;
  double fail_time = 0;
  bool killed = false;
  while (left > 0) {
    int st;
    pid_t pid = waitpid(-1, &st, failed ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pid == 0) {
      if (!killed && now_s() - fail_time > 3.0) {
        fprintf(stderr, "train: stopping the remaining ranks\n");
        forward_signal(SIGTERM);
        killed = true;
      }
      usleep(10000);
      continue;
    }
    for (int r = 0; r < nranks; r++) {
      if (g_children[r] != pid) continue;
      g_children[r] = -1;
      status_of[r] = st;
      left--;
      bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (!ok && !failed) {
        failed = 1;
        fail_time = now_s();
      }
    }
  }
  int bad = 0;
  for (int r = 0; r < nranks; r++) {
    int st = status_of[r];
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
    bad++;
    if (st == -1) fprintf(stderr, "train: rank %d: lost\n", r);
    else if (WIFEXITED(st)) fprintf(stderr, "train: rank %d exited with status %d\n", r, WEXITSTATUS(st));
    else if (WIFSIGNALED(st)) fprintf(stderr, "train: rank %d killed by signal %d (%s)\n", r, WTERMSIG(st), strsignal(WTERMSIG(st)));
  }
  if (bad) {
    fprintf(stderr, "train: %d of %d ranks failed\n", bad, nranks);
    return 1;
  }
  fprintf(stderr, "train: all %d ranks finished\n", nranks);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

// y[i] += b[channel of i], for a tensor laid out [N, C, HW] (HW = 1 for a fully connected layer)
__global__ void bias_add_kernel(float *y, const float *b, int n, int C, int HW) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] += b[(i / HW) % C];
}

__global__ void relu_forward_kernel(float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = fmaxf(y[i], 0.f);
}

// dy *= (y > 0), with y the ReLU's output
__global__ void relu_backward_kernel(float *dy, const float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (!(y[i] > 0.f)) dy[i] = 0.f;
}

// db[c] = sum over n, hw of dy[n, c, hw]; one thread per channel, fixed order (deterministic)
__global__ void bias_grad_kernel(const float *dy, float *db, int N, int C, int HW) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float s = 0.f;
  for (int n = 0; n < N; n++)
    for (int i = 0; i < HW; i++) s += dy[((size_t)n * C + c) * HW + i];
  db[c] = s;
}

// Mean softmax cross-entropy over B rows of K logits, and its gradient. One block; the loss is
// reduced in shared memory in a fixed order (deterministic).
#define XENT_THREADS 256
__global__ void softmax_xent_kernel(const float *logits, const int *labels, float *dlogits,
                                    float *loss, int B, int K) {
  __shared__ float part[XENT_THREADS];
  float acc = 0.f;
  for (int i = threadIdx.x; i < B; i += blockDim.x) {
    const float *z = logits + (size_t)i * K;
    float *dz = dlogits + (size_t)i * K;
    float m = z[0];
    for (int k = 1; k < K; k++) m = fmaxf(m, z[k]);
    float sum = 0.f;
    for (int k = 0; k < K; k++) sum += expf(z[k] - m);
    int y = labels[i];
    if (y < 0 || y >= K) y = 0;
    acc += logf(sum) - (z[y] - m);
    for (int k = 0; k < K; k++) dz[k] = (expf(z[k] - m) / sum - (k == y ? 1.f : 0.f)) / B;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = part[0] / B;
}

// SGD with momentum; grad_scale turns the all-reduced sum into the mean over ranks
__global__ void sgd_momentum_kernel(float *p, const float *g, float *v, int n, float lr,
                                    float momentum, float grad_scale) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float vi = momentum * v[i] + g[i] * grad_scale;
    v[i] = vi;
    p[i] -= lr * vi;
  }
}

static int grid_for(size_t n) {
  size_t g = (n + 255) / 256;
  return (int)(g < 1 ? 1 : g > 1024 ? 1024 : g);
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

enum { IMG = 16, NCLASS = 10, C1 = 8, C2 = 8, HIDDEN = 64 };
enum { P_CONV1_W, P_CONV1_B, P_CONV2_W, P_CONV2_B, P_FC1_W, P_FC1_B, P_FC2_W, P_FC2_B, NPARAM };

struct Param {
  const char *name;
  size_t count, offset;  // in floats, into the flat parameter / gradient buffers
};

struct ConvLayer {
  int n, c, h, w;       // input
  int k, r, s, stride;  // filters
  int oc, oh, ow;       // output
  cudnnTensorDescriptor_t x_desc, y_desc;
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv_desc;
  cudnnConvolutionFwdAlgo_t fwd_algo;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
  bool needs_input_grad;
};

struct Net {
  int B, world, rank;
  Param params[NPARAM];
  size_t nparams;     // floats in the parameter buffer
  size_t loss_off;    // the loss travels with the gradients, so one all-reduce averages both
  float *d_params, *d_grads, *d_momentum;
  // activations (each ReLU is applied in place; its output is what backward needs)
  float *d_x, *d_a1, *d_a2, *d_h1, *d_logits;
  int *d_labels;
  // gradients of activations
  float *d_da1, *d_da2, *d_dh1, *d_dlogits;
  ConvLayer conv1, conv2;
  void *d_workspace;
  size_t workspace_bytes;
  void *d_lt_workspace;
  size_t lt_workspace_bytes;
  cudnnHandle_t cudnn;
  cublasHandle_t cublas;
  cublasLtHandle_t cublaslt;
  cublasLtMatmulDesc_t fc2_desc;
  cublasLtMatrixLayout_t fc2_w_layout, fc2_x_layout, fc2_y_layout;
  ncclComm_t comm;
  cudaStream_t stream, comm_stream;
  cudaEvent_t grads_ready, grads_reduced;
  float *h_loss;  // pinned
};

static float *P(Net &n, int i) { return n.d_params + n.params[i].offset; }
static float *G(Net &n, int i) { return n.d_grads + n.params[i].offset; }

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static float uniform(uint64_t *s) { return (splitmix64(s) >> 40) * (1.0f / 16777216.0f); }

NOINLINE static void setup_conv(Net &n, ConvLayer &L, int c, int h, int w, int k, int stride,
                                bool needs_input_grad) {
  L.n = n.B, L.c = c, L.h = h, L.w = w, L.k = k, L.r = 3, L.s = 3, L.stride = stride;
  L.needs_input_grad = needs_input_grad;
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&L.x_desc));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&L.y_desc));
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&L.w_desc));
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&L.conv_desc));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(L.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, L.n, c, h, w));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(L.w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(L.conv_desc, 1, 1, stride, stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  int on, oc, oh, ow;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(L.conv_desc, L.x_desc, L.w_desc, &on, &oc, &oh, &ow));
  if (on != L.n || oc != k) {
    fprintf(stderr, "train: error: unexpected convolution output shape %dx%dx%dx%d\n", on, oc, oh, ow);
    exit(1);
  }
  L.oc = oc, L.oh = oh, L.ow = ow;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(L.y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));
  // Deterministic algorithms (what torch.backends.cudnn.deterministic = True asks for).
  L.fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  L.bwd_filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  L.bwd_data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  // If this cuDNN does not support one of them for the layer, take its first heuristic choice.
  size_t ws = 0;
  cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(n.cudnn, L.x_desc, L.w_desc,
                                                             L.conv_desc, L.y_desc, L.fwd_algo, &ws);
  if (st == CUDNN_STATUS_NOT_SUPPORTED) {
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(n.cudnn, L.x_desc, L.w_desc, L.conv_desc,
                                                       L.y_desc, 8, &got, perf));
    for (int i = got - 1; i >= 0; i--)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) L.fwd_algo = perf[i].algo;
    st = cudnnGetConvolutionForwardWorkspaceSize(n.cudnn, L.x_desc, L.w_desc, L.conv_desc,
                                                 L.y_desc, L.fwd_algo, &ws);
  }
  CUDNN_CHECK(st);
  if (ws > n.workspace_bytes) n.workspace_bytes = ws;

  st = cudnnGetConvolutionBackwardFilterWorkspaceSize(n.cudnn, L.x_desc, L.y_desc, L.conv_desc,
                                                      L.w_desc, L.bwd_filter_algo, &ws);
  if (st == CUDNN_STATUS_NOT_SUPPORTED) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
    int got = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(n.cudnn, L.x_desc, L.y_desc,
                                                              L.conv_desc, L.w_desc, 8, &got, perf));
    for (int i = got - 1; i >= 0; i--)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) L.bwd_filter_algo = perf[i].algo;
    st = cudnnGetConvolutionBackwardFilterWorkspaceSize(n.cudnn, L.x_desc, L.y_desc, L.conv_desc,
                                                        L.w_desc, L.bwd_filter_algo, &ws);
  }
  CUDNN_CHECK(st);
  if (ws > n.workspace_bytes) n.workspace_bytes = ws;

  if (needs_input_grad) {
    st = cudnnGetConvolutionBackwardDataWorkspaceSize(n.cudnn, L.w_desc, L.y_desc, L.conv_desc,
                                                      L.x_desc, L.bwd_data_algo, &ws);
    if (st == CUDNN_STATUS_NOT_SUPPORTED) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[8];
      int got = 0;
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(n.cudnn, L.w_desc, L.y_desc,
                                                              L.conv_desc, L.x_desc, 8, &got, perf));
      for (int i = got - 1; i >= 0; i--)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) L.bwd_data_algo = perf[i].algo;
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(n.cudnn, L.w_desc, L.y_desc, L.conv_desc,
                                                        L.x_desc, L.bwd_data_algo, &ws);
    }
    CUDNN_CHECK(st);
    if (ws > n.workspace_bytes) n.workspace_bytes = ws;
  }
}

NOINLINE static void init_weights(Net &n, unsigned long long seed) {
  // Same seed on every rank: the replicas start identical (what DDP's broadcast achieves).
  float *h = (float *)calloc(n.nparams, sizeof(float));
  uint64_t s = seed ^ 0x5eedull;
  for (int i = 0; i < NPARAM; i++) {
    Param &p = n.params[i];
    if (i % 2 == 1) continue;  // biases start at zero
    size_t fan_in = i == P_CONV1_W ? 1 * 9 : i == P_CONV2_W ? C1 * 9 : i == P_FC1_W ? C2 * 8 * 8 : HIDDEN;
    float bound = sqrtf(6.0f / fan_in);
    for (size_t j = 0; j < p.count; j++) h[p.offset + j] = (2.f * uniform(&s) - 1.f) * bound;
  }
  CUDA_CHECK(cudaMemcpy(n.d_params, h, n.nparams * sizeof(float), cudaMemcpyHostToDevice));
  free(h);
}

NOINLINE static void setup_fc2_matmul(Net &n) {
  // logits^T[10 x B] = W2^T(col-major [64 x 10])^T * h1^T(col-major [64 x B])
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&n.fc2_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(n.fc2_desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(n.fc2_desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&n.fc2_w_layout, CUDA_R_32F, HIDDEN, NCLASS, HIDDEN));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&n.fc2_x_layout, CUDA_R_32F, HIDDEN, n.B, HIDDEN));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&n.fc2_y_layout, CUDA_R_32F, NCLASS, n.B, NCLASS));
}

static float *dalloc(size_t floats) {
  float *p = NULL;
  CUDA_CHECK(cudaMalloc(&p, floats * sizeof(float)));
  CUDA_CHECK(cudaMemset(p, 0, floats * sizeof(float)));
  return p;
}

NOINLINE static void create_model(Net &n, int batch, unsigned long long seed) {
  n.B = batch;
  CUDA_CHECK(cudaStreamCreateWithFlags(&n.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&n.comm_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&n.grads_ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&n.grads_reduced, cudaEventDisableTiming));
  CUDNN_CHECK(cudnnCreate(&n.cudnn));
  CUDNN_CHECK(cudnnSetStream(n.cudnn, n.stream));
  CUBLAS_CHECK(cublasCreate(&n.cublas));
  CUBLAS_CHECK(cublasSetStream(n.cublas, n.stream));
  CUBLAS_CHECK(cublasLtCreate(&n.cublaslt));

  setup_conv(n, n.conv1, 1, IMG, IMG, C1, 1, false);
  setup_conv(n, n.conv2, C1, n.conv1.oh, n.conv1.ow, C2, 2, true);
  const int flat = C2 * n.conv2.oh * n.conv2.ow;  // 8 * 8 * 8 = 512

  const size_t counts[NPARAM] = {(size_t)C1 * 1 * 9, C1, (size_t)C2 * C1 * 9, C2,
                                 (size_t)HIDDEN * flat, HIDDEN, (size_t)NCLASS * HIDDEN, NCLASS};
  static const char *names[NPARAM] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                      "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  size_t off = 0;
  for (int i = 0; i < NPARAM; i++) {
    n.params[i] = Param{names[i], counts[i], off};
    off += (counts[i] + 63) & ~(size_t)63;  // 256-byte aligned tensors
  }
  n.nparams = off;
  n.loss_off = off;
  n.d_params = dalloc(n.nparams);
  n.d_grads = dalloc(n.nparams + 64);
  n.d_momentum = dalloc(n.nparams);

  n.d_x = dalloc((size_t)n.B * IMG * IMG);
  CUDA_CHECK(cudaMalloc(&n.d_labels, n.B * sizeof(int)));
  CUDA_CHECK(cudaMemset(n.d_labels, 0, n.B * sizeof(int)));
  size_t a1 = (size_t)n.B * C1 * n.conv1.oh * n.conv1.ow, a2 = (size_t)n.B * flat;
  n.d_a1 = dalloc(a1);
  n.d_da1 = dalloc(a1);
  n.d_a2 = dalloc(a2);
  n.d_da2 = dalloc(a2);
  n.d_h1 = dalloc((size_t)n.B * HIDDEN);
  n.d_dh1 = dalloc((size_t)n.B * HIDDEN);
  n.d_logits = dalloc((size_t)n.B * NCLASS);
  n.d_dlogits = dalloc((size_t)n.B * NCLASS);
  n.d_workspace = NULL;
  if (n.workspace_bytes) CUDA_CHECK(cudaMalloc(&n.d_workspace, n.workspace_bytes));
  n.lt_workspace_bytes = 4 << 20;
  CUDA_CHECK(cudaMalloc(&n.d_lt_workspace, n.lt_workspace_bytes));
  CUDA_CHECK(cudaMallocHost((void **)&n.h_loss, sizeof(float)));
  *n.h_loss = 0.f;

  setup_fc2_matmul(n);
  init_weights(n, seed);
}

NOINLINE static void destroy_model(Net &n) {
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(n.fc2_w_layout));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(n.fc2_x_layout));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(n.fc2_y_layout));
  CUBLAS_CHECK(cublasLtMatmulDescDestroy(n.fc2_desc));
  for (ConvLayer *L : {&n.conv1, &n.conv2}) {
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(L->x_desc));
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(L->y_desc));
    CUDNN_CHECK(cudnnDestroyFilterDescriptor(L->w_desc));
    CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(L->conv_desc));
  }
  void *bufs[] = {n.d_params, n.d_grads, n.d_momentum, n.d_x,   n.d_labels, n.d_a1, n.d_da1,
                  n.d_a2,     n.d_da2,   n.d_h1,       n.d_dh1, n.d_logits, n.d_dlogits,
                  n.d_workspace, n.d_lt_workspace};
  for (void *p : bufs)
    if (p) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFreeHost(n.h_loss));
  CUBLAS_CHECK(cublasLtDestroy(n.cublaslt));
  CUBLAS_CHECK(cublasDestroy(n.cublas));
  CUDNN_CHECK(cudnnDestroy(n.cudnn));
  CUDA_CHECK(cudaEventDestroy(n.grads_ready));
  CUDA_CHECK(cudaEventDestroy(n.grads_reduced));
  CUDA_CHECK(cudaStreamDestroy(n.stream));
  CUDA_CHECK(cudaStreamDestroy(n.comm_stream));
}

// ---------------------------------------------------------------------------------------------
// Data loader thread: synthesises batch `step` into one of two pinned slots
// ---------------------------------------------------------------------------------------------

struct Slot {
  float *x;     // pinned [B, 1, 16, 16]
  int *labels;  // pinned [B]
  int step;
  enum { FREE, READY, IN_FLIGHT } state;
  cudaEvent_t copied;  // recorded after the copies that read this slot
};

struct DataLoader {
  int steps, batch, rank, device;
  unsigned long long seed;
  Slot slots[2];
  std::mutex mu;
  std::condition_variable cv;
  std::thread thread;
};

// A learnable toy task: class c is a brighter 4x4 square at one of ten places, in noise
// (the loss falls from about 2.5 to near 0 in 20 steps).
NOINLINE static void synthesize_batch(float *x, int *labels, int B, unsigned long long seed,
                                      int rank, int step) {
  uint64_t s = seed * 1000003ull + (uint64_t)rank * 7919ull + (uint64_t)step * 104729ull;
  for (int i = 0; i < B; i++) {
    int c = (int)(splitmix64(&s) % NCLASS);
    labels[i] = c;
    float *img = x + (size_t)i * IMG * IMG;
    for (int p = 0; p < IMG * IMG; p++) img[p] = uniform(&s) - 0.5f;
    int y0 = (c / 4) * 5 + 1, x0 = (c % 4) * 4;
    for (int dy = 0; dy < 4; dy++)
      for (int dx = 0; dx < 4; dx++) img[(y0 + dy) * IMG + x0 + dx] += 0.6f;
  }
}

static void data_loader_main(DataLoader *dl) {
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "data loader");
  CUDA_CHECK(cudaSetDevice(dl->device));
  for (int step = 0; step < dl->steps; step++) {
    Slot &sl = dl->slots[step % 2];
    bool wait_copy;
    {
      std::unique_lock<std::mutex> lk(dl->mu);
      dl->cv.wait(lk, [&] { return sl.state != Slot::READY; });
      wait_copy = sl.state == Slot::IN_FLIGHT;
    }
    // The slot's previous batch may still be on its way to the GPU.
    if (wait_copy) CUDA_CHECK(cudaEventSynchronize(sl.copied));
    nvtxRangePushA("load batch");
    synthesize_batch(sl.x, sl.labels, dl->batch, dl->seed, dl->rank, step);
    nvtxRangePop();
    {
      std::lock_guard<std::mutex> lk(dl->mu);
      sl.step = step;
      sl.state = Slot::READY;
    }
    dl->cv.notify_all();
  }
}

NOINLINE static void start_data_loader(DataLoader &dl, const Options &o, int rank, int device) {
  dl.steps = o.steps, dl.batch = o.batch, dl.rank = rank, dl.device = device, dl.seed = o.seed;
  for (Slot &s : dl.slots) {
    CUDA_CHECK(cudaMallocHost((void **)&s.x, (size_t)o.batch * IMG * IMG * sizeof(float)));
    CUDA_CHECK(cudaMallocHost((void **)&s.labels, (size_t)o.batch * sizeof(int)));
    CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    s.step = -1;
    s.state = Slot::FREE;
  }
  dl.thread = std::thread(data_loader_main, &dl);
}

NOINLINE static void stop_data_loader(DataLoader &dl) {
  dl.thread.join();
  for (Slot &s : dl.slots) {
    CUDA_CHECK(cudaFreeHost(s.x));
    CUDA_CHECK(cudaFreeHost(s.labels));
    CUDA_CHECK(cudaEventDestroy(s.copied));
  }
}

// Waits for batch `step` and copies it to the device on the compute stream.
NOINLINE static void load_batch(Net &n, DataLoader &dl, int step) {
  Slot &sl = dl.slots[step % 2];
  {
    std::unique_lock<std::mutex> lk(dl.mu);
    dl.cv.wait(lk, [&] { return sl.state == Slot::READY && sl.step == step; });
  }
  CUDA_CHECK(cudaMemcpyAsync(n.d_x, sl.x, (size_t)n.B * IMG * IMG * sizeof(float),
                             cudaMemcpyHostToDevice, n.stream));
  CUDA_CHECK(cudaMemcpyAsync(n.d_labels, sl.labels, (size_t)n.B * sizeof(int),
                             cudaMemcpyHostToDevice, n.stream));
  CUDA_CHECK(cudaEventRecord(sl.copied, n.stream));
  {
    std::lock_guard<std::mutex> lk(dl.mu);
    sl.state = Slot::IN_FLIGHT;
  }
  dl.cv.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Forward, backward, all-reduce, optimizer
// ---------------------------------------------------------------------------------------------

static const float kOne = 1.f, kZero = 0.f;

// y = ReLU(conv(x, W) + b)
NOINLINE static void forward_conv(Net &n, ConvLayer &L, int w_param, const float *x, float *y) {
  CUDNN_CHECK(cudnnConvolutionForward(n.cudnn, &kOne, L.x_desc, x, L.w_desc, P(n, w_param),
                                      L.conv_desc, L.fwd_algo, n.d_workspace, n.workspace_bytes,
                                      &kZero, L.y_desc, y));
  int count = L.n * L.oc * L.oh * L.ow;
  bias_add_kernel<<<grid_for(count), 256, 0, n.stream>>>(y, P(n, w_param + 1), count, L.oc,
                                                          L.oh * L.ow);
  LAUNCH_CHECK("bias_add_kernel");
  relu_forward_kernel<<<grid_for(count), 256, 0, n.stream>>>(y, count);
  LAUNCH_CHECK("relu_forward_kernel");
}

// Row-major Y[B x N] = X[B x K] W[N x K]^T (+ b, ReLU): in cuBLAS's column-major terms
// Y^T = W^T' X^T, i.e. gemm(T, N) on the row-major buffers.
NOINLINE static void forward_fc(Net &n, int w_param, const float *x, float *y, int N, int K,
                                bool relu) {
  CUBLAS_CHECK(cublasSgemm(n.cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, n.B, K, &kOne, P(n, w_param), K,
                           x, K, &kZero, y, N));
  int count = n.B * N;
  bias_add_kernel<<<grid_for(count), 256, 0, n.stream>>>(y, P(n, w_param + 1), count, N, 1);
  LAUNCH_CHECK("bias_add_kernel");
  if (relu) {
    relu_forward_kernel<<<grid_for(count), 256, 0, n.stream>>>(y, count);
    LAUNCH_CHECK("relu_forward_kernel");
  }
}

// The classifier layer through cuBLASLt (how PyTorch runs its GEMMs).
NOINLINE static void forward_classifier(Net &n) {
  CUBLAS_CHECK(cublasLtMatmul(n.cublaslt, n.fc2_desc, &kOne, P(n, P_FC2_W), n.fc2_w_layout, n.d_h1,
                              n.fc2_x_layout, &kZero, n.d_logits, n.fc2_y_layout, n.d_logits,
                              n.fc2_y_layout, NULL, n.d_lt_workspace, n.lt_workspace_bytes,
                              n.stream));
  int count = n.B * NCLASS;
  bias_add_kernel<<<grid_for(count), 256, 0, n.stream>>>(n.d_logits, P(n, P_FC2_B), count, NCLASS, 1);
  LAUNCH_CHECK("bias_add_kernel");
}

NOINLINE static void loss_and_grad(Net &n) {
  softmax_xent_kernel<<<1, XENT_THREADS, 0, n.stream>>>(n.d_logits, n.d_labels, n.d_dlogits,
                                                        n.d_grads + n.loss_off, n.B, NCLASS);
  LAUNCH_CHECK("softmax_xent_kernel");
}

NOINLINE static void forward(Net &n) {
  forward_conv(n, n.conv1, P_CONV1_W, n.d_x, n.d_a1);
  forward_conv(n, n.conv2, P_CONV2_W, n.d_a1, n.d_a2);
  forward_fc(n, P_FC1_W, n.d_a2, n.d_h1, HIDDEN, C2 * n.conv2.oh * n.conv2.ow, true);
  forward_classifier(n);
  loss_and_grad(n);
}

// Given dY[B x N] of y = x W^T + b: dW = dY^T X, db = sum dY, and (if dx) dX = dY W.
NOINLINE static void backward_fc(Net &n, int w_param, const float *x, const float *dy, float *dx,
                                 int N, int K, bool use_gemm_ex) {
  if (use_gemm_ex) {
    CUBLAS_CHECK(cublasGemmEx(n.cublas, CUBLAS_OP_N, CUBLAS_OP_T, K, N, n.B, &kOne, x, CUDA_R_32F,
                              K, dy, CUDA_R_32F, N, &kZero, G(n, w_param), CUDA_R_32F, K,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    CUBLAS_CHECK(cublasSgemm(n.cublas, CUBLAS_OP_N, CUBLAS_OP_T, K, N, n.B, &kOne, x, K, dy, N,
                             &kZero, G(n, w_param), K));
  }
  bias_grad_kernel<<<(N + 127) / 128, 128, 0, n.stream>>>(dy, G(n, w_param + 1), n.B, N, 1);
  LAUNCH_CHECK("bias_grad_kernel");
  if (dx)
    CUBLAS_CHECK(cublasSgemm(n.cublas, CUBLAS_OP_N, CUBLAS_OP_N, K, n.B, N, &kOne, P(n, w_param), K,
                             dy, N, &kZero, dx, K));
}

// Given dY (already through the ReLU) of a convolution layer: dW, db and (if needed) dX.
NOINLINE static void backward_conv(Net &n, ConvLayer &L, int w_param, const float *x,
                                   const float *dy, float *dx) {
  bias_grad_kernel<<<(L.oc + 127) / 128, 128, 0, n.stream>>>(dy, G(n, w_param + 1), L.n, L.oc,
                                                             L.oh * L.ow);
  LAUNCH_CHECK("bias_grad_kernel");
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(n.cudnn, &kOne, L.x_desc, x, L.y_desc, dy, L.conv_desc,
                                             L.bwd_filter_algo, n.d_workspace, n.workspace_bytes,
                                             &kZero, L.w_desc, G(n, w_param)));
  if (dx)
    CUDNN_CHECK(cudnnConvolutionBackwardData(n.cudnn, &kOne, L.w_desc, P(n, w_param), L.y_desc, dy,
                                             L.conv_desc, L.bwd_data_algo, n.d_workspace,
                                             n.workspace_bytes, &kZero, L.x_desc, dx));
}

static void relu_backward(Net &n, float *dy, const float *y, int count) {
  relu_backward_kernel<<<grid_for(count), 256, 0, n.stream>>>(dy, y, count);
  LAUNCH_CHECK("relu_backward_kernel");
}

NOINLINE static void backward(Net &n) {
  const int flat = C2 * n.conv2.oh * n.conv2.ow;
  backward_fc(n, P_FC2_W, n.d_h1, n.d_dlogits, n.d_dh1, NCLASS, HIDDEN, true);
  relu_backward(n, n.d_dh1, n.d_h1, n.B * HIDDEN);
  backward_fc(n, P_FC1_W, n.d_a2, n.d_dh1, n.d_da2, HIDDEN, flat, false);
  relu_backward(n, n.d_da2, n.d_a2, n.B * flat);
  backward_conv(n, n.conv2, P_CONV2_W, n.d_a1, n.d_da2, n.d_da1);
  relu_backward(n, n.d_da1, n.d_a1, n.B * C1 * n.conv1.oh * n.conv1.ow);
  backward_conv(n, n.conv1, P_CONV1_W, n.d_x, n.d_da1, NULL);
}

// Sums every gradient (and the loss) over the ranks, on the communication stream.
NOINLINE static void allreduce_gradients(Net &n) {
  nvtxRangePushA("allreduce");
  CUDA_CHECK(cudaEventRecord(n.grads_ready, n.stream));
  CUDA_CHECK(cudaStreamWaitEvent(n.comm_stream, n.grads_ready, 0));
  NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < NPARAM; i++)
    NCCL_CHECK(ncclAllReduce(G(n, i), G(n, i), n.params[i].count, ncclFloat, ncclSum, n.comm,
                             n.comm_stream));
  NCCL_CHECK(ncclAllReduce(n.d_grads + n.loss_off, n.d_grads + n.loss_off, 1, ncclFloat, ncclSum,
                           n.comm, n.comm_stream));
  NCCL_CHECK(ncclGroupEnd());
  CUDA_CHECK(cudaEventRecord(n.grads_reduced, n.comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(n.stream, n.grads_reduced, 0));
  nvtxRangePop();
}

NOINLINE static void optimizer_step(Net &n, float lr, float momentum) {
  int count = (int)n.nparams;
  sgd_momentum_kernel<<<grid_for(count), 256, 0, n.stream>>>(n.d_params, n.d_grads, n.d_momentum,
                                                             count, lr, momentum, 1.f / n.world);
  LAUNCH_CHECK("sgd_momentum_kernel");
}

// Extra host time of a straggler (e.g. a slow data source): it waits, leaving the CPU to the
// other ranks (a busy loop on a machine with fewer cores than ranks would slow them too).
// Host work of the slow rank: ms of computation on the CPU (what a rank's extra host work
// looks like: on the CPU, in this function, when sampled).
NOINLINE static double slow_host_work(int ms) {
  double t0 = now_s(), acc = 0;
  while (now_s() - t0 < ms / 1000.0)
    for (int i = 0; i < 1000; i++) acc += 1e-9 * i;
  return acc;
}

// --stall-step: host code that never returns (a deadlock, a wait for a file that never comes):
// this rank issues no further collective, and the others wait in theirs.
// It computes half of the time and sleeps the other half (the CPU is left to the other ranks).
NOINLINE static double stall_in_host_code(void) {
  volatile double acc = 0;
  for (;;) {
    double t0 = now_s();
    while (now_s() - t0 < 0.002)
      for (int i = 0; i < 1000; i++) acc = acc + 1e-9 * i;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  return acc;
}

NOINLINE static float train_step(Net &n, DataLoader &dl, const Options &o, int step) {
  char name[64];
  snprintf(name, sizeof name, "ProfilerStep#%d", step);
  nvtxRangePushA(name);

  load_batch(n, dl, step);
  // zero_grad (the loss slot too)
  CUDA_CHECK(cudaMemsetAsync(n.d_grads, 0, (n.nparams + 64) * sizeof(float), n.stream));

  nvtxRangePushA("forward");
  forward(n);
  nvtxRangePop();

  nvtxRangePushA("backward");
  backward(n);
  if (o.stall_step >= 0 && step == o.stall_step && o.slow_rank == n.rank) stall_in_host_code();
  if (o.slow_ms > 0 && o.slow_rank == n.rank) {
    nvtxRangePushA("slow rank work");
    volatile double sink = slow_host_work(o.slow_ms);
    (void)sink;
    nvtxRangePop();
  }
  allreduce_gradients(n);
  nvtxRangePop();

  nvtxRangePushA("optimizer");
  optimizer_step(n, o.lr, o.momentum);
  nvtxRangePop();

  // loss.item()
  CUDA_CHECK(cudaMemcpyAsync(n.h_loss, n.d_grads + n.loss_off, sizeof(float),
                             cudaMemcpyDeviceToHost, n.stream));
  CUDA_CHECK(cudaStreamSynchronize(n.stream));
  float loss = *n.h_loss / n.world;

  nvtxRangePop();
  return loss;
}

// ---------------------------------------------------------------------------------------------
// One rank
// ---------------------------------------------------------------------------------------------

NOINLINE static int select_device(const Options &o, const RankInfo &ri, cudaDeviceProp *prop) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 1) {
    fprintf(stderr, "train: rank %d: error: no CUDA device\n", ri.rank);
    exit(1);
  }
  int dev = o.device >= 0 ? o.device : ri.local_rank % count;
  if (dev >= count) {
    fprintf(stderr, "train: rank %d: error: --device %d but only %d devices\n", ri.rank, dev, count);
    exit(1);
  }
  CUDA_CHECK(cudaSetDevice(dev));
  CUDA_CHECK(cudaGetDeviceProperties(prop, dev));
  return dev;
}

NOINLINE static ncclUniqueId rendezvous(const RankInfo &ri) {
  ncclUniqueId id;
  const char *hex = getenv("TRAIN_NCCL_ID");
  if (hex && *hex) {
    if (!id_from_hex(hex, &id)) {
      fprintf(stderr, "train: rank %d: error: TRAIN_NCCL_ID is not a %d-byte hex string\n",
              ri.rank, NCCL_UNIQUE_ID_BYTES);
      exit(1);
    }
    return id;
  }
  if (ri.world == 1) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    return id;
  }
  char path[PATH_MAX];
  id_file_path(path, sizeof path);
  if (ri.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    publish_id_file(path, id);
    return id;
  }
  const char *t = getenv("TRAIN_NCCL_ID_TIMEOUT");
  return wait_id_file(path, t && *t ? atof(t) : 300.0);
}

NOINLINE static int run_rank(const Options &o, const RankInfo &ri) {
  g_rank = ri.rank;
  if (o.slow_ms > 0 && o.slow_rank >= ri.world && ri.rank == 0)
    fprintf(stderr, "train: warning: --slow-rank %d is not a rank (world size %d)\n", o.slow_rank,
            ri.world);

  cudaDeviceProp prop;
  int dev = select_device(o, ri, &prop);

  char id_path[PATH_MAX] = "";
  bool id_file = !getenv("TRAIN_NCCL_ID") && ri.world > 1;
  if (id_file && ri.rank == 0) {
    id_file_path(id_path, sizeof id_path);
    unlink(id_path);  // a stale id from an earlier run
  }
  ncclUniqueId id = rendezvous(ri);

  Net n;
  memset((void *)&n, 0, sizeof n);
  n.rank = ri.rank, n.world = ri.world;
  NCCL_CHECK(ncclCommInitRank(&n.comm, ri.world, id, ri.rank));

  create_model(n, o.batch, o.seed);

  if (ri.rank == 0) {
    printf("train: %d rank%s (launcher: %s), batch %d per rank, %d steps, device %d: %s\n",
           ri.world, ri.world == 1 ? "" : "s", ri.launcher, o.batch, o.steps, dev, prop.name);
    printf("train: %zu parameters in %d tensors\n", (size_t)(n.params[NPARAM - 1].offset +
           n.params[NPARAM - 1].count), NPARAM);
    fflush(stdout);
  }

  DataLoader *dl = new DataLoader();
  start_data_loader(*dl, o, ri.rank, dev);

  cudaEvent_t t_start, t_stop;
  CUDA_CHECK(cudaEventCreate(&t_start));
  CUDA_CHECK(cudaEventCreate(&t_stop));
  CUDA_CHECK(cudaEventRecord(t_start, n.stream));
  float loss = 0.f;
  for (int step = 0; step < o.steps; step++) {
    loss = train_step(n, *dl, o, step);
    // Once the first all-reduce has completed every rank has joined: the id file is used up.
    if (step == 0 && id_file && ri.rank == 0) unlink(id_path);
    if (ri.rank == 0) {
      printf("step %d/%d loss %.4f\n", step + 1, o.steps, loss);
      fflush(stdout);
    }
  }
  CUDA_CHECK(cudaEventRecord(t_stop, n.stream));
  CUDA_CHECK(cudaEventSynchronize(t_stop));
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, t_start, t_stop));
  CUDA_CHECK(cudaDeviceSynchronize());

  stop_data_loader(*dl);
  delete dl;
  CUDA_CHECK(cudaEventDestroy(t_start));
  CUDA_CHECK(cudaEventDestroy(t_stop));
  NCCL_CHECK(ncclCommDestroy(n.comm));
  destroy_model(n);
  if (id_file && ri.rank == 0) unlink(id_path);

  if (ri.rank == 0) {
    fprintf(stderr, "train: %d steps in %.1f ms GPU time (%.2f ms/step)\n", o.steps, ms,
            o.steps ? ms / o.steps : 0.f);
    printf("train: done, final loss %.4f\n", loss);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  Options o = parse_args(argc, argv);
  RankInfo ri = detect_rank(o);
  if (!strcmp(ri.launcher, "none") && o.ranks > 1) return launch_ranks(o.ranks, argv);
  return run_rank(o, ri);
}
