/* sample.c — host sampling: what the program's threads do between CUDA calls.
 *
 * On-CPU samples. Each thread of the program has a POSIX timer on its own CPU-time clock
 * (timer_create on the thread's clock, SIGEV_THREAD_ID), firing every 1/DLHOOK_SAMPLE_HZ of the
 * CPU time it uses; the signal's handler takes the mixed stack where the thread was interrupted
 * and stores a SAMPLE record in the thread's ring (ring.h). Why this never makes a system call
 * fail with EINTR (signal(7): poll, select, epoll_wait, nanosleep, sigtimedwait, semop with a
 * timeout, sockets with timeouts fail so even under SA_RESTART): a thread's CPU clock advances
 * only while it runs, and since Linux 5.11 (x86-64; POSIX_CPU_TIMERS_TASK_WORK) the kernel
 * handles an expired CPU timer in task work on the thread's return to user mode, after the
 * system call it was in has returned. The signal is generated and delivered there, between
 * two instructions of user code, never inside a blocking call. (On older kernels, and on
 * architectures without that task work, on-CPU sampling stays off: wait samples remain.)
 *
 * A pending signal can still reach a program that does not expect it in one way: a thread
 * that blocks the signal (a signal-handling thread that blocks everything and calls
 * sigwaitinfo on the full set, or one whose ppoll unblocks all) would see it. So no timer is
 * armed for a thread that blocks the signal (its SigBlk in /proc/self/task/TID/status), and
 * pthread_sigmask()/sigprocmask() disarm the calling thread's timer before they block it (and
 * arm it again when they unblock it). A program that installs a handler for the signal gets
 * it: sampling ends, every timer is disarmed first (sigaction(), signals.c).
 *
 * Wait samples. A sampler thread wakes at the same rate (wall clock) and reads each thread's
 * CPU clock: a thread that was off the CPU for most of the period gets a wait sample of that
 * time, with its Python frames read by checked copies (unwind/: dlh_stack_capture_python_of)
 * and the system call it is blocked in (/proc/self/task/TID/syscall). A thread whose CPU clock
 * did not move since its last wait sample did not run: its stack is the same, and the sample
 * costs one clock read. No signal is ever sent to a waiting thread.
 *
 * Samples are taken while recording and inside the capture window; sampling starts at the
 * first CUDA call (registration aside) or at start-up (DLHOOK_SAMPLE=always), and a child that
 * a sampled Python process forks (DataLoader workers) samples from its start. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "dlh_internal.h"
#include "dlhook.pb-c.h"
#include "dlh_sleep.h"

int dlh_sample_sig;
static unsigned hz;                    /* DLHOOK_SAMPLE_HZ, 0 = off */
static uint64_t period_ns;
static int cpu_timers;                 /* the kernel delivers CPU-timer signals safely */
static _Atomic int active;             /* the handler records */
static _Atomic int started;            /* the sampler thread was started (once per process) */
static _Atomic int stop_req, ended;    /* sampling ends for good (exit, the program's handler) */
static _Atomic uint64_t lost;
static _Atomic uint64_t faults;        /* Python walks cut short by a fault (the guard) */
static _Atomic uint64_t cost_ticks;    /* ticks spent in the on-CPU handler (after its entry) */
static int sampled_parent;             /* this process is a fork child of a sampled one */
/* A Python fork child: the thread that forked and its PyThreadState, known at the fork. It
 * may wait for a long time before its first on-CPU sample tells its state (a DataLoader worker
 * sleeping in its Dataset), and the interpreter's list may still name it by the parent's
 * thread id: its wait samples get its Python frames from the start. */
static uint32_t fork_tid;
static uintptr_t fork_ts;
static _Atomic int running;            /* the sampler thread is in its loop */
static _Atomic int starting;           /* ... and starts the trace (its deferred start) */
static _Atomic int held;               /* an exec is under way: the deferred start waits */
static _Atomic int new_threads;        /* a thread started through pthread_create: rescan */
static int (*real_sa)(int, const struct sigaction *, struct sigaction *); /* libc's sigaction */
static int (*ensure_writer)(void);     /* dlh_sample_init's: starts the trace (runtime.c) */
static int (*py_initialized)(void);    /* Py_IsInitialized, looked up at start-up */

/* ---------------------------------------------------------------- the threads' timers */

/* tid -> timer, by open addressing; slots are claimed by the sampler thread (threads it found)
 * or by a thread that changes its mask; only the sampler frees them (TOMB) once the thread is
 * gone. */
#define NSLOT 8192
#define TOMB 0xffffffffu
typedef struct tslot {
  _Atomic uint32_t tid;                /* 0 = empty */
  _Atomic uint32_t mstate;             /* M_* bits: blocked (as its mask is known), a change
                                          under way, known, fresh; above: a count of changes */
  _Atomic int armed;                   /* the timer runs */
  _Atomic int timer;                   /* kernel timer id + 1, 0 = none */
  /* the sampler thread's own fields */
  uint32_t gen;                        /* the last scan that listed the thread */
  int own;                             /* one of dlhook's threads: never sampled */
  uint64_t cpu, wall;                  /* its CPU clock and the wall clock, last tick */
  uint64_t wait_cpu;                   /* its CPU clock at its last wait stack, ~0: none */
  uint32_t wait_stack, wait_state;
  uintptr_t wait_ts;                   /* the thread state its wait stack was read from */
  uint64_t wait_ns;                    /* off-CPU time not yet sampled */
  uint64_t delay;                      /* its run-queue delay (schedstat) at the last read */
  uint64_t due;                        /* the tick of its next look (steady threads: later) */
  uint32_t steady;                     /* looks in a row that found it all on or all off CPU */
  _Atomic uintptr_t own_ts;            /* its PyThreadState, as it said in an on-CPU sample */
  uintptr_t ts;                        /* its PyThreadState from the interpreter's list, or 0 */
} tslot;
static tslot *slots;
/* The slots ever claimed, in the order claimed (index + 1; 0 while being written): the sampler
 * walks these at every tick, not the whole table (a megabyte, 200 times a second). A slot is
 * listed when it is first taken from empty; one freed (TOMB) stays listed for its next thread. */
