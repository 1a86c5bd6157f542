/* micro.c — microbenchmarks of the pieces of a recorded call, linked with the objects of
 * libdlhook.so (preload/, hooks/, unwind/, format/) so that it calls the hot path directly:
 *
 *   timestamps      rdtsc (dlh_ticks), rdtscp, clock_gettime(MONOTONIC / MONOTONIC_RAW)
 *   ring store      dlh_call_begin + dlh_call_end of a 1-argument call (two timestamps and one
 *                   40-byte record), in batches that fit the ring, the writer thread draining
 *   encode + zstd   dlh_enc_api + dlh_enc_flush (format/) into a temporary file: a
 *                   repetitive call and a varied launch-loop-like mix, events/s and MB/s of
 *                   ring records consumed, bytes per event on disk
 *   reader          dlh_reader_next + dlh_api_iter over those files: events/s, MB/s of file
 *
 *   micro [SCALE]   SCALE (default 1) multiplies the iteration counts.
 * Each figure is the median of REPS repetitions, with the range. Run it with
 * DLHOOK_STACKS=none (the constructor of the linked runtime reads the environment). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlh_format.h"
#include "dlh_internal.h"

#define REPS 5

extern const dlh_fn_desc dlh_fns_cudart[];
extern const unsigned dlh_fns_cudart_count;

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
/* Sorts v[REPS] and prints "median  min..max". */
static void row(const char *name, double *v, const char *unit, const char *note) {
  qsort(v, REPS, sizeof *v, cmp_d);
  char spread[64];
  snprintf(spread, sizeof spread, "%.4g..%.4g", v[0], v[REPS - 1]);
  printf("  %-34s %12.4g %-10s %-22s %s\n", name, v[REPS / 2], unit, spread, note ? note : "");
}

static volatile uint64_t sink;

/* ---------------------------------------------------------------- timestamps */

static inline uint64_t rdtscp(void) {
  uint32_t lo, hi, aux;
  __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
  return ((uint64_t)hi << 32) | lo;
}
/* ns per call of clock `which`: the median of 1024 chunks of n/1024 calls (a chunk in which
 * the thread was descheduled does not count). */
static double time_clock(int which, long n) {
  uint64_t s = 0;
  struct timespec ts;
  double ch[1024];
  long per = n / 1024 + 1;
  for (int c = 0; c < 1024; c++) {
    uint64_t t0 = now();
    for (long i = 0; i < per; i++) {
      switch (which) {
        case 0: s += dlh_ticks(); break;
        case 1: s += rdtscp(); break;
        case 2: clock_gettime(CLOCK_MONOTONIC, &ts); s += (uint64_t)ts.tv_nsec; break;
        case 3: clock_gettime(CLOCK_MONOTONIC_RAW, &ts); s += (uint64_t)ts.tv_nsec; break;
      }
    }
    ch[c] = (double)(now() - t0) / per;
  }
  sink = s;
  qsort(ch, 1024, sizeof *ch, cmp_d);
  return (ch[511] + ch[512]) / 2;
}

/* ---------------------------------------------------------------- ring store */

static uint32_t fn_id(const char *name) {
  for (unsigned i = 0; i < dlh_fns_cudart_count; i++)
    if (!strcmp(dlh_fns_cudart[i].name, name)) return DLH_FN_ID(DLH_DOMAIN_CUDART, i);
  return DLH_FN_ID(DLH_DOMAIN_CUDART, 0);
}

/* n recorded calls of a 1-argument function that does nothing. */
static __attribute__((noinline)) double ring_batch(uint32_t fn, long n) {
  uint64_t t0 = now();
  for (long i = 0; i < n; i++) {
    dlh_call c;
    if (dlh_call_begin(&c)) {
      uint64_t a[1] = {(uint64_t)i};
      dlh_call_end(&c, fn, 0, 1, a);
    }
  }
  return (double)(now() - t0) / n;
}

/* Waits until the writer has taken everything from this thread's ring. */
static void wait_drained(void) {
  struct dlh_thread *t = dlh_self;
  if (!t) return;
  for (int i = 0; i < 2000 && atomic_load(&t->shared.tail) != t->prod.head_local; i++) usleep(500);
}

/* ---------------------------------------------------------------- encode + read */

static char tmpdir[4096];

