# DLHOOK_CUPTI is read by the rules of every boolean setting (preload/dlh_settings.def): `off`,
# `false`, `no` and `0` turn CUPTI off (no GPU records, no warning; API calls still recorded
# through the wrappers), `on`/`1` keep it on, and a malformed value keeps the default (on) with
# one warning. Before the one table, only "0" turned it off and `off` left CUPTI on silently.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcupti.so.13"; need "$BUILD/tests/progs/nvcc_shared"; need "$DLHOOK_LIB"
prog=$BUILD/tests/progs/nvcc_shared
run() { # run NAME VALUE: records prog with DLHOOK_CUPTI=VALUE; prints the kernels recorded
  rm -rf "$T/tr-$1"
  # (the program itself, not through tests/simcuda/run: one process, so one warning at most)
  LD_LIBRARY_PATH=$BUILD/simcuda DLHOOK_CUPTI=$2 traced "$T/tr-$1" "$prog" >"$1.out" 2>"$1.err" ||
    { cat "$1.err"; fail "$1: exit $?"; }
  tr=$(one_trace "$T/tr-$1")
  "$DLHOOK_BIN" stats --json "$tr" >"$1.json" || fail "$1: stats failed"
  expect_calls "$1.json" __cudaLaunchKernel=4
  python3 -c 'import json,sys; print(sum(k["count"] for k in json.load(open(sys.argv[1]))["kernels"]))' "$1.json"
}
for v in 0 off OFF false no; do
  k=$(run "off-$v" "$v") || exit 1
  [ "$k" = 0 ] || fail "DLHOOK_CUPTI=$v: CUPTI still on ($k kernels recorded)"
  ! grep -q 'dlhook: warning' "off-$v.err" || fail "DLHOOK_CUPTI=$v: warned: $(cat "off-$v.err")"
done
for v in 1 on yes; do
  k=$(run "on-$v" "$v") || exit 1
  [ "$k" -gt 0 ] || fail "DLHOOK_CUPTI=$v: no kernel recorded"
  ! grep -q 'dlhook: warning' "on-$v.err" || fail "DLHOOK_CUPTI=$v: warned: $(cat "on-$v.err")"
done
k=$(run bad maybe) || exit 1
[ "$k" -gt 0 ] || fail "DLHOOK_CUPTI=maybe: the default (on) was not kept"
n=$(grep -c "dlhook: warning: ignoring DLHOOK_CUPTI='maybe'" bad.err)
[ "$n" = 1 ] || fail "DLHOOK_CUPTI=maybe: expected one warning, got $n: $(cat bad.err)"
echo ok
