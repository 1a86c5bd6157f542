# `dlhook symbolize` names what a recording left unresolved. A trace recorded with
# DLHOOK_SYMBOLIZE=0 has every call and stack, shown as module+offset, and its trailer counts
# the unsymbolized addresses. Then, with the program's binary moved away (as on another
# machine): --path DIR finds a copy by name and build-id; a stripped binary is resolved from a
# --debug-dir in the .build-id layout and in the debuginfod cache layout; a file with the same
# name but another build-id is never used; a truncated trace keeps its readable part (exit 1);
# usage errors exit 2.
. "$ROOT/tests/lib.sh"
src=$ROOT/tests/stacks/cublas_nested.c
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"; need "$CUDA_HOME/lib64/libcublas.so"
build() { # out [cflags]
  out=$1; shift
  cc -O0 -g "$@" -I"$CUDA_HOME/include" -o "$out" "$src" -L"$CUDA_HOME/lib64" -lcublas \
    -Wl,-rpath,"$CUDA_HOME/lib64" -Wl,--build-id || fail "cannot build $out"
}
names() { # trace -> the function names of the first cublasSgemm_v2 stack, comma-separated
  "$DLHOOK_BIN" dump "$1" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("name") == "cublasSgemm_v2":
        print(",".join(str(f["function"]) for f in e["stack"][:4])); break'
}
mkdir -p bin1 && build bin1/nested
DLHOOK_SYMBOLIZE=0 traced "$T/tr" bin1/nested >out.txt 2>err.txt || { cat err.txt; fail "traced run failed"; }
grep -q 'left unsymbolized' err.txt || { cat err.txt; fail "no message about unsymbolized addresses"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump --type trailer "$tr" | grep -q '"pcs_unsymbolized":[1-9]' || fail "trailer does not count them"
[ "$(names "$tr")" = "None,None,None,None" ] || fail "names present without symbolization: $(names "$tr")"
"$DLHOOK_BIN" stats "$tr" | grep -q 'without a name.*dlhook symbolize' || fail "stats does not say so"
"$DLHOOK_BIN" export -f folded --weight cpu -o f0.txt "$tr" || fail "export failed"
grep -q 'nested+0x' f0.txt || fail "no module+offset frames in the export"

# the binary moved away; a copy found by name in --path
mkdir -p copy && mv bin1/nested copy/nested
"$DLHOOK_BIN" symbolize -o sym1.dlh "$tr" >/dev/null || fail "symbolize without the binary failed"
[ "$(names sym1.dlh)" = "None,None,None,None" ] || fail "resolved without the binary?"
"$DLHOOK_BIN" symbolize --path copy -o sym2.dlh "$tr" >s2.txt || fail "symbolize --path failed"
cat s2.txt
[ "$(names sym2.dlh)" = "gemm_inner,gemm_middle,gemm_outer,main" ] || fail "--path: $(names sym2.dlh)"
"$DLHOOK_BIN" dump sym2.dlh | grep -m1 '"cublasSgemm_v2"' | grep -q '"file":"[^"]*cublas_nested.c","line":[1-9]' \
  || fail "no file:line after symbolize"
"$DLHOOK_BIN" dump --type trailer sym2.dlh | grep -q '"pcs_unsymbolized":0' || fail "trailer still counts them"
"$DLHOOK_BIN" stats sym2.dlh | grep -q 'without a name' && fail "stats still reports unnamed addresses"
# every record is still there
a=$("$DLHOOK_BIN" stats --json "$tr" | python3 -c 'import json,sys; print(sum(x["calls"] for x in json.load(sys.stdin)["api"]))')
b=$("$DLHOOK_BIN" stats --json sym2.dlh | python3 -c 'import json,sys; print(sum(x["calls"] for x in json.load(sys.stdin)["api"]))')
[ "$a" = "$b" ] && [ "$a" -gt 0 ] || fail "calls changed by symbolize: $a -> $b"

# the same name, another build-id: never used
mkdir -p other && build other/nested -DOTHER_BUILD=1 -O1
"$DLHOOK_BIN" symbolize --path other -o sym3.dlh "$tr" >/dev/null || fail "symbolize failed"
[ "$(names sym3.dlh)" = "None,None,None,None" ] || fail "a file with another build-id was used"

# a stripped binary recorded; its debug file in a .build-id tree, then in a debuginfod cache
mkdir -p bin2 dbg && build bin2/nested
bid=$(readelf -n bin2/nested | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || fail "no build-id"
mkdir -p "dbg/.build-id/$(echo "$bid" | cut -c1-2)" "cache/$bid"
objcopy --only-keep-debug bin2/nested "dbg/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug"
cp "dbg/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug" "cache/$bid/debuginfo"
strip --strip-all bin2/nested
traced "$T/tr2" bin2/nested >/dev/null 2>&1 || fail "stripped program failed"
tr2=$(one_trace "$T/tr2")
case "$(names "$tr2")" in None,None,None,*) ;; *) fail "stripped binary named: $(names "$tr2")" ;; esac
"$DLHOOK_BIN" symbolize --debug-dir dbg -o sym4.dlh "$tr2" >/dev/null || fail "--debug-dir failed"
[ "$(names sym4.dlh)" = "gemm_inner,gemm_middle,gemm_outer,main" ] || fail "--debug-dir: $(names sym4.dlh)"
"$DLHOOK_BIN" symbolize --debug-dir cache -o sym5.dlh "$tr2" >/dev/null || fail "debuginfod layout failed"
[ "$(names sym5.dlh)" = "gemm_inner,gemm_middle,gemm_outer,main" ] || fail "debuginfod layout: $(names sym5.dlh)"
# in place (no -o): the trace itself is replaced
cp "$tr2" inplace.dlh
"$DLHOOK_BIN" symbolize --debug-dir dbg inplace.dlh >/dev/null || fail "in-place symbolize failed"
[ "$(names inplace.dlh)" = "gemm_inner,gemm_middle,gemm_outer,main" ] || fail "in place: $(names inplace.dlh)"

# damaged input: what is readable is kept and written, exit 1
size=$(wc -c <"$tr")
head -c $((size - 7)) "$tr" >cut.dlh
"$DLHOOK_BIN" symbolize --path copy -o cut-sym.dlh cut.dlh >/dev/null 2>cut.err; rc=$?
[ "$rc" = 1 ] || fail "truncated input: exit $rc, expected 1"
grep -q 'damaged' cut.err || fail "no message for the damaged input"
"$DLHOOK_BIN" dump cut-sym.dlh >/dev/null || fail "the output of a truncated input is unreadable"
# usage
"$DLHOOK_BIN" symbolize >/dev/null 2>&1; [ $? = 2 ] || fail "no trace: expected exit 2"
"$DLHOOK_BIN" symbolize --bogus "$tr" >/dev/null 2>&1; [ $? = 2 ] || fail "bad option: expected exit 2"
"$DLHOOK_BIN" symbolize /nonexistent.dlh >/dev/null 2>&1; [ $? = 1 ] || fail "missing file: expected exit 1"
echo ok
