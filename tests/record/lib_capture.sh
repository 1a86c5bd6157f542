# tests/record/lib_capture.sh — helpers of the capture-range tests (sourced after tests/lib.sh).
need "$BUILD/simcuda/libcudart.so.13"; need "$BUILD/tests/progs/capture"; need "$DLHOOK_LIB"
CAP="$BUILD/tests/progs/capture"
# counts NAME=N ... in `dlhook stats --json` of trace $1 (0 = absent); kernels as kernel:NAME=N,
# GPU copies as memcpy:KIND=N, memsets as memset=N
expect_window() {
  "$DLHOOK_BIN" stats --json "$1" >stats.json || fail "stats failed"
  shift
  python3 - stats.json "$@" <<'PY' || fail "the trace does not hold exactly the selected window"
import json, sys
j = json.load(open(sys.argv[1]))
calls = {a["name"]: a["calls"] for a in j["api"]}
def kern(name):  # kernel names are mangled (_Z4k_inPf) or not
    return sum(k["count"] for k in j["kernels"] if name in k["name"])
copies = {c["kind"]: c["count"] for c in j["gpu"]["memcpy"]}
got = {}
want = {}
for kv in sys.argv[2:]:
    k, n = kv.split("=")
    want[k] = int(n)
for k in want:
    if k.startswith("kernel:"): got[k] = kern(k[7:])
    elif k.startswith("memcpy:"): got[k] = copies.get(k[7:], 0)
    elif k == "memset": got[k] = j["gpu"]["memset"]["count"]
    else: got[k] = calls.get(k, 0)
bad = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
if bad:
    print("expected, got:", bad, file=sys.stderr)
    print("calls:", calls, "kernels:", j["kernels"], file=sys.stderr)
    sys.exit(1)
PY
}
