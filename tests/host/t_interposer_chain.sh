# Hazard: the program preloads an interposer of its own on cudaMalloc (GPU-sharing and
# checkpointing shims do) that finds the "real" function either with dlsym() on libcudart's
# handle or with RTLD_NEXT. dlhook also interposes cudaMalloc, and also answers handle lookups
# (preload/dlsym.c): a careless answer makes the two call each other without end, or leaves one
# of them out. For both shims, both preload orders (dlhook first, shim first), a program linked
# with the runtime, one that opens it with dlopen (RTLD_LOCAL) and looks the functions up on
# the handle, and one linked whose first call goes through a handle lookup, with CUPTI and
# without: the program's output and exit status are those of the untraced run, the shim sees
# exactly the calls it sees untraced with the same shim (a handle lookup passes by it: none of
# the dlopen program's, all but the first of the mixed one's), never re-entered, and the trace
# has every call once.
. "$ROOT/tests/lib.sh"
H=$BUILD/tests/host
for f in chainprog-linked chainprog-dlopen chainprog-mixed libchainshim-handle.so libchainshim-next.so; do
  need "$H/$f"
done
need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
N=100
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
"$SIMRUN" "$H/chainprog-linked" $N >plain.out 2>plain.err || fail "untraced run failed: $(cat plain.err)"
[ "$(cat plain.out)" = "calls $N ok $N" ] || fail "untraced run: $(cat plain.out)"
bad=0
for shim in handle next; do
  S=$H/libchainshim-$shim.so
  for prog in linked dlopen mixed; do
    LD_PRELOAD="$S" "$SIMRUN" "$H/chainprog-$prog" $N >untraced.out 2>untraced.err ||
      fail "untraced run of chainprog-$prog with the $shim shim failed: $(cat untraced.err)"
    seen=$(sed -n 's/^chainshim: \([0-9]*\) calls$/\1/p' untraced.err)
    [ -n "$seen" ] || fail "untraced run of chainprog-$prog with the $shim shim: no shim count"
    for order in dlhook-first shim-first; do
      for cupti in 1 0; do
        c=$shim-$prog-$order-cupti$cupti
        if [ $order = dlhook-first ]; then P="$DLHOOK_PRELOAD $S"; else P="$S $DLHOOK_PRELOAD"; fi
        rm -rf "$T/$c"
        DLHOOK_CUPTI=$cupti DLHOOK_OUTPUT="$T/$c/" LD_PRELOAD="$P" \
          "$SIMRUN" "$H/chainprog-$prog" $N >$c.out 2>$c.err
        rc=$?
        why=
        [ $rc = 0 ] || why="exit $rc"
        cmp -s plain.out $c.out || why="$why; output '$(cat $c.out)'"
        ! grep -q "chainshim: recursion" $c.err || why="$why; the shim was re-entered"
        grep -q "^chainshim: $seen calls$" $c.err ||
          why="$why; $(grep '^chainshim: [0-9]' $c.err || echo 'no shim count') (untraced: $seen)"
        tr=$(ls "$T/$c"/*.dlh 2>/dev/null | head -n 1)
        if [ -z "$tr" ]; then
          why="$why; no trace"
        elif "$DLHOOK_BIN" stats --json "$tr" >$c.json 2>$c.stats.err; then
          n=$(python3 -c 'import json, sys
print({a["name"]: a["calls"] for a in json.load(open(sys.argv[1]))["api"]}.get("cudaMalloc", 0))' $c.json)
          [ "$n" = $N ] || why="$why; trace has $n cudaMalloc"
        else
          why="$why; trace unreadable"
        fi
        if [ -n "$why" ]; then
          echo "$c: ${why#; }"
          bad=1
        else
          echo "$c: shim $seen as untraced, trace $N"
        fi
      done
    done
  done
done
[ $bad = 0 ] || fail "the interposer chain lost, doubled or looped calls (above)"
echo ok
