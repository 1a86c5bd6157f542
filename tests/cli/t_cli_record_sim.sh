# dlhook record --sim end to end: a real program under the real libdlhook.so on the simulated
# CUDA stack; the exit status survives, the trace is listed, and dump/stats read it.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$DLHOOK_LIB"
need "$BUILD/simcuda/libcudart.so.13"
P=$BUILD/tests/progs/cudart_calls
need "$P"
LD_LIBRARY_PATH="$BUILD/simcuda" "$P" >plain.out 2>&1
want=$?
"$DLHOOK_BIN" record --sim -o out -- "$P" >rec.out 2>err
rc=$?
[ "$rc" -eq "$want" ] || fail "record: exit $rc, the program alone exits $want; stderr: $(cat err)"
cmp -s plain.out rec.out || fail "the program's output changed under record"
tr=$(one_trace out)
grep -q "^  $tr: [0-9]* calls, [0-9]* GPU records, 0 dropped" err || fail "listing: $(cat err)"
"$DLHOOK_BIN" stats --json "$tr" >s.json || fail "stats"
expect_calls s.json cudaMalloc=2 cudaMemcpy=1 cudaGetDeviceCount=3
pyassert s.json 'j["traces"] == 1 and j["processes"] == 1 and j["dropped"] == 0'
"$DLHOOK_BIN" dump "$tr" >d.jsonl || fail "dump"
python3 - d.jsonl <<'PY' || fail "dump content"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
assert l[0]["type"] == "process" and l[-1]["type"] == "summary", (l[0], l[-1])
pid = l[0]["pid"]
api = [o for o in l if o["type"] == "api"]
assert api and all(a["pid"] == pid and a["domain"] == "cudart" for a in api), api[:2]
m = [a for a in api if a["name"] == "cudaMalloc"]
assert len(m) == 2, m
PY
echo ok
