/* dlh_internal.h — state shared by the files of the preload runtime (not by hooks). */
#ifndef DLH_INTERNAL_H
#define DLH_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "dlh_hook.h"
#include "dlh_msg.h"
#include "dlh_unwind.h"
#include "ring.h"

/* ---- settings (config.c; the table of them: dlh_settings.def) ---- */
typedef struct dlh_config {
  char output[4096];     /* DLHOOK_OUTPUT, after substitution: the trace file path */
  int enabled;           /* DLHOOK_DISABLE=1 turns everything into pass-through */
  uint64_t ring_bytes;   /* DLHOOK_RING_KB * 1024: largest ring of a thread */
  uint64_t ring_wait_ns; /* DLHOOK_RING_WAIT_MS: a full ring's wait for the writer */
  uint64_t mem_limit;    /* DLHOOK_MEM_MB: memory budget of everything dlhook holds (mem.c) */
  int fold;              /* DLHOOK_FOLD: repeats folded into FOLD records (ring.h) */
  unsigned flush_ms;     /* DLHOOK_FLUSH_MS: a frame is written at least this often */
  unsigned exit_ms;      /* DLHOOK_EXIT_MS: symbolization allowed at exit, after the last drain */
  int symbolize;         /* DLHOOK_SYMBOLIZE=0: no names while recording (`dlhook symbolize`) */
  int zstd_level;        /* DLHOOK_ZSTD_LEVEL */
  int quiet;             /* DLHOOK_QUIET=1: no informational messages (warnings still print) */
  int signals;           /* DLHOOK_SIGNALS=0: do not install SIGINT/SIGTERM flush handlers */
  int cupti;             /* DLHOOK_CUPTI=0: no CUPTI (cupti.c) */
  int cupti_noise;       /* DLHOOK_CUPTI_NOISE=1: keep the high-frequency calls only CUPTI sees */
  int nvtx;              /* DLHOOK_NVTX=0: NVTX_INJECTION64_PATH left alone (nvtx.c) */
  char nccl_events[256]; /* DLHOOK_NCCL_EVENTS: NCCL profiler plugin events (ncclprof.c) */
  int follow_exec;       /* DLHOOK_FOLLOW_EXEC=0: exec with a cleaned environment not followed */
  int rank, local_rank, world_size;
  int64_t realtime_skew_ns; /* DLHOOK_REALTIME_SKEW_NS: added to realtime anchors (tests: the
                             * clock of another host) */
  int stacks;            /* DLHOOK_STACKS: DLH_STACKS_* (dlh_unwind.h); -1 = by default */
  unsigned stack_depth;  /* DLHOOK_STACK_DEPTH: native frames kept per stack */
  char capture_range[256]; /* DLHOOK_CAPTURE_RANGE (capture.c interprets it) */
  uint64_t delay_ns;     /* DLHOOK_DELAY seconds: nothing recorded before */
  uint64_t duration_ns;  /* DLHOOK_DURATION seconds: nothing recorded after delay + duration */
  int ctl_signal;        /* DLHOOK_SIGNAL: the signal of `dlhook ctl` (default SIGUSR2) */
  int ctl_signal_set;    /* DLHOOK_SIGNAL was given */
  unsigned sample_hz;    /* DLHOOK_SAMPLE_HZ: host samples per second of a thread (0: off) */
  unsigned sample_budget; /* DLHOOK_SAMPLE_BUDGET: the sampler thread's CPU, thousandths of the process's */
  int sample;            /* DLHOOK_SAMPLE: 0 from the first CUDA call, 1 always, 2 off */
  uint64_t as_limit;     /* the soft RLIMIT_AS at start-up, 0 when unlimited (config.c) */
  int flight;            /* DLHOOK_MODE=flight: the trace kept in memory until a trigger */
  uint64_t flight_ns;    /* DLHOOK_FLIGHT_S: what the flight recorder keeps */
  uint64_t hang_ns;      /* DLHOOK_HANG_S: a call in flight this long dumps (0: never) */
  uint64_t flight_disk;  /* DLHOOK_FLIGHT_DISK_MB in bytes: all dumps of the process (0: no cap) */
} dlh_config;