/* Writes `n` events to a new file; kind 0: one repetitive call; kind 1: a launch-loop-like mix
 * of 4 functions with 2..14 arguments, jittered gaps, correlation ids. Returns ns per event;
 * *bytes = file size, *ringbytes = the size those events took in the ring. */
static double encode(int kind, long n, const char *path, uint64_t *bytes, uint64_t *ringbytes) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) { perror(path); exit(1); }
  dlh_encoder *w = dlh_enc_create(fd, 3);
  if (!w) { fprintf(stderr, "micro: dlh_enc_create failed\n"); exit(1); }
  static const uint32_t nargs_of[4] = {5, 6, 14, 2};
  uint32_t fns[4] = {fn_id("cudaMemcpyAsync"), fn_id("__cudaLaunchKernel"),
                     DLH_FN_ID(DLH_DOMAIN_CUBLAS, 1), fn_id("cudaStreamSynchronize")};
  uint64_t args[16] = {0}, rng = 88172645463325252ull, t = 1000000000ull, corr = 100;
  uint64_t rb = 0, t0 = now();
  for (long i = 0; i < n; i++) {
    dlh_api_event ev = {0};
    if (kind == 0) {
      t += 40;
      ev.start_ns = t;
      ev.dur_ns = 12;
      ev.fn = fns[3];
      ev.nargs = 1;
      args[0] = 0x7ffc12345678ull;
    } else {
      rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
      int k = (int)(i & 3);
      t += 300 + (rng & 1023);
      ev.start_ns = t;
      ev.dur_ns = 800 + ((rng >> 10) & 511);
      ev.fn = fns[k];
      ev.nargs = nargs_of[k];
      for (uint32_t a = 0; a < ev.nargs; a++)
        args[a] = 0x7f0000000000ull + ((a * 0x100000ull) ^ ((rng >> (a + 20)) & 3) * 0x400);
      ev.corr = k < 3 ? ++corr : 0;
    }
    ev.args = args;
    dlh_enc_api(w, 1234, &ev);
    rb += (DLH_REC_HDR_WORDS + ev.nargs + (ev.corr != 0)) * 8;
    if ((i & ((1 << 20) - 1)) == (1 << 20) - 1) dlh_enc_flush(w); /* like the writer thread */
  }
  dlh_enc_flush(w);
  double ns = (double)(now() - t0) / n;
  *bytes = dlh_enc_bytes(w);
  *ringbytes = rb;
  dlh_enc_free(w);
  close(fd);
  return ns;
}

static double read_back(const char *path, long *events) {
  uint64_t t0 = now();
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  if (!r) { fprintf(stderr, "micro: %s: %s\n", path, err ? err : "?"); exit(1); }
  const Dlh__Packet *p;
  long n = 0;
  uint64_t s = 0;
  while (dlh_reader_next(r, &p) == 1) {
    if (p->data_case != DLH__PACKET__DATA_API) continue;
    dlh_api_iter it;
    dlh_api_event ev;
    dlh_api_iter_init(&it, p->api);
    while (dlh_api_iter_next(&it, &ev)) { n++; s += ev.start_ns; }
  }
  dlh_reader_close(r);
  sink = s;
  *events = n;
  return (double)(now() - t0);
}

