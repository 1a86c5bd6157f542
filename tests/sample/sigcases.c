/* sigcases.c — programs that handle signals, timers, threads and children themselves, for the
 * host-sampling safety tests (tests/sample/t_sample_*.sh): each mode prints what the program
 * observed, deterministically, and exits 0 when that was what it expected (1 otherwise); the
 * tests run each mode bare and under dlhook with a 1 kHz sampling rate and compare. Every mode
 * first calls cudaGetDeviceCount (sampling starts at the first CUDA call) and keeps CPU-burning
 * threads running, so that dlhook's CPU-time timers fire all along.
 *   sigcases sigwait [N] all signals blocked (in main, before the threads start), a signal
 *                        thread burns CPU and takes signals with sigtimedwait and sigwaitinfo
 *                        on the full set, as a program's signal-handling thread does: it must
 *                        get exactly the N (40) SIGUSR1s main sends, never another signal
 *   sigcases prof        its own SIGPROF handler with setitimer(ITIMER_PROF) and a SIGALRM
 *                        handler with ITIMER_REAL, both 10 ms, 25 signals each: the counts
 *                        must follow the process's CPU time and the wall time (loosely: under
 *                        load the kernel's ticks and merged SIGALRMs move them), the handlers
 *                        and the timer read back as set
 *   sigcases vfork       vfork + execve (/bin/true, /bin/false) and vfork + _exit(code), while
 *                        two threads burn CPU: every status as expected
 *   sigcases fork        a CPU-burning thread forks 12 times; each child burns 10 ms of CPU,
 *                        then exits with a code (exit or _exit); the parent waits: every
 *                        status as expected
 *   sigcases threads     200 short CPU-burning threads created and joined (4 at a time),
 *                        ending by return or pthread_exit: every result as expected
 *   sigcases rt          handlers (SA_SIGINFO) on every real-time signal SIGRTMIN..SIGRTMAX,
 *                        then rounds of sigqueue to itself of each of them (with a value) while
 *                        burning CPU: each handler runs exactly once per round with its value,
 *                        never for a signal the program did not send; the handlers read back
 *   sigcases suspend     a thread blocks every signal, burns CPU, then waits in sigsuspend or
 *                        ppoll with an empty mask (everything unblocked while it waits): it
 *                        must wake up exactly for the SIGUSR1s main sends (sigsuspend), and
 *                        ppoll times out (0) when none is pending */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void burn(uint64_t ns) {
  uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile unsigned x = 1;
  while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 200; i++) x = x * 1103515245u + 12345u;
}

static atomic_int stop;
static void *burner(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) burn(2000000);
  return NULL;
}
static pthread_t burners[2];
static void start_burners(void) {
  for (int i = 0; i < 2; i++) pthread_create(&burners[i], NULL, burner, NULL);
}
static void stop_burners(void) {
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(burners[i], NULL);
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) && errno == EINTR) {}
}

/* ---------------------------------------------------------------- sigwait */

static int SIGWAIT_N = 40; /* sigcases sigwait [N] */
static atomic_int sw_got; /* SIGUSR1s the signal thread took */
static int sw_other[NSIG], sw_eintr, sw_spurious;

static void *signal_thread(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  int i = 0;
  while (atomic_load(&sw_got) < SIGWAIT_N) {
    burn(500000); /* 0.5 ms of CPU with every signal blocked; most of the time it waits */
    siginfo_t si;
    int r;
    if (i++ % 2) {
      struct timespec t = {0, 3000000};
      r = sigtimedwait(&all, &si, &t);
      if (r < 0 && errno == EAGAIN) continue;
    } else {
      r = sigwaitinfo(&all, &si); /* main sends the next SIGUSR1 once we took the last one */
    }
    if (r < 0) {
      if (errno == EINTR) sw_eintr++;
      else sw_spurious++;
    } else if (r == SIGUSR1) {
      atomic_fetch_add(&sw_got, 1);
    } else if (r > 0 && r < NSIG) {
      sw_other[r]++;
    }
  }
  return NULL;
}

