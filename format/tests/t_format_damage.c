/* Damage: a small multi-frame trace cut at every byte offset, bytes flipped in its tail,
 * garbage appended, empty and foreign files. The reader never crashes, returns exactly the
 * packets of the complete frames before the damage, then -1 with a message naming an offset
 * (or 0 when the cut falls exactly on a frame boundary). */
#include "ftest.h"

#define NFRAMES 6

typedef struct ref_pkt {
  unsigned char *b;
  size_t len;
  uint64_t frame; /* 1-based frame index */
} ref_pkt;

static ref_pkt ref[4096];
static size_t nref;
static uint64_t bound[NFRAMES + 1]; /* bound[k] = file offset after frame k (bound[0] = header) */

static void make_trace(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 1);
  REQUIRE(w);
  bound[0] = dlh_enc_bytes(w);
  uint64_t seed = 12345, t = 1000;
  for (int f = 1; f <= NFRAMES; f++) {
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__StringDef sd = DLH__STRING_DEF__INIT;
    char name[32];
    snprintf(name, sizeof name, "frame-%d", f);
    sd.has_id = 1; sd.id = (uint32_t)f; sd.value = name;
    p.data_case = DLH__PACKET__DATA_STRING; p.string = &sd;
    REQUIRE(dlh_enc_packet(w, &p) == 0);
    for (int i = 0; i < 20 * f; i++) {
      uint64_t r = ft_rand(&seed);
      uint64_t args[2] = {r, r >> 32};
      dlh_api_event ev = {.start_ns = t += r % 999, .dur_ns = r % 77, .fn = (uint32_t)(r % 4),
                          .ret = (int64_t)(r % 2), .corr = r % 3 ? t : 0,
                          .nargs = (uint32_t)(r % 3), .args = args};
      REQUIRE(dlh_enc_api(w, (uint32_t)(r % 3), &ev) == 0);
    }
    REQUIRE(dlh_enc_flush(w) == 0);
    bound[f] = dlh_enc_bytes(w);
  }
  dlh_enc_free(w);
  close(fd);
}

/* Reads the whole file; every packet returned must equal ref[] in order. exact: exactly
 * `expect` packets; otherwise at least `expect` (damage that leaves a frame's content intact,
 * e.g. in an unused bit of an entropy table, is not damage), and all of them at a clean end.
 * Returns the final rc of dlh_reader_next. */
static int read_check2(const char *path, size_t expect, int exact, const char *what, long at) {
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  if (!r) {
    CHECK(err && *err);
    free(err);
    return -2;
  }
  const Dlh__Packet *p;
  size_t i = 0;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (i < nref) {
      size_t len;
      unsigned char *b = ft_pack(p, &len);
      if (!(len == ref[i].len && memcmp(b, ref[i].b, len) == 0)) {
        fprintf(stderr, "%s at %ld: packet %zu differs\n", what, at, i);
        CHECK(0);
      }
      free(b);
    }
    i++;
  }
  if (exact ? i != expect : (i < expect || (rc == 0 && i != nref))) {
    fprintf(stderr, "%s at %ld: %zu packets, expected %zu (rc %d)\n", what, at, i, expect, rc);
    CHECK(0);
  }
  if (rc < 0) {
    const char *m = dlh_reader_error(r);
    CHECK(m && strstr(m, "offset"));
  } else {
    CHECK(dlh_reader_error(r) == NULL);
  }
  CHECK(dlh_reader_next(r, &p) == rc); /* sticky */
  dlh_reader_close(r);
  return rc;
}

static int read_check(const char *path, size_t expect, const char *what, long at) {
  return read_check2(path, expect, 1, what, at);
}

static size_t packets_through(uint64_t frames) {
  size_t n = 0;
  while (n < nref && ref[n].frame <= frames) n++;
  return n;
}

