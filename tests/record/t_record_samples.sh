# Host sampling end to end: real traces recorded with DLHOOK_SAMPLE_HZ=1000 and what the command
# makes of them. A Python program (no CUDA: DLHOOK_SAMPLE=always) spends its CPU time in busy()
# and then sleeps 0.25 s while a thread waits on an Event: stats --json samples puts the on-CPU
# time at busy's lines, the main thread's sampled CPU time matches what the program measured
# itself (time.thread_time), the sleep is a clock_nanosleep wait under main(); the flame graphs
# (--weight samples, --weight wait), Kineto, Perfetto and the report show the same samples. The
# C example on the simulator: on-CPU samples in the simulated libraries' host work.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"
need "$DLHOOK_BIN"
D=$DLHOOK_BIN
cat >prog.py <<'EOF'
import threading, time

def busy(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def waiter(ev):
    ev.wait(2)

def main():
    ev = threading.Event()
    t = threading.Thread(target=waiter, args=(ev,))
    t.start()
    w0 = time.monotonic()
    c0 = time.thread_time()
    busy(4_000_000)
    c1 = time.thread_time()
    time.sleep(0.25)
    ev.set()
    t.join()
    print("busy_cpu_ns", int((c1 - c0) * 1e9), "total_cpu_ns", int(time.thread_time() * 1e9),
          "main_wall_ns", int((time.monotonic() - w0) * 1e9))

main()
EOF
# the interpreter itself (python3 may be a launcher script, pyenv's shim: one trace per process)
PYBIN=$(python3 -c 'import sys; print(sys.executable)') || skip "no python3"
DLHOOK_SAMPLE_HZ=1000 DLHOOK_SAMPLE=always DLHOOK_QUIET=1 traced "$T/py" "$PYBIN" prog.py >out.txt 2>err.txt \
  || { cat err.txt; fail "python under dlhook failed"; }
tr=$(one_trace "$T/py")
"$D" stats --json "$tr" >s.json || fail "stats --json"
python3 - s.json out.txt <<'PY' || fail "stats --json samples of the Python program"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
words = open(sys.argv[2]).read().split()
busy_cpu, total_cpu, main_wall = int(words[1]), int(words[3]), int(words[5])
print("samples: cpu", s["cpu"], s["cpu_ns"], "wait", s["wait"], s["wait_ns"], "lost", s["lost"],
      "; the program measured busy", busy_cpu, "total", total_cpu)
# (a CPU-time timer expires at the kernel's tick: at 1000 Hz a sample may stand for 4 ms)
assert s["hz"] == 1000 and s["cpu"] >= 10 and s["wait"] > 50, s
# the main thread's on-CPU samples add up to its CPU time (within a few samples and start-up)
main = [t for t in s["by_thread"] if t["cpu"] and t["tid"] == min(x["tid"] for x in s["by_thread"])]
assert main, s["by_thread"]
m = main[0]["cpu_ns"]
assert abs(m - total_cpu) <= 0.15 * total_cpu + 20e6, (m, total_cpu)
# busy()'s lines hold its CPU time
b = sum(x["cpu_ns"] for x in s["by_line"] if x["function"] == "busy" and x["file"].endswith("prog.py"))
assert abs(b - busy_cpu) <= 0.15 * busy_cpu + 10e6, (b, busy_cpu)
# the sleep: a clock_nanosleep wait of at least about 0.25 s at main()'s line, within main()'s
# wall time and start-up (more than the sleep on a loaded machine: the recorder counts the time
# a thread waited for a CPU into its next wait sample)
w = {x["name"]: x["wait_ns"] for x in s["by_wait"]}
assert 0.2e9 <= w.get("[wait: clock_nanosleep]", 0) <= main_wall + 0.5e9, (w, main_wall)
sl = [x for x in s["by_line"] if x["function"] == "main" and x["file"].endswith("prog.py")]
assert sum(x["wait_ns"] for x in sl) >= 0.15e9, sl
print("ok: python samples")
PY
"$D" export -q -f folded --weight samples -o cpu.folded "$tr" || fail "folded samples"
grep -q ';busy [0-9]*$' cpu.folded || grep -q '^busy' cpu.folded || grep -q ';busy;' cpu.folded \
  || fail "no busy frame in the on-CPU flame graph: $(head -5 cpu.folded)"
"$D" export -q -f folded --weight wait -o wait.folded "$tr" || fail "folded wait"
grep -q '^<module>;main;\[wait: clock_nanosleep\] [0-9]*$' wait.folded || grep -q 'main;\[wait: clock_nanosleep\]' wait.folded \
  || fail "no clock_nanosleep wait under main: $(cat wait.folded)"
python3 - s.json cpu.folded wait.folded <<'PY' || fail "flame graph totals differ from stats"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
tot = lambda f: sum(int(l.rsplit(" ", 1)[1]) for l in open(f) if l.strip())
assert tot(sys.argv[2]) == s["cpu_ns"] and tot(sys.argv[3]) == s["wait_ns"], (tot(sys.argv[2]), tot(sys.argv[3]), s["cpu_ns"], s["wait_ns"])
PY
"$D" export -q -f kineto --no-gzip --keep-gpuless -o k "$tr" || fail "kineto"
python3 - s.json k/*.pt.trace.json <<'PY' || fail "kineto samples of the Python program"
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
ev = json.load(open(sys.argv[2]))["traceEvents"]
c = [e for e in ev if e.get("cat") == "cpu_sample"]
w = [e for e in ev if e.get("cat") == "wait_sample"]
assert len(c) == s["cpu"] and len(w) == s["wait"], (len(c), len(w), s["cpu"], s["wait"])
assert any(e["name"] == "busy" for e in c)
PY
"$D" export -q -f perfetto --keep-gpuless -o p.pftrace "$tr" || fail "perfetto"
"$D" report -o r.html "$tr" || fail "report"
grep -q 'id="flame-cpu"' r.html && grep -q 'id="flame-wait"' r.html || fail "report without the samples' flame graphs"
grep -q '"label":"samples ' r.html || fail "report without a samples lane"

# the C example on the simulator: its host work in the simulated libraries is sampled on-CPU
if [ -e "$BUILD/simcuda/libcudart.so.13" ] && [ -x "$BUILD/examples/train" ]; then
  # (SIMCUDA_NUMERICS=all: the simulated cuDNN computes its results in the calling thread)
  SIMCUDA_NUMERICS=all DLHOOK_SAMPLE_HZ=1000 "$D" record --sim -o "$T/c" -- "$BUILD/examples/train" --steps 10 >/dev/null 2>rec.txt \
    || { cat rec.txt; fail "record train"; }
  ct=$(one_trace "$T/c")
  "$D" stats --json "$ct" >c.json || fail "stats train"
  python3 - c.json <<'PY' || fail "stats --json samples of the C example"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["samples"]
print("train: cpu", s["cpu"], s["cpu_ns"], "wait", s["wait"], "top", s["by_line"][:2])
assert s["cpu"] > 20, s
top = max((x for x in s["by_line"] if x["cpu_ns"]), key=lambda x: x["cpu_ns"])
assert top["function"].endswith("_host") and top["line"] == 0 and "simcuda" in (top["file"] or ""), top
rows = j["steps"]["rows"]
assert rows and sum(r["sample_cpu_ns"] for r in rows) > 0, rows[:1]
PY
fi
echo "ok: host samples of recorded programs"
