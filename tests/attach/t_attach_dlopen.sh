# A library the program loads with dlopen while dlhook is attached (tests/attach/plugin.c, one
# cuBLAS call per step) is hooked too: dlhook's session thread rewrites the GOT entries of new
# libraries (checked every 0.5 s). Every step that began 1 s after the library was loaded, up
# to detach, has its cuBLAS call in the trace. A cuBLAS function the program looks up with dlsym
# on libcublas's handle while attached is dlhook's wrapper: each step from then on has that call.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach/common.sh"
PLUGIN=$BUILD/tests/attach/libattach_plugin.so
need "$PLUGIN"
ARGS="--steps 500 --step-ms 10 --plugin $PLUGIN --plugin-at 150"
"$SIMRUN" "$ATTACHEE" $ARGS >bare.out 2>bare.err || { cat bare.err; fail "bare run failed"; }
start_bg run "$ATTACHEE" $ARGS --log steps.log --hold release
wait_lines steps.log 20
"$DLHOOK_BIN" attach "$PID" -o "$T/tr" >a.out 2>&1 || { cat a.out; kill $PID; fail "attach failed"; }
i=0
until grep -q '^plugin' steps.log; do
  i=$((i + 1)); [ $i -lt 6000 ] || { kill $PID; fail "the plugin was never loaded"; }; sleep 0.01
done
sleep 2.5
"$DLHOOK_BIN" detach "$PID" >d.out 2>&1 || { cat d.out; kill $PID; fail "detach failed"; }
touch release
wait "$PID" || { cat run.err; fail "attached run failed"; }
cmp bare.out run.out || fail "output differs from the bare run"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" dump --type api,trailer "$tr" >d.jsonl || fail "dump failed"
python3 - d.jsonl steps.log <<'PY' || fail "the library loaded while attached was not hooked"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
log = [l.split() for l in open(sys.argv[2])]
plugin_t = int(next(l for l in log if l[0] == "plugin")[2])
plugin_at = int(next(l for l in log if l[0] == "plugin")[1])
began = {int(l[0]): int(l[1]) for l in log if l[0] != "plugin"}
end_ns = [e for e in ev if e["type"] == "trailer"][0]["end_ns"]
api = sorted((e for e in ev if e["type"] == "api" and e["depth"] == 0), key=lambda e: e["start_ns"])
marks = [i for i, e in enumerate(api) if e["name"] == "cudaMemset"]
checked = 0
for k in range(len(marks) - 1):
    s = api[marks[k]]["args"]["value"]
    n = sum(1 for e in api[marks[k]:marks[k + 1]] if e["name"] == "cublasGetVersion_v2")
    pm = sum(1 for e in api[marks[k]:marks[k + 1]] if e["name"] == "cublasGetPointerMode_v2")
    assert pm == (1 if s >= plugin_at else 0), ("step", s, "cublasGetPointerMode_v2 calls", pm)
    if s < plugin_at:
        assert n == 0, (s, n)
    elif began[s] >= plugin_t + 1_000_000_000 and began[s] < end_ns - 200_000_000:
        assert n == 1, ("step", s, "has", n, "cublasGetVersion_v2 calls")
        checked += 1
assert checked >= 20, ("too few steps checked", checked)
print("steps with the plugin's call, checked:", checked)
PY
echo ok
