# Hazard: workers that end with _exit (or _Exit, quick_exit) skip atexit handlers. A program
# whose helper thread polls CUDA forks 4 workers that make 20,000-80,000 calls each and _exit(0):
# every worker's trace has every one of its calls (dlhook flushes in its _exit wrappers), and the
# program's output and exit status are those of the untraced run.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/hostprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
for how in _exit _Exit quick_exit; do
  "$P" workers $how 20000 40000 60000 80000 >plain.out 2>&1; want=$?
  rm -rf "$T/tr"
  traced "$T/tr" "$P" workers $how 20000 40000 60000 80000 >traced.out 2>&1; rc=$?
  [ "$rc" = "$want" ] || fail "$how: exit $rc, untraced $want: $(cat traced.out)"
  cmp -s plain.out traced.out || fail "$how: output differs: $(cat traced.out)"
  for f in "$T"/tr/*.dlh; do
    "$DLHOOK_BIN" stats --json "$f" >"$f.json" || fail "$how: $f unreadable"
  done
  python3 - "$how" "$T"/tr/*.json <<'PY' || fail "$how: worker traces incomplete"
import json, sys
got = []
for f in sys.argv[2:]:
    j = json.load(open(f))
    calls = {a["name"]: a["calls"] for a in j["api"]}
    assert j["dropped"] == 0, (f, j["dropped"])
    if "cudaGetDeviceCount" in calls:
        got.append(calls["cudaGetDeviceCount"])
got.sort()
assert got == [20000, 40000, 60000, 80000], got
print(sys.argv[1], "workers:", got)
PY
done
echo "ok: every worker's calls are in its trace for _exit, _Exit and quick_exit"