static _Atomic uint32_t *used;
static _Atomic uint32_t nused;

static uint32_t nlisted(void) {
  uint32_t n = atomic_load(&nused);
  return n < NSLOT ? n : NSLOT;
}

static tslot *listed(uint32_t k) {
  uint32_t i = atomic_load(&used[k]);
  return i ? &slots[i - 1] : NULL;
}

static inline uint32_t slot_hash(uint32_t tid) { return (tid * 2654435761u) % NSLOT; }

static tslot *slot_find(uint32_t tid, int create) {
  if (!slots || !tid || tid == TOMB) return NULL;
  tslot *tomb = NULL;
  for (uint32_t i = slot_hash(tid), k = 0; k < NSLOT; i = (i + 1) % NSLOT, k++) {
    uint32_t v = atomic_load(&slots[i].tid);
    if (v == tid) return &slots[i];
    if (v == TOMB && !tomb) tomb = &slots[i];
    if (v == 0) {
      if (!create) return NULL;
      tslot *s = tomb ? tomb : &slots[i];
      uint32_t want = tomb ? TOMB : 0;
      if (atomic_compare_exchange_strong(&s->tid, &want, tid)) {
        uint32_t k = tomb ? NSLOT : atomic_fetch_add(&nused, 1);
        if (k < NSLOT) atomic_store(&used[k], (uint32_t)(s - slots) + 1);
        return s;
      }
      if (want == tid) return s;
      return slot_find(tid, create); /* another claim won the slot: look again */
    }
  }
  return NULL;
}

static int sys_timer_settime(int id, uint64_t ns) {
  struct itimerspec its = {{(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)},
                           {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)}};
  return (int)syscall(SYS_timer_settime, id, 0, &its, NULL);
}

#define M_BLOCKED 1u
#define M_CHANGING 2u
#define M_KNOWN 4u                    /* the thread's mask is known exactly: its start in
                                         pthread_create's trampoline, or a change through us */
#define M_FRESH 8u                    /* a new thread took the slot (its id was reused) */
#define M_COUNT 16u
/* Blocked, or about to change: no timer may be armed. */
static inline int blocked(tslot *s) { return (atomic_load(&s->mstate) & (M_BLOCKED | M_CHANGING)) != 0; }

/* The thread's own mask change: bits set and cleared, the count moved on. */
static void mask_state(tslot *s, uint32_t set, uint32_t clear) {
  uint32_t m = atomic_load(&s->mstate);
  while (!atomic_compare_exchange_weak(&s->mstate, &m, ((m + M_COUNT) & ~clear) | set)) {}
}

static void disarm(tslot *s) {
  int id = atomic_load(&s->timer) - 1;
  if (id >= 0 && atomic_exchange(&s->armed, 0)) sys_timer_settime(id, 0);
}

static void arm(tslot *s) {
  int id = atomic_load(&s->timer) - 1;
  if (id < 0 || blocked(s) || atomic_load(&stop_req)) return;
  /* running before it says so: a thread that blocks meanwhile and finds armed 0 is disarmed by
   * the check below; one that finds armed 1 disarms it after this settime */
  sys_timer_settime(id, period_ns);
  atomic_store(&s->armed, 1);
  /* the thread may have started blocking the signal meanwhile (it sets blocked, then looks at
   * armed): whoever comes second disarms */
  if (blocked(s) || atomic_load(&stop_req)) disarm(s);
}

/* /proc/self/task/TID/FILE into buf (NUL-terminated); its length, or -1. Opened each time:
 * dlhook holds no descriptor per thread (a program may count its free fds). */
