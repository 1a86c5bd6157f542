/* cuBLAS / cuBLASLt numerics: Sgemm (all transposes), Dgemm, GemmEx (fp32, fp16 in),
 * strided-batched and pointer-array batched GEMMs, cublasLtMatmul (heuristic, batch, bias+ReLU
 * epilogue; also through a cuBLAS handle cast to cuBLASLt's, as PyTorch does), Sgemv, Saxpy,
 * Sdot, Set/Get Vector/Matrix, and the handle's stream/workspace/modes. */
#include <stdint.h>
#include <cublas_api.h>
#include <cublasLt.h>
#include "simtest.h"

static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda,
                     const double *B, int ldb, double beta, double *C, int ldc) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double acc = 0;
      for (int p = 0; p < k; p++)
        acc += (ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
      C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];
    }
}

static double *rnd(size_t n, unsigned seed) {
  double *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (double)((seed >> 16) % 2001) / 1000.0 - 1.0;
  }
  return v;
}

static void *dev_from(const double *v, size_t n, int type) {
  size_t es = type == CUDA_R_64F ? 8 : type == CUDA_R_16F ? 2 : 4;
  void *h = malloc(n * es), *d = NULL;
  for (size_t i = 0; i < n; i++) {
    if (type == CUDA_R_64F) ((double *)h)[i] = v[i];
    else if (type == CUDA_R_16F) ((_Float16 *)h)[i] = (_Float16)v[i];
    else ((float *)h)[i] = (float)v[i];
  }
  cudaMalloc(&d, n * es);
  cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice);
  free(h);
  return d;
}
static double *host_from(const void *d, size_t n, int type) {
  size_t es = type == CUDA_R_64F ? 8 : 4;
  void *h = malloc(n * es);
  double *v = malloc(n * sizeof *v);
  cudaMemcpy(h, d, n * es, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; i++) v[i] = type == CUDA_R_64F ? ((double *)h)[i] : ((float *)h)[i];
  free(h);
  return v;
}

