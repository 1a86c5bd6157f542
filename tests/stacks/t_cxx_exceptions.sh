# A C++ program that throws and catches exceptions and calls backtrace() around CUDA calls
# behaves the same with and without libdlhook.so: libunwind (loaded privately) takes over
# neither the exception unwinding (_Unwind_RaiseException stays libgcc_s's) nor backtrace().
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/stacks/cxx_exceptions
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
"$prog" >bare.out 2>bare.err; bare_rc=$?
[ "$bare_rc" = 0 ] || { cat bare.out bare.err; fail "the program fails on its own ($bare_rc)"; }
traced "$T/tr" "$prog" >pre.out 2>pre.err; rc=$?
[ "$rc" = "$bare_rc" ] || { cat pre.err; fail "exit code changed: $bare_rc -> $rc"; }
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
grep -q '^backtrace from libc.so' pre.out || fail "backtrace is not glibc's: $(head -1 pre.out)"
grep -q '^_Unwind_RaiseException from libgcc_s' pre.out || fail "unwinder taken over: $(sed -n 2p pre.out)"
# and the same with stacks at full depth in a second thread of work: still unchanged
DLHOOK_STACK_DEPTH=256 traced "$T/tr2" "$prog" >pre2.out 2>/dev/null || fail "failed at depth 256"
cmp -s bare.out pre2.out || fail "output changed at depth 256"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dlhook dump failed"
python3 - <<'PY' || fail "C++ stacks not demangled or not recorded"
import json
ev = [json.loads(l) for l in open("dump.jsonl")]
calls = [e for e in ev if e.get("name") == "cudaGetDeviceCount"]
assert sum(e.get("count", 1) for e in calls) == 6, calls  # repeats may fold
for e in calls:
    names = [f["function"] for f in e["stack"]]
    assert names[0] == "level3(int)", names
PY
echo "ok"
