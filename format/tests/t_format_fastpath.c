/* Fast paths: the recorder's drain loop writes most events straight into a batch's columns
 * (dlh_tbatch_put, dlh_run_* in dlh_batch.h) instead of through dlh_enc_api. The same events
 * written both ways must give the same file, byte for byte, and read back as written: runs of
 * one function (args changing, return value, nargs, stack and depth constant), functions
 * alternating, events with correlation ids, other stacks or depths and folded repeats in
 * between, several threads, flushes at any point, batches filled to their limit. */
#include "dlh_batch.h"
#include "ftest.h"

#define N 400000

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

typedef struct { uint32_t tid; dlh_api_event ev; uint64_t args[16]; } event;
static event evs[N];

static void make_events(void) {
  uint64_t t = 1000000000ull, corr = 100;
  uint32_t fn = 0x10005, na = 1, tid = 7;
  int64_t ret = 100;
  for (size_t i = 0; i < N; i++) {
    event *e = &evs[i];
    uint64_t r = rnd();
    if (r % 97 == 0) fn = 0x10000 + (uint32_t)(rnd() % 6); /* another function */
    if (r % 89 == 0) na = (uint32_t)(rnd() % 17);         /* another number of args */
    if (r % 83 == 0) ret = (int64_t)(rnd() % 3) - 1;       /* another return value */
    if (r % 211 == 0) tid = 7 + (uint32_t)(rnd() % 3);     /* another thread */
    t += 20 + rnd() % 200 + (r % 1000 == 0 ? 1000000 : 0);
    e->tid = tid;
    e->ev.start_ns = t;
    e->ev.dur_ns = rnd() % 300 + (r % 500 == 0 ? 100000 : 0);
    int alternate = (i / 5000) % 3 == 1; /* phases of functions alternating */
    e->ev.fn = alternate && r % 3 == 0 ? 0x30000 + (uint32_t)(rnd() % 4) : fn;
    e->ev.ret = ret;
    e->ev.nargs = na;
    for (uint32_t a = 0; a < na; a++)
      e->args[a] = (rnd() % 4 == 0) ? rnd() : 0x7ffc00001000ull + (i & 1) * 4 + a * 8;
    e->ev.args = e->args;
    if ((i / 7000) % 4 == 2) e->ev.stack = 3;  /* phases of one call site (stacks on) */
    if ((i / 11000) % 5 == 3) e->ev.depth = 2; /* and of nested calls */
    uint64_t k = rnd() % 1000;
    if (k < 5) e->ev.corr = ++corr;
    else if (k < 8) e->ev.stack = 1 + (uint32_t)(rnd() % 5);
    else if (k < 11) e->ev.depth = 1 + (uint32_t)(rnd() % 3);
    else if (k < 14) { e->ev.count = 2 + rnd() % 1000; e->ev.span_ns = e->ev.dur_ns * 3; }
  }
}

static size_t by_run, runs, by_put, by_api; /* how the fast file's events were written */

static int plain(const dlh_api_event *ev) { return !ev->corr && ev->count <= 1; }

/* Writes evs[i..] (at most lim events) the fast ways where they can be; returns the events
 * taken. */
static size_t write_fast(dlh_encoder *w, size_t i, size_t lim) {
  const event *e = &evs[i];
  dlh_tbatch *t = dlh_enc_tbatch(w, e->tid);
  REQUIRE(t);
  if (plain(&e->ev)) { /* a run, as drain_run in preload/writer.c writes it */
    dlh_run r;
    if (dlh_run_open(t, &r, e->ev.fn, e->ev.nargs, e->ev.stack, e->ev.depth) == 0) {
      size_t k = 0;
      uint8_t *ps = r.start, *pd = r.dur, *pa = r.args;
      uint64_t ls = r.last_start;
      const uint64_t *prev = r.base;
      while (k < r.max && k < lim && i + k < N) {
        const event *f = &evs[i + k];
        if (f->tid != e->tid || !plain(&f->ev) || f->ev.fn != e->ev.fn ||
            f->ev.nargs != e->ev.nargs || f->ev.ret != e->ev.ret || f->ev.stack != e->ev.stack ||
            f->ev.depth != e->ev.depth)
          break;
        ps += dlh_put_varint_col(ps, dlh_zigzag((int64_t)(f->ev.start_ns - ls)));
        ls = f->ev.start_ns;
        pd += dlh_put_varint_col(pd, f->ev.dur_ns);
        for (uint32_t a = 0; a < f->ev.nargs; a++)
          pa += dlh_put_varint_col(pa, dlh_zigzag((int64_t)(f->args[a] - prev[a])));
        prev = f->args;
        k++;
      }
      if (k) {
        r.start = ps;
        r.dur = pd;
        r.args = pa;
        r.last_start = ls;
        dlh_run_close(t, &r, k, e->ev.fn, e->ev.ret, e->ev.nargs, e->ev.stack, e->ev.depth,
                      prev);
        by_run += k;
        runs++;
        return k;
      }
    }
  }
  if (e->ev.count <= 1 &&
      dlh_tbatch_put(t, e->ev.start_ns, e->ev.dur_ns, e->ev.fn, e->ev.ret, e->ev.corr,
                     e->ev.stack, e->ev.depth, e->ev.nargs, e->args) == 0) {
    by_put++;
    return 1;
  }
  REQUIRE(dlh_enc_api(w, e->tid, &e->ev) == 0);
  by_api++;
  return 1;
}

