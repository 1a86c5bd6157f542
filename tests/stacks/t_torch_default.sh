# The PyTorch wheel from PyPI (CUDA build, no GPU here) under dlhook's default settings (mixed
# stacks in a Python program): a small training step on the CPU plus CUDA queries that fail.
# The program's output and exit code are those of the bare run; the trace is complete; every
# CUDA runtime call is counted exactly (against an independent counting preload run the same
# way); the stacks are symbolized (names for the native frames of torch's libraries, Python
# frames of the script); exit does not stall.
# Needs torch in $BUILD/venv (scripts/bootstrap-py) or TORCH_PYTHON; skips without it.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
counter=$BUILD/tests/stacks/libcountcalls.so
need "$counter"
py=${TORCH_PYTHON:-$BUILD/venv/bin/python}
[ -x "$py" ] && "$py" -c 'import torch' 2>/dev/null || skip "no torch in $py (scripts/bootstrap-py installs it)"
script=$ROOT/tests/stacks/torch_step.py
"$py" "$script" >bare.out 2>bare.err; bare_rc=$?
[ "$bare_rc" = 0 ] || { cat bare.err; fail "the script fails bare"; }
COUNT_FILE=$T/counts.bin LD_PRELOAD="$counter" "$py" "$script" >count.out 2>count.err || fail "counting run failed"
cmp -s bare.out count.out || fail "the counting preload changed the output"
t0=$(date +%s%N)
traced "$T/tr" "$py" "$script" >pre.out 2>pre.err; rc=$?
t1=$(date +%s%N)
[ "$rc" = "$bare_rc" ] || { cat pre.err; fail "exit code changed: $bare_rc -> $rc"; }
cmp -s bare.out pre.out || { diff bare.out pre.out; fail "program output changed"; }
grep -v '^dlhook: ' pre.err >pre.err.prog
cmp -s bare.err pre.err.prog || { diff bare.err pre.err.prog; fail "program stderr changed"; }
grep -q 'did not finish' pre.err && fail "the writer did not finish at exit"
echo "traced run: $(( (t1 - t0) / 1000000 )) ms"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
"$DLHOOK_BIN" dump "$tr" >dump.jsonl || fail "dump reports damage"
"$DLHOOK_BIN" dump --type trailer "$tr" >trailer.jsonl || fail "dump reports damage"
python3 - "$T/counts.bin" <<'PY' || fail "trace incomplete, counts differ or stacks unsymbolized"
import json, struct, sys
names = ["__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterFatBinary",
         "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary", "cudaGetDeviceCount",
         "cudaGetLastError", "cudaDriverGetVersion"]
want = dict(zip(names, struct.unpack("<8Q", open(sys.argv[1], "rb").read(64))))
stats = json.load(open("stats.json"))
got = {a["name"]: a["calls"] for a in stats["api"]}
bad = [(n, want[n], got.get(n, 0)) for n in names if want[n] != got.get(n, 0)]
assert not bad, f"counts (name, independent, dlhook): {bad}"
assert want["__cudaRegisterFunction"] > 1000, want
ev = [json.loads(l) for l in open("dump.jsonl")]
summ = [e for e in ev if e["type"] == "summary"][0]
assert summ["complete"], summ
trailer = json.loads(open("trailer.jsonl").readline())
assert trailer["dropped"] == 0, trailer
proc = [e for e in ev if e["type"] == "process"][0]
assert proc["stacks_mode"] == "mixed", proc["stacks_mode"]
calls = [e for e in ev if e["type"] == "api"]
with_stack = [e for e in calls if e.get("stack")]
assert len(with_stack) >= 0.99 * len(calls), (len(with_stack), len(calls))
native = named = 0
for e in with_stack:
    for f in e["stack"]:
        if f.get("python") or "/torch/lib/" not in (f.get("module") or ""):
            continue
        native += 1
        named += bool(f.get("function"))
assert native and named >= 0.9 * native, f"torch frames named: {named} of {native}"
dc = [e for e in calls if e["name"] == "cudaGetDeviceCount"][0]
assert any(f.get("python") and f["file"].endswith("torch_step.py") for f in dc["stack"]), dc["stack"]
print(f"ok: {len(calls)} calls; torch frames named {named}/{native}; "
      f"unsymbolized at exit {trailer.get('pcs_unsymbolized')}; index {trailer.get('symbol_index_bytes', 0) >> 20} MiB")
PY
echo ok