extern dlh_config dlh_cfg;
void dlh_config_load(void);
void dlh_config_after_fork(void);   /* forked child: same settings, its own trace name */
/* dlh_warn, dlh_info: common/dlh_msg.h */

/* ---- rings and records: ring.h ---- */
#define DLH_MAX_LINKS 64

/* A recording thread's state, grouped by the part that owns each field. The producer's groups
 * (hot, prod) come first and stay within the first two cache lines of the page-aligned struct
 * (checked below); the words the writer thread writes (shared.tail) are on lines of their own. */
struct dlh_thread {
  struct dlh_thread_hot hot;           /* depth, blocked (dlh_hook.h): must stay first */
  /* The producer: this thread's stores into its ring on the hot path (ring.c). Only this thread
   * writes them; the writer reads the ring through buf and cap, which thread.c sets. */
  struct dlh_thread_prod {
    uint64_t *buf;                     /* ring of `cap` words, cap a power of two */
    uint64_t cap;
    uint64_t head_local;               /* the producer's view of shared.head */
    uint64_t tail_cache;               /* the producer's last view of shared.tail */
    uint64_t room_end;                 /* head_local may reach this without a look at the tail
                                          or a wrap (ring.c: reserve_words; 0: look) */
    uint64_t pending_corr;             /* the correlation id of the call being stored, set by
                                          the CUPTI callback around it (cupti.c) */
    const uint64_t *last_api;          /* the last record stored when it is an API record that
                                          later calls may fold into, else NULL */
    uint64_t *fold_rec;                /* the FOLD record after it, or NULL */
    unsigned fold_gen;                 /* dlh_trace_gen when last_api was stored */
    volatile uint32_t storing;         /* inside reserve..publish (a signal may interrupt it) */
    volatile uint32_t sampling;        /* a host sample is being stored: a drop is not a call's
                                          (sample.c counts it) */
    uint32_t no_grow;                  /* a larger ring could not be mapped: not tried again */
    volatile uint32_t smp_pending;     /* a host sample came inside the store: store_end stores
                                          it (self.smp_*, ring.c) */
    uint64_t wait_off;                 /* 1 + the tail when a wait for the writer ran out: no
                                          wait until the writer moves the tail (0: wait) */
  } prod;
  /* The thread as the system knows it (thread.c, at the thread's first recorded call). */
  struct dlh_thread_os {
    uint32_t tid;
    char name[16];
    void *altstack;                    /* dlhook's alternate signal stack of this thread, or NULL;
                                          kept for the next thread of this struct (altstack.c) */
    size_t altstack_size;
    int internal;                      /* dlhook's sampler thread: never announced (ThreadInfo) */
    void *volatile probe;              /* sigjmp_buf * while a sample reads Python frames under
                                          the fault guard (signals.c jumps back to it) */
  } os;
  /* What the producer, the writer and the thread layer tell each other, in atomics. */
  struct dlh_thread_shared {
    _Atomic uint64_t head __attribute__((aligned(64)));  /* written by the producer */
    _Atomic uint64_t tail __attribute__((aligned(64)));  /* written by the writer */
    _Atomic uint64_t dropped;          /* records lost to a full ring (ring.c) */
    _Atomic int wake_sent;             /* the producer asked the writer to drain this ring */
    _Atomic uint32_t drained;          /* futex word: bumped by the writer after a drain of this
                                          ring while the producer waits (ring.c: wait_room) */
    _Atomic int waiting;               /* the producer waits on `drained` */
    _Atomic int state;                 /* DLH_T_*: thread.c, and the writer (retired) */
  } shared;
  /* What dlhook cost this thread, kept until the ring has room to say so (ring.c). Written by
   * this thread only (its own stores and its signal handler); the writer reads the waits at
   * the final drain, hence the atomics. */
  struct dlh_thread_self {
    /* waits for the writer not yet in a WAIT record: first start, last end, count, sum (ticks) */
    _Atomic uint64_t wait_t0, wait_t1, waits, wait_sum;
    /* a host sample that came while the thread was inside its own store (sample.c sets it,
     * with prod.smp_pending; store_end writes it): ticks, weight in ns, stack id */
    uint64_t smp_tk, smp_weight;
    uint32_t smp_stack;
  } self;
  /* Call stacks: unwind/'s cache of this thread's recent stacks, used by ring.c; kept when the
   * struct is reused (emptied at attach). */
  dlh_stack_cache stack_cache;
  /* The writer thread's state of this thread (writer.c; NVTX's conversion, nvtx.c). */
  struct dlh_thread_writer {
    uint64_t *buf;                     /* the ring the writer reads: prod.buf until the producer
                                          moves to a larger ring (a GROW record, ring.h) */
    uint64_t cap;                      /* its size in words */
    int announced;                     /* ThreadInfo written */
    int has_last;                      /* the last API record taken (a FOLD record repeats it) */
    uint32_t last_fn, last_nargs, last_depth, last_stack;
    int64_t last_ret;
    uint64_t last_args[DLH_MAX_ARGS];
    uint32_t nlinks;                   /* LINK records waiting for their outer call */
    uint64_t links[DLH_MAX_LINKS];
    uint64_t taken;                    /* API and FOLD records taken (the hang watchdog, flight.c) */
    uint64_t wait_t0, wait_t1, waits, wait_sum; /* WAIT records of this visit, folded */
    uint32_t nvtx_depth;               /* open NVTX push ranges of this thread */
    struct { uint64_t t0; uint32_t msg, dom, color, cat; } nvtx[64];
  } writer;
  /* CUPTI callbacks of this thread (cupti.c). */
  struct dlh_thread_cupti {
    uint32_t depth;                    /* nesting of runtime/driver API callbacks */
    int rec;                           /* 1: the outermost callback records the call itself */
    int linked;                        /* 1: a wrapper records it (its id is a LINK record) */
    uint64_t corr;                     /* the outermost callback's correlation id (graph nodes
                                          made inside the call name it) */
    dlh_call call;
  } cupti;
  /* DLHOOK_CAPTURE_RANGE=nvtx:NAME (capture.c). */
  struct dlh_thread_capture {
    int nvtx_depth;                    /* push nesting of this thread */
    int match_depth;                   /* depth just inside this thread's open match, 0 = none */
  } capture;
  struct dlh_thread *next;             /* the global list (thread.c; push-only) */
};
/* The hot path reads dlh_thread_hot through a cast of the struct (dlh_hook.h); ring.c's fast
 * path touches hot, prod and shared.head only: the first two cache lines and head's own. */
