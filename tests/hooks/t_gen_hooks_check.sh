#!/bin/sh
# The committed hooks/gen/*.c are what scripts/gen_hooks.py generates from $CUDA_HOME now
# (regenerated into memory and diffed). Skips (77) without Python 3 or the CUDA headers.
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found"; exit 77; }
[ -f "$CUDA_HOME/include/cuda_runtime_api.h" ] || { echo "skip: CUDA headers not found in $CUDA_HOME"; exit 77; }
exec python3 "$ROOT/scripts/gen_hooks.py" --check --cuda-home "$CUDA_HOME"
