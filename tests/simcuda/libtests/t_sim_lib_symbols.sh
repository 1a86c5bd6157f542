#!/bin/sh
# The library stand-ins export every function of the real libraries (the lists in
# libs/<lib>/<lib>.map, generated from nm -D of the real ones; also compared with the real
# libraries when $CUDA_HOME has them) under the real sonames and version nodes; NCCL exports a
# strong pncclX and a weak ncclX alias of it; libcublas.so.13 needs libcublasLt.so.13. The
# exports of a newer release that programs link (libs/<lib>/extra.syms: NCCL 2.30 of the PyPI
# wheel PyTorch uses) are exported as well.
set -e
S="$BUILD/simcuda"
M="$ROOT/tests/simcuda/libs"
fail() { echo "FAIL: $*"; exit 1; }
exports() { nm -D --defined-only "$1" | awk '$2 ~ /^[TWi]$/ {print $3}' | sort; }
mapnames() { sed -n 's/^    \([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$1" | sort; }
for spec in cublas:libcublas.so.13:@@libcublas.so.13 cublasLt:libcublasLt.so.13:@@libcublasLt.so.13 \
            cudnn:libcudnn.so.9:@@libcudnn.so.9 nccl:libnccl.so.2:; do
  d=${spec%%:*}; rest=${spec#*:}; so=${rest%%:*}; ver=${rest#*:}
  [ -f "$S/$so" ] || fail "$S/$so missing"
  readelf -d "$S/$so" | grep -q "Library soname: \[$so\]" || fail "soname of $so"
  exports "$S/$so" | sed 's/@.*//' | sort > have.txt
  mapnames "$M/$d/$d.map" > want.txt
  [ -s want.txt ] || fail "empty list $d.map"
  cmp -s have.txt want.txt || { diff have.txt want.txt | head; fail "$so exports differ from $d.map"; }
  if [ -n "$ver" ]; then
    n=$(exports "$S/$so" | grep -c -v -e "$ver\$") || true
    [ "$n" -eq 0 ] || fail "$so: $n exports without version $ver"
  else
    n=$(exports "$S/$so" | grep -c @) || true
    [ "$n" -eq 0 ] || fail "$so: versioned exports"
  fi
  if [ -f "$CUDA_HOME/lib64/$so" ]; then
    { nm -D --defined-only "$CUDA_HOME/lib64/$so" | awk '$2 ~ /^[TW]$/ {print $3}'
      [ -f "$M/$d/extra.syms" ] && awk '!/^#/ {print $2}' "$M/$d/extra.syms"; } | sort -u > real.txt
    exports "$S/$so" > mine.txt
    cmp -s mine.txt real.txt || { diff mine.txt real.txt | head; fail "$so differs from the real one"; }
  fi
done
nm -D --defined-only "$S/libnccl.so.2" | grep -q ' T pncclAllReduce$' || fail "pncclAllReduce not strong"
nm -D --defined-only "$S/libnccl.so.2" | grep -q ' W ncclAllReduce$' || fail "ncclAllReduce not weak"
a=$(nm -D --defined-only "$S/libnccl.so.2" | awk '$3 == "pncclAllReduce" {print $1}')
b=$(nm -D --defined-only "$S/libnccl.so.2" | awk '$3 == "ncclAllReduce" {print $1}')
[ "$a" = "$b" ] || fail "ncclAllReduce is not an alias of pncclAllReduce"
readelf -d "$S/libcublas.so.13" | grep -q 'NEEDED.*\[libcublasLt.so.13\]' || fail "libcublas.so.13 does not need libcublasLt.so.13"
echo "t_sim_lib_symbols: OK"
