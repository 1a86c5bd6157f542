# dlhook record: environment given to the command, exit status, signals, trace listing.
# Uses a stand-in libdlhook.so (an empty shared library) so it runs whatever preload/ is at.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
need "$BUILD/tests/bin/mktrace"
command -v cc >/dev/null 2>&1 || skip "no C compiler"
mkdir -p bin inst/bin inst/lib
echo 'int dlhook_test_stub;' >stub.c
cc -shared -fPIC -o bin/libdlhook.so stub.c || fail "cc"
cp bin/libdlhook.so inst/lib/libdlhook.so
cp "$DLHOOK_BIN" bin/dlhook
cp "$DLHOOK_BIN" inst/bin/dlhook
D=$T/bin/dlhook
# sanitizer builds: the stub comes first in LD_PRELOAD, which ASan would refuse
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"

# environment: LD_PRELOAD (prepended), DLHOOK_OUTPUT (created dir, trailing slash)
LD_PRELOAD= "$D" record -o out/sub -- sh -c 'echo "$LD_PRELOAD|$DLHOOK_OUTPUT"' >env.txt 2>err \
  || fail "record: exit $?: $(cat err)"
grep -qx "$T/bin/libdlhook.so|out/sub/" env.txt || fail "env: $(cat env.txt)"
[ -d out/sub ] || fail "output dir not created"
grep -q "no trace was written" err || fail "no-trace message: $(cat err)"
LD_PRELOAD=/x/other.so "$D" record -- sh -c 'echo "$LD_PRELOAD|$DLHOOK_OUTPUT"' >env.txt 2>/dev/null
grep -qx "$T/bin/libdlhook.so:/x/other.so|./" env.txt || fail "env with LD_PRELOAD: $(cat env.txt)"
# installed layout: ../lib/libdlhook.so
"$T/inst/bin/dlhook" record -o o2 -- sh -c 'echo "$LD_PRELOAD"' >env.txt 2>/dev/null
grep -qx "$T/inst/lib/libdlhook.so" env.txt || fail "installed layout: $(cat env.txt)"
# --sim prepends <dir of dlhook>/simcuda to LD_LIBRARY_PATH
LD_LIBRARY_PATH=/old "$D" record --sim -o o3 -- sh -c 'echo "$LD_LIBRARY_PATH"' >env.txt 2>/dev/null
grep -qx "$T/bin/simcuda:/old" env.txt || fail "--sim: $(cat env.txt)"
# no libdlhook.so anywhere: clear error
cp "$DLHOOK_BIN" ./dlhook-alone
./dlhook-alone record -- true 2>err; [ $? -eq 1 ] || fail "missing lib: exit"
grep -q "cannot find libdlhook.so" err || fail "missing lib: $(cat err)"

# exit status
"$D" record -o o4 -- sh -c 'exit 3' 2>/dev/null; [ $? -eq 3 ] || fail "exit status not passed on"
"$D" record -o o4 -- sh -c 'kill -KILL $$' 2>/dev/null; [ $? -eq 137 ] || fail "killed: not 128+9"
"$D" record -o o4 -- /nonexistent/prog 2>err; [ $? -eq 127 ] || fail "missing program: exit"
grep -q "cannot run /nonexistent/prog" err || fail "missing program: $(cat err)"

# SIGTERM to dlhook reaches the command
"$D" record -o o5 -- sleep 30 2>/dev/null &
pid=$!
sleep 0.5
kill -TERM "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, expected 143"

# traces written during the run are listed with a summary; older files are not
mkdir -p tr && "$BUILD/tests/bin/mktrace" tr/old.dlh
touch -d '2000-01-01' tr/old.dlh
MK=$BUILD/tests/bin/mktrace
"$D" record -o tr -- sh -c "'$MK' \"\$DLHOOK_OUTPUT/new-1.dlh\" && '$MK' \"\$DLHOOK_OUTPUT/new-2.dlh\" --no-trailer && echo notatrace >\"\$DLHOOK_OUTPUT/x.txt\"" 2>err \
  || fail "record writing traces: $(cat err)"
grep -q "new-1.dlh: 121 calls, 130 GPU records, 5 dropped$" err || fail "listing: $(cat err)"
grep -q "new-2.dlh: 121 calls, 130 GPU records, 4 dropped, no trailer" err || fail "listing 2: $(cat err)"
grep -q "old.dlh" err && fail "old trace listed: $(cat err)"
grep -q "x.txt" err && fail "non-trace listed: $(cat err)"
echo ok
