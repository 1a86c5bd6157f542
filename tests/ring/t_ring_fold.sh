#!/bin/sh
# The ring's hot path (preload/ring.c) against a concurrent reader written as the writer thread
# reads (ring.h's unpack helpers, dlh_fold_take): a producer stores runs of identical calls
# (folded in place) and distinct calls, with a tiny ring so that FOLD records are sealed and
# reused while the producer is folding into them and the ring wraps and fills. Every call stored
# must be read exactly once: calls read + drops = calls made, per kind, and the durations of the
# folded repeats add up. Also: DLHOOK_FOLD off gives one record per call; a dropped record leaves
# no correlation id behind for the next call.
CC=${CC:-cc}
set -e
cat >stubs.c <<'C'
#include <stdint.h>
#include "dlh_internal.h"
dlh_config dlh_cfg;
int dlh_stack_mode;
uint32_t dlh_stack_capture(dlh_stack_cache *c) { (void)c; return 0; }
void dlh_mem_add(int part, int64_t b) { (void)part; (void)b; }
int dlh_mem_fits(uint64_t b) { (void)b; return 1; }
uint64_t dlh_mem_total(void) { return 0; }
C
cat >t.c <<'C'
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dlh_internal.h"

static struct dlh_thread T;
static _Atomic int done;
static uint64_t got_calls[3], got_dur; /* by fn: 1 = repeated, 2 = distinct */
static uint64_t last_fn, fold_events, records;