int main(void) {
  char *path = ft_path("damage.dlh"), *cut = ft_path("cut.dlh");
  make_trace(path);
  size_t len;
  unsigned char *data = ft_read_file(path, &len);
  REQUIRE(len == bound[NFRAMES]);

  /* reference packets, with the frame each came from */
  dlh_reader *r = dlh_reader_open(path, NULL);
  REQUIRE(r);
  const Dlh__Packet *p;
  int rc;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    REQUIRE(nref < 4096);
    ref[nref].b = ft_pack(p, &ref[nref].len);
    ref[nref].frame = dlh_reader_frames(r);
    nref++;
  }
  REQUIRE(rc == 0);
  REQUIRE(dlh_reader_frames(r) == NFRAMES);
  dlh_reader_close(r);
  printf("trace: %zu bytes, %d frames, %zu packets\n", len, NFRAMES, nref);

  /* 1. every truncation */
  int errors = 0, clean = 0;
  for (size_t c = 0; c < len; c++) {
    ft_write_file(cut, data, c);
    if (c < DLH_HEADER_SIZE) {
      char *err = NULL;
      CHECK(dlh_reader_open(cut, &err) == NULL);
      CHECK(err && (c == 0 ? strcmp(err, "empty file") == 0 : strstr(err, "truncated") != NULL));
      free(err);
      continue;
    }
    uint64_t k = 0;
    while (k < NFRAMES && bound[k + 1] <= c) k++;
    rc = read_check(cut, packets_through(k), "cut", (long)c);
    if (bound[k] == c) { CHECK(rc == 0); clean++; }
    else { CHECK(rc == -1); errors++; }
  }
  printf("truncation: %d clean ends, %d errors\n", clean, errors);
  CHECK(clean == NFRAMES);

  /* 2. every byte of the last two frames flipped (one bit, then all bits) */
  unsigned char *copy = malloc(len);
  REQUIRE(copy);
  int flips = 0, intact = 0;
  for (size_t o = bound[NFRAMES - 2]; o < len; o++) {
    for (int m = 0; m < 2; m++) {
      memcpy(copy, data, len);
      copy[o] ^= m ? 0xff : (unsigned char)(1u << (o % 8));
      ft_write_file(cut, copy, len);
      uint64_t k = o < bound[NFRAMES - 1] ? NFRAMES - 2 : NFRAMES - 1;
      rc = read_check2(cut, packets_through(k), 0, "flip", (long)o);
      intact += rc == 0;
      flips++;
    }
  }
  printf("byte flips in the tail: %d, %d detected, %d left the content intact\n", flips,
         flips - intact, intact);
  CHECK(intact < flips / 50);

  /* 3. random damage anywhere (several bytes), and garbage tails: no crash, prefix kept */
  uint64_t seed = 777;
  for (int n = 0; n < 300; n++) {
    memcpy(copy, data, len);
    size_t o = DLH_HEADER_SIZE + ft_rand(&seed) % (len - DLH_HEADER_SIZE);
    for (int j = 0; j < 4 && o + j < len; j++) copy[o + j] = (unsigned char)ft_rand(&seed);
    ft_write_file(cut, copy, len);
    uint64_t k = 0;
    while (k < NFRAMES && bound[k + 1] <= o) k++;
    read_check2(cut, packets_through(k), 0, "random", (long)o);
  }
  unsigned char *tail = malloc(len + 64);
  REQUIRE(tail);
  memcpy(tail, data, len);
  for (int n = 0; n < 64; n++) tail[len + n] = (unsigned char)ft_rand(&seed);
  ft_write_file(cut, tail, len + 64);
  CHECK(read_check(cut, nref, "garbage tail", 0) == -1);
  /* a zstd frame header claiming more than 1 GiB (over DLH_MAX_FRAME_CONTENT), cut short */
  static const unsigned char big[] = {0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 0x80, 0, 0, 0, 0};
  memcpy(tail + len, big, sizeof big);
  ft_write_file(cut, tail, len + sizeof big);
  CHECK(read_check(cut, nref, "huge frame", 0) == -1);
  r = dlh_reader_open(cut, NULL);
  while (dlh_reader_next(r, &p) == 1) {}
  CHECK(strstr(dlh_reader_error(r), "limit 64 MiB") != NULL);
  printf("huge frame: %s\n", dlh_reader_error(r));
  dlh_reader_close(r);

  /* 4. empty, foreign, wrong version, missing */
  char *err = NULL;
  ft_write_file(cut, "", 0);
  CHECK(!dlh_reader_open(cut, &err) && strcmp(err, "empty file") == 0);
  free(err);
  ft_write_file(cut, "#!/bin/sh\necho hello, world\n", 28);
  CHECK(!dlh_reader_open(cut, &err) && strstr(err, "not a dlhook trace"));
  free(err);
  ft_write_file(cut, "PK", 2);
  CHECK(!dlh_reader_open(cut, &err) && strstr(err, "not a dlhook trace"));
  free(err);
  memcpy(copy, data, len);
  copy[8] = 7;
  ft_write_file(cut, copy, len);
  CHECK(!dlh_reader_open(cut, &err) && strstr(err, "unsupported format version 7"));
  printf("version: %s\n", err);
  free(err);
  ft_write_file(cut, data, DLH_HEADER_SIZE); /* header only: a valid, empty trace */
  CHECK(read_check(cut, 0, "header only", 0) == 0);
  unlink(cut);
  CHECK(!dlh_reader_open(cut, &err) && strstr(err, "No such file"));
  free(err);
  CHECK(!dlh_reader_open("/", &err) || 1); /* a directory: error, never a crash */
  free(err);
  err = NULL;
  dlh_reader *d = dlh_reader_open("/", &err);
  if (d) { CHECK(dlh_reader_next(d, &p) <= 0); dlh_reader_close(d); }
  free(err);

  unlink(path);
  for (size_t i = 0; i < nref; i++) free(ref[i].b);
  free(data); free(copy); free(tail); free(path); free(cut);
  return ft_done("t_format_damage");
}
