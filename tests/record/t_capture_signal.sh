# run-tests: serial
# On-demand capture: `dlhook record --capture-range=signal` starts with recording off;
# `dlhook ctl PID start` / `stop` open and close the window from outside. Phase 1 and 3 of the
# program happen outside, phase 2 (3 cudaMemset, kernel k_in, 1 cudaDeviceSynchronize) inside.
# With DLHOOK_SIGNAL alone, recording starts open and the signal (plain kill: toggle) or
# `dlhook ctl` stop and restart it. `dlhook ctl` refuses a process that was not started for
# on-demand control.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/record/lib_capture.sh"
"$DLHOOK_BIN" record --sim -o "$T/tr" --capture-range=signal -- "$CAP" wait 2>rec.txt &
rec=$!
for i in $(seq 600); do [ -e phase1 ] && break; sleep 0.05; done
[ -e phase1 ] || { cat rec.txt; fail "program did not start"; }
pid=$(sed -n 's/^dlhook: recording process \([0-9]*\);.*/\1/p' rec.txt)
[ -n "$pid" ] || { cat rec.txt; fail "record did not print the pid"; }
"$DLHOOK_BIN" ctl "$pid" start || fail "ctl start failed"
sleep 0.3
touch go1
for i in $(seq 600); do [ -e phase2 ] && break; sleep 0.05; done
"$DLHOOK_BIN" ctl "$pid" stop || fail "ctl stop failed"
sleep 0.3
touch go2
wait $rec || { cat rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
expect_window "$tr" cudaMemset=3 cudaDeviceSynchronize=1 cudaStreamQuery=0 cudaMalloc=0 \
  kernel:k_in=1 memset=3
# DLHOOK_SIGNAL without a range: recording starts open; a plain kill toggles it (closes),
# `dlhook ctl PID start` opens it again: phases 1 and 3 are kept, phase 2 is not
rm -f phase1 phase2 go1 go2
DLHOOK_SIGNAL=USR1 DLHOOK_OUTPUT="$T/tr2/" LD_PRELOAD="$DLHOOK_LIB" "$SIMRUN" "$CAP" wait 2>err2.txt &
pid=$!
for i in $(seq 600); do [ -e phase1 ] && break; sleep 0.05; done
kill -USR1 $pid
sleep 0.3
touch go1
for i in $(seq 600); do [ -e phase2 ] && break; sleep 0.05; done
"$DLHOOK_BIN" ctl "$pid" start || fail "ctl start (DLHOOK_SIGNAL=USR1) failed"
sleep 0.3
touch go2
wait $pid || { cat err2.txt; fail "program failed"; }
tr=$(one_trace "$T/tr2")
expect_window "$tr" cudaDeviceSynchronize=5 cudaMemset=0 cudaStreamQuery=5 kernel:k_in=0 memset=0
# a process without on-demand control is never sent the signal
sleep 5 & other=$!
if "$DLHOOK_BIN" ctl $other start 2>ctl.txt; then fail "ctl signalled a process without dlhook"; fi
grep -q "not started with" ctl.txt || fail "ctl message: $(cat ctl.txt)"
kill -0 $other || fail "the other process died"
kill $other
echo ok