static void write_file(const char *path, int fast) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  rng = 12345;
  size_t next_flush = 50000;
  for (size_t i = 0; i < N;) {
    /* a flush between any two events (the same points in both files) */
    if (i >= next_flush) {
      REQUIRE(dlh_enc_flush(w) == 0);
      next_flush = i + 1 + rnd() % 150000;
    }
    size_t k = 1;
    if (fast) {
      k = write_fast(w, i, next_flush - i); /* runs end at the flush points */
    } else {
      REQUIRE(dlh_enc_api(w, evs[i].tid, &evs[i].ev) == 0);
    }
    i += k;
  }
  REQUIRE(dlh_enc_flush(w) == 0);
  CHECK(dlh_enc_lost(w) == 0);
  dlh_enc_free(w);
  close(fd);
}

int main(void) {
  make_events();
  char *slow = ft_path("fastpath-slow.dlh"), *fast = ft_path("fastpath-fast.dlh");
  write_file(slow, 0);
  write_file(fast, 1);
  printf("fast file: %zu events in %zu runs, %zu by dlh_tbatch_put, %zu by dlh_enc_api\n",
         by_run, runs, by_put, by_api);
  CHECK(by_run > N / 2 && by_put > 1000 && by_api > 500); /* every path taken */
  size_t ls, lf;
  unsigned char *a = ft_read_file(slow, &ls), *b = ft_read_file(fast, &lf);
  CHECK(ls == lf);
  CHECK(ls == lf && memcmp(a, b, ls) == 0);

  /* and the events read back as written */
  dlh_reader *r = dlh_reader_open(fast, NULL);
  REQUIRE(r);
  const Dlh__Packet *p;
  size_t seen[16] = {0}, bad = 0;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case != DLH__PACKET__DATA_API) continue;
    dlh_api_iter it;
    dlh_api_event ev;
    dlh_api_iter_init(&it, p->api);
    uint32_t tid = p->api->tid;
    REQUIRE(tid >= 7 && tid < 10);
    while (dlh_api_iter_next(&it, &ev)) {
      /* the next event of this thread in evs */
      size_t j = seen[tid];
      while (j < N && evs[j].tid != tid) j++;
      REQUIRE(j < N);
      seen[tid] = j + 1;
      const dlh_api_event *x = &evs[j].ev;
      if (ev.start_ns != x->start_ns || ev.dur_ns != x->dur_ns || ev.fn != x->fn ||
          ev.ret != x->ret || ev.corr != x->corr || ev.stack != x->stack ||
          ev.depth != x->depth || ev.nargs != x->nargs || dlh_api_calls(&ev) != dlh_api_calls(x) ||
          (x->nargs && memcmp(ev.args, x->args, x->nargs * sizeof *x->args) != 0))
        bad++;
    }
    CHECK(!it.bad);
  }
  CHECK(rc == 0);
  CHECK(bad == 0);
  size_t total = 0;
  for (uint32_t tid = 7; tid < 10; tid++) {
    size_t j = seen[tid];
    while (j < N && evs[j].tid != tid) j++;
    CHECK(j == N); /* every event of the thread was read */
    total += seen[tid] ? 1 : 0;
  }
  CHECK(total == 3);
  dlh_reader_close(r);
  unlink(slow);
  unlink(fast);
  free(a);
  free(b);
  return ft_done("t_format_fastpath");
}
