#!/bin/sh
# Coverage of the cudnn wrappers: every function libcudnn.so.9 exports that has a prototype is wrapped.
exec sh "$ROOT/tests/hooks/coverage.sh" cudnn libcudnn.so.9
