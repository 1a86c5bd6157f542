# A Python script calls libcudart through ctypes from three nested functions: each call's stack
# has the Python frames (function, line) in place of the interpreter's frames, between the
# native frames of ctypes/libffi (inner side) and of the interpreter's main (outer side). Runs
# with the system python3 and every pyenv CPython 3.10-3.13 found.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
script=$ROOT/tests/stacks/py_nested.py
cudart=$CUDA_HOME/lib64/libcudart.so.13
[ -e "$cudart" ] || cudart=$BUILD/simcuda/libcudart.so.13
need "$cudart"
pys=""
for p in /usr/bin/python3 /root/.pyenv/versions/3.1[0-3]*/bin/python3; do
  [ -x "$p" ] && pys="$pys $p"
done
[ -n "$pys" ] || skip "no python3"
n=0
for py in $pys; do
  n=$((n + 1))
  "$py" "$script" "$cudart" >bare.$n.out 2>&1 || { cat bare.$n.out; fail "$py: script fails"; }
  # the frames' names are what is checked here, not the exit budget (DLHOOK_EXIT_MS, 200 ms:
  # on a loaded machine the last interpreter's native frames were once left unnamed)
  DLHOOK_EXIT_MS=20000 traced "$T/tr$n" "$py" "$script" "$cudart" >pre.$n.out 2>pre.$n.err || { cat pre.$n.err; fail "$py: fails traced"; }
  cmp -s bare.$n.out pre.$n.out || fail "$py: output changed"
  "$DLHOOK_BIN" dump "$(one_trace "$T/tr$n")" >dump.$n.jsonl || fail "dump failed"
  python3 - "$script" dump.$n.jsonl "$py" <<'PY' || fail "$py: Python frames missing or misplaced"
import json, sys
src, dump, py = sys.argv[1:]
lines = {}
for i, l in enumerate(open(src), 1):
    if "# PY-" in l: lines[l.split("# PY-")[1].split()[0]] = i
ev = [json.loads(l) for l in open(dump)]
proc = [e for e in ev if e["type"] == "process"][0]
assert proc["stacks_mode"] == "mixed", proc["stacks_mode"]
calls = [e for e in ev if e.get("name") == "cudaGetDeviceCount"]
assert sum(e.get("count", 1) for e in calls) == 3, calls  # repeats may fold
for e in calls:
    st = e["stack"]
    pyidx = [i for i, f in enumerate(st) if f.get("python")]
    pyf = [(st[i]["function"].split(".")[-1], st[i]["line"]) for i in pyidx]
    want = [("inner", lines["INNER"]), ("middle", lines["MIDDLE"]), ("outer", lines["OUTER"]),
            ("<module>", lines["MODULE"])]
    assert pyf == want, (py, pyf, want)
    assert all(st[i]["file"] == src for i in pyidx), st[pyidx[0]]
    # native frames on both sides, no interpreter loop frame left
    assert pyidx[0] > 0 and not st[0].get("python"), st[:3]
    natives = [f["function"] for f in st if not f.get("python")]
    assert "_PyEval_EvalFrameDefault" not in natives, natives
    assert any(n and "ctypes" in n.lower() or n == "ffi_call" for n in natives[:pyidx[0]]), natives
    assert any(n in ("Py_RunMain", "Py_BytesMain", "main", "__libc_start_main") for n in natives), natives
print(py, "ok:", [(f["function"], f["line"]) for f in calls[0]["stack"] if f.get("python")])
PY
  # python mode: only the Python frames
  DLHOOK_STACKS=python traced "$T/py$n" "$py" "$script" "$cudart" >/dev/null 2>&1 || fail "python mode fails"
  "$DLHOOK_BIN" dump "$(one_trace "$T/py$n")" >py.$n.jsonl
  python3 - py.$n.jsonl <<'PY' || fail "$py: DLHOOK_STACKS=python"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
c = [e for e in ev if e.get("name") == "cudaGetDeviceCount"]
assert c and all(all(f.get("python") for f in e["stack"]) for e in c), c[0]["stack"]
assert [f["function"].split(".")[-1] for f in c[0]["stack"]] == ["inner", "middle", "outer", "<module>"]
PY
done
# DLHOOK_STACK_DEPTH bounds the native frames only: at 4, the innermost native frames (ctypes,
# libffi) fill it before the first interpreter frame, and every Python frame is still kept
# (deep libtorch dispatch must not cut the user's line off a PyTorch program's stacks)
DLHOOK_STACK_DEPTH=4 traced "$T/shallow" python3 "$script" "$cudart" >/dev/null 2>&1 || fail "depth 4 fails"
"$DLHOOK_BIN" dump "$(one_trace "$T/shallow")" >shallow.jsonl || fail "dump (depth 4)"
python3 - shallow.jsonl <<'PY' || fail "DLHOOK_STACK_DEPTH=4 lost Python frames"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
c = [e for e in ev if e.get("name") == "cudaGetDeviceCount"]
assert c, "no calls"
for e in c:
    st = e["stack"]
    assert [f["function"].split(".")[-1] for f in st if f.get("python")] == ["inner", "middle", "outer", "<module>"], st
    assert sum(1 for f in st if not f.get("python")) <= 4, st
PY
# An unsupported CPython (3.9 here, when installed): native stacks and one warning.
for py in /root/.pyenv/versions/3.9*/bin/python3; do
  [ -x "$py" ] || continue
  traced "$T/old" "$py" "$script" "$cudart" >/dev/null 2>old.err || fail "$py fails traced"
  [ "$(grep -c 'Python 3.9: Python frames are read for CPython 3.10 to 3.13 only' old.err)" = 1 ] \
    || { cat old.err; fail "$py: expected one warning"; }
  "$DLHOOK_BIN" dump "$(one_trace "$T/old")" >old.jsonl
  grep -q '"stacks_mode":"native"' old.jsonl || fail "$py: stacks_mode is not native"
  grep '"cudaGetDeviceCount"' old.jsonl | grep -q '"python":true' && fail "$py: Python frames from 3.9"
  grep '"cudaGetDeviceCount"' old.jsonl | grep -q '"_PyEval_EvalFrameDefault"' || fail "$py: no native stack"
  break
done
echo "ok"
