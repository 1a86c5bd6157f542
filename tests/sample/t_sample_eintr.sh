# Host sampling must not make system calls fail with EINTR (or sleeps end early): the program
# tests/sample/eintr.c runs 19 kinds of blocking call with 1 ms timeouts in their own threads
# (poll, select, pselect, ppoll, epoll_wait, epoll_pwait, nanosleep, clock_nanosleep relative
# and absolute, sigtimedwait, semtimedop, recv/accept/read with SO_RCVTIMEO, read on a pipe,
# futex wait, pthread_cond_timedwait, sem_timedwait, usleep), each after a CPU burst of 0 to
# 3 ms, next to two threads that only burn CPU. signal(7): most of these return EINTR when a
# handler runs, SA_RESTART or not; the sampler relies on CPU-time timer signals arriving only
# on the way back to user mode and never while a thread waits.
# Runs: bare for 1 s with a thread signalling all the others every 2 ms (the check of the
# check: EINTR must be seen, exit 3); bare for 3 s with the program's own per-thread CPU-time
# timers at 1 kHz, what the sampler arms (the control: EINTR there would be the kernel's, not
# dlhook's; a note only); then bare and under dlhook at 1 kHz, with a CUDA call first, and
# with DLHOOK_SAMPLE=always and no CUDA call at all.
# EINTR_SECS (default 6) per run; tests/sample/eintr-long runs it for minutes.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/sample/lib.sh"
P=$BUILD/tests/sample/eintr
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
S=${EINTR_SECS:-6}
bare "$P" 1 nocuda kicker >kicker.out 2>kicker.err; rc=$?
[ "$rc" -eq 3 ] || fail "the program does not see EINTR when signals come (exit $rc): $(cat kicker.out)"
bare "$P" 3 nocuda selftimer >control.out 2>control.err; rc=$?
[ "$rc" -eq 0 ] || echo "note: the control run (no dlhook, own timers) saw EINTR: $(grep -v 'eintr 0, short 0\|enough\|calls$' control.out | tr '\n' ' ')"
same_as_bare eintr 1 1 "$P" "$S"
same_as_bare eintr_nocuda 1 1 "$P" "$S" nocuda
echo ok
