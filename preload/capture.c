/* capture.c — capture ranges: record only part of a run.
 *
 * DLHOOK_CAPTURE_RANGE selects what opens and closes the capture window:
 *   cudaProfilerApi   between cudaProfilerStart and cudaProfilerStop (every such pair; the
 *                     Start and Stop calls themselves are recorded, as the window's edges)
 *   nvtx:NAME[:N]     inside NVTX ranges (push/pop or start/end) whose message is NAME
 *                     (NAME ending in '*' matches a prefix); with N, only the first N ranges
 *   signal            start/stop from outside: `dlhook ctl PID start|stop|toggle`, which sends
 *                     DLHOOK_SIGNAL (default SIGUSR2) with sigqueue (value 1 start, 2 stop);
 *                     a plain `kill -USR2 PID` toggles
 * DLHOOK_DELAY=S / DLHOOK_DURATION=S (seconds, decimals allowed) gate any of these, or the whole
 * run when no range is given: nothing is recorded before S seconds after the process started,
 * nor after DELAY + DURATION seconds. DLHOOK_SIGNAL set explicitly also enables `dlhook ctl` when
 * no range is given (recording then starts open).
 *
 * The hot path (dlh_call_begin) tests dlh_capture_closed next to dlh_recording: outside a window
 * a hook costs one predictable branch. dlh_capture_closed is a bit set (one bit per reason the
 * window is closed) changed with atomic or/and, so triggers from program threads, the timer
 * thread and the signal handler never lose each other's updates; 0 means "open".
 *
 * Each transition is queued (lock-free, async-signal-safe) with its tick; the writer thread
 * writes it as a ClockAnchor of kind CAPTURE_OPEN or CAPTURE_CLOSE (ClockAnchorKind). GPU
 * records are kept only when the call that caused them (its correlation id) was recorded. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "dlh_format.h"
#include "dlh_internal.h"

volatile unsigned dlh_capture_closed;   /* 0 = open; bits: CLOSED_* */
int dlh_capture_mode;                   /* DLH_CAPTURE_* */
int dlh_capture_filtering;              /* GPU records are filtered by recorded corr ids */

enum {
  CLOSED_MODE = 1u,     /* the range (profiler API, NVTX, signal) is not open */
  CLOSED_DELAY = 2u,    /* before DLHOOK_DELAY */
  CLOSED_DONE = 4u,     /* after DLHOOK_DELAY + DLHOOK_DURATION */
};

/* ---------------------------------------------------------------- window marks */

#define NMARKS 4096
static struct { uint64_t ticks; _Atomic uint32_t ready; uint32_t open; } marks[NMARKS];
static _Atomic uint32_t nmarks;          /* reserved */
static uint32_t marks_written;           /* writer */

static void mark(int open) {
  uint32_t i = atomic_fetch_add(&nmarks, 1);
  if (i >= NMARKS) return;               /* that many windows: the rest are not marked */
  marks[i].ticks = dlh_ticks();
  marks[i].open = (uint32_t)open;
  atomic_store_explicit(&marks[i].ready, 1, memory_order_release);
  dlh_writer_wake();
}

/* Sets or clears closed bits; queues a mark when the window opens or closes. Async-signal-safe. */
static void set_closed(unsigned bits, int closed) {
  unsigned old = closed ? __atomic_fetch_or(&dlh_capture_closed, bits, __ATOMIC_SEQ_CST)
                        : __atomic_fetch_and(&dlh_capture_closed, ~bits, __ATOMIC_SEQ_CST);
  unsigned now = closed ? (old | bits) : (old & ~bits);
  if ((old == 0) != (now == 0)) mark(now == 0);
}

void dlh_capture_emit(struct dlh_encoder *enc) {
  uint32_t n = atomic_load(&nmarks);
  if (n > NMARKS) n = NMARKS;
  while (marks_written < n &&
         atomic_load_explicit(&marks[marks_written].ready, memory_order_acquire)) {
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__ClockAnchor c = DLH__CLOCK_ANCHOR__INIT;
    c.has_trace_ns = c.has_realtime_ns = c.has_ticks = c.has_kind = 1;
    c.ticks = marks[marks_written].ticks;
    c.trace_ns = dlh_tick_ns(c.ticks);
    /* realtime of the same moment: now minus how long ago it was */
    uint64_t mono = dlh_mono_ns(), real = dlh_real_ns();
    c.realtime_ns = real - (mono > c.trace_ns ? mono - c.trace_ns : 0);
    c.kind = marks[marks_written].open ? DLH__CLOCK_ANCHOR_KIND__CAPTURE_OPEN
                                         : DLH__CLOCK_ANCHOR_KIND__CAPTURE_CLOSE;
    p.data_case = DLH__PACKET__DATA_ANCHOR;
    p.anchor = &c;
    dlh_enc_packet(enc, &p);
    marks_written++;
  }
}