static ssize_t task_file(uint32_t tid, const char *file, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%u/%s", tid, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

/* The system calls that wait with a mask of their own for a while (rt_sigsuspend,
 * rt_sigtimedwait, pselect6, ppoll, epoll_pwait, epoll_pwait2, io_pgetevents: x86-64 numbers):
 * while a thread waits in one, its SigBlk is that temporary mask, not its own. */
static int temp_mask_call(uint32_t state) {
  switch (state ? state - 1 : ~0u) {
    case 130: case 128: case 270: case 271: case 281: case 441: case 333: return 1;
    default: return 0;
  }
}

static uint32_t blocked_in(uint32_t tid); /* below */

/* Whether thread tid blocks the signal now (its SigBlk mask); 1 also when that cannot be told:
 * the mask cannot be read, or the thread waits with a temporary mask (before or after the
 * read), e.g. sigsuspend or sigtimedwait on everything in a thread that blocks everything. */
static int thread_blocks(uint32_t tid) {
  if (temp_mask_call(blocked_in(tid))) return 1;
  char buf[2048];
  if (task_file(tid, "status", buf, sizeof buf) <= 0) return 1;
  const char *p = strstr(buf, "SigBlk:");
  if (!p) return 1;
  unsigned long long mask = strtoull(p + 7, NULL, 16);
  if ((mask >> (dlh_sample_sig - 1)) & 1) return 1;
  return temp_mask_call(blocked_in(tid));
}

/* A timer on thread tid's CPU clock that signals that thread. */
static int timer_for(uint32_t tid) {
  struct sigevent se;
  memset(&se, 0, sizeof se);
  se.sigev_notify = SIGEV_THREAD_ID;
  se.sigev_signo = dlh_sample_sig;
  se._sigev_un._tid = (pid_t)tid;
  int id = -1;
  if (syscall(SYS_timer_create, dlh_thread_clock(tid), &se, &id) != 0) return -1;
  return id;
}

static uint64_t thread_cpu_ns(uint32_t tid, int *gone) {
  struct timespec ts;
  if (clock_gettime(dlh_thread_clock(tid), &ts) != 0) {
    *gone = 1;
    return 0;
  }
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- the records */

static void put_sample(struct dlh_thread *t, uint32_t tid, unsigned kind, uint64_t tk,
                       uint64_t weight, uint32_t stack, uint32_t state) {
  t->prod.sampling = 1; /* a full ring drops the sample, counted here, not as a call */
  uint64_t *w = dlh_ring_reserve(t, DLH_REC_SAMPLE_WORDS);
  t->prod.sampling = 0;
  if (!w) {
    atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
    return;
  }
  w[0] = dlh_rec_header(0, 0, 0, DLH_REC_SAMPLE, kind, DLH_REC_SAMPLE_WORDS);
  w[1] = tk;
  w[2] = weight;
  w[3] = (uint64_t)stack | (uint64_t)tid << 32;
  w[4] = state;
  dlh_ring_publish(t, DLH_REC_SAMPLE_WORDS);
}

/* The CPU timer's signal, in the thread that used the CPU time. */
static void on_cpu_sample(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  uint64_t entry = dlh_ticks();
  int saved = errno;
  if (!atomic_load_explicit(&active, memory_order_relaxed) || !__atomic_load_n(&dlh_recording, __ATOMIC_RELAXED) || __atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED) || si->si_code != SI_TIMER ||
      dlh_foreign_process())
    goto out;
  struct dlh_thread *t = dlh_self;
  if (!t) t = dlh_thread_attach_sampled();
  /* Inside the thread's own store (ring.c) the sample cannot take ring words: it is left for
   * the store's end to write. One waits at a time: a later one adds its weight to it (a thread
   * waiting for the writer inside its store, ring.c: wait_room, is sampled there until the
   * store ends); a thread storing a sample of its own loses it. */
  int in_store = t && t->prod.storing;
  if (!t || t->hot.blocked || (in_store && t->prod.sampling)) {
    atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
    goto out;
  }
  if (in_store && t->prod.smp_pending) {
    t->self.smp_weight += (uint64_t)(1 + (si->si_overrun > 0 ? si->si_overrun : 0)) * period_ns;
    goto out;
  }
  uint64_t tk = dlh_ticks();
  uint64_t weight = (uint64_t)(1 + (si->si_overrun > 0 ? si->si_overrun : 0)) * period_ns;
  tslot *me = slot_find(t->os.tid, 0); /* its Python thread state, for its wait samples */
  if (me) atomic_store_explicit(&me->own_ts, dlh_py_this_ts(), memory_order_relaxed);
  t->hot.blocked++; /* nothing the walk calls is recorded */
  /* The Python frames under the fault guard: the interpreter may be between two stores of a
   * frame push or pop (CPython 3.11 sets tstate->cframe before its current_frame), and a
   * pointer read there may lead to unmapped memory. A fault (dlhook's SIGSEGV/SIGBUS front
   * handler, signals.c) jumps back here and the sample keeps its native frames only. Without
   * that front (DLHOOK_SIGNALS=0) Python frames are not read in the handler. */
  dlh_py_snap py;
  py.n = 0;
  if (dlh_signals_fault_front()) {
    sigjmp_buf jb;
    unsigned busy = t->stack_cache.busy;
    /* the mask is not saved (a system call every sample): the fault's way back leaves the
     * front handler's mask, which differs from this handler's in SIGSEGV and SIGBUS only */
    if (sigsetjmp(jb, 0) == 0) {
      t->os.probe = &jb;
      dlh_stack_python_snap(&t->stack_cache, &py);
    } else {
      t->stack_cache.busy = busy;
      atomic_fetch_add_explicit(&faults, 1, memory_order_relaxed);
      sigset_t un;
      sigemptyset(&un);
      const sigset_t *was = &((const ucontext_t *)uc)->uc_sigmask;
      if (!sigismember(was, SIGSEGV)) sigaddset(&un, SIGSEGV);
      if (!sigismember(was, SIGBUS)) sigaddset(&un, SIGBUS);
      syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &un, NULL, (size_t)(_NSIG / 8));
    }
    t->os.probe = NULL;
  }
  uint32_t stack = dlh_stack_capture_signal(&t->stack_cache, uc, &py);
  t->hot.blocked--;
  if (in_store) {
    t->self.smp_tk = tk;
    t->self.smp_weight = weight;
    t->self.smp_stack = stack;
    atomic_signal_fence(memory_order_seq_cst);
    t->prod.smp_pending = 1;
  } else {
    put_sample(t, t->os.tid, DLH__SAMPLE_KIND__SAMPLE_CPU, tk, weight, stack, 0);
  }
  uint64_t took = dlh_ticks() - entry;
  atomic_fetch_add_explicit(&cost_ticks, took, memory_order_relaxed);
  t->hot.stolen += took; /* a call it interrupted ends earlier by as much (dlh_call_end) */
out:
  errno = saved;
}

