# Hash flooding: 46,000 function and string ids chosen to share one slot of the command's old
# fixed hash (id << 16), each called once. It took `dlhook stats` from 0.25 s to 75 s; the id
# maps are keyed by a per-process random seed and name tables are indexed, so every subcommand
# stays within the CPU bound and gives the full, correct result.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
"$HOSTILE" flood flood.dlh || fail "hostile flood"
every_subcommand flood.dlh 0
python3 - <<'PY' || fail "stats --json"
import json
j = json.load(open("stats-json.out"))
names = {a["name"]: a["calls"] for a in j["api"]}
assert len(names) == 46001, len(names)
assert names["fn_777"] == 1 and names["cudaLaunchKernel"] == 10
ks = {k["name"] for k in j["kernels"]}
assert "kernel_46000" in ks and len(ks) == 46001, len(ks)
PY
echo ok
