/* thread.c — the recording threads: each thread's state (struct dlh_thread, its ring), made
 * at the thread's first recorded call, retired at its exit, reused by a later thread.
 *
 * The thread list is push-only (the writer walks it without a lock); a struct whose ring the
 * writer drained and gave back after the thread exited is taken by the next new thread. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dlh_internal.h"

__thread dlh_thread *dlh_self __attribute__((tls_model("initial-exec")));
_Atomic(struct dlh_thread *) dlh_threads;

static pthread_key_t thread_key;
/* What a thread's first recorded call starts, once per process (runtime.c: the writer, and
 * CUPTI when another tool owns the injection); NULL until the constructor set recording up. */
static int (*start_services)(void);

/* What a dying thread points at once its own struct may be reused: always blocked (the large
 * count survives racy ++/-- of dlh_resolve from several dying threads). */
static struct dlh_thread dead_thread = {.hot = {.blocked = 1u << 30}};

static void thread_exit(void *arg) {
  struct dlh_thread *t = arg;
  t->hot.blocked = 1;              /* later calls of this dying thread pass through */
  if (!dlh_altstack_release(t->os.altstack, t->os.altstack_size))
    t->os.altstack = NULL;         /* in use by this dying thread: not for the next */
  dlh_self = &dead_thread;         /* t is reused once the writer retires it */
  atomic_store(&t->shared.state, DLH_T_EXITED);
}

/* Takes the struct of a thread that ended (RETIRED: ring drained and given back) for a new
 * thread, so that a program creating threads without end keeps a list as long as its most
 * threads alive at once. The writer skips a claimed struct. Every group of the struct starts
 * empty, but for shared.dropped, which keeps counting (the totals include the dead threads'
 * drops; their waits went into the trace before they retired), shared.state (claimed),
 * stack_cache (emptied by dlh_thread_attach), os.altstack (the alternate signal stack the
 * exited thread gave back, altstack.c) and `next`, which keeps the list. */
static struct dlh_thread *thread_reuse(int *exited) {
  for (struct dlh_thread *t = atomic_load(&dlh_threads); t; t = t->next) {
    int st = DLH_T_RETIRED, now = atomic_load_explicit(&t->shared.state, memory_order_relaxed);
    if (now == DLH_T_EXITED) *exited = 1;
    if (now != DLH_T_RETIRED || !atomic_compare_exchange_strong(&t->shared.state, &st, DLH_T_CLAIMED))
      continue;
    memset(&t->hot, 0, sizeof t->hot);
    memset(&t->prod, 0, sizeof t->prod);
    void *alt = t->os.altstack;     /* free (thread_exit): for this thread */
    size_t alt_size = t->os.altstack_size;
    memset(&t->os, 0, sizeof t->os);
    t->os.altstack = alt;
    t->os.altstack_size = alt_size;
    atomic_store(&t->shared.head, 0);
    atomic_store(&t->shared.tail, 0);
    atomic_store(&t->shared.wake_sent, 0);
    atomic_store(&t->shared.waiting, 0);
    memset(&t->writer, 0, sizeof t->writer);
    memset(&t->cupti, 0, sizeof t->cupti);
    memset(&t->capture, 0, sizeof t->capture);
    memset(&t->self, 0, sizeof t->self);
    return t;
  }
  return NULL;
}

static dlh_thread *attach(int services);
dlh_thread *dlh_thread_attach(void) { return attach(1); }
dlh_thread *dlh_thread_attach_sampled(void) { return attach(0); }

static dlh_thread *attach(int services) {
  if (!start_services || !dlh_recording) return NULL;
  int exited = 0;
  struct dlh_thread *t = thread_reuse(&exited);
  int fresh = !t;
  /* threads that ended wait for the writer to drain their rings and retire them: a new struct
   * and ring each until it passes (a quiet writer waits up to 100 ms) */
  if (fresh && exited) dlh_writer_wake();
  if (fresh) {
    /* mmap, not malloc: the first call of a thread may come from a signal handler that
     * interrupted malloc. Zeroed, and page-aligned (head and tail need 64 bytes). */
    void *m = mmap(NULL, (sizeof *t + 4095) & ~(size_t)4095, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    dlh_mem_add(DLH_MEM_THREADS, (int64_t)((sizeof *t + 4095) & ~(size_t)4095));
    t = m;
  }
  t->hot.blocked = 1;              /* no recording of what we call while attaching */
  dlh_self = t;
  if (dlh_cfg.signals) t->os.altstack = dlh_altstack_setup(t->os.altstack, &t->os.altstack_size);
  dlh_stack_cache_reset(&t->stack_cache); /* a reused dlh_thread: its stacks were another thread's */
  t->prod.cap = 0;                      /* the starting size (ring.c); it grows as needed */
  t->prod.buf = dlh_ring_alloc(&t->prod.cap);
  if (!t->prod.buf) {                   /* stays blocked: this thread passes through */
    return NULL;
  }
  t->writer.buf = t->prod.buf;          /* the writer reads no field of t before ACTIVE */
  t->writer.cap = t->prod.cap;
  /* atomic: the sampler thread reads the ids of the list's structs while one is reused */
  __atomic_store_n(&t->os.tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
  prctl(PR_GET_NAME, t->os.name, 0, 0, 0);
  atomic_store(&t->shared.state, DLH_T_ACTIVE);
  pthread_setspecific(thread_key, t);
  if (fresh) {
    struct dlh_thread *old = atomic_load(&dlh_threads);
    do t->next = old; while (!atomic_compare_exchange_weak(&dlh_threads, &old, t));
  }
  if (services && start_services() != 0) return NULL; /* stays blocked: recording is off */
  t->hot.blocked = 0;
  return t;
}

int dlh_threads_init(int (*start)(void)) {
  if (pthread_key_create(&thread_key, thread_exit) != 0) return -1;
  start_services = start;
  return 0;
}

/* fork child: only the forking thread lives on, with a new trace to come; the parent's structs
 * and rings stay mapped, never reused. */
void dlh_threads_after_fork_child(void) {
  atomic_store(&dlh_threads, NULL);
  dlh_self = NULL;
}
