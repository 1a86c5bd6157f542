# Folded repeats (one API event standing for COUNT identical calls: gentrace --poll, a
# cudaStreamQuery polled 500 times per step) in every export: one timeline span per folded event
# from the first call's start to the last call's end, named "cudaStreamQuery ×500" in Perfetto
# and xprof, the plain name with args calls in Kineto JSON (HTA groups by name); flame graphs
# weigh the calls' own time and pprof counts every call; merge and report keep them.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need_cmd protoc "Debian protobuf-compiler"
$GEN g.dlh --steps 3 --threads 2 --poll 500 || fail "gentrace --poll"
# 3 steps x 2 threads: 6 folded events of 500 calls, 40 ns each (20 us), span 50 us
NAME='cudaStreamQuery ×500'

# protoc's text output of a message, as nested Python lists of (field, value) for the checks
cat >pb.py <<'PY'
import re, sys
def parse(path):
    """protoc --decode text -> list of (name, value | list): value is str (unescaped) or int"""
    root, stack = [], []
    cur = root
    for line in open(path, encoding="utf-8"):
        s = line.strip()
        if s.endswith("{"):
            node = []
            cur.append((s[:-1].strip(), node))
            stack.append(cur)
            cur = node
        elif s == "}":
            cur = stack.pop()
        elif s:
            k, v = s.split(": ", 1)
            if v.startswith('"'):
                v = v[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode("utf-8")
            elif re.fullmatch(r"-?\d+", v):
                v = int(v)
            cur.append((k, v))
    return root
def get(node, k, d=None):
    for n, v in node:
        if n == k:
            return v
    return d
def all_of(node, k):
    return [v for n, v in node if n == k]
PY

# Perfetto: exactly one slice per folded event, named NAME, as long as its span
check_perfetto() { # FILE.pftrace EXPECTED-SLICES
  protoc --proto_path="$ROOT/command/proto" --decode=dlhperfetto.Trace perfetto_trace.proto \
    <"$1" >"$1.txt" 2>err.txt || fail "protoc cannot decode $1: $(cat err.txt)"
  python3 - "$1.txt" "$NAME" "$2" <<'PY' || fail "perfetto $1: folded slices"
import sys
sys.path.insert(0, ".")
from pb import parse, get, all_of
name, want = sys.argv[2], int(sys.argv[3])
names, ann_names, open_, spans, calls = {}, {}, {}, [], []
for _, p in parse(sys.argv[1]):
    for idata in all_of(p, "interned_data"):
        for en in all_of(idata, "event_names"):
            names[get(en, "iid")] = get(en, "name")
        for an in all_of(idata, "debug_annotation_names"):
            ann_names[get(an, "iid")] = get(an, "name")
    te = get(p, "track_event")
    if te is None:
        continue
    ts, tr = get(p, "timestamp"), get(te, "track_uuid")
    if get(te, "type") == "TYPE_SLICE_BEGIN":
        n = names.get(get(te, "name_iid"))
        open_.setdefault(tr, []).append((ts, n))
        if n == name:
            calls.append({ann_names.get(get(d, "name_iid"), get(d, "name")): get(d, "uint_value")
                          for d in all_of(te, "debug_annotations")})
    elif get(te, "type") == "TYPE_SLICE_END":
        s, n = open_[tr].pop()
        if n == name:
            spans.append(ts - s)
# the one plain cudaStreamQuery name is unused: every query of this trace is folded
assert [n for n in names.values() if n and n.startswith("cudaStreamQuery")] == [name], names
assert len(spans) == want and set(spans) == {50000}, spans
assert all(a.get("calls") == 500 and a.get("calls_dur_ns") == 20000 for a in calls), calls
PY
}
"$DLHOOK_BIN" export -q -f perfetto -o g.pftrace g.dlh || fail "export perfetto"
check_perfetto g.pftrace 6

# Kineto JSON: the plain name (HTA and TensorBoard group runtime calls by name), args calls
rm -rf k && "$DLHOOK_BIN" export -q -f kineto -o k g.dlh || fail "export kineto"
check_kineto() { # FILE... : 6 folded events per file
  python3 - "$@" <<'PY' || fail "kineto: folded events"
import gzip, json, sys
for f in sys.argv[1:]:
    ev = json.load(gzip.open(f))["traceEvents"]
    q = [e for e in ev if e.get("name") == "cudaStreamQuery"]
    assert len(q) == 6, (f, len(q))
    for e in q:
        assert e["cat"] == "cuda_runtime" and e["args"]["calls"] == 500, e
        assert e["args"]["calls_dur_ns"] == 20000 and e["args"]["result"] == 600, e
        assert abs(e["dur"] - 50) <= 1, e  # the span, in whole us
    assert not any("\u00d7" in e.get("name", "") for e in ev), f
PY
}
check_kineto k/*.pt.trace.json.gz

# xprof: one event per folded event, named NAME (what the trace viewer shows), stat calls
rm -rf tb && "$DLHOOK_BIN" export -q -f tensorboard -o tb g.dlh || fail "export tensorboard"
protoc --proto_path="$ROOT/command/proto" --decode=dlhxplane.XSpace xplane.proto \
  <"$(find tb -name '*.xplane.pb' | head -1)" >x.txt 2>err.txt || fail "protoc xplane: $(cat err.txt)"
python3 - x.txt "$NAME" <<'PY' || fail "xplane: folded events"
import sys
sys.path.insert(0, ".")
from pb import parse, get, all_of
name = sys.argv[2]
host = [p for p in all_of(parse(sys.argv[1]), "planes") if get(p, "name") == "/host:CPU"][0]
meta = {get(get(e, "value"), "id"): get(get(e, "value"), "name") for e in all_of(host, "event_metadata")}
stat = {get(get(e, "value"), "id"): get(get(e, "value"), "name") for e in all_of(host, "stat_metadata")}
ids = [i for i, n in meta.items() if n == name]
assert len(ids) == 1, meta
evs = [e for l in all_of(host, "lines") for e in all_of(l, "events") if get(e, "metadata_id") == ids[0]]
assert len(evs) == 6 and {get(e, "duration_ps") for e in evs} == {50000 * 1000}, evs
for e in evs:
    st = {stat[get(s, "metadata_id")]: get(s, "uint64_value") for s in all_of(e, "stats")}
    assert st.get("calls") == 500 and st.get("calls_dur_ns") == 20000, st
PY

# flame graphs: the calls' own time (cpu weight), every call counted (pprof)
"$DLHOOK_BIN" export -q -f folded --weight cpu -o cpu.folded g.dlh || fail "export folded cpu"
grep -qxF 'main;train;sync;cudaStreamQuery 120000' cpu.folded ||
  fail "folded: $(grep cudaStreamQuery cpu.folded)"
"$DLHOOK_BIN" export -q -f pprof --weight cpu -o cpu.pb.gz g.dlh || fail "export pprof cpu"
gzip -dc cpu.pb.gz | protoc --proto_path="$ROOT/command/proto" --decode=dlhpprof.Profile pprof.proto \
  >pp.txt 2>err.txt || fail "protoc pprof: $(cat err.txt)"
python3 - pp.txt <<'PY' || fail "pprof: calls of the folded events"
import sys
sys.path.insert(0, ".")
from pb import parse, get, all_of
pr = parse(sys.argv[1])
strs = all_of(pr, "string_table")
fn = {get(f, "id"): strs[get(f, "name")] for f in all_of(pr, "function")}
loc = {get(l, "id"): fn[get(get(l, "line"), "function_id")] for l in all_of(pr, "location")}
types = [strs[get(t, "type")] for t in all_of(pr, "sample_type")]
assert types == ["calls", "cpu_time"], types
q = [all_of(s, "value") for s in all_of(pr, "sample")
     if loc[all_of(s, "location_id")[0]] == "cudaStreamQuery"]
assert q == [[3000, 120000]], q
PY

# stats: every call
"$DLHOOK_BIN" stats --json g.dlh >s.json || fail "stats"
expect_calls s.json cudaStreamQuery=3000 cudaStreamSynchronize=6
pyassert s.json 'j["folded"] == 6 * 499 and [a["total_ns"] for a in j["api"] if a["name"] == "cudaStreamQuery"] == [120000]'

# merge: two ranks on one timeline keep their folded events (perfetto, kineto)
$GEN r1.dlh --rank 1 --world 2 --pid 5151 --steps 3 --threads 2 --poll 500 || fail "gentrace rank 1"
"$DLHOOK_BIN" merge -q -o m.pftrace g.dlh r1.dlh 2>err.txt || fail "merge: $(cat err.txt)"
check_perfetto m.pftrace 12
rm -rf mk && "$DLHOOK_BIN" merge -q -f kineto -o mk g.dlh r1.dlh 2>err.txt || fail "merge kineto: $(cat err.txt)"
check_kineto mk/*.pt.trace.json.gz
[ "$(ls mk/*.pt.trace.json.gz | wc -l)" = 2 ] || fail "merge kineto: $(ls mk)"

# report: the timeline names the folded event, the table counts its calls
"$DLHOOK_BIN" report -o r.html g.dlh >/dev/null 2>err.txt || fail "report: $(cat err.txt)"
grep -qF "$NAME" r.html || fail "report: no '$NAME' on the timeline"
grep -q '<td class="n" title="cudaStreamQuery">cudaStreamQuery</td><td>cudart</td><td data-v="3000">' r.html ||
  fail "report: calls table: $(grep -o 'title="cudaStreamQuery".\{0,80\}' r.html)"
echo ok
