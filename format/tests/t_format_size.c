/* Size: 1,000,000 identical calls (a tight loop of cudaLaunchKernel-like events with two
 * arguments and consecutive correlation ids) cost under 4 bytes per call on disk. */
#include <time.h>

#include "ftest.h"

int main(void) {
  char *path = ft_path("size.dlh");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 0);
  REQUIRE(w);
  const size_t n = 1000000;
  uint64_t args[2] = {0x7f0012340000ull, 256};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (size_t i = 0; i < n; i++) {
    dlh_api_event ev = {.start_ns = 1000000 + i * 1500, .dur_ns = 700, .fn = 3, .ret = 0,
                        .corr = 100 + i, .nargs = 2, .args = args};
    REQUIRE(dlh_enc_api(w, 77, &ev) == 0);
    if (i % 100000 == 99999) REQUIRE(dlh_enc_flush(w) == 0); /* writer thread, ~periodic */
  }
  REQUIRE(dlh_enc_flush(w) == 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  uint64_t bytes = dlh_enc_bytes(w);
  dlh_enc_free(w);
  close(fd);
  double per = (double)(bytes - DLH_HEADER_SIZE) / (double)n;
  double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n;
  printf("%zu identical calls: %llu bytes, %.3f bytes/call, %.1f ns/call to encode\n", n,
         (unsigned long long)bytes, per, ns);
  CHECK(per < 4.0);

  /* and they read back */
  dlh_reader *r = dlh_reader_open(path, NULL);
  REQUIRE(r);
  const Dlh__Packet *p;
  size_t seen = 0;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case != DLH__PACKET__DATA_API) continue;
    dlh_api_iter it;
    dlh_api_event ev;
    dlh_api_iter_init(&it, p->api);
    while (dlh_api_iter_next(&it, &ev)) {
      if (ev.start_ns != 1000000 + seen * 1500 || ev.corr != 100 + seen || ev.nargs != 2 ||
          ev.args[1] != 256) {
        CHECK(0);
        break;
      }
      seen++;
    }
  }
  CHECK(rc == 0);
  CHECK(seen == n);
  dlh_reader_close(r);
  unlink(path);
  free(path);
  return ft_done("t_format_size");
}
