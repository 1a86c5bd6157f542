#!/bin/sh
# tests/hooks/coverage.sh LIB SONAME — shared body of the t_*_coverage.sh tests (not a test itself).
# Compares the functions the real library exports (nm -D --defined-only $CUDA_HOME/lib64/SONAME)
# with the wrappers: the symbols $BUILD/libdlhook.so exports when it is built, else the wrapper
# names in hooks/gen/LIB_hooks.c. Prints "LIB: wrapped N of M exported functions". Fails when an
# exported function is neither wrapped nor listed as "not wrapped" in the generated file, or is
# listed as having no prototype although a CUDA header declares it.
# Exit 77 (skip) when the real library or the CUDA headers are absent.
lib=$1 soname=$2
real="$CUDA_HOME/lib64/$soname"
gen="$ROOT/hooks/gen/${lib}_hooks.c"
[ -f "$real" ] || { echo "skip: $real not found"; exit 77; }
[ -d "$CUDA_HOME/include" ] || { echo "skip: $CUDA_HOME/include not found"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "skip: nm not found"; exit 77; }
[ -f "$gen" ] || { echo "FAIL: $gen missing (run make regen)"; exit 1; }

nm -D --defined-only "$real" | awk '$2 ~ /^[TWi]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u >exported
if [ -f "$BUILD/libdlhook.so" ]; then
  src="$BUILD/libdlhook.so"
  nm -D --defined-only "$BUILD/libdlhook.so" | awk '$2 ~ /^[TWi]$/ { sub(/@.*/, "", $3); print $3 }' \
    | sort -u >have
else
  src="$gen (libdlhook.so not built)"
  sed -n 's/^DLH_EXPORT .*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*) {$/\1/p' "$gen" | sort -u >have
fi
# names the generated file says it wraps must all be present in what we compare with
sed -n 's/^DLH_EXPORT .*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*) {$/\1/p' "$gen" | sort -u >genwrapped
comm -12 exported have >wrapped
comm -23 exported have >missing
sed -n 's/^ \*   not wrapped: \([A-Za-z_0-9]*\) — \(.*\)$/\1 \2/p' "$gen" | sort >listed
# every identifier followed by "(" in the CUDA headers (a prototype or a call), for the check
# that "no prototype" is true
find "$CUDA_HOME/include/" -name cccl -prune -o \( -name '*.h' -o -name '*.hpp' \) -type f -print \
  | xargs grep -ohE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' 2>/dev/null \
  | sed 's/[[:space:]]*($//' | sort -u >declared

fail=0
nolisted=0 noproto=0 alias=0 unparsed=0 other=0
while read -r name; do
  reason=$(awk -v n="$name" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' listed)
  if [ -z "$reason" ]; then
    if grep -qx "$name" genwrapped; then
      echo "FAIL: $name is wrapped in $gen but not exported by $src"
    else
      echo "FAIL: $name is exported by $soname but neither wrapped nor listed as not wrapped (make regen?)"
    fi
    fail=1; nolisted=$((nolisted + 1)); continue
  fi
  case $reason in
    "no prototype"*)
      if grep -qx "$name" declared; then
        echo "FAIL: $name has a prototype in $CUDA_HOME/include but is not wrapped"; fail=1
      fi
      noproto=$((noproto + 1)) ;;
    "profiling alias"*) alias=$((alias + 1)) ;;
    "declared only in"*) unparsed=$((unparsed + 1)); echo "note: $name: $reason" ;;
    *) other=$((other + 1)); echo "note: $name: $reason" ;;
  esac
done <missing

n=$(wc -l <wrapped | tr -d ' ') m=$(wc -l <exported | tr -d ' ')
echo "$lib: wrapped $n of $m exported functions of $soname (checked against $src)"
echo "$lib: not wrapped: $noproto without a prototype, $alias profiling aliases, $unparsed declared only in unparsed headers, $other other, $nolisted unexplained"
exit $fail
