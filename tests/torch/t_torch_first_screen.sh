#!/bin/sh
# run-tests: timeout=1200
# The first screen of `dlhook stats` on PyTorch traces (issue 47, docs/stats.md): on the
# reference workload (tests/torch/tiny_gpt2.py) and on two third-party models from PyPI built
# from their configs (Hugging Face transformers' GPT-2, timm's ViT: tests/torch/thirdparty.py;
# skipped one by one when the package is not in the venv), recorded with the default stacks,
# first_screen.py checks that the first 40 lines hold the step line, the findings' line and the
# top operators, that the first screen fits 100 columns, that >= 90 % of the kernel table's
# displayed names are distinct and every displayed module path.
. "$ROOT/tests/torch/common.sh"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
check() { # NAME: stats of NAME.rec/ checked
  "$DLHOOK_BIN" stats "$1".rec/*.dlh >"$1.txt" || fail "$1: stats"
  "$PY" "$ROOT/tests/torch/first_screen.py" "$1.txt" --torch >"$1.check" 2>&1 ||
    fail "$1: $(cat "$1.check"); first lines: $(head -n 40 "$1.txt")"
  sed "s/^/$1: /" "$1.check"
}
"$DLHOOK_BIN" record --sim -o ref.rec -- "$PY" "$ROOT/tests/torch/tiny_gpt2.py" --steps 5 \
  >ref.out 2>ref.err || fail "tiny_gpt2 under dlhook: $(tail -n 5 ref.err)"
check ref
done_models=""
for m in gpt2 vit; do
  "$PY" "$ROOT/tests/torch/thirdparty.py" "$m" --steps 0 >/dev/null 2>"$m.probe"
  rc=$?
  if [ "$rc" -eq 77 ]; then echo "$m: skipped ($(cat "$m.probe"))"; continue; fi
  "$DLHOOK_BIN" record --sim -o "$m.rec" -- "$PY" "$ROOT/tests/torch/thirdparty.py" "$m" --steps 4 \
    >"$m.out" 2>"$m.err" || fail "$m under dlhook: $(tail -n 5 "$m.err")"
  check "$m"
  done_models="$done_models $m"
done
echo "t_torch_first_screen: OK (reference workload;${done_models:- no third-party model installed})"
