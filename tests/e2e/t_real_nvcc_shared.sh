# An nvcc-built program (-cudart shared) with <<<>>> launches, against the real libcudart with
# no GPU: registration, launch configuration and launches are recorded with exact counts.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/nvcc_shared
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
"$prog" >bare.out 2>bare.err; bare_rc=$?
traced "$T/tr" "$prog" >pre.out 2>pre.err; rc=$?
[ "$rc" = "$bare_rc" ] || fail "exit code changed: $bare_rc -> $rc"
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "dlhook stats failed"
# What the program references (nm -D --undefined-only) is what must be seen.
nm -D --undefined-only "$prog" | awk '{print $2}' | sed 's/@.*//' | grep '^_*cuda' | sort -u >called.txt
cat called.txt
expect_calls stats.json cudaMalloc=1 cudaGetLastError=1 cudaDeviceSynchronize=1 cudaFree=1 \
  __cudaPushCallConfiguration=4 __cudaPopCallConfiguration=4 __cudaRegisterFatBinary=1 \
  __cudaRegisterFunction=1 __cudaRegisterFatBinaryEnd=1 __cudaUnregisterFatBinary=1
python3 - <<'PY' || fail "a referenced function is missing from the trace"
import json
names = {a["name"] for a in json.load(open("stats.json"))["api"]}
missing = [n.strip() for n in open("called.txt") if n.strip() not in names
           and n.strip() not in ("cudaGetErrorString",)]
# __cudaLaunchKernel/__cudaGetKernel are only called when a launch configuration succeeds.
missing = [m for m in missing if m not in ("__cudaLaunchKernel", "__cudaGetKernel", "__cudaInitModule")]
assert not missing, missing
PY
echo ok