/* ---------------------------------------------------------------- GPU filter (writer) */

/* Correlation ids of recorded calls, direct-mapped (CUPTI hands out increasing ids). Noted by
 * the CUPTI callback when a recorded call enters, before any GPU work of it can exist (a
 * synchronous copy's record can be delivered before the call returns), and by the writer. */
#define KEEP_SIZE (1u << 20)
static uint64_t *keep;

void dlh_capture_keep_corr(uint64_t corr) {
  if (keep && corr) __atomic_store_n(&keep[corr & (KEEP_SIZE - 1)], corr, __ATOMIC_RELAXED);
}

int dlh_capture_corr_kept(uint64_t corr) {
  return corr && keep && __atomic_load_n(&keep[corr & (KEEP_SIZE - 1)], __ATOMIC_RELAXED) == corr;
}

/* ---------------------------------------------------------------- cudaProfilerApi */

void dlh_capture_profiler(int start) {
  if (dlh_capture_mode != DLH_CAPTURE_PROFILER) return;
  set_closed(CLOSED_MODE, !start);
}

/* ---------------------------------------------------------------- nvtx:NAME[:N] */

static char nvtx_name[256];
static size_t nvtx_len;
static int nvtx_prefix;                  /* NAME ended in '*' */
static unsigned nvtx_limit;              /* 0 = every range */
static _Atomic unsigned nvtx_started;    /* matching ranges opened so far */
static _Atomic int nvtx_open;            /* matching ranges open now (all threads) */
#define NVTX_IDS 64
static _Atomic uint64_t nvtx_ids[NVTX_IDS]; /* start/end ranges that match, open now */

static int nvtx_matches(const char *msg) {
  if (!msg) return 0;
  if (nvtx_prefix) return strncmp(msg, nvtx_name, nvtx_len) == 0;
  return strcmp(msg, nvtx_name) == 0;
}

static int nvtx_take(void) {
  unsigned n = atomic_fetch_add(&nvtx_started, 1);
  if (nvtx_limit && n >= nvtx_limit) return 0;
  if (atomic_fetch_add(&nvtx_open, 1) == 0) set_closed(CLOSED_MODE, 0);
  return 1;
}

static void nvtx_release(void) {
  if (atomic_fetch_sub(&nvtx_open, 1) == 1) set_closed(CLOSED_MODE, 1);
}

int dlh_capture_nvtx(int op, uint64_t aux, const char *msg) {
  /* push/pop nesting is per thread (the thread struct: its ring is set up now if need be) */
  struct dlh_thread *t = dlh_self;
  if (!t && (op == DLH_NVTX_PUSH || op == DLH_NVTX_POP)) t = dlh_thread_attach();
  switch (op) {
    case DLH_NVTX_PUSH:
      if (!t) return 0;
      t->capture.nvtx_depth++;
      if (!t->capture.match_depth && nvtx_matches(msg) && nvtx_take())
        t->capture.match_depth = t->capture.nvtx_depth;
      return 0;
    case DLH_NVTX_POP:
      if (!t || t->capture.nvtx_depth == 0) return 0;
      if (t->capture.match_depth && t->capture.nvtx_depth-- == t->capture.match_depth) {
        t->capture.match_depth = 0;
        return 1;
      }
      return 0;
    case DLH_NVTX_START:
      if (nvtx_matches(msg)) {
        for (int i = 0; i < NVTX_IDS; i++) {
          uint64_t z = 0;
          if (atomic_compare_exchange_strong(&nvtx_ids[i], &z, aux)) {
            if (!nvtx_take()) atomic_store(&nvtx_ids[i], 0);
            break;
          }
        }
      }
      return 0;
    case DLH_NVTX_END:
      for (int i = 0; i < NVTX_IDS; i++) {
        uint64_t id = aux;
        if (aux && atomic_compare_exchange_strong(&nvtx_ids[i], &id, 0)) return 1;
      }
      return 0;
  }
  return 0;
}

void dlh_capture_nvtx_close(void) { nvtx_release(); }

/* ---------------------------------------------------------------- on demand (signal) */

/* `dlhook ctl` (ctl.c's DLHOOK_SIGNAL handler): 1 opens the window, 2 closes it, 0 toggles.
 * Async-signal-safe. */
