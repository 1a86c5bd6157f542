/* eintr.c — blocking calls with short timeouts, in many threads, while other threads burn CPU:
 * under host sampling (a CPU-time timer per thread, a real-time signal) no call may fail with
 * EINTR or come back early, as without dlhook. tests/sample/t_sample_eintr.sh runs it bare and
 * traced and compares the output.
 *   eintr SECS [nocuda] [selftimer|kicker]
 * One thread per kind of call (poll, select, pselect, ppoll, epoll_wait, epoll_pwait, nanosleep,
 * clock_nanosleep relative and TIMER_ABSTIME, sigtimedwait, semtimedop, recv and accept and
 * read on sockets with SO_RCVTIMEO, read on a pipe fed by a writer thread, futex wait with a
 * timeout, pthread_cond_timedwait, sem_timedwait, usleep), each call after a CPU burst of a
 * length that cycles from 0 to 3 ms of the thread's CPU time (short bursts right before the
 * call, and bursts longer than a 1 kHz timer's period, so that timers expire on the way into
 * the call), plus two threads that only burn CPU. Each thread loops for SECS seconds.
 * Without "nocuda" the program first calls cudaGetDeviceCount (sampling starts at the first
 * CUDA call). "selftimer" (the control experiment, run bare): the program arms what dlhook's
 * sampler arms, a CPU-time timer per thread (timer_create on the thread's CPU clock,
 * SIGEV_THREAD_ID, 1 kHz) with an SA_RESTART handler on SIGRTMAX-1, so that EINTR seen then
 * comes from the kernel's rules, not from dlhook. "kicker" (the check of the check, bare): a
 * thread sends that signal (SA_RESTART handler) to every other thread every 2 ms with tgkill,
 * wherever they are: poll, nanosleep and the like must then see EINTR (exit 3).
 * stdout (deterministic): one line per thread, "KIND: eintr E, short S, unexpected U" and
 * "KIND: enough calls" when the thread made at least 20 calls (a burner: 2 bursts), then
 * "result: ok", "result: EINTR" or "result: unexpected". The number of calls of each thread (depends on the machine's speed) goes to
 * stderr. Exit 0; 3 when any call failed with EINTR or slept short; 4 when only unexpected
 * results (another error, data on a socket that should have none) were seen. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { K_POLL, K_SELECT, K_PSELECT, K_PPOLL, K_EPOLL_WAIT, K_EPOLL_PWAIT, K_NANOSLEEP,
       K_CLOCK_NANOSLEEP, K_CLOCK_NANOSLEEP_ABS, K_SIGTIMEDWAIT, K_SEMTIMEDOP, K_RECV, K_ACCEPT,
       K_SOCKREAD, K_PIPEREAD, K_FUTEX, K_CONDWAIT, K_SEMWAIT, K_USLEEP, K_BURN1, K_BURN2, NKIND };
static const char *const names[NKIND] = {
    "poll", "select", "pselect", "ppoll", "epoll_wait", "epoll_pwait", "nanosleep",
    "clock_nanosleep", "clock_nanosleep_abs", "sigtimedwait", "semtimedop", "recv", "accept",
    "read_socket", "read_pipe", "futex_wait", "pthread_cond_timedwait", "sem_timedwait",
    "usleep", "burn1", "burn2"};

#define TIMEOUT_NS 1000000L /* 1 ms, every call's timeout */

static struct {
  long calls, eintr, shorts, unexpected;
} st[NKIND];

