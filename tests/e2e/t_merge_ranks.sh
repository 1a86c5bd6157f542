# dlhook merge: two ranks started torchrun-style as separate commands, the second with a clock
# 5 s off (as on another host: DLHOOK_REALTIME_SKEW_NS), go onto one timeline: the offsets come
# from the anchors and are refined on the collectives, so in the merged Kineto export the n-th
# all-reduce ends at the same moment on both ranks; the merged Perfetto file holds both.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
export SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 WORLD_SIZE=2 TRAIN_NCCL_ID_FILE=$T/ncclid
RANK=0 LOCAL_RANK=0 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" --steps 6 >r0.out 2>r0.err & p0=$!
RANK=1 LOCAL_RANK=1 DLHOOK_REALTIME_SKEW_NS=5000000000 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" \
  --steps 6 >r1.out 2>r1.err || { cat r1.err; fail "rank 1 failed"; }
wait $p0 || { cat r0.err; fail "rank 0 failed"; }
ls "$T"/tr/*-r0-*.dlh "$T"/tr/*-r1-*.dlh >/dev/null || fail "rank traces missing: $(ls "$T/tr")"
"$DLHOOK_BIN" merge --format kineto -o "$T/k" "$T"/tr/*.dlh 2>merge.err || { cat merge.err; fail "merge failed"; }
cat merge.err
python3 - "$T/k" <<'PY' || fail "merged ranks are not aligned"
import gzip, json, os, sys
ends = {}
for f in os.listdir(sys.argv[1]):
    j = json.load(gzip.open(os.path.join(sys.argv[1], f)))
    rank = j.get("distributedInfo", {}).get("rank")
    k = sorted(e["ts"] + e["dur"] for e in j["traceEvents"]
               if e.get("cat") == "kernel" and "nccl" in e.get("name", ""))
    if rank is not None and k: ends[rank] = k
assert sorted(ends) == [0, 1], ends.keys()
n = min(len(ends[0]), len(ends[1]))
diff = [abs(a - b) for a, b in zip(ends[0][:n], ends[1][:n])]
print("collectives:", n, "max end difference (us):", max(diff))
assert n >= 6 and max(diff) < 1000, diff   # microseconds; the skew was 5 s
PY
"$DLHOOK_BIN" merge -o "$T/all.pftrace" "$T"/tr/*.dlh 2>/dev/null || fail "merge to perfetto failed"
[ -s "$T/all.pftrace" ] || fail "empty perfetto output"
echo ok
