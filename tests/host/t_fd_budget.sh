# Hazard: a program that uses file descriptors up to its soft RLIMIT_NOFILE (64 here). Every fd
# of dlhook's counts against that limit wherever it is numbered (numbers above the limit do not
# exist): the program could open 3 fds fewer under dlhook once its first calls were made (the
# trace, the two ends of libunwind's memory-validation pipe), and one more per module once
# libdw had read the module's symbols. dlhook takes only what it needs: the trace's fd, and one
# fd that serves as both ends of libunwind's pipe (a datagram socket connected to itself); libdw
# maps the module files and holds no fd for them. The program loses at most 2 fds, and its
# stacks are complete and named. Looped 20 times (the symbolizer runs alongside the program).
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/limitsprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
(ulimit -n 64) 2>/dev/null || skip "cannot lower RLIMIT_NOFILE"
(ulimit -n 64; exec "$P" nofile 100) >plain.out 2>plain.err || fail "untraced run failed: $(cat plain.err)"
bare=$(sed -n 's/^opened \([0-9]*\) files.*/\1/p' plain.out)
[ -n "$bare" ] || fail "no count: $(cat plain.out)"
i=0
while [ $i -lt 20 ]; do
  i=$((i + 1))
  rm -rf "$T/tr"
  (ulimit -n 64; DLHOOK_OUTPUT="$T/tr/" LD_PRELOAD="$DLHOOK_PRELOAD" exec "$P" nofile 100) >traced.out 2>traced.err ||
    fail "run $i: traced run failed: $(cat traced.err)"
  got=$(sed -n 's/^opened \([0-9]*\) files.*/\1/p' traced.out)
  [ -n "$got" ] || fail "run $i: no count: $(cat traced.out)"
  [ "$got" -ge $((bare - 2)) ] ||
    fail "run $i: the program opens $got files under dlhook, $bare untraced: dlhook holds $((bare - got)) of its fds (at most 2: the trace, libunwind's validation)"
  tr=$(one_trace "$T/tr")
  "$DLHOOK_BIN" export -f folded --weight cpu -o stacks.folded "$tr" || fail "run $i: export failed"
  grep -q ';main;calls;cudaGetDeviceCount' stacks.folded || fail "run $i: stacks incomplete: $(cat stacks.folded)"
done
echo "ok: RLIMIT_NOFILE=64: the program opens $bare files untraced, $got under dlhook (20 runs); stacks: $(head -n 1 stacks.folded)"