/* ---------------------------------------------------------------- the sampler thread */

static uint32_t self_tid(void) { return (uint32_t)syscall(SYS_gettid); }
static void self_mask_known(void); /* below */

/* The system call thread tid is blocked in, + 1; 0 when it runs or it cannot be read. */
/* The time the thread has waited on a run queue (runnable, not running), /proc/.../schedstat's
 * second field; ~0 when unknown (a kernel without CONFIG_SCHED_INFO). */
static uint64_t run_delay(uint32_t tid) {
  char buf[96];
  if (task_file(tid, "schedstat", buf, sizeof buf) <= 0) return ~0ull;
  char *sp = strchr(buf, ' ');
  return sp ? strtoull(sp + 1, NULL, 10) : ~0ull;
}

static uint32_t blocked_in(uint32_t tid) {
  char buf[32];
  if (task_file(tid, "syscall", buf, sizeof buf) <= 0) return 0;
  if (buf[0] < '0' || buf[0] > '9') return 0; /* "running" */
  long nr = strtol(buf, NULL, 10);
  return nr >= 0 && nr < 100000 ? (uint32_t)nr + 1 : 0;
}

static int own_thread(uint32_t tid) {
  char name[32];
  return task_file(tid, "comm", name, sizeof name) > 0 && strncmp(name, "dlhook-", 7) == 0;
}

static void slot_free(tslot *s) {
  int id = atomic_exchange(&s->timer, 0) - 1;
  atomic_store(&s->armed, 0);
  if (id >= 0) syscall(SYS_timer_delete, id);
  atomic_store(&s->own_ts, 0);
  s->ts = 0;
  atomic_store(&s->mstate, 0);
  atomic_store(&s->tid, TOMB);
}

static void slot_init(tslot *s, uint32_t tid, uint64_t now) {
  s->own = own_thread(tid);
  int gone = 0;
  s->cpu = thread_cpu_ns(tid, &gone);
  s->wall = now;
  s->wait_cpu = ~0ull;
  s->wait_ts = 0;
  s->wait_ns = 0;
  s->due = 0;
  s->steady = 0;
  s->delay = ~0ull;
  atomic_store(&s->own_ts, tid == fork_tid ? fork_ts : 0);
  s->ts = 0;
}

/* /proc/self/task: new threads get a timer, gone ones lose theirs. */
static void rescan(uint32_t gen, uint32_t me, uint64_t now) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
    if (!tid || tid == me) continue;
    tslot *s = slot_find(tid, 1);
    if (!s) continue;
    if (!s->gen) slot_init(s, tid, now); /* new here (a mask change may have claimed it) */
    s->gen = gen;
    if (s->own) continue;
    uint32_t m = atomic_load(&s->mstate);
    if (m & M_FRESH) { /* its id was reused: the timer was the dead thread's */
      int id = atomic_exchange(&s->timer, 0) - 1;
      atomic_store(&s->armed, 0);
      if (id >= 0) syscall(SYS_timer_delete, id);
      slot_init(s, tid, now);
      atomic_fetch_and(&s->mstate, ~M_FRESH);
      m &= ~M_FRESH;
    }
    if (!cpu_timers || atomic_load(&s->armed) || (m & (M_BLOCKED | M_CHANGING))) continue;
    /* A thread whose mask is not known (made by a raw clone, or there before dlhook came:
     * attach): its SigBlk, read outside any call that waits with a temporary mask. */
    if (!(m & M_KNOWN) && thread_blocks(tid)) continue;
    if (!atomic_load(&s->timer)) atomic_store(&s->timer, timer_for(tid) + 1);
    arm(s);
  }
  closedir(d);
  /* the Python thread states the threads gave (calibration), then those of the interpreter's
   * list for the threads that never gave theirs */
  for (uint32_t k = 0, n = nlisted(); k < n; k++) {
    tslot *s = listed(k);
    uint32_t t = s ? atomic_load(&s->tid) : 0;
    uintptr_t pts = t && t != TOMB && s->gen == gen ? atomic_load(&s->own_ts) : 0;
    if (pts) dlh_py_calibrate(pts, t);
  }
  enum { NLIST = 512 };
  static uint32_t ltid[NLIST];
  static uintptr_t lts[NLIST];
  int nl = dlh_py_thread_states(ltid, lts, NLIST);
  for (int k = 0; k < nl; k++) {
    tslot *s = slot_find(ltid[k], 0);
    if (s && s->gen == gen) s->ts = lts[k];
  }
  for (uint32_t k = 0, n = nlisted(); k < n; k++) {
    tslot *s = listed(k);
    uint32_t tid = s ? atomic_load(&s->tid) : 0;
    if (tid && tid != TOMB && s->gen && s->gen != gen) { s->gen = 0; slot_free(s); }
  }
}

/* A thread found all on the CPU, or all off it (blocked where it was), at two looks in a row is
 * looked at every 2nd tick, then every 4th, then every 8th (at most 40 ms), until a look finds
 * it changed (a look wakes the sampler: ~60 us of CPU on a VM, the sampler's main cost): its wait
 * sample then carries the time since the last look, which it waited where it waits now (a
 * thread that did not run cannot have moved). What a longer look can miss is a wait shorter than
 * the gap that ends before the look (found running, as with one tick). */
