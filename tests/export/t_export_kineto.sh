# kineto: PyTorch-profiler Chrome trace JSON (gzipped, one file per rank, named by rank) with
# categories, External ids, flows only from calls that launched work, a launch written inside
# the library call for its kernel, device properties, distributedInfo and one ProfilerStep#N per
# step; read by Holistic Trace Analysis, which must find the kernels, their launches and ranks.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN r0.dlh --rank 0 --world 2 --steps 6 || fail gentrace
$GEN r1.dlh --rank 1 --world 2 --pid 5000 --steps 6 --slow 2 || fail gentrace
"$DLHOOK_BIN" export -q -f kineto -o out r0.dlh r1.dlh || fail "export kineto"
n=$(ls out/*.pt.trace.json.gz | wc -l)
[ "$n" = 2 ] || fail "expected 2 files, got: $(ls out)"
f0=$(ls out/genhost_rank0_4242.*.pt.trace.json.gz) || fail "files not named by rank: $(ls out)"
zcat "$f0" >r0.json || fail "not gzip"
pyassert r0.json "j['distributedInfo']['rank'] == 0 and j['distributedInfo']['world_size'] == 2"
pyassert r0.json "j['deviceProperties'][0]['name'] == 'Simulated GPU' and j['deviceProperties'][0]['numSms'] == 132"
pyassert r0.json "sum(1 for e in j['traceEvents'] if e.get('cat') == 'kernel') == 24"
pyassert r0.json "sum(1 for e in j['traceEvents'] if e.get('cat') == 'gpu_memcpy') == 6"
pyassert r0.json "sum(1 for e in j['traceEvents'] if e.get('cat') == 'gpu_memset') == 6"
# 7 runtime calls per step, and a cudaLaunchKernel synthesized inside each cublasSgemm_v2
pyassert r0.json "sum(1 for e in j['traceEvents'] if e.get('cat') == 'cuda_runtime') == 6*7 + 6"
pyassert r0.json "sum(1 for e in j['traceEvents'] if e.get('name') == 'cudaLaunchKernel' and e['args'].get('synthesized') == 1 and e['args']['function'] == 'cublasSgemm_v2') == 6"
pyassert r0.json "all('External id' in e['args'] for e in j['traceEvents'] if e['ph'] == 'X')"
pyassert r0.json "all(e['args']['cbid'] == 211 for e in j['traceEvents'] if e.get('name') == 'cudaLaunchKernel')"
pyassert r0.json "all(isinstance(e['ts'], int) and isinstance(e['dur'], int) and e['dur'] >= 0 for e in j['traceEvents'] if e['ph'] == 'X')"
pyassert r0.json "all(k in e['args'] for e in j['traceEvents'] if e.get('cat') == 'kernel' for k in ('blocks per SM', 'warps per SM', 'est. achieved occupancy %'))"
pyassert r0.json "j['deviceProperties'][0]['maxThreadsPerMultiprocessor'] == 2048 and j['traceName'].startswith('genhost_rank0_4242.')"
pyassert r0.json "[e['name'] for e in j['traceEvents'] if e['name'].startswith('ProfilerStep#')] == ['ProfilerStep#%d' % i for i in range(6)]"
# a flow from every call that launched work, to it; none from other calls
pyassert r0.json "(lambda T: (lambda f, s: len(f) == 36 and f == s)({e['id'] for e in T if e['ph'] == 'f'}, {e['id'] for e in T if e['ph'] == 's'}))(j['traceEvents'])"
pyassert r0.json "sum(1 for e in j['traceEvents'] if e['ph'] == 's') == 36"
pyassert r0.json "all(e['args']['grid'] == [128,1,1] and e['args']['block'] == [256,1,1] for e in j['traceEvents'] if e.get('cat') == 'kernel')"
# a lone trace without a rank is rank 0 of 1; several without ranks get no distributedInfo
$GEN solo.dlh --rank -1 --world -1 --steps 2 || fail gentrace
"$DLHOOK_BIN" export -q -f kineto -o solo solo.dlh || fail "export solo"
zcat solo/*.gz >solo.json
pyassert solo.json "j['distributedInfo']['rank'] == 0 and j['distributedInfo']['world_size'] == 1"
# --step-range names the step ranges explicitly
"$DLHOOK_BIN" export -q -f kineto --step-range 'step 3' -o out2 r0.dlh || fail "export --step-range"
zcat out2/*.gz >s.json
pyassert s.json "[e['name'] for e in j['traceEvents'] if e['name'].startswith('ProfilerStep#')] == ['ProfilerStep#0']"
need_venv_module hta
"$VPY" - out <<'PY' || fail "Holistic Trace Analysis could not read the export"
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
ranks = sorted(ta.t.traces.keys())
print("HTA ranks:", ranks)
assert ranks == [0, 1], ranks
for r in ranks:
    df = ta.t.get_trace(r)
    sym = ta.t.symbol_table.get_sym_table()
    cats = df["cat"].map(lambda i: sym[i])
    names = df["name"].map(lambda i: sym[i])
    k = df[cats == "kernel"]
    launches = set(df[(cats == "cuda_runtime") & (df["correlation"] > 0)]["correlation"])
    matched = sum(1 for c in k["correlation"] if c in launches)
    print("rank", r, "kernels", len(k), "with their launch", matched)
    assert len(k) > 0 and matched > 0
    assert set(names[cats == "kernel"]) >= {"forward(float*)", "backward(float*)"}
    assert (k["stream"] == 7).all()
kb = ta.get_gpu_kernel_breakdown(visualize=False)[0]
print(kb.to_string())
assert "COMPUTATION" in set(kb["kernel_type"])
PY
# --no-gzip: the same events as plain JSON (.pt.trace.json, torch.profiler's default)
"$DLHOOK_BIN" export -q --no-gzip -f kineto -o plain r0.dlh || fail "export kineto --no-gzip"
p0=$(ls plain/genhost_rank0_4242.*.pt.trace.json) || fail "no plain .pt.trace.json: $(ls plain)"
python3 - "$p0" r0.json <<'PY' || fail "--no-gzip differs from the gzipped export"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
key = lambda j: sorted(json.dumps(e, sort_keys=True) for e in j["traceEvents"])
assert key(a) == key(b), "events differ"
PY
# the gzip stream (command/lib/gzip.c, ISA-L): one gzip member as zlib wrote it (readers that
# stop after the first member read it all), and byte for byte the JSON of --no-gzip but for its
# traceName, on a trace whose 60 MB of JSON spans many buffers of the writer and the compressor
$GEN big.dlh --events 200000 --threads 3 >/dev/null || fail gentrace
"$DLHOOK_BIN" export -q -f kineto -o bgz big.dlh && "$DLHOOK_BIN" export -q -f kineto --no-gzip -o bplain big.dlh ||
  fail "export kineto of big.dlh"
gzip -t bgz/*.pt.trace.json.gz || fail "gzip -t rejects the export"
python3 - bgz/*.pt.trace.json.gz bplain/*.pt.trace.json <<'PY' || fail "the gzipped JSON differs from --no-gzip's"
import os, sys, zlib
gz, plain = (open(f, "rb").read() for f in sys.argv[1:])
d = zlib.decompressobj(wbits=31)
j = d.decompress(gz) + d.flush()
assert d.eof and d.unused_data == b"", "more than one gzip member"
name = lambda p: os.path.basename(p).encode()
assert j.replace(name(sys.argv[1]), name(sys.argv[2])) == plain, "JSON differs"
print("gzip: %d bytes of JSON in %d" % (len(j), len(gz)))
PY
echo ok
