/* dlh_sleep.h — sleeping inside the profiled process without touching the thread's restart_block.
 *
 * nanosleep and clock_nanosleep reset the calling thread's restart_block (the kernel's record of
 * an interrupted timed wait). `dlhook attach` and `dlhook detach` run their calls
 * (dlhook_attach_start/stop) in a thread of the program, possibly one stopped inside a timed
 * sleep, which resumes with the time it had left only while its restart_block is intact
 * (command/cmd/attach.c, resume_state). What those calls may reach sleeps with dlh_sleep_ns:
 * ppoll leaves the restart_block alone and, interrupted, leaves the time still to sleep in its
 * timeout. */
#ifndef DLH_SLEEP_H
#define DLH_SLEEP_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>

/* Sleeps for ns nanoseconds (the whole time, across signals). Where ppoll is refused (a seccomp
 * filter), nanosleep does it. */
static inline void dlh_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (ppoll(NULL, 0, &ts, NULL) != 0) {
    if (errno == EINTR) continue;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    return;
  }
}

#endif