_Static_assert(offsetof(struct dlh_thread, hot) == 0, "dlh_thread_hot must stay first");
_Static_assert(offsetof(struct dlh_thread, prod) + sizeof(struct dlh_thread_prod) <= 128,
               "the producer's fields must stay in the first two cache lines");
_Static_assert(offsetof(struct dlh_thread, shared.tail) - offsetof(struct dlh_thread, shared.head)
                   >= 64, "head and tail must be on different cache lines");
enum { DLH_T_ACTIVE = 1, DLH_T_EXITED = 2, DLH_T_RETIRED = 3,
       DLH_T_CLAIMED = 4 /* a retired struct being reused for a new thread (thread.c) */ };

/* ---- threads (thread.c) ---- */
extern _Atomic(struct dlh_thread *) dlh_threads;
/* constructor: the thread key; start: what a thread's first recorded call starts (once per
 * process; 0 = recording goes on). 0, or -1. */
int dlh_threads_init(int (*start)(void));
void dlh_threads_after_fork_child(void);

/* ---- memory budget (mem.c) ----
 * Everything dlhook allocates in the process, by part; DLHOOK_MEM_MB bounds the total (rings
 * shrink, the writer's frames shorten). Parts counted where they are allocated (rings, thread
 * structs, CUPTI buffers) or measured by the writer thread (its own buffers, the stack and
 * symbol tables of unwind/). */
enum { DLH_MEM_RINGS, DLH_MEM_THREADS, DLH_MEM_WRITER, DLH_MEM_STACKS, DLH_MEM_SYMBOLS,
       DLH_MEM_CUPTI, DLH_MEM_FLIGHT, DLH_MEM_NPARTS };
