# tests/tables/common.sh — what the tests of the Parquet tables share (sourced after lib.sh):
# the venv's Python (pyarrow, duckdb, pyspark: scripts/py-requirements/tables.txt) runs the
# Python side of dlhook export --format parquet, sql and analyze.
VPY=$BUILD/venv/bin/python
need_tables() {
  [ -x "$VPY" ] || skip "no $VPY (make venv: scripts/bootstrap-py)"
  "$VPY" -c "import pyarrow, duckdb" 2>/dev/null ||
    skip "pyarrow or duckdb missing in $BUILD/venv (make venv: scripts/bootstrap-py tables)"
  export DLHOOK_PYTHON=$VPY PYTHONPATH=$ROOT/command/python
}
# Records examples/train with 4 ranks, rank 2 late by 100 ms per step, into $T/tr (as
# tests/e2e/t_sim_straggler.sh does).
record_ranks() {
  need "$BUILD/simcuda/libnccl.so.2"; need "$BUILD/examples/train"; need "$DLHOOK_LIB"
  SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 traced "$T/tr" "$SIMRUN" "$BUILD/examples/train" \
    --ranks 4 --slow-rank 2 --slow-ms 100 --steps ${1:-12} >train.out 2>train.err ||
    { cat train.err; fail "train failed"; }
  n=$(ls "$T"/tr/*-r[0-9]-*.dlh | wc -l)
  [ "$n" = 4 ] || fail "expected 4 rank traces, found $n: $(ls "$T/tr")"
}
