#!/bin/sh
# run-tests: timeout=900
# The simulated driver refuses a foreign (real) CUDA library cleanly. With the redirection off
# (SIMCUDA_REDIRECT=0) the PyTorch wheel's own cudart and CUPTI load next to the simulated
# driver; under dlhook, the driver runs dlhook's InitializeInjection, which calls cuptiSubscribe
# in the wheel's real CUPTI. That CUPTI asks the driver for its private tables
# (cuGetExportTable); a plain refusal made it recurse until the stack overflowed (SIGSEGV where
# the bare run exits 0). Now: exit 0 as bare, torch.cuda.is_available() False (the real cudart
# fails with an error code), one "simcuda: ... refused" line, a complete trace.
. "$ROOT/tests/torch/common.sh"
PROG='import torch; print(torch.cuda.is_available())'
SIMCUDA_REDIRECT=0 "$SIMRUN" "$PY" -c "$PROG" >bare.out 2>bare.err
brc=$?
SIMCUDA_REDIRECT=0 DLHOOK_OUTPUT="$T/rec/" DLHOOK_STACKS=none LD_PRELOAD="$DLHOOK_PRELOAD" \
  "$SIMRUN" "$PY" -c "$PROG" >rec.out 2>rec.err
rrc=$?
[ "$brc" -eq 0 ] || fail "bare: exit $brc: $(tail -n 5 bare.err)"
[ "$rrc" -eq 0 ] || fail "under dlhook: exit $rrc (bare 0): $(tail -n 5 rec.err)"
grep -qx False bare.out || fail "bare: $(cat bare.out)"
cmp -s bare.out rec.out || fail "output differs: $(cat rec.out)"
grep -q "^simcuda: .*libcu.*is not the simulator's: its private driver interfaces are refused" rec.err ||
  fail "no refusal line: $(tail -n 5 rec.err)"
[ "$(grep -c "^simcuda: .*refused" rec.err)" -eq 1 ] || fail "more than one refusal line"
ls rec/*.dlh >/dev/null 2>&1 || fail "no trace"
"$DLHOOK_BIN" stats --json rec/*.dlh >s.json || fail "stats"
pyassert s.json 'j["dropped"] == 0 and j["calls"] > 0'
echo "t_torch_foreign_cupti: OK"
