#!/bin/sh
# A program that carries its own CUDA libraries (a PyPI wheel: DT_RPATH to nvidia/cu13/lib, and
# dlopen by full path as torch does) runs on the simulated stack under tests/simcuda/run and
# `dlhook record --sim`: the rtld-audit module simcuda-audit.so loads the stand-ins in place of
# both. Without it (SIMCUDA_REDIRECT=0) the program's real copy wins, which is the hazard.
# Other libraries opened by path are untouched; the caller's LD_AUDIT is kept after ours.
. "$ROOT/tests/lib.sh"
S="$BUILD/simcuda"
need "$S/simcuda-audit.so"
need "$CUDA_HOME/lib64/libcudart.so.13"
need "$CUDA_HOME/lib64/libcublasLt.so.13"
CC=${CC:-cc}
# the "wheel": real libraries in a private directory the program finds through DT_RPATH
mkdir -p wheel/lib
cp -L "$CUDA_HOME/lib64/libcudart.so.13" "$CUDA_HOME/lib64/libcublasLt.so.13" wheel/lib/
cat >prog.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
int cudaGetDeviceCount(int *n);
static const char *path_of(void *h) {
  struct link_map *lm = NULL;
  return h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm ? lm->l_name : "(none)";
}
int main(int argc, char **argv) {
  int n = -1, r = cudaGetDeviceCount(&n);
  Dl_info di;
  dladdr((void *)cudaGetDeviceCount, &di);
  printf("cudart %s rc=%d n=%d\n", di.dli_fname, r, n);
  printf("bypath %s\n", path_of(dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)));
  printf("other %s\n", path_of(dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)));
  return 0;
}
C
$CC -o prog prog.c -L wheel/lib -l:libcudart.so.13 -ldl -Wl,--disable-new-dtags,-rpath,"$T/wheel/lib" ||
  fail "cannot build the test program"
readelf -d prog | grep -q '(RPATH)' || fail "prog has no DT_RPATH"
LIBM=$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6 .*x86-64/ {print $NF; exit}')
[ -n "$LIBM" ] || LIBM=/lib/x86_64-linux-gnu/libm.so.6
"$SIMRUN" ./prog "$T/wheel/lib/libcublasLt.so.13" "$LIBM" >on.txt 2>&1 || fail "prog under run: $(cat on.txt)"
grep -qx "cudart $S/libcudart.so.13 rc=0 n=1" on.txt || fail "the RPATH'ed cudart was not replaced: $(cat on.txt)"
grep -qx "bypath $S/libcublasLt.so.13" on.txt || fail "dlopen by path not redirected: $(cat on.txt)"
grep -qx "other $LIBM" on.txt || fail "a non-CUDA library was redirected: $(cat on.txt)"
SIMCUDA_REDIRECT=0 "$SIMRUN" ./prog "$T/wheel/lib/libcublasLt.so.13" "$LIBM" >off.txt 2>&1
grep -q "^cudart $T/wheel/lib/libcudart.so.13 " off.txt || fail "SIMCUDA_REDIRECT=0: $(cat off.txt)"
# the caller's LD_AUDIT stays, after ours; no duplicate when nested
out=$(LD_AUDIT=/x/other.so "$SIMRUN" "$SIMRUN" sh -c 'echo "$LD_AUDIT"' 2>/dev/null)
[ "$out" = "$S/simcuda-audit.so:/x/other.so" ] || fail "LD_AUDIT: $out"
if [ -x "$DLHOOK_BIN" ]; then
  out=$("$DLHOOK_BIN" record --sim -o rec -- sh -c 'echo "$LD_AUDIT"' 2>/dev/null)
  [ "$out" = "$S/simcuda-audit.so" ] || fail "record --sim: LD_AUDIT=$out"
  "$DLHOOK_BIN" record --sim -o rec -- ./prog "$T/wheel/lib/libcublasLt.so.13" "$LIBM" >rec.txt 2>rec.err ||
    fail "record --sim: $(cat rec.err)"
  # (cudaGetDeviceCount is dlhook's wrapper there)
  grep -q "^cudart .* rc=0 n=1$" rec.txt && grep -qx "bypath $S/libcublasLt.so.13" rec.txt ||
    fail "record --sim: $(cat rec.txt)"
fi
echo "t_sim_redirect: OK"
