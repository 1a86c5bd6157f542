#!/bin/sh
# Coverage of the cudart wrappers: every function libcudart.so.13 exports that has a prototype is wrapped.
exec sh "$ROOT/tests/hooks/coverage.sh" cudart libcudart.so.13
