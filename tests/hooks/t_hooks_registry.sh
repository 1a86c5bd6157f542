# The registry of the generated wrappers (hooks/dlh_hooks.h, DLH_HOOKED_LIBS) names exactly the
# libraries of hooks/gen/ (a generated library missing from it would never be named by the writer
# nor found by dlsym; a listed one without tables fails the link), and each is in the table of
# CUDA libraries (common/dlh_cuda_libs.def).
. "$ROOT/tests/lib.sh"
listed=$(sed -n '/#define DLH_HOOKED_LIBS/,/^$/p' "$ROOT/hooks/dlh_hooks.h" | grep -o 'X([A-Za-z]*' | cut -c3- | sort)
gen=$(ls "$ROOT"/hooks/gen/*_hooks.c | sed 's|.*/||; s|_hooks\.c$||' | sort)
[ -n "$listed" ] || fail "no DLH_HOOKED_LIBS in hooks/dlh_hooks.h"
[ "$listed" = "$gen" ] || fail "DLH_HOOKED_LIBS ($(echo $listed)) differs from hooks/gen/ ($(echo $gen))"
for l in $listed; do
  grep -q "^DLH_CUDA_LIB($l," "$ROOT/common/dlh_cuda_libs.def" || fail "$l is not in common/dlh_cuda_libs.def"
done
echo "registry: $(echo $listed)"
echo ok
