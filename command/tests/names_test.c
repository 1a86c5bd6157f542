/* names_test.c — unit test of names.c (rd_kernel_short, rd_module_short, rd_names_*): names
 * from PyTorch's kernels (mangled, as traces hold them) and module paths, with the short forms
 * a reader expects. `names_test NAME...` prints the short form of each name instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"

/* what names.c takes from the rest of command/lib */
void *rd_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) abort(); return p; }
void *rd_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) abort(); return p; }
char *rd_xstrdup(const char *s) { return strcpy(rd_xmalloc(strlen(s) + 1), s); }
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
char *rd_demangle(const char *name) {
  int st = 0;
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  char *d = __cxa_demangle(name, NULL, NULL, &st);
  if (st) { free(d); return NULL; }
  return d;
}
void rd_term_fit(char *dst, size_t cap, size_t width, const char *src) {
  /* ASCII-only stand-in of text.c's: cut with "...", pad with blanks */
  size_t n = strlen(src), cols = 0;
  for (size_t i = 0; i < n; i++) cols += ((unsigned char)src[i] & 0xc0) != 0x80;
  (void)cap;
  if (cols > width) {
    size_t o = 0, c = 0;
    while (c < width - 3) { if (((unsigned char)src[o] & 0xc0) != 0x80) c++; o++; }
    while (((unsigned char)src[o] & 0xc0) == 0x80) o++;
    memcpy(dst, src, o);
    strcpy(dst + o, "...");
  } else {
    strcpy(dst, src);
    for (size_t k = strlen(dst); cols < width; cols++) dst[k++] = ' ', dst[k] = 0;
  }
}

static int bad;

static void expect(const char *got, const char *want, const char *of) {
  if (strcmp(got, want)) { fprintf(stderr, "FAIL %s:\n  got  %s\n  want %s\n", of, got, want); bad = 1; }
}

static void kernel(const char *mangled, const char *want) {
  char *s = rd_kernel_short(mangled);
  expect(s, want, mangled);
  free(s);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    for (int i = 1; i < argc; i++) {
      char *s = rd_kernel_short(argv[i]);
      printf("%s\n", s);
      free(s);
    }
    return 0;
  }
  kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELb0EEEviT0_T1_",
         "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>");
  kernel("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EELb0EEEviT0_T1_",
         "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl::lambda>");
  kernel("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
         "reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, sum_functor<float, float, float>::lambda>, unsigned int, float, 4, 4>>");
  kernel("_ZN2at6native53_GLOBAL__N__4da244e1_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
         "vectorized_layer_norm_kernel<float, float>");
  kernel("_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7cutlass4arch4Sm80ELb1ELi64ELi64ELi64ELb1ELb1EE6ParamsE",
         "fmha_cutlassF_f32_aligned_64x64_rf_sm80");
  kernel("_Z6kernelPfi", "kernel");
  kernel("sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
         "sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas");
  kernel("triton_poi_fused_add_0", "triton_poi_fused_add_0");
  kernel("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
         "elementwise_kernel<128, 2, gpu_kernel_impl_nocast<CUDAFunctor_add<float>>::lambda>");

  /* a table: every displayed name distinct, fitted to 57 columns */
  const char *tab[] = {
      "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
      "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_bias__5x_cublas",
      "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
      "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
      "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
      "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_",
      "_Z6kernelPfi", "_Z6kernelPdi"};
  size_t n = sizeof tab / sizeof *tab;
  char *cell[16];
  rd_names_kernels(tab, n, 57, cell);
  for (size_t i = 0; i < n; i++) {
    printf("%s|\n", cell[i]);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(cell[i], cell[k])) { fprintf(stderr, "FAIL rows %zu and %zu read alike: %s\n", k, i, cell[i]); bad = 1; }
  }
  expect(cell[6], "kernel(float*, int)                                      ", "overload with parameters");

  char *m = rd_module_short("GPT.forward > Block.forward > Linear.forward", 48);
  expect(m, "GPT > Block > Linear", "module path that fits");
  free(m);
  m = rd_module_short("GPT2LMHeadModel.forward > GPT2Model.forward > GPT2Block.forward > GPT2Attention.forward > Conv1D.forward", 40);
  expect(m, "\xe2\x80\xa6 > GPT2Block > GPT2Attention > Conv1D", "module path cut from the outside");
  free(m);
  const char *mods[] = {"A.forward > X.forward > Block.forward > Linear.forward",
                        "B.forward > X.forward > Block.forward > Linear.forward"};
  rd_names_modules(mods, 2, 24, cell);
  for (int i = 0; i < 2; i++) printf("%s|\n", cell[i]);
  if (!strcmp(cell[0], cell[1])) { fprintf(stderr, "FAIL module rows read alike\n"); bad = 1; }
  puts(bad ? "names_test: FAILED" : "names_test: OK");
  return bad;
}