static unsigned max_skip = 1; /* setup: at most 40 ms between two looks at a thread */

/* The sampler's own budget (DLHOOK_SAMPLE_BUDGET, thousandths of the process's CPU time). A
 * program whose threads alternate between running and waiting faster than a tick (a PyTorch
 * step: Python, a wait in backward or a sync, Python again) is steady at no look, and a thread
 * that wakes briefly and often (a poller, a device thread) neither: the sampler would wake at
 * every tick, ~60 us of CPU each on a VM, 1-2 % of a process that keeps one core busy. So at
 * every scan (5 times a second) it compares its CPU time since the last scan with the
 * process's; above the budget the looks are spaced as much further apart as the excess says (at
 * most 40 ms, as for a steady thread), below half of it twice as close again. Wait samples
 * then come less often, each carrying the time since the last look, as a steady thread's do;
 * on-CPU samples (the threads' own timers) keep their rate. perf does the same with its interrupts
 * (kernel.perf_cpu_time_max_percent). */
static unsigned budget_pm;         /* 0: no budget */
static unsigned floor_skip = 1;    /* the sampler sleeps at least this many ticks */
static unsigned floor_max = 1;     /* 40 ms in ticks */
static uint64_t gov_self, gov_proc;
static _Atomic uint64_t sampler_cpu; /* its CPU time, published at every scan (the counters) */

static void govern(void) {
  uint64_t self = dlh_cpu_ns(CLOCK_THREAD_CPUTIME_ID), proc = dlh_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
  if (self) atomic_store_explicit(&sampler_cpu, self, memory_order_relaxed);
  if (!budget_pm || !self || !proc) return;
  if (gov_proc && proc > gov_proc && self >= gov_self) {
    uint64_t ds = self - gov_self, dp = proc - gov_proc;
    uint64_t allowed = (uint64_t)budget_pm * dp / 1000;
    if (ds > allowed) { /* as far apart as the budget needs at once (the cost is per look) */
      uint64_t f = allowed ? (floor_skip * ds + allowed - 1) / allowed : floor_max;
      floor_skip = f < floor_max ? (unsigned)f : floor_max;
    } else if (ds * 2 < allowed && floor_skip > 1) {
      floor_skip /= 2;
    }
  }
  gov_self = self;
  gov_proc = proc;
}

/* One look at a thread: a wait sample when it waited for most of a period in a call. Returns
 * whether it was steady since the last look: all on the CPU (or runnable), or all off it. */
static int look(struct dlh_thread *me, tslot *s, uint32_t tid, uint64_t now, uint64_t tk,
                int *gone) {
  uint64_t cpu = thread_cpu_ns(tid, gone);
  if (*gone) return 0; /* freed by the next scan */
  uint64_t dcpu = cpu > s->cpu ? cpu - s->cpu : 0, dwall = now - s->wall;
  s->cpu = cpu;
  s->wall = now;
  int steady = dcpu == 0 || dwall <= dcpu + period_ns / 2;
  if (dwall > dcpu) s->wait_ns += dwall - dcpu;
  if (s->wait_ns < period_ns / 2) return steady;
  uintptr_t own = atomic_load_explicit(&s->own_ts, memory_order_relaxed);
  uintptr_t ts = own ? own : s->ts;
  /* it ran since its last wait stack, or its thread state is known only now: read where it
   * waits (a thread that did not run waits where it did) */
  if (cpu != s->wait_cpu || ts != s->wait_ts) {
    /* First, whether its time off the CPU was a wait for a CPU (a loaded machine): its run-queue
     * delay since the last read (schedstat, a few us; reading where it is blocked waits for a
     * running thread to stop: up to ~90 us here). That time has no place of its own, as below. */
    uint64_t d = run_delay(tid);
    uint64_t dd = d != ~0ull && s->delay != ~0ull && d > s->delay ? d - s->delay : 0;
    s->delay = d;
    if (dd && s->wait_ns < dd + period_ns / 2) {
      s->wait_ns = 0;
      return dwall <= dcpu + dd + period_ns / 2;
    }
    uint32_t state = blocked_in(tid);
    if (!state) {
      /* running right now: it waited for a CPU, not in a call; that time has no place of its
       * own to go to (the next blocked wait must not carry it) */
      s->wait_ns = 0;
      return 0;
    }
    s->wait_ts = ts;
    s->wait_stack = ts ? dlh_stack_capture_python_of(ts) : 0;
    s->wait_state = state;
    s->wait_cpu = cpu;
  }
  if (!__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED))
    put_sample(me, tid, DLH__SAMPLE_KIND__SAMPLE_WAIT, tk, s->wait_ns, s->wait_stack,
               s->wait_state);
  s->wait_ns = 0;
  return steady;
}

/* Wait samples of the threads due at this tick; returns the first tick a thread is due again. */
static uint64_t wait_samples(struct dlh_thread *me, uint64_t now, uint64_t tk, uint64_t tick) {
  uint64_t next = tick + max_skip;
  for (uint32_t k = 0, n = nlisted(); k < n; k++) {
    tslot *s = listed(k);
    uint32_t tid = s ? atomic_load(&s->tid) : 0;
    if (!tid || tid == TOMB || !s->gen || s->own) continue;
    if (s->due <= tick) {
      int gone = 0;
      int steady = look(me, s, tid, now, tk, &gone);
      if (gone) continue;
      s->steady = steady ? (s->steady < 4 ? s->steady + 1 : 4) : 0;
      unsigned gap = s->steady >= 2 ? 1u << (s->steady - 1) : 1;
      s->due = tick + (gap < max_skip ? gap : max_skip);
    }
    if (s->due < next) next = s->due;
  }
  return next;
}

