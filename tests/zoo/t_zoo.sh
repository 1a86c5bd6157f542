#!/bin/sh
# run-tests: timeout=1800
# run-tests: serial
# dlhook advise judged on the model zoo (tests/zoo/zoo.py: GPT-2 and BERT from Hugging Face
# transformers, a timm ViT, torchvision's ResNet-18, a DataLoader pipeline, an MLP under
# torch.compile, GPT-2 under DDP with 2 ranks), each tuned and with its planted causes, by
# tests/zoo/judge.py: recall (the planted class ranked first or second at its PLANT line)
# >= 95 %, precision (no unjustified finding on a tuned program) >= 95 %, no finding at a set-up
# line of any program, and the estimated cost within 2x of the measured saving (planted minus
# tuned step time) in >= 80 % of the planted cases. Serial: the savings are measured times.
# Skips without the zoo package set (scripts/py-requirements/zoo.txt: make venv).
. "$ROOT/tests/torch/common.sh"
"$PY" -c 'import transformers, timm, torchvision' >/dev/null 2>&1 ||
  skip "no transformers/timm/torchvision in $BUILD/venv: PY_SETS=zoo scripts/bootstrap-py"
[ -x "$BUILD/venv/bin/torchrun" ] || skip "no $BUILD/venv/bin/torchrun"
BUILD="$BUILD" DLHOOK_BIN="$DLHOOK_BIN" python3 "$ROOT/tests/zoo/judge.py" -j 2 --steps 8 --warmup 3 \
  --out work --json judge.json >judge.txt 2>judge.err
rc=$?
cat judge.txt
[ "$rc" -eq 0 ] || fail "judge: exit $rc: $(tail -n 5 judge.err)"
pyassert judge.json 'j["totals"]["errors"] == 0'
pyassert judge.json 'j["totals"]["setup_findings"] == 0'
pyassert judge.json 'j["totals"]["recall"] >= 0.95'
pyassert judge.json 'j["totals"]["precision"] >= 0.95'
pyassert judge.json 'j["totals"]["costs_within_2x"] >= 0.80'
echo ok
