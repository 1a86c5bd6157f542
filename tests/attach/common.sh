# tests/attach/common.sh — helpers of the `dlhook attach` tests (sourced after tests/lib.sh).
# The target (tests/attach/attachee.cu) runs on the simulator WITHOUT dlhook; the tests attach
# to it, detach, and compare with a bare run.
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/tests/attach/attachee"; need "$DLHOOK_LIB"
[ "$(uname -m)" = x86_64 ] || skip "dlhook attach is x86-64 only"
# attach loads libdlhook.so into a program started without dlhook: an ASan build of it cannot be
# (its runtime must come first in the initial library list)
[ -z "${ASAN_LIB:-}" ] || skip "an ASan-built libdlhook.so cannot be dlopened by a program without ASan"
ATTACHEE=$BUILD/tests/attach/attachee
# ptrace must be possible here at all (a container without it: say so and skip).
if [ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ]; then
  skip "kernel.yama.ptrace_scope = 3: ptrace is disabled on this machine"
fi

# Starts CMD... in the background on the simulator, without dlhook: PID is its process id,
# its output goes to $1.out and $1.err.
start_bg() {
  name=$1; shift
  "$SIMRUN" "$@" >"$name.out" 2>"$name.err" &
  PID=$!
}
# Waits (at most 60 s) until file $1 has at least $2 lines.
wait_lines() {
  i=0
  while [ "$(cat "$1" 2>/dev/null | wc -l)" -lt "$2" ]; do
    i=$((i + 1)); [ $i -lt 6000 ] || fail "$1 never reached $2 lines"
    sleep 0.01
  done
}
# Checks one attach trace against the program's own log of its steps (attachee --log):
#   check_window TRACE LOG [MIN_STEPS]
# - ProcessInfo says attached; the trailer says detached (exit_reason 2);
# - the steps in the trace (cudaMemset's `value` is the step number) are one contiguous range
#   [a, b]; a is exactly the first step the program began after the trace's start, and b is at
#   least the last step it began more than 0.2 s before the trace's end;
# - every step a..b-1 holds exactly its calls (1 kernel launch, 1 cublasSgemm_v2 with its
#   cublasLt calls inside, 1 cudaMemcpy, 1 cudaStreamSynchronize, and the push/pop of the
#   <<<>>> configuration), each launch and GEMM linked to
#   its kernel, each memset and copy to its GPU record.
check_window() {
  "$DLHOOK_BIN" dump --type process,api,kernel,memcpy,memset,summary,trailer "$1" >"$1.jsonl" || fail "dump $1 failed"
  python3 - "$1.jsonl" "$2" "${3:-5}" <<'PY' || fail "trace $1 does not hold the window's calls"
import json, sys, collections
ev = [json.loads(l) for l in open(sys.argv[1])]
log = [tuple(map(int, l.split())) for l in open(sys.argv[2]) if l.strip() and not l.startswith("plugin")]
min_steps = int(sys.argv[3])
proc = [e for e in ev if e["type"] == "process"]
assert proc and proc[0].get("attached") is True, proc
assert proc[0]["not_hooked"], "the trace lists what attach cannot hook"
summ = [e for e in ev if e["type"] == "summary"][0]
assert summ["complete"], summ
trailer = [e for e in ev if e["type"] == "trailer"]
start_ns = proc[0]["start_ns"]
end_ns = trailer[0]["end_ns"] if trailer else max(e["start_ns"] for e in ev if "start_ns" in e)
if trailer: assert trailer[0]["exit_reason"] == 2, trailer
api = sorted((e for e in ev if e["type"] == "api"), key=lambda e: e["start_ns"])
gpu = collections.defaultdict(list)
for e in ev:
    if e["type"] in ("kernel", "memcpy", "memset") and e.get("corr"):
        gpu[e["corr"]].append(e)
marks = [e for e in api if e["name"] == "cudaMemset" and e["depth"] == 0]
assert marks, "no step in the trace"
began = {s: t for s, t in log}
first_after = min(s for s, t in log if t > start_ns)
a = first_after
steps = [m["args"]["value"] for m in marks]
assert steps[0] == a, ("first step in the trace", steps[0], "first begun after attach", a)
assert steps == list(range(a, a + len(steps))), ("steps not contiguous", steps[:5], steps[-5:])
b = steps[-1]
last_before = max([s for s, t in log if t < end_ns - 200_000_000] or [a])
assert b >= last_before, ("last step in the trace", b, "begun well before detach", last_before)
assert b - a >= min_steps, ("too few steps in the window", a, b)
for m, s in zip(marks, steps):   # the mark begins after the program logged the step's start
    # (ticks become trace-clock ns piecewise between anchors: within a microsecond)
    assert m["start_ns"] >= began[s] - 1000, (s, m["start_ns"], began[s])
idx = {id(m): i for i, m in enumerate(api)}
want = {"cudaMemset": 1, "__cudaPushCallConfiguration": 1, "__cudaPopCallConfiguration": 1,
        "__cudaLaunchKernel": 1, "cublasSgemm_v2": 1, "cudaMemcpy": 1,
        "cudaStreamSynchronize": 1}
for k in range(len(marks) - 1):
    lo, hi = idx[id(marks[k])], idx[id(marks[k + 1])]
    outer = [e for e in api[lo:hi] if e["depth"] == 0 and e["tid"] == marks[k]["tid"]]
    got = collections.Counter()
    for e in outer:
        got[e["name"]] += e.get("count", 1)  # folded repeats count every call
    assert got == collections.Counter(want), ("step", steps[k], dict(got))
    inner = [e["name"] for e in api[lo:hi] if e["depth"] > 0]
    assert "cublasLtMatmul" in inner, ("step", steps[k], inner)
    for e in outer:
        linked = gpu.get(e.get("corr"), [])
        kinds = {g["type"] for g in linked}
        if e["name"] == "__cudaLaunchKernel":
            assert any(g["type"] == "kernel" and "k_step" in g["name"] for g in linked), (steps[k], e, linked)
        elif e["name"] == "cublasSgemm_v2":
            assert "kernel" in kinds, (steps[k], e, linked)
        elif e["name"] == "cudaMemset":
            assert "memset" in kinds, (steps[k], e, linked)
        elif e["name"] == "cudaMemcpy":
            assert "memcpy" in kinds, (steps[k], e, linked)
print(f"trace {sys.argv[1]}: steps {a}..{b} complete, each with its calls and GPU work")
PY
}
