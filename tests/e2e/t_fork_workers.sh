# A program forks 4 workers while another thread keeps calling CUDA: 5 complete traces (one per
# process, pid in the name) with exact counts, 100 times in a row, never a hang.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/forker
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
i=0
while [ $i -lt ${FORK_ROUNDS:-100} ]; do
  i=$((i + 1))
  rm -rf "$T/tr"
  DLHOOK_QUIET=1 traced "$T/tr" "$prog" 4 500 >out.txt || fail "round $i: program failed"
  bg=$(sed -n 's/^background //p' out.txt)
  n=$(ls "$T"/tr/*.dlh | wc -l)
  [ "$n" = 5 ] || fail "round $i: $n traces, expected 5"
  "$DLHOOK_BIN" stats --json "$T"/tr/*.dlh >stats.json || fail "round $i: a trace is damaged"
  python3 - "$bg" <<'PY' || fail "round $i: counts differ"
import json, sys
j = json.load(open("stats.json"))
calls = {a["name"]: a["calls"] for a in j["api"]}
want = {"cudaGetDevice": int(sys.argv[1]), "cudaGetDeviceCount": 4 * 500, "cudaRuntimeGetVersion": 10}
assert want["cudaGetDevice"] > 0, "the background thread made no call"
assert calls == want and j["dropped"] == 0 and j["traces"] == 5, (calls, want, j["dropped"])
PY
done
echo "ok: $i rounds"
