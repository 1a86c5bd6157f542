/* Fuzz: traces with valid zstd frames holding mutated packet bytes, and random bytes after a
 * valid header. The reader and the batch iterator never crash or hang; errors carry an offset. */
#include "fuzzgen.h"
#include "ftest.h"

static void make_trace(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  uint64_t seed = 99, t = 0;
  for (int f = 0; f < 4; f++) {
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__ArgDesc a = DLH__ARG_DESC__INIT, *ap = &a;
    a.name = "x"; a.has_type = 1; a.type = (uint32_t)f;
    Dlh__FunctionDesc fd_ = DLH__FUNCTION_DESC__INIT;
    fd_.has_id = 1; fd_.id = (uint32_t)f; fd_.name = "cudaFoo"; fd_.n_args = 1; fd_.args = &ap;
    p.data_case = DLH__PACKET__DATA_FUNCTION; p.function = &fd_;
    REQUIRE(dlh_enc_packet(w, &p) == 0);
    uint32_t kind[3] = {DLH__GPU_RECORD_KIND__KERNEL, DLH__GPU_RECORD_KIND__MEMCPY,
                       DLH__GPU_RECORD_KIND__MEMSET};
    uint32_t nv[3] = {1, 0, 2};
    int64_t sd[3] = {0, 5, 5};
    uint64_t dur[3] = {1, 2, 3}, vals[3] = {7, 8, 9};
    Dlh__GpuBatch g = DLH__GPU_BATCH__INIT;
    g.n_kind = 3; g.kind = kind; g.n_start_delta = 3; g.start_delta = sd; g.n_dur = 3;
    g.dur = dur; g.n_nvals = 3; g.nvals = nv; g.n_vals = 3; g.vals = vals;
    p.data_case = DLH__PACKET__DATA_GPU; p.gpu = &g;
    REQUIRE(dlh_enc_packet(w, &p) == 0);
    for (int i = 0; i < 200; i++) {
      uint64_t r = ft_rand(&seed), args[4] = {r, r >> 3, r >> 7, r >> 11};
      dlh_api_event ev = {.start_ns = t += r % 100, .dur_ns = r % 50, .fn = (uint32_t)(r % 4),
                          .corr = r % 2 ? t : 0, .stack = (uint32_t)(r % 3),
                          .depth = (uint32_t)(r % 2), .nargs = (uint32_t)(r % 5), .args = args,
                          .count = r % 7 == 3 ? 2 + r % 50 : 0, .span_ns = r % 1000};
      REQUIRE(dlh_enc_api(w, (uint32_t)(r % 2), &ev) == 0);
    }
    REQUIRE(dlh_enc_flush(w) == 0);
  }
  dlh_enc_free(w);
  close(fd);
}

static int read_all(const char *path, uint64_t *events) {
  dlh_reader *r = dlh_reader_open(path, NULL);
  if (!r) return -2;
  const Dlh__Packet *p;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_API) {
      dlh_api_iter it;
      dlh_api_event ev;
      dlh_api_iter_init(&it, p->api);
      while (dlh_api_iter_next(&it, &ev)) {
        /* touch everything the iterator hands out */
        for (uint32_t k = 0; k < ev.nargs; k++) *events += ev.args[k] & 1;
        (*events)++;
      }
    }
  }
  if (rc < 0) CHECK(dlh_reader_error(r) && strstr(dlh_reader_error(r), "offset"));
  dlh_reader_close(r);
  return rc;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 3000;
  char *path = ft_path("fuzz.dlh"), *mut = ft_path("fuzzmut.dlh");
  make_trace(path);
  size_t len;
  unsigned char *data = ft_read_file(path, &len);
  uint64_t events = 0, seed = 4242;
  int bad = 0, good = 0;
  for (int i = 0; i < iters; i++) {
    size_t ml;
    unsigned char *m = fz_mutate(data, len, (uint64_t)i * 7919 + 1, &ml);
    REQUIRE(m);
    ft_write_file(mut, m, ml);
    free(m);
    int rc = read_all(mut, &events);
    CHECK(rc == 0 || rc == -1);
    if (rc < 0) bad++; else good++;
  }
  /* random bytes after a valid header */
  unsigned char buf[4096];
  for (int i = 0; i < iters / 3; i++) {
    memcpy(buf, data, 16);
    size_t n = 16 + ft_rand(&seed) % (sizeof buf - 16);
    for (size_t k = 16; k < n; k++) buf[k] = (unsigned char)ft_rand(&seed);
    if (i % 2) memcpy(buf + 16, data + 16, 4); /* zstd magic, then garbage */
    ft_write_file(mut, buf, n);
    int rc = read_all(mut, &events); /* random bytes may, rarely, form a valid empty frame */
    CHECK(rc == -1 || rc == 0);
    bad += rc == -1;
  }
  printf("%d mutated traces (+%d random tails): %d read to the end, %d reported damage; %llu events seen\n", iters,
         iters / 3, good, bad, (unsigned long long)events);
  CHECK(bad > 0);
  unlink(path);
  unlink(mut);
  free(path);
  free(mut);
  free(data);
  return ft_done("t_format_fuzz");
}
