# Host samples (SampleBatch) in dlhook stats (table, --json samples and the step rows) and dump,
# with exact numbers on a trace of known contents (command/tests/mksamples.c says what it holds),
# and a damaged batch: its readable samples counted, a clear error, exit 1.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mksamples"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mksamples" s.dlh || fail "mksamples"

"$D" stats --json s.dlh >s.json 2>err || fail "stats --json: exit $?: $(cat err)"
python3 - s.json <<'PY' || fail "stats --json samples"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["samples"]
assert (s["hz"], s["cpu"], s["wait"], s["cpu_ns"], s["wait_ns"], s["lost"], s["written"]) == \
    (1000, 18, 12, 18000000, 27500000, 7, 30), s
th = {t["name"]: t for t in s["by_thread"]}
assert (th["main"]["tid"], th["main"]["cpu"], th["main"]["wait"], th["main"]["cpu_ns"], th["main"]["wait_ns"]) == \
    (4242, 15, 4, 15000000, 8000000), th["main"]
assert (th["loader"]["cpu_ns"], th["loader"]["wait_ns"], th["loader"]["wait"]) == (3000000, 19500000, 8), th
# by_line: the innermost frame of the user's code (not threading.py), else the native function
L = [(x["function"], x["file"], x["line"], x["cpu_ns"], x["wait_ns"]) for x in s["by_line"]]
assert L == [("load", "/work/app/train.py", 30, 3000000, 19000000),
             ("step", "/work/app/train.py", 20, 10000000, 8000000),
             ("compute_kernel_host", "/work/app/libnative.so", 0, 5000000, 0),
             ("[no Python frames]", None, 0, 0, 500000)], L
total = 18000000 + 27500000
for x in s["by_line"]:
    assert abs(x["share"] - (x["cpu_ns"] + x["wait_ns"]) / total) < 1e-12, x
assert abs(sum(x["share"] for x in s["by_line"]) - 1) < 1e-9
ops = {o["name"]: (o["cpu"], o["cpu_ns"]) for o in s["by_op"]}
assert ops == {"aten::addmm": (10, 10000000), "[no operator]": (8, 8000000)}, ops
W = [(w["name"], w["wait"], w["wait_ns"]) for w in s["by_wait"]]
assert W == [("[wait: futex]", 6, 18000000), ("[in cudaStreamSynchronize]", 4, 8000000),
             ("[wait: syscall 99999]", 1, 1000000), ("[wait]", 1, 500000)], W
# the step [1.5 ms, 11.5 ms): main's first 10 on-CPU samples, loader's 6 waits and 3 on-CPU
r = j["steps"]["rows"]
assert len(r) == 1 and r[0]["sample_cpu_ns"] == 13000000 and r[0]["sample_wait_ns"] == 18000000, r
print("ok: stats --json samples")
PY

"$D" stats s.dlh >table.txt 2>err || fail "stats: exit $?: $(cat err)"
grep -q '^Host time (samples at 1000 Hz): 18 on-CPU samples, 18.00 ms; 12 wait samples, 27.50 ms; 7 lost$' \
  table.txt || fail "no host time headline: $(cat table.txt)"
grep -Eq '^main +4242 +4242 +15.00 ms +8.00 ms +50.5%$' table.txt || fail "thread row: $(cat table.txt)"
grep -Eq '^load +/work/app/train.py:30 +3.00 ms +19.00 ms +48.4%$' table.txt || fail "line row"
grep -Eq '^aten::addmm +10.00 ms +0 ns +22.0%$' table.txt || fail "operator row"
grep -Eq '^\[in cudaStreamSynchronize\] +0 ns +8.00 ms +17.6%$' table.txt || fail "wait row"

# a trace without samples: zeros in JSON, no section in the table
"$BUILD/tests/bin/mktrace" plain.dlh 2>/dev/null || true
if [ -s plain.dlh ]; then
  "$D" stats --json plain.dlh >p.json || fail "stats plain"
  pyassert p.json 'j["samples"]["cpu"] == 0 and j["samples"]["wait"] == 0 and j["samples"]["by_line"] == []'
  "$D" stats plain.dlh | grep -q 'Host time' && fail "host time section without samples"
fi

# dump: one line per sample, decoded
"$D" dump --type process,sample,summary s.dlh >d.jsonl 2>err || fail "dump: exit $?: $(cat err)"
python3 - d.jsonl <<'PY' || fail "dump samples"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
s = [o for o in l if o["type"] == "sample"]
assert len(s) == 30, len(s)
assert [o["kind"] for o in s].count("cpu") == 18
w = [o for o in s if o.get("in_call")]
assert len(w) == 4 and all(o["in_call"] == "cudaStreamSynchronize" and o["syscall"] == 202 and
                           o["syscall_name"] == "futex" and o["weight_ns"] == 2000000 for o in w), w
assert [o["time_ns"] for o in s if o["tid"] == 4243][:3] == [2500000, 3500000, 4500000]
u = [o for o in s if o.get("syscall") == 99999]
assert len(u) == 1 and "syscall_name" not in u[0], u
assert s[0]["stack"][0]["function"].startswith("at::_ops::addmm::call"), s[0]
assert [o for o in l if o["type"] == "process"][0]["sample_hz"] == 1000
sm = l[-1]
assert sm["type"] == "summary" and sm["sample_events"] == 30 and sm["samples"] == 30 and sm["samples_lost"] == 7, sm
print("ok: dump samples")
PY
"$D" dump s.dlh | grep -q '"type":"sample"' && fail "samples in dump's default output"
"$D" dump --all --type counters s.dlh | grep -q '"samples":30,"samples_lost":7' || fail "counters"

# a damaged batch (weight_ns shorter than the other columns): its first 3 samples count
"$BUILD/tests/bin/mksamples" bad.dlh --damaged || fail "mksamples --damaged"
"$D" stats --json bad.dlh >b.json 2>err && fail "stats on a damaged batch exited 0"
grep -q 'inconsistent event batch' err || fail "no damage message: $(cat err)"
pyassert b.json 'j["samples"]["wait"] == 4 + 3 and j["samples"]["wait_ns"] == 8000000 + 9000000'
"$D" dump --type sample bad.dlh >bd.jsonl 2>err && fail "dump on a damaged batch exited 0"
[ "$(grep -c '"type":"sample"' bd.jsonl)" = 22 ] || fail "dump of the damaged trace: $(grep -c '"type":"sample"' bd.jsonl) samples"
echo "ok: samples in stats and dump"