void dlh_capture_request(int req) {
  if (req == 1) set_closed(CLOSED_MODE, 0);
  else if (req == 2) set_closed(CLOSED_MODE, 1);
  else set_closed(CLOSED_MODE, !(__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED) & CLOSED_MODE));
}

/* ---------------------------------------------------------------- delay / duration */

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static uint64_t delay_ns, duration_ns;

static void *timer_main(void *arg) {
  (void)arg;
  static struct dlh_thread self_blocked;  /* nothing this thread calls is recorded */
  self_blocked.hot.blocked = 1;
  dlh_self = &self_blocked;
  if (delay_ns) {
    sleep_ns(delay_ns);
    set_closed(CLOSED_DELAY, 0);
  }
  if (duration_ns) {
    sleep_ns(duration_ns);
    set_closed(CLOSED_DONE, 1);
  }
  return NULL;
}

/* ---------------------------------------------------------------- fork */

/* The child writes a trace of its own: its marks start afresh, with an "open" mark when it
 * starts inside a window. (A pending DLHOOK_DELAY/DURATION timer does not survive fork.) */
static void fork_child(void) {
  atomic_store(&nmarks, 0);
  marks_written = 0;
  for (int i = 0; i < NMARKS; i++) atomic_store_explicit(&marks[i].ready, 0, memory_order_relaxed);
  if (dlh_capture_filtering && !__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED)) mark(1);
}

/* ---------------------------------------------------------------- set-up */

void dlh_capture_init(void) {
  const char *r = dlh_cfg.capture_range;
  unsigned closed = 0;
  if (!r[0] || !strcasecmp(r, "none")) {
    dlh_capture_mode = DLH_CAPTURE_NONE;
  } else if (!strcasecmp(r, "cudaProfilerApi")) {
    dlh_capture_mode = DLH_CAPTURE_PROFILER;
  } else if (!strncasecmp(r, "nvtx:", 5) && r[5]) {
    dlh_capture_mode = DLH_CAPTURE_NVTX;
    size_t rl = strnlen(r + 5, sizeof nvtx_name - 1);
    memcpy(nvtx_name, r + 5, rl);
    nvtx_name[rl] = 0;
    char *c = strrchr(nvtx_name, ':');
    if (c && c[1] && strspn(c + 1, "0123456789") == strlen(c + 1)) {
      nvtx_limit = (unsigned)strtoul(c + 1, NULL, 10);
      *c = 0;
    }
    nvtx_len = strlen(nvtx_name);
    if (nvtx_len && nvtx_name[nvtx_len - 1] == '*') { nvtx_prefix = 1; nvtx_name[--nvtx_len] = 0; }
  } else if (!strcasecmp(r, "signal") || !strcasecmp(r, "manual")) {
    dlh_capture_mode = DLH_CAPTURE_SIGNAL;
  } else {
    dlh_warn("ignoring DLHOOK_CAPTURE_RANGE='%.64s' (expected cudaProfilerApi, nvtx:NAME[:N] or "
             "signal); recording everything", r);
    dlh_capture_mode = DLH_CAPTURE_NONE;
  }
  if (dlh_capture_mode != DLH_CAPTURE_NONE) closed |= CLOSED_MODE;
  delay_ns = dlh_cfg.delay_ns;
  duration_ns = dlh_cfg.duration_ns;
  if (delay_ns) closed |= CLOSED_DELAY;
  __atomic_store_n(&dlh_capture_closed, closed, __ATOMIC_RELAXED);
  /* dlhook attach: GPU work is kept only for the calls recorded in the attach window (a kernel
   * launched just after detach is not in the trace without its call) */
  dlh_capture_filtering = dlh_capture_mode != DLH_CAPTURE_NONE || delay_ns || duration_ns ||
                          dlh_cfg.ctl_signal_set || dlh_attach_mode;
  if (dlh_capture_filtering) {
    void *m = mmap(NULL, KEEP_SIZE * sizeof *keep, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    keep = m == MAP_FAILED ? NULL : m; /* without it, GPU records of windows are dropped */
  }
  if (dlh_capture_filtering) pthread_atfork(NULL, NULL, fork_child);
  if (dlh_capture_filtering && !closed) mark(1); /* open from the start: every window has its mark */
  if (delay_ns || duration_ns) {
    pthread_t th;
    pthread_attr_t a;
    sigset_t all, old;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);  /* the timer thread takes no signals */
    if (pthread_create(&th, &a, timer_main, NULL) != 0) {
      dlh_warn("cannot start the DLHOOK_DELAY/DLHOOK_DURATION timer; ignoring them");
      set_closed(CLOSED_DELAY, 0);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
  }
}