static int mode_sigwait(void) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* every thread from here on inherits it */
  start_burners();
  pthread_t st;
  pthread_create(&st, NULL, signal_thread, NULL);
  for (int n = 0; n < SIGWAIT_N; n++) {
    kill(getpid(), SIGUSR1);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    while (atomic_load(&sw_got) <= n && now_ns(CLOCK_MONOTONIC) - t0 < 5000000000u) sleep_ms(1);
    burn(500000);
  }
  pthread_join(st, NULL);
  stop_burners();
  int other = 0;
  printf("sigwait: SIGUSR1 sent %d, taken %d\n", SIGWAIT_N, atomic_load(&sw_got));
  for (int s = 1; s < NSIG; s++)
    if (sw_other[s]) { printf("sigwait: other signal %d taken %d times\n", s, sw_other[s]); other++; }
  printf("sigwait: EINTR %d, errors %d\n", sw_eintr, sw_spurious);
  return atomic_load(&sw_got) == SIGWAIT_N && !other && !sw_eintr && !sw_spurious ? 0 : 1;
}

/* ---------------------------------------------------------------- prof */

static volatile sig_atomic_t n_prof, n_alrm, bad_code;
static void on_prof(int sig, siginfo_t *si, void *uc) {
  (void)sig; (void)uc;
  if (si->si_code != SI_KERNEL) bad_code = 1;
  n_prof++;
}
static void on_alrm(int sig, siginfo_t *si, void *uc) {
  (void)sig; (void)uc;
  if (si->si_code != SI_KERNEL) bad_code = 1;
  n_alrm++;
}