static void *sampler_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "dlhook-sampler");
  /* A fork child, or a process sampled from start-up (DLHOOK_SAMPLE=always): sampled from now
   * on, but its trace starts only 20 ms later, so that one that execs or exits at once (a
   * shell, a launcher's helpers) leaves no trace behind; the samples wait in the rings. */
  uint64_t trace_at = sampled_parent || dlh_cfg.sample == 1 ? dlh_mono_ns() + 20 * 1000000ull : 0;
  if (atomic_load(&stop_req) || !ensure_writer || (!trace_at && ensure_writer() != 0)) return NULL;
  struct dlh_thread *me = dlh_thread_attach_sampled();
  if (!me) return NULL;
  atomic_store(&running, 1);
  me->os.internal = 1;
  me->hot.blocked = 1; /* its calls are never recorded; its ring holds the wait samples */
  uint32_t tid = self_tid(), gen = 0;
  unsigned rescan_every = hz / 5 ? hz / 5 : 1; /* 5 scans a second */
  uint64_t rescan_at = 0, skip = 1;
  active = 1;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (uint64_t tick = 0; !atomic_load(&stop_req); tick += skip) {
    uint64_t now = dlh_mono_ns();
    if (trace_at && now >= trace_at) {
      /* the exit waits while this opens the trace (dlh_writer_stop): a process that ends as
       * the trace starts would leave an empty file */
      atomic_store(&starting, 1);
      if (atomic_load(&held)) {
        atomic_store(&starting, 0); /* an exec under way: the next tick, if it failed */
      } else {
        trace_at = 0;
        int bad = atomic_load(&stop_req) || ensure_writer() != 0;
        atomic_store(&starting, 0);
        if (bad) break;
      }
    }
    /* a thread made by pthread_create is seen within a tick (its start says so: thread_start);
     * one made otherwise (a raw clone, a sanitizer build) by the full scan, 5 times a second,
     * which also sees ids reused and masks restored. (A stat of /proc/self/task at every tick,
     * its link count, cost 3-16 us a tick: a third of the sampler thread's CPU.) */
    if (atomic_exchange_explicit(&new_threads, 0, memory_order_acquire) || tick >= rescan_at) {
      rescan(++gen, tid, now);
      if (tick >= rescan_at) govern();
      rescan_at = tick + rescan_every;
    }
    /* the sampler sleeps until the first thread is due (every thread steady: 40 ms), never past
     * the next scan */
    uint64_t first = tick + 1;
    if (__atomic_load_n(&dlh_recording, __ATOMIC_RELAXED))
      first = wait_samples(me, now, dlh_ticks(), tick);
    if (first < tick + floor_skip) first = tick + floor_skip;
    if (first > rescan_at) first = rescan_at;
    skip = first > tick ? first - tick : 1;
    uint64_t step = skip * period_ns;
    next.tv_sec += (time_t)(step / 1000000000u);
    next.tv_nsec += (long)(step % 1000000000u);
    while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
    uint64_t after = dlh_mono_ns(), due = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec;
    if (after > due + 100 * period_ns) { /* stopped for long (SIGSTOP): no catching up */
      next.tv_sec = (time_t)(after / 1000000000u);
      next.tv_nsec = (long)(after % 1000000000u);
    }
  }
  atomic_store_explicit(&sampler_cpu, dlh_cpu_ns(CLOCK_THREAD_CPUTIME_ID), memory_order_relaxed);
  /* Sampling ends (exit, detach, the program took the signal): every timer is disarmed, then
   * deleted, so that a detached program keeps none of dlhook's timers (a later attach makes new
   * ones). The handler stays in place for a signal already pending. */
  for (uint32_t k = 0, n = nlisted(); k < n; k++) {
    tslot *s = listed(k);
    uint32_t v = s ? atomic_load(&s->tid) : 0;
    if (!v || v == TOMB) continue;
    disarm(s);
    int id = atomic_exchange(&s->timer, 0) - 1;
    if (id >= 0) syscall(SYS_timer_delete, id);
  }
  atomic_store(&running, 0);
  return NULL;
}

/* ---------------------------------------------------------------- start, stop */

/* CPU-timer signals come on the return to user mode from Linux 5.11 on (x86-64). */
static int kernel_delivers_safely(void) {
#if defined(__x86_64__)
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major > 5 || (major == 5 && minor >= 11);
#else
  return 0;
#endif
}

/* The highest real-time signal with no handler: the program's own signals stay its own. */
static int pick_signal(void) {
  for (int sig = SIGRTMAX; sig >= SIGRTMIN + 4; sig--) {
    struct sigaction old;
    if (real_sa(sig, NULL, &old) != 0) continue;
    if (old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) return sig;
  }
  return 0;
}

/* The table of threads, the timer signal and its handler: at start-up (and in a fork child,
 * its own table), before the program can block the signal unseen; a program that gives the
 * signal a handler later takes it (dlh_sample_sigaction). */
