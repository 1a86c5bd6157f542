# Hazard: libdlhook.so preloaded twice under two paths (a renamed copy of the file; LD_PRELOAD
# naming two builds): the loader keeps both, each interposes every call, and two traces counted
# every call twice. The first copy loaded records and says in one warning that the later one
# passes every call through (at its first recorded call: processes that make none, like the
# shell of tests/simcuda/run, say nothing). Both orders, a program linked with the runtime and
# one that opens it with dlopen (its handle lookups meet both copies' dlsym): the output and
# exit status are the untraced run's, one trace with every call once, one warning. The same
# file named twice (another spelling of its path) is one object: no warning.
. "$ROOT/tests/lib.sh"
H=$BUILD/tests/host
need "$H/chainprog-linked"; need "$H/chainprog-dlopen"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
N=100
export DLHOOK_STACKS=none
unset DLHOOK_QUIET
COPY=$T/copy/libdlhook-copy.so
mkdir -p "$T/copy" && cp "$DLHOOK_LIB" "$COPY" || fail "cannot copy $DLHOOK_LIB"
SAME="$(dirname "$DLHOOK_LIB")/./$(basename "$DLHOOK_LIB")"
"$SIMRUN" "$H/chainprog-linked" $N >plain.out 2>plain.err || fail "untraced run failed: $(cat plain.err)"
bad=0
run() { # label warnings LD_PRELOAD
  c=$1 warnings=$2
  for prog in linked dlopen; do
    rm -rf "$T/$c-$prog"
    DLHOOK_OUTPUT="$T/$c-$prog/" LD_PRELOAD="${ASAN_LIB:+$ASAN_LIB }$3" \
      "$SIMRUN" "$H/chainprog-$prog" $N >$c-$prog.out 2>$c-$prog.err
    rc=$?
    why=
    [ $rc = 0 ] || why="exit $rc"
    cmp -s plain.out $c-$prog.out || why="$why; output '$(cat $c-$prog.out)'"
    w=$(grep -c "loaded twice" $c-$prog.err)
    [ "$w" = "$warnings" ] || why="$why; $w warnings, want $warnings: $(cat $c-$prog.err)"
    n=$(ls "$T/$c-$prog"/*.dlh 2>/dev/null | wc -l)
    if [ "$n" != 1 ]; then
      why="$why; $n traces"
    elif "$DLHOOK_BIN" stats --json "$T/$c-$prog"/*.dlh >$c-$prog.json 2>/dev/null; then
      got=$(python3 -c 'import json, sys
c = {a["name"]: a["calls"] for a in json.load(open(sys.argv[1]))["api"]}
print(c.get("cudaMalloc", 0), c.get("cudaFree", 0))' $c-$prog.json)
      [ "$got" = "$N $N" ] || why="$why; trace has cudaMalloc, cudaFree: $got"
    else
      why="$why; trace unreadable"
    fi
    if [ -n "$why" ]; then
      echo "$c-$prog: ${why#; }"
      bad=1
    else
      echo "$c-$prog: one trace, $N calls each, $warnings warning(s)"
    fi
  done
}
run original-first 1 "$DLHOOK_LIB $COPY"
run copy-first 1 "$COPY $DLHOOK_LIB"
run same-file 0 "$DLHOOK_LIB $SAME"
# the warning names the copy that stands aside
grep -qF "loaded later ($DLHOOK_LIB)" copy-first-linked.err ||
  fail "the warning does not name the copy that stands aside: $(cat copy-first-linked.err)"
[ $bad = 0 ] || fail "a second copy of libdlhook.so did not stand aside (above)"
echo ok