static int mode_prof(void) {
  struct sigaction sa = {0}, back;
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  sa.sa_sigaction = on_alrm;
  sigaction(SIGALRM, &sa, NULL);
  int ok = 1;
  sigaction(SIGPROF, NULL, &back);
  printf("prof: SIGPROF handler reads back: %s\n", back.sa_sigaction == on_prof ? "yes" : "no");
  ok &= back.sa_sigaction == on_prof;
  /* ITIMER_PROF: process CPU time, all threads; here only main burns (no burner threads, so
   * that the count is easy to predict from CLOCK_PROCESS_CPUTIME_ID, dlhook's threads included) */
  struct itimerval it = {{0, 10000}, {0, 10000}}, rb;
  uint64_t c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  setitimer(ITIMER_PROF, &it, NULL);
  getitimer(ITIMER_PROF, &rb);
  printf("prof: ITIMER_PROF interval reads back: %s\n",
         rb.it_interval.tv_sec == 0 && rb.it_interval.tv_usec == 10000 ? "yes" : "no");
  while (n_prof < 25) burn(1000000);
  struct itimerval zero = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &zero, NULL);
  long cpu_ticks = (long)((now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 10000000u);
  /* loose: under load the kernel charges CPU time and checks the timer at its ticks, and
   * SIGPROF comes up to half again as often as CLOCK_PROCESS_CPUTIME_ID says; what must not
   * happen is a timer taken away (too few) or signals the program did not ask for (twice) */
  int prof_ok = n_prof >= cpu_ticks / 2 - 3 && n_prof <= 2 * cpu_ticks + 3;
  printf("prof: SIGPROF count follows the process CPU time: %s\n", prof_ok ? "yes" : "no");
  if (!prof_ok) fprintf(stderr, "prof: %d SIGPROF for %ld ticks of CPU time\n", (int)n_prof, cpu_ticks);
  ok &= prof_ok;
  /* ITIMER_REAL with burner threads next to it; main sleeps and burns */
  start_burners();
  uint64_t w0 = now_ns(CLOCK_MONOTONIC);
  setitimer(ITIMER_REAL, &it, NULL);
  while (n_alrm < 25) { burn(300000); sleep_ms(1); }
  setitimer(ITIMER_REAL, &zero, NULL);
  long wall_ticks = (long)((now_ns(CLOCK_MONOTONIC) - w0) / 10000000u);
  stop_burners();
  /* never more than the wall time allows; fewer when the process waits for a CPU for more than
   * 10 ms (a second SIGALRM pending merges with the first) */
  int real_ok = n_alrm <= wall_ticks + 3 && n_alrm >= wall_ticks / 4 - 3;
  printf("prof: SIGALRM count follows the wall time: %s\n", real_ok ? "yes" : "no");
  if (!real_ok) fprintf(stderr, "prof: %d SIGALRM for %ld ticks of wall time\n", (int)n_alrm, wall_ticks);
  ok &= real_ok;
  printf("prof: si_code SI_KERNEL in every handler call: %s\n", bad_code ? "no" : "yes");
  ok &= !bad_code;
  return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- vfork, fork */

static int mode_vfork(void) {
  start_burners();
  int n = 60, ok_exec = 0, ok_exit = 0;
  for (int i = 0; i < n; i++) {
    burn(200000);
    int want = i % 2;
    pid_t p = vfork();
    if (p == 0) {
      char *const args[] = {want ? "/bin/false" : "/bin/true", NULL};
      execv(args[0], args);
      _exit(127);
    }
    int status;
    if (p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == want)
      ok_exec++;
    int code = 10 + i % 7;
    p = vfork();
    if (p == 0) _exit(code);
    if (p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == code)
      ok_exit++;
  }
  stop_burners();
  printf("vfork+exec: %d of %d as expected\nvfork+_exit: %d of %d as expected\n", ok_exec, n,
         ok_exit, n);
  return ok_exec == n && ok_exit == n ? 0 : 1;
}

static int fork_ok;
static void *forking_thread(void *arg) {
  (void)arg;
  int n = 12;
  for (int i = 0; i < n; i++) {
    burn(3000000);
    int code = 20 + i;
    pid_t p = fork();
    if (p == 0) {
      burn(10000000); /* the child burns 10 ms of CPU */
      if (i % 2) _exit(code);
      exit(code);
    }
    int status;
    if (p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == code)
      fork_ok++;
  }
  return NULL;
}

static int mode_fork(void) {
  start_burners();
  pthread_t t;
  pthread_create(&t, NULL, forking_thread, NULL);
  pthread_join(t, NULL);
  stop_burners();
  printf("fork from a burning thread: %d of 12 children exited as expected\n", fork_ok);
  return fork_ok == 12 ? 0 : 1;
}

/* ---------------------------------------------------------------- threads */

static void *short_thread(void *arg) {
  intptr_t i = (intptr_t)arg;
  burn(1000000 + (uint64_t)(i % 4) * 700000); /* 1 to 3.1 ms */
  if (i % 3 == 0) pthread_exit((void *)(i * 7));
  return (void *)(i * 7);
}

static int mode_threads(void) {
  int n = 200, ok = 0;
  for (int i = 0; i < n; i += 4) {
    pthread_t t[4];
    for (int j = 0; j < 4; j++) pthread_create(&t[j], NULL, short_thread, (void *)(intptr_t)(i + j));
    for (int j = 0; j < 4; j++) {
      void *r;
      if (pthread_join(t[j], &r) == 0 && r == (void *)(intptr_t)((i + j) * 7)) ok++;
    }
  }
  printf("threads: %d of %d joined with their result\n", ok, n);
  return ok == n ? 0 : 1;
}

/* ---------------------------------------------------------------- rt */

#define RT_ROUNDS 30
static atomic_int rt_count[NSIG];
static atomic_int rt_badval, rt_badcode;
static void on_rt(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  atomic_fetch_add(&rt_count[sig], 1);
  if (si->si_code != SI_QUEUE) atomic_fetch_add(&rt_badcode, 1);
  else if (si->si_value.sival_int % 100 != sig) atomic_fetch_add(&rt_badval, 1);
}

static int mode_rt(void) {
  int lo = SIGRTMIN, hi = SIGRTMAX, ok = 1, nrt = hi - lo + 1, inst = 0, readback = 0;
  for (int s = lo; s <= hi; s++) {
    struct sigaction sa = {0};
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(s, &sa, NULL) == 0) inst++;
  }
  printf("rt: handlers installed on %d of %d real-time signals\n", inst, nrt);
  ok &= inst == nrt;
  start_burners();
  burn(20000000); /* 20 ms of CPU with every real-time signal the program's */
  for (int r = 0; r < RT_ROUNDS; r++) {
    for (int s = lo; s <= hi; s++) {
      union sigval v = {.sival_int = r * 100 + s};
      sigqueue(getpid(), s, v);
    }
    burn(1000000);
  }
  /* the last ones may be on their way to another thread */
  uint64_t t0 = now_ns(CLOCK_MONOTONIC);
  for (;;) {
    int done = 1;
    for (int s = lo; s <= hi; s++) done &= atomic_load(&rt_count[s]) >= RT_ROUNDS;
    if (done || now_ns(CLOCK_MONOTONIC) - t0 > 3000000000u) break;
    sleep_ms(1);
  }
  burn(20000000);
  stop_burners();
  int exact = 0;
  for (int s = lo; s <= hi; s++) {
    int c = atomic_load(&rt_count[s]);
    if (c == RT_ROUNDS) exact++;
    else printf("rt: SIGRTMIN+%d handled %d times, sent %d\n", s - lo, c, RT_ROUNDS);
    struct sigaction back;
    if (sigaction(s, NULL, &back) == 0 && back.sa_sigaction == on_rt) readback++;
    else fprintf(stderr, "rt: signal %d reads back handler %p flags %#x (ours %p)\n", s,
                 (void *)back.sa_sigaction, (unsigned)back.sa_flags, (void *)on_rt);
  }
  printf("rt: %d of %d signals handled exactly once per round\n", exact, nrt);
  printf("rt: wrong si_code %d, wrong value %d\n", atomic_load(&rt_badcode), atomic_load(&rt_badval));
  printf("rt: %d of %d handlers read back\n", readback, nrt);
  ok &= exact == nrt && !atomic_load(&rt_badcode) && !atomic_load(&rt_badval) && readback == nrt;
  return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- suspend */

#define SUSPEND_N 40
static volatile sig_atomic_t su_flag;
static atomic_int su_ready = -1;
static int su_spurious, su_ok, pp_ok, pp_bad;
static void on_usr1(int sig) { (void)sig; su_flag = 1; }

static void *suspend_thread(void *arg) {
  (void)arg;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  /* sigsuspend: main sends SIGUSR1 about 2 ms after we say we are ready; any return from
   * sigsuspend before our handler ran is a wake-up for a signal the program did not send */
  for (int i = 0; i < SUSPEND_N; i++) {
    burn(1500000); /* with every signal blocked */
    su_flag = 0;
    atomic_store(&su_ready, i);
    int tries = 0;
    do {
      sigsuspend(&none);
      if (!su_flag) su_spurious++;
    } while (!su_flag && ++tries < 100);
    if (su_flag) su_ok++;
  }
  /* ppoll with everything unblocked while it waits: on even rounds main sends SIGUSR1 (EINTR
   * with our handler run), on odd ones nothing comes and ppoll times out (0) */
  for (int i = 0; i < SUSPEND_N; i++) {
    burn(1500000);
    su_flag = 0;
    int r, e, good = 1;
    if (i % 2 == 0) {
      atomic_store(&su_ready, 1000 + i);
      struct timespec t = {2, 0};
      int tries = 0;
      do {
        r = ppoll(NULL, 0, &t, &none);
        e = errno;
        if (!(r == -1 && e == EINTR && su_flag)) good = 0;
      } while (!su_flag && ++tries < 5);
    } else {
      struct timespec t = {0, 3000000};
      r = ppoll(NULL, 0, &t, &none);
      good = r == 0 && !su_flag;
    }
    if (good) pp_ok++;
    else pp_bad++;
  }
  return NULL;
}

static int mode_suspend(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  start_burners();
  pthread_t t;
  pthread_create(&t, NULL, suspend_thread, NULL);
  for (int i = 0; i < SUSPEND_N; i++) {
    while (atomic_load(&su_ready) != i) sleep_ms(0);
    sleep_ms(2);
    pthread_kill(t, SIGUSR1);
  }
  for (int i = 0; i < SUSPEND_N; i += 2) {
    while (atomic_load(&su_ready) != 1000 + i) sleep_ms(0);
    sleep_ms(1);
    pthread_kill(t, SIGUSR1);
  }
  pthread_join(t, NULL);
  stop_burners();
  printf("sigsuspend: %d of %d woke for SIGUSR1, %d returns without it\n", su_ok, SUSPEND_N,
         su_spurious);
  printf("ppoll: %d of %d as expected, %d not\n", pp_ok, SUSPEND_N, pp_bad);
  return su_ok == SUSPEND_N && !su_spurious && pp_ok == SUSPEND_N ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sigcases sigwait|prof|vfork|fork|threads|rt|suspend\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int n = 0;
  printf("cuda: %s\n", cudaGetDeviceCount(&n) == cudaSuccess ? "ok" : "error");
  const char *m = argv[1];
  if (!strcmp(m, "sigwait")) {
    if (argc > 2) SIGWAIT_N = atoi(argv[2]);
    return mode_sigwait();
  }
  if (!strcmp(m, "prof")) return mode_prof();
  if (!strcmp(m, "vfork")) return mode_vfork();
  if (!strcmp(m, "fork")) return mode_fork();
  if (!strcmp(m, "threads")) return mode_threads();
  if (!strcmp(m, "rt")) return mode_rt();
  if (!strcmp(m, "suspend")) return mode_suspend();
  fprintf(stderr, "sigcases: unknown mode %s\n", m);
  return 2;
}
