/* Write failures: a frame that cannot be written completely (here: the file size limit, as
 * with a full disk) makes dlh_enc_flush return -1 and is cut off again, so the file stays
 * readable and frames written after the condition clears follow it cleanly. */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include "ftest.h"

static void events(dlh_encoder *w, uint32_t fn, int n, uint64_t *seed) {
  static uint64_t t;
  for (int i = 0; i < n; i++) {
    uint64_t r = ft_rand(seed), args[3] = {r, r * 3, r * 7}; /* incompressible on purpose */
    dlh_api_event ev = {.start_ns = t += r % 1000, .dur_ns = r % 100, .fn = fn, .nargs = 3,
                        .args = args};
    REQUIRE(dlh_enc_api(w, 1, &ev) == 0);
  }
}

int main(void) {
  signal(SIGXFSZ, SIG_IGN);
  char *path = ft_path("writefail.dlh");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  uint64_t seed = 5;
  events(w, 1, 100, &seed);
  REQUIRE(dlh_enc_flush(w) == 0);
  uint64_t good = dlh_enc_bytes(w);

  struct rlimit old, lim;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  lim = old;
  lim.rlim_cur = good + 1000; /* the next frame (~40 KB) is cut short */
  if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
    printf("skip: cannot set RLIMIT_FSIZE\n");
    return 77;
  }
  events(w, 2, 1000, &seed);
  errno = 0;
  CHECK(dlh_enc_flush(w) == -1);
  CHECK(errno == EFBIG);
  CHECK(dlh_enc_bytes(w) == good);
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  events(w, 3, 100, &seed);
  CHECK(dlh_enc_flush(w) == 0);
  uint64_t total = dlh_enc_bytes(w);
  dlh_enc_free(w);
  close(fd);

  size_t len;
  free(ft_read_file(path, &len));
  CHECK(len == total);
  dlh_reader *r = dlh_reader_open(path, NULL);
  REQUIRE(r);
  const Dlh__Packet *p;
  int rc, n1 = 0, n2 = 0, n3 = 0;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case != DLH__PACKET__DATA_API) continue;
    for (size_t i = 0; i < p->api->n_fn; i++) {
      n1 += p->api->fn[i] == 1;
      n2 += p->api->fn[i] == 2;
      n3 += p->api->fn[i] == 3;
    }
  }
  CHECK(rc == 0);
  CHECK(n1 == 100 && n2 == 0 && n3 == 100);
  printf("frames after a failed write: %llu, events %d/%d/%d\n",
         (unsigned long long)dlh_reader_frames(r), n1, n2, n3);
  dlh_reader_close(r);
  unlink(path);
  free(path);
  return ft_done("t_format_writefail");
}
