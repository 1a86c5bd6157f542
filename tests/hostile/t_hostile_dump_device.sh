# dlhook dump prints each GPU record's own device (GpuBatch.devices), not the batch's default
# field: kernels on devices 1..3 of one batch are shown on devices 1..3.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
"$HOSTILE" devices d.dlh || fail "hostile devices"
"$DLHOOK_BIN" dump --type kernel d.dlh >k.jsonl || fail "dump"
python3 - <<'PY' || fail "devices: $(cat k.jsonl)"
import json
devs = [json.loads(l)["device"] for l in open("k.jsonl")]
assert devs == [0] * 5 + [0, 1, 2, 3] + [0] * 5, devs
PY
echo ok
