#!/bin/sh
# Coverage of the nccl wrappers: every function libnccl.so.2 exports that has a prototype is wrapped.
exec sh "$ROOT/tests/hooks/coverage.sh" nccl libnccl.so.2
