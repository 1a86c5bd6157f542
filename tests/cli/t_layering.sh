# The import graph of the sources (scripts/check-layering: #includes, and the symbols each
# object of libdlhook.so and dlhook takes from another, by nm over the link lines) has arrows
# only in the allowed directions (preload -> hooks/unwind/format/common, hooks -> preload's event
# API, unwind -> format/common, command main -> cmd -> export -> lib -> format/common) and no
# cycle, between folders or between the files of a folder. Then, on a copy of the sources, a
# wrong-direction include, a cycle between folders and a cycle between two files of one folder
# must each make the check fail; and, on a copy of the objects, a call that closes a cycle
# between two files of preload/ (the clock calling the writer, which converts ticks with it).
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
CHECK="$ROOT/scripts/check-layering"
python3 "$CHECK" --root "$ROOT" --build "$BUILD" >ok.txt 2>&1 || { cat ok.txt; fail "the layering check fails on the tree"; }
cat ok.txt
# ---- the check must catch what it is for (a copy of the sources, includes only)
copy() { rm -rf src; mkdir src; (cd "$ROOT" && cp -r common format unwind hooks preload command "$T/src/"); }
expect_fail() { # expect_fail WHAT PATTERN
  if python3 "$CHECK" --root "$T/src" --no-link >bad.txt 2>&1; then cat bad.txt; fail "$1: not caught"; fi
  grep -q "$2" bad.txt || { cat bad.txt; fail "$1: caught, but not as '$2'"; }
  echo "caught: $1: $(grep "$2" bad.txt | head -n 1)"
}
copy
python3 "$CHECK" --root "$T/src" --no-link >copy.txt 2>&1 || { cat copy.txt; fail "the copy fails before any change"; }
sed -i '0,/#include "unwind_int.h"/s//#include "dlh_internal.h"\n#include "unwind_int.h"/' src/unwind/capture.c
expect_fail "unwind/ including preload's header" "wrong direction unwind -> preload"
copy
printf '#include "dlh_unwind.h"\n' >>src/format/dlh_format_int.h
expect_fail "format/ including unwind/ (which includes format/)" "cycle between folders: format <-> unwind"
copy
printf '#ifndef CYC_A\n#define CYC_A\n#include "cyc_b.h"\n#endif\n' >src/command/lib/cyc_a.h
printf '#ifndef CYC_B\n#define CYC_B\n#include "cyc_a.h"\n#endif\n' >src/command/lib/cyc_b.h
expect_fail "two headers of command/lib including each other" "cycle between files of command/lib"
# ---- a link-level cycle in preload/ (objects, not includes)
mkdir -p b
for d in preload hooks unwind format common command; do cp -r "$BUILD/$d" b/; done
printf 'extern int dlh_writer_ensure(void);\nvoid *dlh_fault_ref = (void *)dlh_writer_ensure;\n' >fault.c
cc -c -fPIC fault.c -o fault.o || fail "cannot compile the fault"
ld -r b/preload/clock.o fault.o -o clock_fault.o && mv clock_fault.o b/preload/clock.o || fail "ld -r"
if python3 "$CHECK" --root "$ROOT" --build "$T/b" >bad.txt 2>&1; then cat bad.txt; fail "clock.c -> writer.c: not caught"; fi
grep -q "cycle between files of preload.*clock.c.*writer.c" bad.txt || { cat bad.txt; fail "clock.c -> writer.c: caught, but not as a cycle of preload/"; }
echo "caught: clock.c calling the writer: $(grep "cycle between files of preload" bad.txt | head -n 1)"
echo ok
