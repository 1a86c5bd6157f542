/* stacks.c — what the unwind service (unwind/dlh_unwind.h) is given by the runtime: the
 * DLHOOK_STACKS, DLHOOK_STACK_DEPTH and DLHOOK_SYMBOLIZE settings, where dlhook's fds go, and
 * how a thread of the service is kept out of the trace. */
#include "dlh_internal.h"

/* The symbolizer thread: a blocked dlh_thread of its own, so that nothing it calls (dlopen,
 * open, CUDA through a symbol lookup) is recorded. */
static void thread_enter(void) {
  static struct dlh_thread self_blocked;
  self_blocked.hot.blocked = 1;
  dlh_self = &self_blocked;
}

const dlh_unwind_settings *dlh_stacks_settings(void) {
  static dlh_unwind_settings s;
  s.mode = dlh_cfg.stacks;
  s.depth = dlh_cfg.stack_depth;
  s.symbolize = dlh_cfg.symbolize;
  s.fd_move_up = dlh_fd_move_up;
  s.thread_enter = thread_enter;
  /* Under a finite RLIMIT_AS (config.c) the arena is a thirty-second of the limit (at most its
   * default), the thread's stack 1 MiB. */
  s.arena_bytes = dlh_cfg.as_limit / 32;
  s.thread_stack = dlh_cfg.as_limit ? (size_t)1 << 20 : 0;
  return &s;
}
