# run-tests: timeout=1500
# The long EINTR check (tests/sample/eintr-long): 5 minutes at the default rate, 5 at 1 kHz.
# Only with DLHOOK_LONG_TESTS=1 (it takes 10 minutes of both cores); skipped otherwise.
. "$ROOT/tests/lib.sh"
[ "${DLHOOK_LONG_TESTS:-0}" = 1 ] || skip "long test: DLHOOK_LONG_TESTS=1 runs it"
exec sh "$ROOT/tests/sample/eintr-long" "${EINTR_LONG_SECS:-300}"
