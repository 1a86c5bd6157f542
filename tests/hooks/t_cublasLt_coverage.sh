#!/bin/sh
# Coverage of the cublasLt wrappers: every function libcublasLt.so.13 exports that has a prototype is wrapped.
exec sh "$ROOT/tests/hooks/coverage.sh" cublasLt libcublasLt.so.13
