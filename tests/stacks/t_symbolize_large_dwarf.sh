# Issue 48: a module with much DWARF (more than 2 MiB of debug sections: a libpython built with
# -g has 12 MB) is named while recording but its file:line are not read there (libdw would keep
# megabytes of line tables in the program: 23 MB of resident memory for a sampled Python loop);
# `dlhook symbolize` adds them afterwards. The program built with -g, and a copy padded with a
# 3 MB section of debug data: the first gets file:line while recording, the second only names,
# then file:line from `dlhook symbolize` (said in its message), every call kept.
. "$ROOT/tests/lib.sh"
src=$ROOT/tests/stacks/cublas_nested.c
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"; need "$CUDA_HOME/lib64/libcublas.so"
command -v objcopy >/dev/null 2>&1 || skip "objcopy not found"
cc -O0 -g -I"$CUDA_HOME/include" -o small "$src" -L"$CUDA_HOME/lib64" -lcublas \
  -Wl,-rpath,"$CUDA_HOME/lib64" -Wl,--build-id || fail "cannot build the program"
head -c 3000000 /dev/zero | tr '\0' 'x' >pad.bin
objcopy --add-section .debug_pad=pad.bin --set-section-flags .debug_pad=contents,readonly \
  small large || fail "objcopy failed"
lines() { # trace -> file:line of the first four frames of the first cublasSgemm_v2 stack
  "$DLHOOK_BIN" dump "$1" | python3 -c '
import json, os, sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("name") == "cublasSgemm_v2":
        print(",".join("%s:%s" % (os.path.basename(f.get("file") or "-"), f.get("line") or 0)
                       for f in e["stack"][:4])); break'
}
names() {
  "$DLHOOK_BIN" dump "$1" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("name") == "cublasSgemm_v2":
        print(",".join(str(f["function"]) for f in e["stack"][:4])); break'
}
want=gemm_inner,gemm_middle,gemm_outer,main
for p in small large; do
  traced "$T/tr-$p" ./$p >$p.out 2>$p.err || { cat $p.err; fail "traced run of $p failed"; }
done
ts=$(one_trace "$T/tr-small"); tl=$(one_trace "$T/tr-large")
[ "$(names "$ts")" = $want ] || fail "small: names $(names "$ts")"
[ "$(names "$tl")" = $want ] || fail "large: names $(names "$tl")"
echo "small, while recording: $(lines "$ts")"
echo "large, while recording: $(lines "$tl")"
case "$(lines "$ts")" in *cublas_nested.c:[1-9]*) ;; *) fail "no file:line while recording the small program" ;; esac
case "$(lines "$tl")" in *cublas_nested.c*) fail "file:line read while recording the large program" ;; esac
"$DLHOOK_BIN" symbolize -o sym.dlh "$tl" >sym.txt || fail "symbolize failed"
cat sym.txt
grep -q 'file:line added to [1-9]' sym.txt || fail "symbolize does not say it added lines"
echo "large, after symbolize: $(lines sym.dlh)"
[ "$(lines sym.dlh)" = "$(lines "$ts")" ] || fail "after symbolize: $(lines sym.dlh), recorded small: $(lines "$ts")"
[ "$(names sym.dlh)" = $want ] || fail "names changed by symbolize: $(names sym.dlh)"
a=$("$DLHOOK_BIN" stats --json "$tl" | python3 -c 'import json,sys; print(sum(x["calls"] for x in json.load(sys.stdin)["api"]))')
b=$("$DLHOOK_BIN" stats --json sym.dlh | python3 -c 'import json,sys; print(sum(x["calls"] for x in json.load(sys.stdin)["api"]))')
[ "$a" = "$b" ] && [ "$a" -gt 0 ] || fail "calls changed by symbolize: $a -> $b"
echo ok