void dlh_mem_add(int part, int64_t bytes);     /* async-signal-safe */
void dlh_mem_set(int part, uint64_t bytes);    /* a part measured (writer thread) */
uint64_t dlh_mem_total(void);
int dlh_mem_fits(uint64_t bytes);              /* total + bytes within the budget */
void dlh_mem_after_fork_child(void);
struct Dlh__Trailer;
void dlh_mem_report(struct Dlh__Trailer *tr);  /* writer: budget, peak and parts (static storage) */

/* ---- clock (clock.c) ----
 * The trace clock is CLOCK_MONOTONIC; the hot path takes ticks (dlh_ticks); the writer thread
 * converts them, piecewise linearly between anchors it takes (writer thread only). */
uint64_t dlh_mono_ns(void);
uint64_t dlh_cpu_ns(clockid_t c);           /* a CPU clock in ns, 0 when unreadable */
/* the CPU clock of thread tid of this process (CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED) */
static inline clockid_t dlh_thread_clock(uint32_t tid) { return (clockid_t)((~tid << 3) | 6); }
uint64_t dlh_real_ns(void);
typedef struct { uint64_t tk, ns, rt; } dlh_anchor; /* ticks, trace clock, realtime */
dlh_anchor dlh_clock_take(void);                  /* an anchor now (the tightest of 3 tries) */
void dlh_clock_add(dlh_anchor a);                 /* a new anchor: conversions use it */
dlh_anchor dlh_clock_last(void);                  /* the anchor added last */
dlh_anchor dlh_clock_restart(void);               /* a new trace: anchors start over; the first */
uint64_t dlh_tick_ns(uint64_t ticks);             /* writer: ticks -> trace clock */
uint64_t dlh_tick_dur_ns(uint64_t t0, uint64_t ticks); /* writer: a duration from tick t0 */
/* The segment of the last conversion. Records of a ring come in tick order and an anchor is
 * added once per drain, so almost every conversion falls in the segment of the one before:
 * one compare and one multiply (rate as 32.32 fixed point) instead of a binary search over
 * the anchors and a division. Valid while no anchor was added (gen == dlh_clock_nanch). */
extern struct dlh_tick_seg { uint64_t gen, lo, hi, ns; double rate; uint64_t mult; } dlh_tick_seg;
extern uint64_t dlh_clock_nanch;
static inline uint64_t dlh_tick_seg_scale(uint64_t ticks) {
  return (uint64_t)(((unsigned __int128)ticks * dlh_tick_seg.mult) >> 32);
}
static inline int dlh_tick_seg_hit(uint64_t tk) {
  return dlh_tick_seg.gen == dlh_clock_nanch && tk - dlh_tick_seg.lo < dlh_tick_seg.hi - dlh_tick_seg.lo &&
         dlh_tick_seg.mult;
}
static inline uint64_t dlh_tick_ns_fast(uint64_t tk) {
#if defined(__x86_64__)
  if (DLH_LIKELY(dlh_tick_seg_hit(tk))) return dlh_tick_seg.ns + dlh_tick_seg_scale(tk - dlh_tick_seg.lo);
#endif
  return dlh_tick_ns(tk);
}

/* ---- writer thread (writer.c) ---- */
int dlh_writer_start(int fd);
int dlh_writer_ensure(void);                      /* start at the first event; 0 = running */
void dlh_writer_stop(int exit_reason, int sig); /* final drain + trailer; idempotent */
void dlh_writer_wake(void);                      /* ring.c; async-signal-safe: wake the writer */
extern _Atomic uint32_t dlh_writer_wake_seq;     /* ring.c: the futex word the writer sleeps on */
extern _Atomic uint64_t dlh_writer_progress;    /* ring.c: bumped by the writer per drain (wait_room) */
extern clockid_t dlh_writer_cpu_clock;          /* ring.c: the writer's CPU clock (wait_room) ... */
extern _Atomic int dlh_writer_cpu_clock_set;    /* ... once the writer set it */
extern pid_t dlh_writer_tid;                    /* ring.c: the writer thread (wait_room) */
int dlh_writer_flush_wait(unsigned timeout_ms);    /* async-signal-safe: flush and wait */
void dlh_writer_after_fork_child(void);
int dlh_writer_is_self(void);                      /* async-signal-safe: caller is the writer */
/* async-signal-safe, flight mode: asks for a dump (DLH_FLIGHT_*) and waits for it; 0, or -1
 * when not in flight mode or it did not come within timeout_ms */
