/* altstack.c — dlhook's alternate signal stacks: each recording thread gets one (thread.c),
 * unless it has its own, so that a stack overflow's SIGSEGV still runs the flush (signals.c).
 * A stack stays with its thread struct when the thread exits and serves the next thread that
 * reuses the struct: a thread's start costs one sigaltstack, not an mmap, an mprotect and, at
 * its exit, an munmap (which stops every core running the process to flush its TLB). */
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
 * flush. m: a stack kept from an earlier thread (dlh_altstack_release said it is free), or NULL
 * to map one. Async-signal-safe (mmap, sigaltstack). Returns the mapping the thread keeps (m
 * itself when the thread has a stack of its own: kept for the next thread), NULL when none. */
void *dlh_altstack_setup(void *m, size_t *size) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0) return m;
  if (!(cur.ss_flags & SS_DISABLE)) return m;
  size_t page = 4096;
  if (!m) {
    /* one guard page below the stack: an overflow of the handler itself faults cleanly */
    m = mmap(NULL, alt_size + page, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
    mprotect(m, page, PROT_NONE);
    *size = alt_size + page;
  }
  stack_t ss = {.ss_sp = (char *)m + page, .ss_size = *size - page, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) { munmap(m, *size); return NULL; }
  return m;
}

/* At thread exit: takes dlhook's alternate stack m (if it is still the thread's) off the
 * thread, so that the next thread of this struct uses it without a new mapping. Returns 1 when
 * m is free for another thread, 0 when the thread is running on it (an exit from inside a
 * signal handler): then it stays with the dying thread (left mapped: it may still be in use). */
int dlh_altstack_release(void *m, size_t size) {
  (void)size;
  if (!m) return 1;
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_ONSTACK)) return 0;
  if (!(cur.ss_flags & SS_DISABLE) && (char *)cur.ss_sp == (char *)m + 4096) {
    stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) != 0) return 0;
  }
  return 1;
}
