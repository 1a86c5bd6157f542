# Hazard: a trace cut short (disk full, SIGKILL during a write) loses its whole last frame. A short
# program's trace used to be a single frame of ~150 KB, and cut at 99 % of its length nothing was
# readable. Frames are bounded by size as well as by time: every frame of a 30,000-call trace is
# at most 64 KiB, and the trace cut at 99 % still reads back most of its calls.
. "$ROOT/tests/lib.sh"
V=$BUILD/tests/reliability/victim
need "$V"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=native
"$V" out 30000 >plain.out 2>/dev/null; want=$?
traced "$T/tr" "$V" out 30000 >traced.out 2>traced.err; rc=$?
[ "$rc" = "$want" ] || fail "exit $rc, untraced $want"
cmp -s plain.out traced.out || fail "output differs"
tr=$(one_trace "$T/tr")
python3 "$ROOT/tests/host/frames.py" "$tr" >frames.txt || fail "the trace does not parse into frames"
max=$(sort -n frames.txt | tail -n 1)
echo "$(wc -l <frames.txt) frames, largest $max bytes, file $(stat -c %s "$tr") bytes"
[ "$max" -le 65536 ] || fail "a frame of $max bytes (more than 64 KiB)"
size=$(stat -c %s "$tr")
head -c $((size * 99 / 100)) "$tr" >cut.dlh
"$DLHOOK_BIN" stats --json cut.dlh >cut.json 2>cut.err
[ -s cut.json ] || fail "nothing read from the cut trace: $(cat cut.err)"
python3 - <<'PY' || fail "the cut trace lost too much"
import json
j = json.load(open("cut.json"))
n = {a["name"]: a["calls"] for a in j["api"]}.get("cudaSetDevice", 0)
print("calls read from the trace cut at 99 %:", n, "of 30000")
assert n >= 15000, n
PY
