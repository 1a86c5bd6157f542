/* Many threads' batches (issue 48): with 300 threads' batches open, a refill makes room for
 * fewer events, so that the columns of all of them stay far below 300 threads x 1024 events
 * (28 MiB before: under 12 MiB while the first batches open, under 6 MiB after a trim);
 * dlh_enc_trim gives back the columns of the batches that hold no event (after a flush: all),
 * and the threads' later events, on the fast path (dlh_tbatch_put) or the slow one
 * (dlh_enc_api), come back from the reader in order and with their values. */
#include "ftest.h"
#include "dlh_batch.h"

#define NT 300
#define PER 40

int main(void) {
  char *path = ft_path("trim");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  uint64_t t = 1000, want = 0;
  for (int round = 0; round < 3; round++) {
    for (uint32_t k = 0; k < NT; k++)
      for (int i = 0; i < PER; i++) {
        uint64_t a[1] = {k * 1000u + (uint64_t)i};
        dlh_api_event ev = {.start_ns = t += 10, .dur_ns = 3, .fn = 1 + (uint32_t)(i & 1),
                            .nargs = 1, .args = a};
        dlh_tbatch *b = dlh_enc_tbatch(w, 100 + k);
        if (!b || dlh_tbatch_put(b, ev.start_ns, ev.dur_ns, ev.fn, 0, 0, 0, 0, 1, a) != 0)
          REQUIRE(dlh_enc_api(w, 100 + k, &ev) == 0);
        want++;
      }
    uint64_t open_mem = dlh_enc_mem(w);
    printf("round %d: encoder holds %llu KiB\n", round, (unsigned long long)(open_mem >> 10));
    /* 300 threads with room for 1024 events in each column held 28 MiB; the first 32 threads
     * still get that room (round 0), then the trim gives it back */
    CHECK(open_mem < (round ? 6u << 20 : 12u << 20));
    REQUIRE(dlh_enc_flush(w) == 0);
    uint64_t before = dlh_enc_mem(w), freed = dlh_enc_trim(w, 64u << 10);
    CHECK(freed > 0 && dlh_enc_mem(w) + freed == before);
    CHECK(dlh_enc_trim(w, 64u << 10) == 0); /* nothing left above the bound */
  }
  dlh_enc_free(w);
  close(fd);
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  REQUIRE(r);
  const Dlh__Packet *p;
  uint64_t got = 0, bad = 0, next[NT] = {0};
  while (dlh_reader_next(r, &p) == 1) {
    if (p->data_case != DLH__PACKET__DATA_API) continue;
    dlh_api_iter it;
    dlh_api_event ev;
    dlh_api_iter_init(&it, p->api);
    uint32_t k = p->api->tid - 100;
    while (dlh_api_iter_next(&it, &ev)) {
      uint64_t i = next[k] % PER;
      if (ev.nargs != 1 || ev.args[0] != k * 1000u + i || ev.fn != 1 + (i & 1)) bad++;
      next[k]++;
      got++;
    }
    CHECK(!it.bad);
  }
  dlh_reader_close(r);
  CHECK(got == want);
  CHECK(bad == 0);
  printf("%llu events of %d threads in 3 flushes, trimmed between them\n",
         (unsigned long long)got, NT);
  return ft_done("t_format_trim");
}
