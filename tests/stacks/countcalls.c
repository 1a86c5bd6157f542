/* countcalls — an independent count of CUDA runtime calls, for tests that check dlhook's counts
 * (tests/stacks/t_torch_default.sh). LD_PRELOAD it instead of libdlhook.so; COUNT_FILE names a
 * file that holds one 64-bit counter per function below, in that order, kept current in a
 * shared mapping (so that calls made during exit, after any destructor, are counted too). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

enum { F_REGFUNC, F_REGVAR, F_REGFAT, F_REGFATEND, F_UNREGFAT, F_DEVCOUNT, F_LASTERR,
       F_DRVVER, F_N };
static volatile uint64_t *counts;
static uint64_t fallback[F_N];

__attribute__((constructor)) static void init(void) {
  const char *p = getenv("COUNT_FILE");
  counts = fallback;
  if (!p) return;
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ftruncate(fd, F_N * sizeof(uint64_t)) != 0) return;
  void *m = mmap(NULL, F_N * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m != MAP_FAILED) counts = m;
}

#define REAL(name) \
  static __typeof__(name) *real; \
  if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
#define COUNT(i) __atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED)

typedef struct { unsigned x, y, z; } u3;
void **__cudaRegisterFatBinary(void *fat) {
  REAL(__cudaRegisterFatBinary); COUNT(F_REGFAT); return real(fat);
}
void __cudaRegisterFatBinaryEnd(void **h) {
  REAL(__cudaRegisterFatBinaryEnd); COUNT(F_REGFATEND); real(h);
}
void __cudaUnregisterFatBinary(void **h) {
  REAL(__cudaUnregisterFatBinary); COUNT(F_UNREGFAT); real(h);
}
void __cudaRegisterFunction(void **h, const char *hf, char *df, const char *dn, int tl, u3 *tid,
                            u3 *bid, u3 *bd, u3 *gd, int *ws) {
  REAL(__cudaRegisterFunction); COUNT(F_REGFUNC); real(h, hf, df, dn, tl, tid, bid, bd, gd, ws);
}
void __cudaRegisterVar(void **h, char *hv, char *da, const char *dn, int ext, size_t size,
                       int constant, int global) {
  REAL(__cudaRegisterVar); COUNT(F_REGVAR); real(h, hv, da, dn, ext, size, constant, global);
}
int cudaGetDeviceCount(int *n) { REAL(cudaGetDeviceCount); COUNT(F_DEVCOUNT); return real(n); }
int cudaGetLastError(void) { REAL(cudaGetLastError); COUNT(F_LASTERR); return real(); }
int cudaDriverGetVersion(int *v) { REAL(cudaDriverGetVersion); COUNT(F_DRVVER); return real(v); }