static int setup(void) {
  /* zero-filled, and only the pages of slots in use are ever written */
  slots = mmap(NULL, NSLOT * (sizeof(tslot) + sizeof *used), PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (slots == MAP_FAILED) {
    slots = NULL;
    dlh_warn("cannot allocate the sampler's table; the program is not sampled");
    return -1;
  }
  used = (_Atomic uint32_t *)(slots + NSLOT);
  atomic_store(&nused, 0);
  if (dlh_sample_sig) return 0; /* a fork child: the handler is in place */
  cpu_timers = kernel_delivers_safely();
#if defined(__SANITIZE_THREAD__)
  /* A ThreadSanitizer build of dlhook (tests/reliability/t_tsan_rings): the handler goes in
   * through TSan's own sigaction, which holds the signal back while TSan's runtime is inside
   * (a handler that runs there and reports a race deadlocks on TSan's thread registry). */
  if (!real_sa)
    real_sa = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
        RTLD_DEFAULT, "__interceptor_sigaction");
#endif
  if (!real_sa)
    real_sa = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT,
                                                                                "sigaction");
  if (!real_sa) cpu_timers = 0;
  if (!cpu_timers) return 0;
  int sig = pick_signal();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_cpu_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask); /* nothing of the program's runs inside the walk; a fault of the */
  sigdelset(&sa.sa_mask, SIGSEGV);          /* guarded Python walk reaches the front handler */
  sigdelset(&sa.sa_mask, SIGBUS);
  if (sig && real_sa(sig, &sa, NULL) == 0) {
    dlh_sample_sig = sig;
    dlh_signals_route(sig, dlh_sample_sigaction);
  } else {
    cpu_timers = 0;
    dlh_warn("no free real-time signal for the CPU-time timers; only wait samples are taken");
  }
  return 0;
}

static void start(void) {
  if (!hz || !slots || atomic_exchange(&started, 1) || atomic_load(&ended)) return;
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (dlh_cfg.as_limit) pthread_attr_setstacksize(&attr, 1u << 20);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the sampler runs with every signal blocked */
  int err = pthread_create(&th, &attr, sampler_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (err) dlh_warn("cannot start the sampler thread (%s); the program is not sampled",
                    strerror(err));
}

void dlh_sample_init(int (*start_trace)(void)) {
  ensure_writer = start_trace;
  py_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  hz = dlh_cfg.sample == 2 ? 0 : dlh_cfg.sample_hz;
  period_ns = hz ? 1000000000ull / hz : 0;
  max_skip = period_ns && period_ns < 40000000ull ? (unsigned)(40000000ull / period_ns) : 1;
  floor_max = max_skip;
  if (max_skip > 8) max_skip = 8;
  budget_pm = dlh_cfg.sample_budget;
  if (!hz || setup() != 0) {
    hz = 0;
    return;
  }
  self_mask_known(); /* the thread of the constructor (the main thread) */
  if (dlh_cfg.sample == 1) start();
}

void dlh_sample_on_call(uint32_t fn) {
  if (!hz || atomic_load(&started)) return;
  const char *name = dlh_fn_name(fn);
  if (name && !strncmp(name, "__cuda", 6)) return; /* module registration: not a use of CUDA */
  start();
}

int dlh_sample_starting(void) { return atomic_load(&starting); }
void dlh_sample_hold(int d) { atomic_fetch_add(&held, d); }
unsigned dlh_sample_rate(void) { return atomic_load(&started) && !atomic_load(&ended) ? hz : 0; }
uint64_t dlh_sample_lost(void) { return atomic_load(&lost) + atomic_load(&dlh_ring_samples_lost); }
uint64_t dlh_sample_cost_ticks(void) { return atomic_load(&cost_ticks); }
uint64_t dlh_sample_thread_cpu_ns(void) { return atomic_load(&sampler_cpu); }

void dlh_sample_stop(void) {
  active = 0;
  atomic_store(&stop_req, 1);
}

/* The program gives dlh_sample_sig a handler (or asks what it has): the signal is its own from
 * now on. Every timer is disarmed before its action is in place. */
int dlh_sample_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                         int (*real)(int, const struct sigaction *, struct sigaction *)) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  if (atomic_load(&ended)) return real(sig, act, old); /* the program's already */
  if (!act) {
    if (old) *old = dfl;
    return 0;
  }
  atomic_store(&ended, 1);
  dlh_sample_stop();
  for (uint32_t k = 0, n = slots ? nlisted() : 0; k < n; k++) {
    tslot *s = listed(k);
    uint32_t v = s ? atomic_load(&s->tid) : 0;
    if (v && v != TOMB) disarm(s);
  }
  dlh_sample_sig = 0;
  int r = real(sig, act, NULL);
  if (r == 0 && old) *old = dfl; /* it had no handler: dlhook took only a free signal */
  dlh_signals_route(0, NULL);    /* from now on sigaction() goes straight to the kernel */
  return r;
}

/* dlhook attach, again: the next trace samples as the first did. */
void dlh_sample_reset_for_attach(void) {
  for (int i = 0; i < 2000 && atomic_load(&running); i++) dlh_sleep_ns(1000000);
  if (atomic_load(&ended) || atomic_load(&running)) return;
  atomic_store(&stop_req, 0);
  atomic_store(&started, 0);
}