int main(int argc, char **argv) {
  simtest_init(argc, argv);
  int cupti = simtest_cupti_start();
  cublasHandle_t h;
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  OK(cublasCreate_v2(&h));
  OK(cublasSetStream_v2(h, s));
  cudaStream_t got = NULL;
  OK(cublasGetStream_v2(h, &got));
  CHECK(got == s, "stream roundtrip");
  void *ws = NULL;
  cudaMalloc(&ws, 1 << 20);
  OK(cublasSetWorkspace_v2(h, ws, 1 << 20));
  cublasMath_t mm;
  OK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  OK(cublasGetMathMode(h, &mm));
  CHECK(mm == CUBLAS_DEFAULT_MATH, "math mode");
  int ver = 0;
  OK(cublasGetVersion_v2(h, &ver));
  CHECK(ver >= 130000, "version %d", ver);

  const int m = 37, n = 29, k = 41;
  const double alpha = 1.5, beta = 0.5;
  /* Sgemm, every transpose combination */
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      int lda = ta ? k : m, ldb = tb ? n : k, ldc = m + 3;
      double *A = rnd((size_t)lda * (ta ? m : k), 1 + ta), *B = rnd((size_t)ldb * (tb ? k : n), 7 + tb);
      double *C = rnd((size_t)ldc * n, 11);
      void *dA = dev_from(A, (size_t)lda * (ta ? m : k), CUDA_R_32F);
      void *dB = dev_from(B, (size_t)ldb * (tb ? k : n), CUDA_R_32F);
      void *dC = dev_from(C, (size_t)ldc * n, CUDA_R_32F);
      float fa = (float)alpha, fb = (float)beta;
      OK(cublasSgemm_v2(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                        &fa, dA, lda, dB, ldb, &fb, dC, ldc));
      OK(cudaStreamSynchronize(s));
      ref_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      double *R = host_from(dC, (size_t)ldc * n, CUDA_R_32F);
      char what[64];
      snprintf(what, sizeof what, "Sgemm ta=%d tb=%d", ta, tb);
      simtest_close(R, C, (size_t)ldc * n, 1e-4, what);
      free(A); free(B); free(C); free(R);
      cudaFree(dA); cudaFree(dB); cudaFree(dC);
    }

  /* Dgemm NT */
  {
    double *A = rnd((size_t)m * k, 3), *B = rnd((size_t)n * k, 4), *C = rnd((size_t)m * n, 5);
    void *dA = dev_from(A, (size_t)m * k, CUDA_R_64F), *dB = dev_from(B, (size_t)n * k, CUDA_R_64F);
    void *dC = dev_from(C, (size_t)m * n, CUDA_R_64F);
    OK(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, dA, m, dB, n, &beta, dC, m));
    OK(cudaStreamSynchronize(s));
    ref_gemm(0, 1, m, n, k, alpha, A, m, B, n, beta, C, m);
    double *R = host_from(dC, (size_t)m * n, CUDA_R_64F);
    simtest_close(R, C, (size_t)m * n, 1e-12, "Dgemm");
    free(A); free(B); free(C); free(R);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
  }

  /* GemmEx: fp32 and fp16 inputs, fp32 output, compute 32F */
  for (int half = 0; half < 2; half++) {
    int at = half ? CUDA_R_16F : CUDA_R_32F;
    double *A = rnd((size_t)k * m, 21), *B = rnd((size_t)k * n, 22), *C = rnd((size_t)m * n, 23);
    if (half) { /* what the device sees: the fp16-rounded inputs */
      for (int i = 0; i < k * m; i++) A[i] = (double)(_Float16)A[i];
      for (int i = 0; i < k * n; i++) B[i] = (double)(_Float16)B[i];
    }
    void *dA = dev_from(A, (size_t)k * m, at), *dB = dev_from(B, (size_t)k * n, at);
    void *dC = dev_from(C, (size_t)m * n, CUDA_R_32F);
    float fa = 2.0f, fb = 0.0f;
    OK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &fa, dA, at, k, dB, at, k, &fb, dC,
                    CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    OK(cudaStreamSynchronize(s));
    ref_gemm(1, 0, m, n, k, 2.0, A, k, B, k, 0.0, C, m);
    double *R = host_from(dC, (size_t)m * n, CUDA_R_32F);
    simtest_close(R, C, (size_t)m * n, 1e-3, half ? "GemmEx fp16" : "GemmEx fp32");
    free(A); free(B); free(C); free(R);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
  }

  /* SgemmStridedBatched, GemmStridedBatchedEx and GemmBatchedEx (pointer arrays) */
  {
    const int batch = 3;
    const long long sa = (long long)m * k + 5, sb = (long long)k * n + 7, sc = (long long)m * n + 1;
    double *A = rnd((size_t)sa * batch, 31), *B = rnd((size_t)sb * batch, 32);
    double *C0 = rnd((size_t)sc * batch, 33);
    for (int variant = 0; variant < 3; variant++) {
      double *C = malloc(sizeof(double) * (size_t)sc * batch);
      memcpy(C, C0, sizeof(double) * (size_t)sc * batch);
      void *dA = dev_from(A, (size_t)sa * batch, CUDA_R_32F), *dB = dev_from(B, (size_t)sb * batch, CUDA_R_32F);
      void *dC = dev_from(C, (size_t)sc * batch, CUDA_R_32F);
      float fa = (float)alpha, fb = (float)beta;
      if (variant == 0) {
        OK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &fa, dA, m, sa, dB, k, sb,
                                     &fb, dC, m, sc, batch));
      } else if (variant == 1) {
        OK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &fa, dA, CUDA_R_32F, m,
                                      sa, dB, CUDA_R_32F, k, sb, &fb, dC, CUDA_R_32F, m, sc, batch,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      } else {
        const void *pa[3], *pb[3];
        void *pc[3];
        for (int b = 0; b < batch; b++) {
          pa[b] = (float *)dA + sa * b;
          pb[b] = (float *)dB + sb * b;
          pc[b] = (float *)dC + sc * b;
        }
        void **dpa = NULL, **dpb = NULL, **dpc = NULL;
        cudaMalloc((void **)&dpa, sizeof pa);
        cudaMalloc((void **)&dpb, sizeof pb);
        cudaMalloc((void **)&dpc, sizeof pc);
        cudaMemcpy(dpa, pa, sizeof pa, cudaMemcpyHostToDevice);
        cudaMemcpy(dpb, pb, sizeof pb, cudaMemcpyHostToDevice);
        cudaMemcpy(dpc, pc, sizeof pc, cudaMemcpyHostToDevice);
        OK(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &fa, (const void *const *)dpa,
                               CUDA_R_32F, m, (const void *const *)dpb, CUDA_R_32F, k, &fb,
                               (void *const *)dpc, CUDA_R_32F, m, batch, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
        OK(cudaStreamSynchronize(s));
        cudaFree(dpa); cudaFree(dpb); cudaFree(dpc);
      }
      OK(cudaStreamSynchronize(s));
      for (int b = 0; b < batch; b++)
        ref_gemm(0, 0, m, n, k, alpha, A + sa * b, m, B + sb * b, k, beta, C + sc * b, m);
      double *R = host_from(dC, (size_t)sc * batch, CUDA_R_32F);
      for (int b = 0; b < batch; b++)
        simtest_close(R + sc * b, C + sc * b, (size_t)m * n, 1e-4,
                      variant == 0 ? "SgemmStridedBatched" : variant == 1 ? "GemmStridedBatchedEx" : "GemmBatchedEx");
      free(C); free(R);
      cudaFree(dA); cudaFree(dB); cudaFree(dC);
    }
    free(A); free(B); free(C0);
  }

  /* cublasLtMatmul directly: heuristic, batch 2, bias + ReLU epilogue, D != C */
  {
    cublasLtHandle_t lt;
    OK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t md;
    OK(cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t tr = CUBLAS_OP_T;
    OK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr));
    int32_t back = -1;
    size_t wr = 0;
    OK(cublasLtMatmulDescGetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &back, sizeof back, &wr));
    CHECK(back == CUBLAS_OP_T && wr == sizeof back, "Lt get transa %d %zu", back, wr);
    cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_RELU_BIAS;
    OK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    double *bias = rnd((size_t)m, 41);
    void *dbias = dev_from(bias, (size_t)m, CUDA_R_32F);
    OK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    const int batch = 2;
    const int64_t sa = (int64_t)k * m, sb = (int64_t)k * n, sc = (int64_t)m * n;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, m, k));
    OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
    OK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
    OK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m));
    cublasLtMatrixLayout_t ls[4] = {la, lb, lc, ld};
    int64_t st[4] = {sa, sb, sc, sc};
    for (int i = 0; i < 4; i++) {
      int32_t bc = batch;
      OK(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
      OK(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st[i], sizeof st[i]));
    }
    uint64_t rows = 0;
    OK(cublasLtMatrixLayoutGetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &wr));
    CHECK(rows == (uint64_t)k, "layout rows %llu", (unsigned long long)rows);
    cublasLtMatmulPreference_t pref;
    OK(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsz = 1 << 20;
    OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
    cublasLtMatmulHeuristicResult_t res[4];
    int nres = 0;
    OK(cublasLtMatmulAlgoGetHeuristic(lt, md, la, lb, lc, ld, pref, 4, res, &nres));
    CHECK(nres >= 1, "heuristic returned %d", nres);
    double *A = rnd((size_t)sa * batch, 42), *B = rnd((size_t)sb * batch, 43), *C = rnd((size_t)sc * batch, 44);
    void *dA = dev_from(A, (size_t)sa * batch, CUDA_R_32F), *dB = dev_from(B, (size_t)sb * batch, CUDA_R_32F);
    void *dC = dev_from(C, (size_t)sc * batch, CUDA_R_32F), *dD = NULL;
    cudaMalloc(&dD, sizeof(float) * sc * batch);
    float fa = 1.0f, fb = 1.0f;
    OK(cublasLtMatmul(lt, md, &fa, dA, la, dB, lb, &fb, dC, lc, dD, ld, &res[0].algo, ws, wsz, s));
    OK(cudaStreamSynchronize(s));
    for (int b = 0; b < batch; b++) {
      ref_gemm(1, 0, m, n, k, 1.0, A + sa * b, k, B + sb * b, k, 1.0, C + sc * b, m);
      for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
          double v = C[sc * b + i + j * m] + bias[i];
          C[sc * b + i + j * m] = v < 0 ? 0 : v;
        }
    }
    double *R = host_from(dD, (size_t)sc * batch, CUDA_R_32F);
    simtest_close(R, C, (size_t)sc * batch, 1e-4, "cublasLtMatmul bias+relu batched");
    free(A); free(B); free(C); free(R); free(bias);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dD); cudaFree(dbias);
    for (int i = 0; i < 4; i++) OK(cublasLtMatrixLayoutDestroy(ls[i]));
    OK(cublasLtMatmulPreferenceDestroy(pref));
    OK(cublasLtMatmulDescDestroy(md));
    OK(cublasLtDestroy(lt));
  }

  /* Level 1/2 */
  {
    double *A = rnd((size_t)m * n, 51), *x = rnd((size_t)n, 52), *y = rnd((size_t)m, 53);
    void *dA = dev_from(A, (size_t)m * n, CUDA_R_32F), *dx = dev_from(x, (size_t)n, CUDA_R_32F);
    void *dy = dev_from(y, (size_t)m, CUDA_R_32F);
    float fa = 2.0f, fb = -1.0f;
    OK(cublasSgemv_v2(h, CUBLAS_OP_N, m, n, &fa, dA, m, dx, 1, &fb, dy, 1));
    float dot = 0;
    OK(cublasSdot_v2(h, m, dy, 1, dy, 1, &dot));
    OK(cudaStreamSynchronize(s));
    double want = 0;
    for (int i = 0; i < m; i++) {
      double acc = 0;
      for (int p = 0; p < n; p++) acc += A[i + p * m] * x[p];
      y[i] = 2.0 * acc - y[i];
      want += y[i] * y[i];
    }
    double *R = host_from(dy, (size_t)m, CUDA_R_32F);
    simtest_close(R, y, (size_t)m, 1e-4, "Sgemv");
    double gd = dot;
    simtest_close(&gd, &want, 1, 1e-4, "Sdot");
    OK(cublasSaxpy_v2(h, m, &fa, dy, 1, dy, 1));
    OK(cudaStreamSynchronize(s));
    for (int i = 0; i < m; i++) y[i] *= 3;
    free(R);
    R = host_from(dy, (size_t)m, CUDA_R_32F);
    simtest_close(R, y, (size_t)m, 1e-4, "Saxpy");
    free(A); free(x); free(y); free(R);
    cudaFree(dA); cudaFree(dx); cudaFree(dy);
  }

  /* A GEMM captured into a CUDA graph, the graph launched after its arguments went out of scope */
  {
    void *a = NULL;
    cudaMalloc(&a, sizeof(float) * 64 * 64 * 3);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    {
      float fa = 1, fb = 0;
      OK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &fa, a, 64, (float *)a + 4096, 64, &fb,
                        (float *)a + 8192, 64));
    }
    OK(cudaStreamEndCapture(s, &graph));
    OK(cudaGraphInstantiate(&exec, graph, 0));
    OK(cudaGraphLaunch(exec, s));
    OK(cudaGraphLaunch(exec, s));
    OK(cudaStreamSynchronize(s));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(a);
  }

  /* PyTorch passes its cuBLAS handle to cuBLASLt: reinterpret_cast<cublasLtHandle_t>(handle) */
  {
    const int M = 5, N = 4, K = 3;
    cublasLtHandle_t lt = (cublasLtHandle_t)h;
    cublasLtMatmulDesc_t md;
    OK(cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t tr = CUBLAS_OP_T;
    OK(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr));
    cublasLtMatrixLayout_t la, lb, lc;
    OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, K, M, K));
    OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K));
    OK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M));
    cublasLtMatmulPreference_t pref;
    OK(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    OK(cublasLtMatmulAlgoGetHeuristic(lt, md, la, lb, lc, lc, pref, 1, &res, &nres));
    CHECK(nres == 1, "heuristic through a cuBLAS handle returned %d", nres);
    double *A = rnd((size_t)K * M, 61), *B = rnd((size_t)K * N, 62), *C = calloc((size_t)M * N, sizeof *C);
    void *dA = dev_from(A, (size_t)K * M, CUDA_R_32F), *dB = dev_from(B, (size_t)K * N, CUDA_R_32F);
    void *dC = dev_from(C, (size_t)M * N, CUDA_R_32F);
    float fa = 1, fb = 0;
    OK(cublasLtMatmul(lt, md, &fa, dA, la, dB, lb, &fb, dC, lc, dC, lc, &res.algo, NULL, 0, s));
    OK(cudaStreamSynchronize(s));
    ref_gemm(1, 0, M, N, K, 1.0, A, K, B, K, 0.0, C, M);
    double *R = host_from(dC, (size_t)M * N, CUDA_R_32F);
    simtest_close(R, C, (size_t)M * N, 1e-5, "cublasLtMatmul through a cuBLAS handle");
    free(A); free(B); free(C); free(R);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    OK(cublasLtMatrixLayoutDestroy(la)); OK(cublasLtMatrixLayoutDestroy(lb));
    OK(cublasLtMatrixLayoutDestroy(lc)); OK(cublasLtMatmulPreferenceDestroy(pref));
    OK(cublasLtMatmulDescDestroy(md));
  }

  /* Set/GetVector, Set/GetMatrix: strided copies and their argument checks */
  {
    float hx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, hy[8] = {0};
    void *d = NULL;
    cudaMalloc(&d, sizeof(float) * 16);
    OK(cublasSetVector(4, sizeof(float), hx, 2, d, 1)); /* 1 3 5 7 */
    OK(cublasGetVector(4, sizeof(float), d, 1, hy, 2));
    CHECK(hy[0] == 1 && hy[2] == 3 && hy[4] == 5 && hy[6] == 7 && hy[1] == 0, "vector roundtrip %g %g %g %g",
          hy[0], hy[2], hy[4], hy[6]);
    CHECK(cublasSetVector(4, sizeof(float), hx, 0, d, 1) == CUBLAS_STATUS_INVALID_VALUE, "incx 0");
    CHECK(cublasGetVector(4, 0, d, 1, hy, 1) == CUBLAS_STATUS_INVALID_VALUE, "elemSize 0");
    /* a 2x3 matrix in a host buffer with lda 3, to the device with ldb 2, back with lda 4 */
    float hm[9] = {1, 2, -1, 3, 4, -1, 5, 6, -1}, back[12];
    memset(back, 0, sizeof back);
    OK(cublasSetMatrix(2, 3, sizeof(float), hm, 3, d, 2));
    OK(cublasGetMatrixAsync(2, 3, sizeof(float), d, 2, back, 4, s));
    OK(cudaStreamSynchronize(s));
    CHECK(back[0] == 1 && back[1] == 2 && back[4] == 3 && back[5] == 4 && back[8] == 5 && back[9] == 6 &&
          back[2] == 0, "matrix roundtrip %g %g %g %g %g %g", back[0], back[1], back[4], back[5], back[8], back[9]);
    CHECK(cublasSetMatrix(2, 3, sizeof(float), hm, 1, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "lda < rows");
    OK(cublasSetMatrix(0, 3, sizeof(float), hm, 1, d, 1)); /* nothing to copy */
    cudaFree(d);
  }

  /* A large GEMM only costs simulated time. */
  {
    void *big = NULL;
    cudaMalloc(&big, 64);
    float fa = 1, fb = 0;
    OK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8192, 8192, 8192, &fa, big, 8192, big, 8192, &fb,
                      big, 8192));
    OK(cudaStreamSynchronize(s));
    cudaFree(big);
  }
  printf("CUPTI %s: %d kernel records, %d with gemm in the name\n", cupti ? "on" : "unavailable",
         simtest_cupti_count(""), simtest_cupti_count("gemm"));
  if (cupti) { /* the GEMMs appear as kernel activity records with their names */
    CHECK(simtest_cupti_count("gemm") >= 10, "%d gemm kernel records", simtest_cupti_count("gemm"));
    if (getenv("SIMTEST_UNDER_SIM"))
      CHECK(simtest_cupti_count("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n") == 1, "big Sgemm record");
  }
  OK(cublasDestroy_v2(h));
  cudaFree(ws);
  cudaStreamDestroy(s);
  return simtest_done("t_sim_lib_blas");
}