static void *reader(void *arg) {
  (void)arg;
  for (;;) {
    int fin = atomic_load(&done);
    uint64_t head = atomic_load_explicit(&T.shared.head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&T.shared.tail, memory_order_relaxed);
    while (tail < head) {
      uint64_t pos = tail & (T.prod.cap - 1), *w = T.prod.buf + pos, h = w[0], nw = dlh_rec_nwords(h);
      switch (dlh_rec_kind(h)) {
        case DLH_REC_API:
          last_fn = dlh_rec_fn(h);
          got_calls[last_fn]++;
          if (last_fn == 1) got_dur += w[2];
          records++;
          break;
        case DLH_REC_FOLD: {
          uint64_t end, sum, n = dlh_fold_take(w, &end, &sum);
          if (n == 0 || end < w[1] || sum > end - w[1] + 1) { printf("bad FOLD record\n"); exit(1); }
          got_calls[last_fn] += n;
          got_dur += sum;
          fold_events++;
          records++;
          break;
        }
        case DLH_REC_PAD: nw = T.prod.cap - pos; break;
        case DLH_REC_WAIT: break; /* the producer waited for this reader (issue 48) */
        default: printf("bad record kind %u\n", dlh_rec_kind(h)); exit(1);
      }
      tail += nw;
    }
    atomic_store_explicit(&T.shared.tail, tail, memory_order_release);
    if (fin && tail == atomic_load(&T.shared.head)) return NULL;
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  dlh_cfg.ring_bytes = 4096;
  dlh_cfg.fold = 1;
  T.prod.buf = dlh_ring_alloc(&T.prod.cap);
  if (!T.prod.buf || T.prod.cap != 512) { printf("ring_alloc: cap %lu\n", (unsigned long)T.prod.cap); return 1; }
  pthread_t th;
  pthread_create(&th, NULL, reader, NULL);
  uint64_t made[3] = {0}, made_dur = 0, ticks = 1000;
  for (long i = 0; i < n; i++) {
    /* runs of 1..64 repeats of fn 1 (arg 7), then one call of fn 2 (arg i) */
    int fn = (i % 97) < (i % 61) ? 1 : 2;
    uint64_t arg = fn == 1 ? 7 : (uint64_t)i;
    dlh_call c = {&T, ticks, 0};
    uint64_t dropped0 = atomic_load(&T.shared.dropped);
    T.hot.depth = 1;
    /* both entry points (wrappers of calls with one recorded argument take the second) */
    if (i & 4)
      dlh_call_store(&c, DLH_API_KEY(fn, 1), fn == 1 ? 600 : 0, &arg, ticks + 5 + (uint64_t)(i & 3));
    else
      dlh_call_store1(&c, DLH_API_KEY(fn, 1), fn == 1 ? 600 : 0, ticks + 5 + (uint64_t)(i & 3), arg);
    if (atomic_load(&T.shared.dropped) == dropped0) {
      made[fn]++;
      if (fn == 1) made_dur += 5 + (uint64_t)(i & 3);
    } else {
      sched_yield(); /* full: let the reader catch up (drops stay counted and excluded) */
    }
    ticks += 10;
  }
  atomic_store(&done, 1);
  pthread_join(th, NULL);
  printf("repeated: made %lu read %lu; distinct: made %lu read %lu; dropped %lu; records %lu, "
         "FOLD records %lu\n", (unsigned long)made[1], (unsigned long)got_calls[1],
         (unsigned long)made[2], (unsigned long)got_calls[2], (unsigned long)T.shared.dropped,
         (unsigned long)records, (unsigned long)fold_events);
  if (made[1] != got_calls[1] || made[2] != got_calls[2] || made_dur != got_dur) {
    printf("FAIL: calls or durations differ (dur made %lu read %lu)\n", (unsigned long)made_dur,
           (unsigned long)got_dur);
    return 1;
  }
  int strict = argc < 3; /* under a sanitizer only the counts are checked */
  if (strict && (fold_events < 2 || records >= made[1] + made[2] || made[1] + made[2] < (uint64_t)n / 2)) {
    printf("FAIL: too little folded or stored\n");
    return 1;
  }
  /* a dropped call's correlation id does not stay for the next call */
  memset(&T, 0, sizeof T);
  dlh_cfg.ring_bytes = 4096;
  T.prod.buf = dlh_ring_alloc(&T.prod.cap);
  T.prod.storing = 1; /* as if a signal handler's call interrupted a store: dropped */
  dlh_call c = {&T, 1, 0};
  T.prod.pending_corr = 42;
  dlh_call_store(&c, DLH_API_KEY(3, 0), 0, NULL, 2);
  T.prod.storing = 0;
  /* folding off from here (the setting is read as an API record is stored): one record per call */
  dlh_cfg.fold = 0;
  dlh_call_store(&c, DLH_API_KEY(3, 0), 0, NULL, 2);
  if (T.shared.dropped != 1 || dlh_rec_flags(T.prod.buf[0]) & DLH_REC_F_CORR) {
    printf("FAIL: stale correlation id after a drop\n");
    return 1;
  }
  dlh_call_store(&c, DLH_API_KEY(3, 0), 0, NULL, 2);
  if (dlh_rec_kind(T.prod.buf[4]) != DLH_REC_API) { printf("FAIL: folded with DLHOOK_FOLD=0\n"); return 1; }
  /* One call repeated, the writer taking each FOLD record at once (here, in the same thread):
   * FOLD records alone come round the ring to the API record they repeat, which is stored again
   * before its words are written over; every repeat is counted once. */
  memset(&T, 0, sizeof T);
  dlh_cfg.fold = 1;
  T.prod.buf = dlh_ring_alloc(&T.prod.cap);
  uint64_t tail = 0, apis = 0, reps = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t arg = 7;
    dlh_call c1 = {&T, 100, 0};
    dlh_call_store(&c1, DLH_API_KEY(1, 1), 0, &arg, 105);
    for (uint64_t head = atomic_load(&T.shared.head); tail < head;) {
      uint64_t pos = tail & (T.prod.cap - 1), *w = T.prod.buf + pos, nw = dlh_rec_nwords(w[0]), e, d;
      if (dlh_rec_kind(w[0]) == DLH_REC_API) {
        if (w[0] != DLH_API_KEY(1, 1) || w[4] != 7) { printf("FAIL: API record damaged\n"); return 1; }
        apis++;
      } else if (dlh_rec_kind(w[0]) == DLH_REC_FOLD) {
        reps += dlh_fold_take(w, &e, &d);
      } else if (dlh_rec_kind(w[0]) == DLH_REC_PAD) {
        nw = T.prod.cap - pos;
      }
      tail += nw;
    }
    atomic_store(&T.shared.tail, tail);
  }
  if (apis + reps != 1000 || apis < 2 || T.shared.dropped) {
    printf("FAIL: repeats round the ring: %lu API records + %lu repeats, %lu dropped\n",
           (unsigned long)apis, (unsigned long)reps, (unsigned long)T.shared.dropped);
    return 1;
  }
  printf("ok\n");
  return 0;
}
C
$CC -O2 -g -Wall -pthread -I"$ROOT/preload" -I"$ROOT/hooks" -I"$ROOT/unwind" -I"$ROOT/common" \
  -I"$ROOT/format" -I"$BUILD/format" -I"$CUDA_HOME/include" -o t t.c stubs.c "$ROOT/preload/ring.c"
./t 3000000
# the same under ThreadSanitizer, where the compiler has it: no data race between the producer
# folding in place and the reader sealing
if $CC -fsanitize=thread -O1 -g -pthread -I"$ROOT/preload" -I"$ROOT/hooks" -I"$ROOT/unwind" \
     -I"$ROOT/common" -I"$ROOT/format" -I"$BUILD/format" -I"$CUDA_HOME/include" -o t_tsan t.c stubs.c \
     "$ROOT/preload/ring.c" 2>/dev/null && ./t_tsan 10 loose >/dev/null 2>&1; then
  TSAN_OPTIONS=halt_on_error=1 ./t_tsan 300000 loose
else
  echo "ThreadSanitizer not available here: that run skipped"
fi
