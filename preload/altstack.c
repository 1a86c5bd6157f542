/* altstack.c — dlhook's alternate signal stacks: each recording thread gets one (thread.c),
 * unless it has its own, so that a stack overflow's SIGSEGV still runs the flush (signals.c). */
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dlh_internal.h"

static size_t alt_size = 64 * 1024;

/* The size, from the system's minimum: at start-up, not in dlh_altstack_setup (which may run in
 * a signal handler). */
void dlh_altstack_init(void) {
  long min = sysconf(_SC_SIGSTKSZ);
  if (min > 0 && (size_t)min * 4 > alt_size) alt_size = ((size_t)min * 4 + 4095) & ~(size_t)4095;
}

/* Gives the calling thread an alternate signal stack of dlhook's, unless it has one (of the
 * program's, or of a runtime such as Go's): a stack overflow's SIGSEGV then still runs the
 * flush. Async-signal-safe (mmap, sigaltstack). Returns the mapping (for dlh_altstack_release)
 * or NULL when none was set up. */
void *dlh_altstack_setup(size_t *size) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return NULL;
  size_t sz = alt_size, page = 4096;
  /* one guard page below the stack: an overflow of the handler itself faults cleanly */
  char *m = mmap(NULL, sz + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return NULL;
  mprotect(m, page, PROT_NONE);
  stack_t ss = {.ss_sp = m + page, .ss_size = sz, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) { munmap(m, sz + page); return NULL; }
  *size = sz + page;
  return m;
}

/* At thread exit: removes dlhook's alternate stack (if it is still the thread's) and unmaps
 * it. A stack the program put in its place is left alone (ours, no longer in use, is unmapped);
 * nothing is done while the thread runs on an alternate stack. */
void dlh_altstack_release(void *m, size_t size) {
  if (!m) return;
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_ONSTACK)) return;
  if (!(cur.ss_flags & SS_DISABLE) && (char *)cur.ss_sp == (char *)m + 4096) {
    stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) != 0) return;
  }
  munmap(m, size);
}