int dlh_writer_dump_wait(int reason, int code, unsigned timeout_ms);

void dlh_record_link(struct dlh_thread *t, uint64_t corr);  /* ring.c */
/* ring.c: host samples that came inside a thread's own store and could not be stored after
 * it either (sample.c adds them to its lost samples) */
extern _Atomic uint64_t dlh_ring_samples_lost;
void dlh_ring_after_fork_child(void);
extern volatile unsigned dlh_trace_gen;  /* ring.c: bumped when a new trace starts (attach) */

/* ---- what a trace defines once (defs.c; writer thread) ---- */
struct dlh_encoder;
uint32_t dlh_intern(struct dlh_encoder *w, const char *s); /* StringDef id of s (0 = none) */
/* Every string interned so far, as StringDef packets into w (a flight recorder dump: their
 * first definitions may have left the ring). Returns how many. */
size_t dlh_defs_strings_put(struct dlh_encoder *w);
void dlh_def_fn(struct dlh_encoder *w, uint32_t fn);         /* FunctionDesc before first use */
int dlh_defs_start(void);                /* a trace starts: 0, or -1 (no memory) */
uint64_t dlh_defs_mem(void);             /* bytes held (the writer's part of the budget) */
void dlh_defs_new_trace(void);           /* dlhook attach, again: everything defined anew */
void dlh_defs_after_fork_child(void);

/* ---- the recorded functions and the real ones (fns.c) ----
 * id = (domain << 16) | index in the library's generated table (hooks/dlh_hooks.h), NVTX's
 * table, or 0x8000 | CUPTI callback id for a call only CUPTI saw. */
const dlh_fn_desc *dlh_fn_lookup(uint32_t id, int *domain); /* NULL: no descriptor */
void dlh_fn_set_name(uint32_t id, const char *name);  /* cupti.c: a CUPTI-only call's name */
const char *dlh_fn_name(uint32_t id);    /* descriptor's or CUPTI's name; NULL: unknown */
extern const char *const dlh_lib_sonames[]; /* by DLH_LIB_* (common/dlh_cuda_libs.def) */
/* Keeps the library that defines sym mapped for good (RTLD_NODELETE): wrappers cache real
 * functions, and a dlclose must not leave them pointing into unmapped memory. */
void dlh_pin_library(void *sym);

/* ---- NVTX (nvtx.c) ----
 * NVTX record: word 0: op (bits 0-7) | kind DLH_REC_NVTX | nwords; word 1: ticks;
 * word 2: domain handle or range id; word 3: color (low 32) | category (high 32);
 * words 4..: the message, NUL-terminated. */
enum { DLH_NVTX_PUSH = 1, DLH_NVTX_POP, DLH_NVTX_MARK, DLH_NVTX_START, DLH_NVTX_END };
#define DLH_NVTX_MAX_DEPTH 64
void dlh_nvtx_setup_injection(void);
enum { DLH_NVTX_FN_RANGE = 0, DLH_NVTX_FN_MARK = 1, DLH_NVTX_FN_STARTEND = 2 }; /* fns.c */
void dlh_nvtx_convert(struct dlh_encoder *enc, struct dlh_thread *t, const uint64_t *w, uint64_t nwords);

/* ---- NCCL's profiler plugin (ncclprof.c) ---- */
void dlh_ncclprof_setup(void);   /* constructor: NCCL_PROFILER_PLUGIN -> libdlhook.so */
void dlh_ncclprof_started(void); /* the process records: the warning of another plugin */
void dlh_ncclprof_convert(struct dlh_encoder *enc, struct dlh_thread *t, const uint64_t *w,
                          uint64_t nwords); /* writer: a DLH_REC_NCCL record */