static atomic_int stop;
static int selftimer;          /* "selftimer": the program's own per-thread CPU-time timers */
static atomic_long self_ticks; /* their signals */
static void on_tick(int sig) { (void)sig; atomic_fetch_add(&self_ticks, 1); }
static int kicker;              /* "kicker": a thread signals all the others */
static atomic_int ntids;
static pid_t tids[64];
static void *kick(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    struct timespec t = {0, 2000000};
    nanosleep(&t, NULL);
    for (int i = 0; i < atomic_load(&ntids); i++) syscall(SYS_tgkill, getpid(), tids[i], SIGRTMAX - 1);
  }
  return NULL;
}
static void arm_selftimer(void) {
  struct sigevent ev = {0};
  timer_t t;
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGRTMAX - 1;
  ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  clockid_t c;
  if (pthread_getcpuclockid(pthread_self(), &c) || timer_create(c, &ev, &t)) return;
  struct itimerspec it = {{0, 1000000}, {0, 1000000}};
  timer_settime(t, 0, &it, NULL);
}
static int pipe_fds[2];   /* read_pipe: the writer thread feeds it */
static int semid = -1;    /* semtimedop: a System V semaphore nobody posts */

static uint64_t now_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Burns ns of this thread's CPU time. */
static void burn(uint64_t ns) {
  uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile unsigned x = 1;
  while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 200; i++) x = x * 1103515245u + 12345u;
}

/* Burst lengths in µs of CPU time, cycled through by every waiting thread. */
static const unsigned bursts[] = {0, 20, 100, 300, 950, 1000, 1050, 0, 50, 2000, 3000, 5};

static struct timespec ts_of(long ns) {
  struct timespec t = {ns / 1000000000L, ns % 1000000000L};
  return t;
}

static void note(int k, int r, int err, int expect_err) {
  st[k].calls++;
  if (r >= 0 || err == expect_err) return;
  if (err == EINTR) st[k].eintr++;
  else st[k].unexpected++;
}

/* A sleep that returned 0 before its time. */
static void check_slept(int k, uint64_t t0, long ns) {
  if (now_ns(CLOCK_MONOTONIC) - t0 < (uint64_t)ns) st[k].shorts++;
}

static int tcp_listener(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 4)) return -1;
  return s;
}

static void set_rcvtimeo(int s) {
  struct timeval tv = {0, TIMEOUT_NS / 1000};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static void *pipe_writer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    struct timespec t = ts_of(TIMEOUT_NS);
    while (nanosleep(&t, &t) && errno == EINTR) {}
    /* non-blocking: the reader reads slower than 1 byte a ms (its bursts), a full pipe
     * would leave this thread blocked in write() once the reader stopped */
    if (write(pipe_fds[1], "x", 1) != 1 && errno != EAGAIN) break;
  }
  close(pipe_fds[1]); /* the reader sees EOF and ends */
  return NULL;
}

