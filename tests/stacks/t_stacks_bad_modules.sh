# Stacks through modules that cannot be symbolized the usual way: a stripped library (no
# .symtab, its function not exported), one dlclosed right after its call (unmapped before the
# writer defines the stack), one whose file is replaced on disk by garbage that starts like an
# ELF header, one unlinked. Each call is recorded, the program's output and exit code are
# unchanged, the trace is complete; the frames of these libraries are shown as
# "module+0xoffset" (or a raw address once unmapped), never a crash or a stall; a kept library
# with symbols is still named.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/stacks/badmods
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
need "$CUDA_HOME/lib64/libcudart.so"
mk() { # name: built with -fvisibility=hidden, so only badmod_call is exported
  cc -O1 -g -shared -fPIC -fvisibility=hidden -I"$CUDA_HOME/include" -o "$T/$1.so" "$ROOT/tests/stacks/badmod_lib.c" \
    -L"$CUDA_HOME/lib64" -lcudart -Wl,-rpath,"$CUDA_HOME/lib64" || fail "cannot build $1.so"
}
prepare() {
  for n in keep stripped closed garbage unlinked; do mk libbm_$n; done
  # no .symtab, badmod_inner not exported: nothing names it
  strip --strip-all "$T/libbm_stripped.so" || fail "strip"
}
args="$T/libbm_keep.so:keep $T/libbm_stripped.so:keep $T/libbm_closed.so:close"
args="$args $T/libbm_garbage.so:garbage $T/libbm_unlinked.so:unlink"
prepare
"$prog" $args >bare.out 2>&1; bare_rc=$?
[ "$bare_rc" = 0 ] || { cat bare.out; fail "the program fails bare"; }
prepare
start=$(date +%s)
traced "$T/tr" "$prog" $args >pre.out 2>pre.err; rc=$?
end=$(date +%s)
[ "$rc" = "$bare_rc" ] || { cat pre.err; fail "exit code changed: $bare_rc -> $rc"; }
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
[ $((end - start)) -lt 60 ] || fail "the traced run took $((end - start)) s"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dlhook dump reports damage"
"$DLHOOK_BIN" export -f folded --weight cpu -o folded.txt "$tr" || fail "folded export failed"
python3 - <<'PY' || fail "stacks through the bad modules"
import json
ev = [json.loads(l) for l in open("dump.jsonl")]
assert any(e["type"] == "summary" and e["complete"] for e in ev), "trace not complete"
calls = [e for e in ev if e.get("name") == "cudaGetDeviceCount"]
assert len(calls) == 5, len(calls)
def lib_frame(e):
    for f in e.get("stack") or []:
        if "libbm_" in (f.get("module") or ""):
            return f
    return None
by = {}
for e in calls:
    f = lib_frame(e)
    if f: by[f["module"].rsplit("/", 1)[-1]] = f
keep = by.get("libbm_keep.so")
assert keep and keep["function"] == "badmod_inner", keep
strip = by.get("libbm_stripped.so")
assert strip and not strip["function"], strip      # shown as module+offset
for name in ("libbm_garbage.so", "libbm_unlinked.so"):
    f = by.get(name)
    assert f is None or not f["function"] or f["function"].startswith("badmod_"), (name, f)
print("ok:", {k: v["function"] for k, v in by.items()})
PY
grep -q 'libbm_stripped.so+0x' folded.txt || { head folded.txt; fail "no module+offset frame in the folded export"; }
echo ok