/* ---- CUPTI (cupti.c) ---- */
void dlh_corr_map(uint64_t corr, uint64_t outer);  /* writer: GPU work of corr -> outer call */
void dlh_cupti_setup_injection(void);   /* constructor: point CUDA_INJECTION64_PATH at us */
void dlh_cupti_lazy_init(void);         /* first intercepted call when another tool injects */
void dlh_cupti_start(void);             /* InitializeInjection (runtime.c): set CUPTI up */
void dlh_cupti_flush(int forced);       /* ask CUPTI to deliver its activity buffers */
/* writer thread: converts the delivered buffers into enc; returns the records converted */
int dlh_cupti_drain(struct dlh_encoder *enc);
uint64_t dlh_cupti_dropped(void);       /* activity records CUPTI dropped */
void dlh_cupti_after_fork_child(void);

/* ---- call stacks (unwind/dlh_unwind.h; stacks.c) ---- */
/* The unwind service's settings from dlh_cfg, with the runtime's callbacks. */
const dlh_unwind_settings *dlh_stacks_settings(void);

/* ---- exec (exec.c) ---- */
void dlh_exec_init(void);               /* constructor: what exec must carry over */
void dlh_exec_resolve(void);            /* constructor, first of all: the real exec functions */

/* ---- capture ranges (capture.c) ---- */
enum { DLH_CAPTURE_NONE = 0, DLH_CAPTURE_PROFILER, DLH_CAPTURE_NVTX, DLH_CAPTURE_SIGNAL };
extern int dlh_capture_mode;            /* DLH_CAPTURE_* from DLHOOK_CAPTURE_RANGE */
extern int dlh_capture_filtering;       /* a window is in use: GPU records need a recorded call */
void dlh_capture_init(void);            /* constructor, after dlh_config_load */
/* NVTX hot path (nvtx.c), in nvtx:NAME mode: a push/start of NAME opens the window; returns 1
 * when this pop/end closes a matching range: call dlh_capture_nvtx_close() after storing it. */
int dlh_capture_nvtx(int op, uint64_t aux, const char *msg);
void dlh_capture_nvtx_close(void);
/* writer thread: the window marks into enc, as ClockAnchors (CAPTURE_OPEN, CAPTURE_CLOSE) */
void dlh_capture_emit(struct dlh_encoder *enc);
void dlh_capture_keep_corr(uint64_t corr); /* writer: a recorded call's correlation id */
void dlh_capture_request(int req);      /* `dlhook ctl`: 1 open, 2 close, 0 toggle (signal-safe) */

/* ---- flight recorder (flight.c; DLHOOK_MODE=flight) ----
 * Writer thread unless said otherwise. */
struct Dlh__FlightThread;
struct Dlh__FlightComm;
enum { DLH_FLIGHT_CTL = 0, DLH_FLIGHT_SIGNAL = 1, DLH_FLIGHT_EXIT = 2, DLH_FLIGHT_HANG = 3,
       DLH_FLIGHT_OOM = 4, DLH_FLIGHT_JOB = 5 }; /* FlightReason (dlhook.proto) */
/* a finished frame from the encoder's sink: kept (definitions) or into the ring. 0 or -1 */
int dlh_flight_add(const uint8_t *frame, size_t len, int kept, uint64_t now_ns);
typedef struct dlh_flight_info {
  uint32_t frames;
  uint64_t evicted, ring_bytes, defs_bytes, first_ns;
  uint64_t newest_bytes;                 /* the newest event frame's */
} dlh_flight_info;
void dlh_flight_stats(dlh_flight_info *fi);
void dlh_flight_hold(int on);            /* 1: frames added now drop none by age (a dump) */
int dlh_flight_write_defs(int fd);       /* the file header and the definition frames: 0 or -1 */
/* the event frames, oldest first, at most max bytes (the newest that fit; 0: all): 0 or -1.
 * *frames: how many were written, *first_ns: when the first of them starts */
