# Real TensorBoard (with the xprof profile plugin) serves an exported logdir: the profile
# plugin lists the run, its host and tools, and returns the trace-viewer data with the GPU
# kernels; headless Chromium loads the profile page and the screenshot is kept as
# $T/tensorboard-profile.png (in the test's output directory).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need_venv_module tensorboard
need_venv_module xprof
$GEN g.dlh --steps 5 --threads 2 || fail gentrace
"$DLHOOK_BIN" export -q -f tensorboard -o logdir g.dlh || fail "export tensorboard"
run=$(ls logdir/plugins/profile)
port=$("$VPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BUILD/venv/bin/tensorboard" --logdir logdir --host 127.0.0.1 --port "$port" >tb.log 2>&1 &
tb=$!
trap 'kill $tb 2>/dev/null; wait $tb 2>/dev/null' EXIT
url=http://127.0.0.1:$port
ok=0
for i in $(seq 120); do
  "$VPY" -c "import urllib.request as u; u.urlopen('$url/data/plugin/profile/runs', timeout=2)" 2>/dev/null && { ok=1; break; }
  kill -0 $tb 2>/dev/null || break
  sleep 0.5
done
[ $ok = 1 ] || fail "TensorBoard did not start: $(tail -20 tb.log)"
"$VPY" - "$url" "$run" <<'PY' || fail "the profile plugin does not show the export"
import gzip, json, sys, urllib.request
url, run = sys.argv[1], sys.argv[2]
def get(p):
    b = urllib.request.urlopen(url + p, timeout=60).read()
    return json.loads(gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b)
runs = get("/data/plugin/profile/runs")
print("runs:", runs)
assert run in runs, runs
tools = get("/data/plugin/profile/run_tools?run=" + run)
print("tools:", tools)
assert {"trace_viewer@", "kernel_stats", "overview_page", "framework_op_stats"} <= set(tools), tools
hosts = get("/data/plugin/profile/hosts?run=%s&tag=trace_viewer@" % run)
print("hosts:", hosts)
assert any(h.get("hostname") == "rank0" for h in hosts), hosts
tr = get("/data/plugin/profile/data?run=%s&tag=trace_viewer@&host=rank0" % run)
names = {e.get("name") for e in tr.get("traceEvents", [])}
assert {"forward(float*)", "backward(float*)", "cudaLaunchKernel"} <= names, sorted(n for n in names if n)
print("trace viewer events:", len(tr["traceEvents"]))
PY
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || skip "no chromium for the screenshot (plugin checks passed)"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --window-size=1400,900 --virtual-time-budget=20000 --screenshot="$T/tensorboard-profile.png" \
  "$url/#profile" >chromium.log 2>&1 || fail "chromium failed: $(tail -5 chromium.log)"
[ "$(wc -c <"$T/tensorboard-profile.png")" -gt 20000 ] || fail "screenshot is (nearly) empty"
echo "screenshot: $T/tensorboard-profile.png"
echo ok