static void *waiter(void *arg) {
  int k = (int)(intptr_t)arg;
  int fd = -1, ep = -1, pfd[2] = {-1, -1};
  uint32_t futex_word = 0;
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv;
  pthread_condattr_t ca;
  sem_t psem;
  sigset_t usr2, none;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigemptyset(&none);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &ca);
  sem_init(&psem, 0, 0);
  if (selftimer) arm_selftimer();
  if (kicker) tids[atomic_fetch_add(&ntids, 1)] = (pid_t)syscall(SYS_gettid);
  switch (k) {
    case K_POLL: case K_SELECT: case K_PSELECT: case K_PPOLL: case K_EPOLL_WAIT: case K_EPOLL_PWAIT:
      if (pipe(pfd)) return NULL; /* nobody ever writes: every wait times out */
      fd = pfd[0];
      if (k == K_EPOLL_WAIT || k == K_EPOLL_PWAIT) {
        struct epoll_event ev = {.events = EPOLLIN};
        ep = epoll_create1(0);
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
      }
      break;
    case K_RECV: fd = socket(AF_INET, SOCK_DGRAM, 0); set_rcvtimeo(fd); break;
    case K_ACCEPT: fd = tcp_listener(); set_rcvtimeo(fd); break;
    case K_SOCKREAD:
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, pfd)) return NULL;
      fd = pfd[0];
      set_rcvtimeo(fd);
      break;
    case K_PIPEREAD: fd = pipe_fds[0]; break;
  }
  uint64_t iter = 0;
  char buf[16];
  while (!atomic_load(&stop)) {
    if (k == K_BURN1 || k == K_BURN2) {
      burn(5000000); /* 5 ms at a time, never blocks */
      st[k].calls++;
      continue;
    }
    burn(1000u * bursts[iter++ % (sizeof bursts / sizeof *bursts)]);
    struct timespec t = ts_of(TIMEOUT_NS);
    struct timeval tv = {0, TIMEOUT_NS / 1000};
    fd_set rd;
    int r;
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    switch (k) {
      case K_POLL: {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        r = poll(&p, 1, 1);
        note(k, r, errno, 0);
        if (r > 0) st[k].unexpected++;
        break;
      }
      case K_PPOLL: {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        r = ppoll(&p, 1, &t, NULL);
        note(k, r, errno, 0);
        if (r > 0) st[k].unexpected++;
        break;
      }
      case K_SELECT:
      case K_PSELECT:
        FD_ZERO(&rd);
        FD_SET(fd, &rd);
        r = k == K_SELECT ? select(fd + 1, &rd, NULL, NULL, &tv)
                          : pselect(fd + 1, &rd, NULL, NULL, &t, NULL);
        note(k, r, errno, 0);
        if (r > 0) st[k].unexpected++;
        break;
      case K_EPOLL_WAIT:
      case K_EPOLL_PWAIT: {
        struct epoll_event ev;
        r = k == K_EPOLL_WAIT ? epoll_wait(ep, &ev, 1, 1) : epoll_pwait(ep, &ev, 1, 1, NULL);
        note(k, r, errno, 0);
        if (r > 0) st[k].unexpected++;
        break;
      }
      case K_NANOSLEEP:
        r = nanosleep(&t, NULL);
        note(k, r, errno, 0);
        if (r == 0) check_slept(k, t0, TIMEOUT_NS);
        break;
      case K_CLOCK_NANOSLEEP:
        r = clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL); /* returns the error */
        note(k, r ? -1 : 0, r, 0);
        if (r == 0) check_slept(k, t0, TIMEOUT_NS);
        break;
      case K_CLOCK_NANOSLEEP_ABS: {
        struct timespec until = ts_of((long)((t0 + TIMEOUT_NS) % 1000000000u));
        until.tv_sec = (time_t)((t0 + TIMEOUT_NS) / 1000000000u);
        r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
        note(k, r ? -1 : 0, r, 0);
        if (r == 0) check_slept(k, t0, TIMEOUT_NS);
        break;
      }
      case K_SIGTIMEDWAIT:
        r = sigtimedwait(&usr2, NULL, &t); /* SIGUSR2 is blocked everywhere, never sent */
        note(k, r, errno, EAGAIN);
        if (r >= 0) st[k].unexpected++;
        break;
      case K_SEMTIMEDOP: {
        struct sembuf op = {.sem_num = 0, .sem_op = -1, .sem_flg = 0};
        r = semtimedop(semid, &op, 1, &t);
        note(k, r, errno, EAGAIN);
        if (r >= 0) st[k].unexpected++;
        break;
      }
      case K_RECV:
        r = (int)recv(fd, buf, sizeof buf, 0);
        note(k, r, errno, EAGAIN);
        if (r >= 0) st[k].unexpected++;
        break;
      case K_ACCEPT:
        r = accept(fd, NULL, NULL);
        note(k, r, errno, EAGAIN);
        if (r >= 0) { st[k].unexpected++; close(r); }
        break;
      case K_SOCKREAD:
        r = (int)read(fd, buf, sizeof buf);
        note(k, r, errno, EAGAIN);
        if (r >= 0) st[k].unexpected++;
        break;
      case K_PIPEREAD:
        r = (int)read(fd, buf, sizeof buf); /* all there is, else blocks until the next byte */
        note(k, r, errno, 0);
        if (r == 0) goto out; /* EOF: the writer stopped */
        break;
      case K_FUTEX:
        r = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &t, NULL, 0);
        note(k, r, errno, ETIMEDOUT);
        if (r >= 0) st[k].unexpected++;
        break;
      case K_CONDWAIT: {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += TIMEOUT_NS;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
        pthread_mutex_lock(&mu);
        r = pthread_cond_timedwait(&cv, &mu, &until); /* returns the error; EINTR is not allowed */
        pthread_mutex_unlock(&mu);
        note(k, r ? -1 : 0, r, ETIMEDOUT);
        if (r == 0) st[k].unexpected++;
        break;
      }
      case K_SEMWAIT: {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TIMEOUT_NS;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
        r = sem_timedwait(&psem, &until);
        note(k, r, errno, ETIMEDOUT);
        if (r == 0) st[k].unexpected++;
        break;
      }
      case K_USLEEP:
        r = usleep(TIMEOUT_NS / 1000);
        note(k, r, errno, 0);
        if (r == 0) check_slept(k, t0, TIMEOUT_NS);
        break;
    }
  }