int dlh_flight_write_ring(int fd, uint64_t max, uint32_t *frames, uint64_t *first_ns);
int dlh_flight_open(char *path, size_t cap); /* a new dump file (O_EXCL): fd, or -1 */
unsigned dlh_flight_dumps(void);         /* dumps written so far */
void dlh_flight_start(uint64_t start_ns); /* the trace starts: the job's request as it stands */
/* async-signal-safe: a dump is wanted (ctl, SIGINT/SIGTERM with a handler); wakes the writer */
void dlh_flight_request(int reason, int sig);
int dlh_flight_take_request(int *sig);   /* the reason asked for, or -1 */
void dlh_flight_exit_status(int status); /* async-signal-safe: the status exit() was given */
int dlh_flight_get_exit_status(void);
uint32_t dlh_flight_announce(int reason); /* every process of the job dumps: the generation */
/* another process asked the job to dump: 1, with its generation, pid and rank */
int dlh_flight_poll_job(uint32_t *gen, uint32_t *pid, int *rank);
/* a thread with one call in flight for DLHOOK_HANG_S (newly): 1, its tid and since when */
int dlh_flight_watch(uint64_t now_ns, uint32_t *tid, uint64_t *since_ns);
void dlh_flight_sample(uint32_t tid, uint64_t ns, uint32_t kind, uint32_t stack, uint32_t state);
void dlh_flight_nccl(uint32_t fn, const uint64_t *args, uint32_t nargs, uint64_t end_ns,
                     uint32_t tid, uint32_t stack);
size_t dlh_flight_threads(struct Dlh__FlightThread *out, size_t max);
size_t dlh_flight_comms(struct Dlh__FlightComm *out, size_t max);
void dlh_flight_after_fork_child(void);

/* ---- `dlhook ctl` (ctl.c) ---- */
#include <signal.h>
extern int dlh_ctl_installed;            /* dlhook's DLHOOK_SIGNAL handler is in place */
void dlh_ctl_init(void);                 /* constructor, after dlh_capture_init */
/* signals.c's sigaction() for DLHOOK_SIGNAL while dlh_ctl_installed */
int dlh_ctl_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int dlh_capture_corr_kept(uint64_t corr);  /* writer: whether GPU work of corr is kept */


/* ---- host sampling (sample.c) ---- */
/* What the writer calls of sample.c (wired by runtime.c: no link from writer.c to sample.c). */
typedef struct dlh_sample_ops {
  void (*on_call)(uint32_t fn);
  uint64_t (*lost)(void);
  uint64_t (*cost_ticks)(void);
  void (*stop)(void);
  void (*reset_for_attach)(void);
  int (*starting)(void); /* the sampler thread is starting the trace (its deferred start) */
  uint64_t (*thread_cpu_ns)(void); /* the sampler thread's CPU time */
} dlh_sample_ops;
void dlh_writer_sampling(const dlh_sample_ops *ops); /* writer.c */
extern int dlh_sample_sig;               /* the signal of the CPU-time timers (0: none) */
/* constructor: settings; DLHOOK_SAMPLE=always starts. start_trace: dlh_writer_ensure (the
 * sampler thread of a process that did not call CUDA yet starts the trace with it) */
void dlh_sample_init(int (*start_trace)(void));
void dlh_sample_on_call(uint32_t fn);    /* writer: a recorded call (the first CUDA call starts) */
void dlh_sample_stop(void);              /* async-signal-safe: no sample from now on */
int dlh_sample_starting(void);           /* the sampler thread is inside start_trace */
void dlh_sample_hold(int d);             /* +1: an exec is under way, no deferred start; -1 */
void dlh_sample_after_fork_child(void);  /* a sampled parent's child is sampled from its start */
void dlh_sample_reset_for_attach(void);  /* after a trace of dlhook attach ended */
uint64_t dlh_sample_lost(void);          /* samples not taken or not stored */
uint64_t dlh_sample_cost_ticks(void);    /* ticks spent in the on-CPU handler */
uint64_t dlh_sample_thread_cpu_ns(void); /* the sampler thread's CPU time (as of its last scan) */
unsigned dlh_sample_rate(void);          /* samples per second while sampling, else 0 */
/* signals.c's sigaction() for dlh_sample_sig: the program takes the signal, sampling ends */
int dlh_sample_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                         int (*real)(int, const struct sigaction *, struct sigaction *));
/* thread.c: a thread's state for its first sample (no services started: they run) */
dlh_thread *dlh_thread_attach_sampled(void);

