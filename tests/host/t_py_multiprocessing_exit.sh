# Hazard: Python's multiprocessing (so PyTorch's DataLoader workers) ends a forked worker with
# os._exit: atexit handlers never run there. Each of 4 workers makes 5,000-20,000 CUDA calls
# through ctypes: each worker's trace has every one of its calls, and the job's output and exit
# status are those of the untraced run.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
command -v python3 >/dev/null || skip "no python3"
need_cudart
PY="$ROOT/tests/host/py_workers.py"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
python3 "$PY" "$CUDART" 5000 10000 15000 20000 >plain.out 2>plain.err; want=$?
[ "$want" = 0 ] || fail "untraced run: exit $want: $(cat plain.err)"
traced "$T/tr" python3 "$PY" "$CUDART" 5000 10000 15000 20000 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want: $(cat traced.out traced.err)"
cmp -s plain.out traced.out || fail "output differs: $(cat traced.out)"
for f in "$T"/tr/*.dlh; do "$DLHOOK_BIN" stats --json "$f" >"$f.json" || fail "$f unreadable"; done
python3 - "$T"/tr/*.json <<'PY' || fail "worker traces incomplete"
import json, sys
got = []
for f in sys.argv[1:]:
    j = json.load(open(f))
    calls = {a["name"]: a["calls"] for a in j["api"]}
    assert j["dropped"] == 0, (f, j["dropped"])
    got.append(calls.get("cudaGetDeviceCount", 0))
got.sort()
assert got == [1, 5000, 10000, 15000, 20000], got
print("parent and workers:", got)
PY
echo "ok: every os._exit worker's calls are in its trace"
