#!/bin/sh
# Coverage of the cublas wrappers: every function libcublas.so.13 exports that has a prototype is wrapped.
exec sh "$ROOT/tests/hooks/coverage.sh" cublas libcublas.so.13