/* ---- signals (signals.c) ---- */
void dlh_signals_install(void);
/* dlhook's front handler is the kernel's action for SIGSEGV and SIGBUS (the fault guard works) */
int dlh_signals_fault_front(void);
/* The program's sigaction() for sig goes to fn from now on (sample.c: its timer signal). */
void dlh_signals_route(int sig, int (*fn)(int, const struct sigaction *, struct sigaction *,
                                          int (*)(int, const struct sigaction *,
                                                  struct sigaction *)));

/* ---- alternate signal stacks (altstack.c) ---- */
void dlh_altstack_init(void);            /* start-up: the size */
void *dlh_altstack_setup(void *kept, size_t *size); /* async-signal-safe; the stack it keeps */
int dlh_altstack_release(void *stack, size_t size);  /* 1: free for the next thread */

/* ---- file descriptors (fds.c) ---- */
int dlh_fd_floor(void);                  /* dlhook's fds go at or above this number (-1: none) */
int dlh_fd_move_up(int fd);              /* moves an fd of dlhook's above the program's range */
void dlh_fds_resolve(void);              /* constructor, first: the real pipe2 */
void dlh_fds_init(void);                 /* constructor, after dlh_stacks_init: libunwind's code */

/* output.c: the trace's path, walked without following another user's symlinks (whatever
 * fs.protected_symlinks says); nothing is created in /dev or on a pseudo file system. */
enum { DLH_OUTPUT_FILE, DLH_OUTPUT_NULL, DLH_OUTPUT_SPECIAL };
/* openat(2) of path's last component (O_NOFOLLOW and O_CLOEXEC added) in its directory, reached
 * through trusted symlinks only (EPERM otherwise); with O_CREAT, EPERM in a device directory.
 * Returns the fd, or -1 with errno. */
int dlh_output_open(const char *path, int flags, mode_t mode);
/* mkdir(2) of dir's last component, reached the same way (EPERM in a device directory). */
int dlh_output_mkdir(const char *dir, mode_t mode);
/* What path names as an output: DLH_OUTPUT_NULL for /dev/null, DLH_OUTPUT_SPECIAL for a device,
 * FIFO, socket or directory, a name in a device directory or behind another user's directory
 * symlink (*what names it for a message: "a FIFO", "in a device directory"), DLH_OUTPUT_FILE
 * otherwise (a file to create, or one that exists). */
int dlh_output_kind(const char *path, const char **what);

/* ---- process identity (process.c) ----
 * dlh_pid is the traced process. A vfork child (CPython's subprocess) or a raw clone runs in
 * (a copy of) our memory with another pid: it must never write state shared with the traced
 * process (signal table, writer, rings). */
extern pid_t dlh_pid;
int dlh_foreign_process(void);           /* async-signal-safe: getpid() != dlh_pid */

extern int dlh_attach_mode;              /* loaded late by `dlhook attach` */
extern void *dlh_attach_handle;          /* attach.c: dlhook's own handle while attached */
int dlh_attach_detect(void);             /* constructor: 1 = loaded by attach, do nothing */
/* Other copies of libdlhook.so in the process (a renamed copy, two builds in LD_PRELOAD), by the
 * order of the link map (dlsym.c): the path of one loaded before this copy (which then records
 * the process while this one passes every call through), or of one loaded after it at start-up;
 * NULL when there is none. */
const char *dlh_earlier_copy(void);
const char *dlh_later_copy(void);
void *dlh_attach_wrapper(const char *name); /* dlhook's own definition of name (NULL: none) */

/* ---- dlhook attach (attach.c; the injector is command/cmd/attach.c) ---- */
int dlh_runtime_late_init(void);         /* runtime.c: the constructor's run-time part, late */
void dlh_config_set_output(const char *o); /* config.c: output as DLHOOK_OUTPUT=o would set it */
int dlh_cupti_attach(void);              /* cupti.c: subscribe now; 0 = active */
void dlh_cupti_detach(void);             /* cupti.c: flush, unsubscribe, ready for a new trace */
void dlh_writer_reset_for_attach(void);  /* writer.c: after dlh_writer_stop: a new trace may start */
/* writer.c: the next trace is one of dlhook attach; notes: what could not be hooked (kept by
 * the caller until the trace is finished) */
void dlh_writer_attached(char **notes, size_t n);
void dlh_cupti_new_trace(void);          /* cupti.c: the string table of a new trace starts empty */

#endif
