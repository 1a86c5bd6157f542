# dlhook dump on a trace with known contents (written by mktrace through the writer API).
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
D=$DLHOOK_BIN
"$BUILD/tests/bin/mktrace" a.dlh || fail "mktrace"
"$D" dump a.dlh >dump.jsonl 2>err || fail "dump: exit $?: $(cat err)"
[ -s err ] && fail "dump wrote to stderr: $(cat err)"

python3 - dump.jsonl <<'PY' || fail "dump content"
import json, sys, collections
lines = [json.loads(l) for l in open(sys.argv[1])]
types = collections.Counter(o["type"] for o in lines)
exp = {"process": 1, "thread": 2, "api": 120, "nvtx": 1, "kernel": 120, "memcpy": 10, "summary": 1}
assert dict(types) == exp, types
assert lines[0]["type"] == "process" and lines[-1]["type"] == "summary"
p = lines[0]
assert p["pid"] == 1234 and p["host"] == "testhost" and p["rank"] == 0, p
assert p["cmdline"] == ["./app", '--flag="q"'], p["cmdline"]
th = [o for o in lines if o["type"] == "thread"]
assert th[1] == {"type": "thread", "pid": 1234, "tid": 1235, "name": 'worker\t"x"'}, th
api = [o for o in lines if o["type"] in ("api", "nvtx")]  # NVTX-domain events print as "nvtx"
by = collections.defaultdict(list)
for a in api:
    by[a["name"]].append(a)
    for k in ("domain", "pid", "tid", "start_ns", "dur_ns", "ret", "depth", "args"):
        assert k in a, (k, a)
assert {k: len(v) for k, v in by.items()} == {"nvtxRangePushA": 1, "cudaMalloc": 3,
    "cudaMemcpy": 10, "cuLaunchKernel": 100, "cublasSgemm_v2": 5, "ncclAllReduce": 2}
doms = {k: v[0]["domain"] for k, v in by.items()}
assert doms == {"nvtxRangePushA": "nvtx", "cudaMalloc": "cudart", "cudaMemcpy": "cudart",
    "cuLaunchKernel": "driver", "cublasSgemm_v2": "cublas", "ncclAllReduce": "nccl"}, doms
assert by["nvtxRangePushA"][0]["args"] == {"message": 'step "1"\n'}
m = by["cudaMemcpy"][0]["args"]
assert m == {"dst": "0x7f0000001000", "src": "0x5555aaaa0000", "count": 4096, "kind": 1}, m
assert by["cublasSgemm_v2"][0]["args"] == {"alpha": 1.5, "transa": True}
assert [a["ret"] for a in by["cudaMalloc"]] == [0, 2, 0]
assert [a["dur_ns"] for a in by["cudaMalloc"]] == [100, 200, 300]
assert [a["corr"] for a in by["cuLaunchKernel"]] == list(range(1, 101))
assert all("corr" not in a or a["corr"] is None for a in by["cudaMemcpy"])
assert {a["tid"] for a in by["ncclAllReduce"]} == {1235}
starts = [a["start_ns"] for a in api if a["tid"] == 1234]
assert starts == sorted(starts) and starts[0] == 1000000, starts[:3]
k = [o for o in lines if o["type"] == "kernel"]
assert k[0]["name"] == "_Z6kernelPfi" and k[0]["corr"] == 1 and k[0]["dur_ns"] == 500, k[0]
assert k[0]["start_ns"] == 2000000 and k[1]["start_ns"] == 2000600 and k[0]["stream"] == 7
assert sum(1 for x in k if x["name"] == "_Z4gemmv") == 20
s = lines[-1]
assert s["records"] == 251 and s["dropped"] == 5 and s["complete"] is True, s
PY

# --type filter (comma list and repeated)
"$D" dump --type api a.dlh >api.jsonl || fail "dump --type api"
[ "$(wc -l <api.jsonl)" -eq 120 ] || fail "--type api: $(wc -l <api.jsonl) lines"
grep -qv '"type":"api"' api.jsonl && fail "--type api let other types through"
"$D" dump --type kernel,summary --type=process a.dlh >ks.jsonl || fail "dump --type list"
[ "$(wc -l <ks.jsonl)" -eq 122 ] || fail "--type kernel,summary,process: $(wc -l <ks.jsonl) lines"
# --all adds the definitions
"$D" dump --all a.dlh >all.jsonl || fail "dump --all"
grep -q '"type":"function","id":3,"name":"cuLaunchKernel","domain":"driver"' all.jsonl \
  || fail "--all: no function line"
grep -q '"type":"trailer"' all.jsonl || fail "--all: no trailer line"
grep -c '"type":"counters"' all.jsonl | grep -qx 2 || fail "--all: counters"

# several traces: one process line and one summary each, no trailer -> counters give dropped
"$BUILD/tests/bin/mktrace" b.dlh --pid 77 --no-trailer || fail "mktrace b"
"$D" dump --type process,summary a.dlh b.dlh >two.jsonl || fail "dump two"
python3 - two.jsonl <<'PY' || fail "two traces"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
assert [o["type"] for o in l] == ["process", "summary", "process", "summary"], l
assert l[2]["pid"] == 77 and l[3]["dropped"] == 4 and l[3]["complete"] is False, l[3]
PY
# a file argument that fails does not stop the others
"$D" dump --type summary a.dlh missing.dlh b.dlh >mixed.jsonl 2>err
[ $? -eq 1 ] || fail "dump with a missing file should exit 1"
[ "$(wc -l <mixed.jsonl)" -eq 2 ] || fail "mixed: $(cat mixed.jsonl)"
grep -q "missing.dlh" err || fail "missing.dlh not reported"
echo ok