out:
  if (ep >= 0) close(ep);
  if (k != K_PIPEREAD && fd >= 0) close(fd);
  if (pfd[1] >= 0) close(pfd[1]);
  (void)none;
  return NULL;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 5;
  int cuda = 1;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "nocuda")) cuda = 0;
    if (!strcmp(argv[i], "selftimer")) selftimer = 1;
    if (!strcmp(argv[i], "kicker")) kicker = 1;
  }
  if (selftimer || kicker) {
    struct sigaction sa = {0};
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGRTMAX - 1, &sa, NULL);
  }
  if (cuda) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("cuda: %s\n", e == cudaSuccess ? "ok" : "error");
  }
  /* SIGUSR2: blocked in every thread (they inherit the mask), waited for by sigtimedwait */
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, NULL);
  semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
  if (pipe(pipe_fds)) return 1;
  fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
  pthread_t th[NKIND], wr;
  for (int k = 0; k < NKIND; k++) {
    if (k == K_SEMTIMEDOP && semid < 0) continue;
    pthread_create(&th[k], NULL, waiter, (void *)(intptr_t)k);
  }
  pthread_create(&wr, NULL, pipe_writer, NULL);
  pthread_t kt;
  if (kicker) pthread_create(&kt, NULL, kick, NULL);
  struct timespec d = ts_of((long)(secs * 1e9));
  while (nanosleep(&d, &d) && errno == EINTR) {}
  atomic_store(&stop, 1);
  for (int k = 0; k < NKIND; k++)
    if (!(k == K_SEMTIMEDOP && semid < 0)) pthread_join(th[k], NULL);
  pthread_join(wr, NULL);
  if (kicker) pthread_join(kt, NULL);
  if (semid >= 0) semctl(semid, 0, IPC_RMID);
  long eintr = 0, unexpected = 0;
  for (int k = 0; k < NKIND; k++) {
    if (k == K_SEMTIMEDOP && semid < 0) {
      printf("%s: unavailable\n", names[k]);
      continue;
    }
    printf("%s: eintr %ld, short %ld, unexpected %ld\n", names[k], st[k].eintr, st[k].shorts,
           st[k].unexpected);
    long least = k == K_BURN1 || k == K_BURN2 ? 2 : 20; /* burners count 5 ms bursts */
    printf("%s: %s\n", names[k], st[k].calls >= least ? "enough calls" : "too few calls");
    fprintf(stderr, "%s: %ld calls\n", names[k], st[k].calls);
    eintr += st[k].eintr + st[k].shorts;
    unexpected += st[k].unexpected;
  }
  if (selftimer || kicker) fprintf(stderr, "selftimer: %ld signals\n", atomic_load(&self_ticks));
  printf("result: %s\n", eintr ? "EINTR" : unexpected ? "unexpected" : "ok");
  return eintr ? 3 : unexpected ? 4 : 0;
}
