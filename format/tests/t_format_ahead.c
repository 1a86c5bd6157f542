/* dlh_reader_open_ahead (ahead.c) returns what dlh_reader_open's reader returns: for a trace and
 * mutated copies of it (damage, limits), every call's result, packet (compared packed), error,
 * skipped, frames and offset; with cases passed over from the start, and with the cases changed
 * part-way (the reader goes on without its thread); with a look-ahead of one byte (a hand-over
 * per block) and of 1 MiB. */
#include "fuzzgen.h"
#include "ftest.h"

static void make_trace(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  uint64_t seed = 7, t = 0;
  for (int f = 0; f < 6; f++) {
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__StringDef s = DLH__STRING_DEF__INIT;
    s.id = (uint32_t)f + 1;
    s.value = "a kernel name";
    p.data_case = DLH__PACKET__DATA_STRING;
    p.string = &s;
    REQUIRE(dlh_enc_packet(w, &p) == 0);
    for (int i = 0; i < 3000; i++) {
      uint64_t r = ft_rand(&seed), args[3] = {r, r >> 5, r >> 9};
      dlh_api_event ev = {.start_ns = t += r % 100, .dur_ns = r % 50, .fn = (uint32_t)(r % 4),
                          .corr = t, .nargs = (uint32_t)(r % 4), .args = args};
      REQUIRE(dlh_enc_api(w, (uint32_t)(r % 3), &ev) == 0);
    }
    REQUIRE(dlh_enc_flush(w) == 0);
  }
  dlh_enc_free(w);
  close(fd);
}

/* Reads path with both readers side by side; skip2 (after `at` calls) changes the cases. */
static void compare(const char *path, uint64_t skip, uint64_t skip2, int at, size_t ahead) {
  dlh_reader *a = dlh_reader_open(path, NULL), *b = dlh_reader_open_ahead(path, skip, ahead, NULL);
  CHECK(!a == !b);
  if (!a || !b) {
    dlh_reader_close(a);
    dlh_reader_close(b);
    return;
  }
  dlh_reader_skip(a, skip);
  int ra, rb, n = 0;
  do {
    if (n == at) {
      dlh_reader_skip(a, skip2);
      dlh_reader_skip(b, skip2);
    }
    const Dlh__Packet *pa, *pb;
    ra = dlh_reader_next(a, &pa);
    rb = dlh_reader_next(b, &pb);
    CHECK(ra == rb);
    if (ra == 1 && rb == 1) {
      size_t la = dlh__packet__get_packed_size(pa), lb = dlh__packet__get_packed_size(pb);
      CHECK(la == lb);
      if (la == lb) {
        uint8_t *x = malloc(la + 1), *y = malloc(lb + 1);
        dlh__packet__pack(pa, x);
        dlh__packet__pack(pb, y);
        CHECK(!memcmp(x, y, la));
        free(x);
        free(y);
      }
    }
    CHECK(dlh_reader_frames(a) == dlh_reader_frames(b));
    CHECK(dlh_reader_skipped(a) == dlh_reader_skipped(b));
    CHECK(dlh_reader_offset(a) == dlh_reader_offset(b));
    const char *ea = dlh_reader_error(a), *eb = dlh_reader_error(b);
    CHECK(!ea == !eb && (!ea || !strcmp(ea, eb)));
    n++;
  } while (ra == 1 && rb == 1);
  CHECK(dlh_reader_next(a, NULL) == dlh_reader_next(b, NULL)); /* the end, again */
  dlh_reader_close(a);
  dlh_reader_close(b);
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 300;
  char *path = ft_path("ahead.dlh"), *mut = ft_path("aheadmut.dlh");
  make_trace(path);
  const uint64_t api = DLH_CASE_BIT(DLH__PACKET__DATA_API), str = DLH_CASE_BIT(DLH__PACKET__DATA_STRING);
  compare(path, 0, 0, -1, 1);
  compare(path, 0, 0, -1, 1u << 20);
  compare(path, api, api, -1, 1);
  compare(path, 0, api, 5, 1);         /* events passed over from the 6th call on */
  compare(path, str, 0, 40, 1u << 20); /* and decoded again */
  compare(path, 0, api, 100000, 1);    /* after the end */
  size_t len;
  unsigned char *data = ft_read_file(path, &len);
  for (int i = 0; i < iters; i++) {
    size_t ml;
    unsigned char *m = fz_mutate(data, len, (uint64_t)i * 104729 + 3, &ml);
    REQUIRE(m);
    ft_write_file(mut, m, ml);
    free(m);
    compare(mut, i % 3 ? 0 : api, i % 2 ? api : 0, i % 50, i % 2 ? 1 : 1u << 20);
  }
  unlink(path);
  unlink(mut);
  free(path);
  free(mut);
  free(data);
  return ft_done("t_format_ahead");
}