int main(int argc, char **argv) {
  double scale = argc > 1 ? atof(argv[1]) : 1;
  if (scale <= 0) scale = 1;
  const char *td = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/dlh-micro-XXXXXX", td && *td ? td : "/tmp");
  if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
  double v[REPS];

  printf("microbenchmarks (median of %d, range)\n", REPS);
  printf("  %-34s %12s %-10s %-22s %s\n", "piece", "median", "unit", "range", "");
  static const char *const clk[4] = {"timestamp: rdtsc (dlh_ticks)", "timestamp: rdtscp",
                                     "timestamp: clock_gettime MONO", "timestamp: clock_gettime RAW"};
  long nclk = (long)(5e6 * scale);
  double rdtsc_ns = 0;
  for (int c = 0; c < 4; c++) {
    for (int r = 0; r < REPS; r++) v[r] = time_clock(c, nclk);
    row(clk[c], v, "ns", NULL);
    if (c == 0) rdtsc_ns = v[REPS / 2];
  }

  /* ring store: batches of 8k calls (320 KiB of records, well inside an 8 MiB ring) */
  uint32_t fn = fn_id("cudaGetDevice");
  dlh_call probe;
  if (!dlh_call_begin(&probe)) {
    printf("  ring store: recording is off (DLHOOK_DISABLE? no writer?) — skipped\n");
  } else {
    dlh_call_end(&probe, fn, 0, 0, NULL);
    int saved_mode = dlh_stack_mode;
    dlh_stack_mode = 0;
    long batch = 8192, batches = 63;
    uint64_t drop0 = atomic_load(&dlh_self->shared.dropped);
    for (int r = 0; r < REPS; r++) {
      double b[64];
      int nb = batches < 64 ? (int)batches : 64;
      for (int i = 0; i < nb; i++) {
        wait_drained();
        b[i] = ring_batch(fn, batch);
      }
      qsort(b, (size_t)nb, sizeof *b, cmp_d);
      v[r] = b[nb / 2];
    }
    uint64_t dropped = atomic_load(&dlh_self->shared.dropped) - drop0;
    char note[96];
    snprintf(note, sizeof note, "%llu dropped", (unsigned long long)dropped);
    row("ring store: begin+end (1 arg)", v, "ns/call", note);
    for (int r = 0; r < REPS; r++) v[r] -= 2 * rdtsc_ns;
    row("  of which not the 2 timestamps", v, "ns/call", NULL);
    /* flat out, no waiting: how fast the writer drains one thread */
    wait_drained();
    drop0 = atomic_load(&dlh_self->shared.dropped);
    long flat = (long)(4e6 * scale);
    for (int r = 0; r < REPS; r++) { /* median of 64 back-to-back batches: no wait between */
      double b[64];
      for (int i = 0; i < 64; i++) b[i] = ring_batch(fn, flat / REPS / 64);
      qsort(b, 64, sizeof *b, cmp_d);
      v[r] = (b[31] + b[32]) / 2;
    }
    dropped = atomic_load(&dlh_self->shared.dropped) - drop0;
    snprintf(note, sizeof note, "%llu of %ld dropped (writer behind)", (unsigned long long)dropped,
             flat / REPS / 64 * 64 * REPS);
    row("ring store: flat out, no pauses", v, "ns/call", note);
    dlh_stack_mode = saved_mode;
    wait_drained();
  }

  /* encode + zstd, then read back */
  long nev = (long)(1e6 * scale);
  static const char *const kname[2] = {"repetitive", "varied"};
  char path[2][4200];
  for (int k = 0; k < 2; k++) {
    snprintf(path[k], sizeof path[k], "%s/%s.dlh", tmpdir, kname[k]);
    double ev_s[REPS], mb_s[REPS], bpe[REPS];
    for (int r = 0; r < REPS; r++) {
      uint64_t bytes, rb;
      double ns = encode(k, nev, path[k], &bytes, &rb);
      ev_s[r] = 1e3 / ns; /* M events/s */
      mb_s[r] = (double)rb / (ns * nev) * 1e3; /* MB/s of ring records */
      bpe[r] = (double)bytes / nev;
    }
    char name[64];
    snprintf(name, sizeof name, "encode+zstd-3 %s: events", kname[k]);
    row(name, ev_s, "M/s", NULL);
    snprintf(name, sizeof name, "encode+zstd-3 %s: ring bytes", kname[k]);
    row(name, mb_s, "MB/s", NULL);
    snprintf(name, sizeof name, "encode+zstd-3 %s: on disk", kname[k]);
    row(name, bpe, "B/event", k == 0 ? "(synthetic: constant gaps)" : NULL);
  }
  for (int k = 0; k < 2; k++) {
    double ev_s[REPS], mb_s[REPS];
    long n = 0;
    for (int r = 0; r < REPS; r++) {
      double ns = read_back(path[k], &n);
      FILE *f = fopen(path[k], "rb");
      fseek(f, 0, SEEK_END);
      long size = ftell(f);
      fclose(f);
      ev_s[r] = n / ns * 1e3;
      mb_s[r] = size / ns * 1e3;
    }
    char name[64], note[64];
    snprintf(note, sizeof note, "%ld events", n);
    snprintf(name, sizeof name, "reader %s: events", kname[k]);
    row(name, ev_s, "M/s", note);
    if (k == 1) { /* the repetitive file is a few hundred bytes */
      snprintf(name, sizeof name, "reader %s: file bytes", kname[k]);
      row(name, mb_s, "MB/s", NULL);
    }
    unlink(path[k]);
  }
  rmdir(tmpdir);
  return 0;
}
