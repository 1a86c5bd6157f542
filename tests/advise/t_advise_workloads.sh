# dlhook advise on the example (examples/train.cu) and a PyTorch workload with NVTX steps: it
# runs without error, and the set-up before the first step (module.to(device) copies, lines
# before 12 of tests/torch/cnn_nvtx_steps.py) is no finding: only its loop may be named (it does
# synchronize there: GradScaler.step and torch.cuda.synchronize()). dlhook-overhead aside.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/simcuda/libcudart.so.13"
need "$BUILD/examples/train"
"$DLHOOK_BIN" record --sim -o ex -- "$BUILD/examples/train" >/dev/null 2>err || fail "record train: $(cat err)"
"$DLHOOK_BIN" advise --json "$(one_trace ex)" >ex.json || fail "advise train"
pyassert ex.json 'isinstance(j["findings"], list) and all(f["place"] and f["fix"] for f in j["findings"])'
PY="$BUILD/venv/bin/python"
[ -x "$PY" ] || { echo ok; exit 0; }
"$PY" -c 'import torch' >/dev/null 2>&1 || { echo ok; exit 0; }
PYTHONWARNINGS=ignore "$DLHOOK_BIN" record --sim -o tc -- "$PY" "$ROOT/tests/torch/cnn_nvtx_steps.py" \
  >/dev/null 2>err || fail "record cnn: $(cat err)"
"$DLHOOK_BIN" advise --json "$(one_trace tc)" >tc.json || fail "advise cnn"
# (dlhook-overhead, dlhook's own cost, is placed on dlhook's writer: on a loaded machine the
# workload's threads may wait for it, and saying so is right)
pyassert tc.json 'all(f["class"] == "dlhook-overhead" or (f["place"].startswith("'"$ROOT"'/tests/torch/cnn_nvtx_steps.py:") and int(f["place"].split(":")[1]) >= 12) for f in j["findings"])'
"$DLHOOK_BIN" advise "$(one_trace tc)" >tc.txt || fail "advise cnn text"
echo ok