void dlh_sample_after_fork_child(void) {
  /* timers and the sampler thread are not inherited; the parent's table is left alone */
  int was = atomic_load(&started) && !atomic_load(&ended);
  slots = NULL;
  if (hz && !atomic_load(&ended) && setup() == 0) self_mask_known(); /* the forking thread */
  active = 0;
  atomic_store(&started, 0);
  atomic_store(&stop_req, 0);
  atomic_store(&lost, 0);
  atomic_store(&dlh_ring_samples_lost, 0);
  atomic_store(&cost_ticks, 0);
  atomic_store(&running, 0);
  atomic_store(&sampler_cpu, 0);
  floor_skip = 1;
  gov_self = gov_proc = 0;
  /* A Python process's fork (multiprocessing: DataLoader workers): sampled from its start.
   * Other forks (a C program's helper) leave no trace unless they call CUDA. */
  if (was && py_initialized && py_initialized()) { /* the handler stays in place; the child's sampler arms timers */
    sampled_parent = 1;
    fork_tid = self_tid();
    fork_ts = dlh_py_this_ts();
    start();
  }
}

/* ---------------------------------------------------------------- the program's masks */

static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);

/* The calling thread's mask, exactly, from itself. */
static void self_mask_known(void) {
  if (!slots || !dlh_sample_sig) return;
  if (!real_pthread_sigmask)
    real_pthread_sigmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT,
                                                                             "pthread_sigmask");
  sigset_t cur;
  if (!real_pthread_sigmask || real_pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0) return;
  tslot *s = slot_find(self_tid(), 1);
  if (!s) return;
  int b = sigismember(&cur, dlh_sample_sig) == 1;
  uint32_t m = atomic_load(&s->mstate), want;
  do {
    want = ((m + M_COUNT) & ~(M_BLOCKED | M_CHANGING)) | M_KNOWN | M_FRESH | (b ? M_BLOCKED : 0);
  } while (!atomic_compare_exchange_weak(&s->mstate, &m, want));
}

/* pthread_create: each new thread tells its mask (inherited from its creator) before it runs
 * the program's code, so that no thread that blocks the signal from its start (a signal-handling
 * thread made by a creator that blocked everything) ever gets a timer. */
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
/* (Not in sanitizer builds: their pthread_create interceptor starts its own thread set-up in
 * the start routine it passes on, and this trampoline would run before it; there a thread's
 * mask is read from /proc, as for a thread made without pthread_create.) */
typedef struct start_arg { void *(*fn)(void *); void *arg; } start_arg;
static void *thread_start(void *p) {
  start_arg a = *(start_arg *)p;
  free(p);
  self_mask_known();
  atomic_store_explicit(&new_threads, 1, memory_order_release);
  return a.fn(a.arg);
}

static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
DLH_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg) {
  if (!real_pthread_create)
    real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                   void *))dlsym(RTLD_NEXT, "pthread_create");
  if (!real_pthread_create) return ENOSYS;
  start_arg *a = slots && dlh_sample_sig && !dlh_foreign_process() ? malloc(sizeof *a) : NULL;
  if (!a) return real_pthread_create(th, attr, fn, arg);
  a->fn = fn;
  a->arg = arg;
  int r = real_pthread_create(th, attr, thread_start, a);
  if (r != 0) free(a);
  return r;
}
#endif

static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);

/* Before a mask change takes effect: the calling thread's timer goes off when the change blocks
 * the signal; after it: on again when it unblocks it. */
static int mask_blocks(int how, const sigset_t *set) {
  int in = sigismember(set, dlh_sample_sig) == 1;
  if (how == SIG_BLOCK) return in ? 1 : -1;      /* -1: no change */
  if (how == SIG_UNBLOCK) return in ? 0 : -1;
  if (how == SIG_SETMASK) return in;
  return -1;
}

static tslot *mask_before(int change) {
  if (change < 0) return NULL;
  tslot *s = slot_find(self_tid(), 1);
  if (!s) return NULL;
  mask_state(s, M_CHANGING | (change == 1 ? M_BLOCKED : 0), 0);
  if (change == 1) disarm(s);
  return s;
}

/* ok: the change took effect (else the thread's mask is as it was; a block that failed leaves
 * the timer off until the next scan finds the signal unblocked) */
static void mask_after(tslot *s, int change, int ok) {
  if (!s) return;
  mask_state(s, ok ? M_KNOWN : 0, M_CHANGING | (change == 0 && ok ? M_BLOCKED : 0));
  if (change == 0 && ok && active) arm(s);
}

/* dlhook's own code (libunwind's locks, the start of its threads) changes masks for a moment:
 * those changes are not the program's. */
static int own_change(void) {
  struct dlh_thread *t = dlh_self;
  return t && (t->hot.blocked || t->stack_cache.busy);
}

static int masked_call(int (*real)(int, const sigset_t *, sigset_t *), int how,
                       const sigset_t *set, sigset_t *old) {
  /* own_change first: libunwind masks every signal around each step of a walk (its cache's
   * lock), and getpid() is a system call */
  int change = set && dlh_sample_sig && slots && !own_change() && !dlh_foreign_process()
                   ? mask_blocks(how, set) : -1;
  tslot *s = mask_before(change);
  int r = real(how, set, old);
  mask_after(s, change, r == 0);
  return r;
}

DLH_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  if (!real_pthread_sigmask)
    real_pthread_sigmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT,
                                                                             "pthread_sigmask");
  if (!real_pthread_sigmask) return ENOSYS;
  return masked_call(real_pthread_sigmask, how, set, old);
}

DLH_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  if (!real_sigprocmask)
    real_sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT,
                                                                         "sigprocmask");
  if (!real_sigprocmask) {
    errno = ENOSYS;
    return -1;
  }
  return masked_call(real_sigprocmask, how, set, old);
}
